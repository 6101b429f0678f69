package node_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// A node agent on an in-memory API server and container runtime: a pod is created, runs,
// is deleted gracefully, and its object is deleted by the node once its container stopped
// and its terminal phase is on the server.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	api := statusmgrtest.NewFakeAPI()
	runtime := nodetest.NewRuntime(plegtest.NewRuntime(nil), nodetest.ContainerBehaviour{StopDelay: 100 * time.Millisecond})

	n, err := node.New(node.Config{NodeName: "node1", Runtime: runtime, Patcher: api})
	if err != nil {
		panic(err)
	}
	go nodetest.FeedAPI(ctx, n, api, "node1") // the API server's pods of node1
	done := make(chan error)
	go func() { done <- n.Run(ctx) }()

	phase := func(want v1.PodPhase, gone bool) {
		_ = api.WaitForPods(ctx, func(pods map[types.NamespacedName]*v1.Pod) bool {
			p, ok := pods[types.NamespacedName{Namespace: "default", Name: "web"}]
			return gone && !ok || ok && p.Status.Phase == want
		})
	}
	_, _ = api.Create(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1.PodSpec{NodeName: "node1", Containers: []v1.Container{{Name: "app", Image: "nginx"}}}})
	phase(v1.PodRunning, false)
	fmt.Println("running")
	_ = api.Delete("default", "web", nil)
	phase("", true)
	final := api.DeletedPods()[0]
	fmt.Println("deleted by the node in phase", final.Status.Phase)

	cancel()
	fmt.Println("Run:", <-done)
	// Output:
	// running
	// deleted by the node in phase Succeeded
	// Run: <nil>
}
