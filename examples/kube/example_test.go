package kube_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podlife/podlife/examples/kube"
)

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
	initial, _ := source.Watch(ctx, "node1")
	fmt.Println("initial list:", len(initial), "pod(s)")

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
	// initial list: 1 pod(s)
	// phase: Running
	// final delete: <nil>
}
