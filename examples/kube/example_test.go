package kube_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/kube"
)

// A Source feeds a node agent's pods.
var _ agent.Source = (*kube.Source)(nil)

// The Patcher and the Source over a client; here client-go's fake clientset stands in for
// kube.NewClient(kube.ClientConfig{Kubeconfig: "node1.kubeconfig"}).
func Example() {
	client := fake.NewClientset(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "busybox-1", UID: "uid-1"},
		Spec:       v1.PodSpec{NodeName: "node1"},
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	source, err := kube.NewSource(kube.SourceConfig{Client: client})
	if err != nil {
		panic(err)
	}
	// A node agent passes its node's channel: n.Channel(ctx, node.SourceAPI).
	updates := make(chan config.PodUpdate)
	go source.Run(ctx, "node1", updates)
	list := <-updates
	fmt.Println(list.Op, "from", list.Source+":", len(list.Pods), "pod(s)")

	patcher, err := kube.NewPatcher(client)
	if err != nil {
		panic(err)
	}
	pod, err := patcher.PatchPodStatus(ctx, "default", "busybox-1", []byte(`{"metadata":{"uid":"uid-1"},"status":{"phase":"Running"}}`))
	if err != nil {
		panic(err)
	}
	fmt.Println("phase:", pod.Status.Phase)
	fmt.Println("final delete:", patcher.DeletePod(ctx, "default", "busybox-1", "uid-1"))
	// Output:
	// set from api: 1 pod(s)
	// phase: Running
	// final delete: <nil>
}
