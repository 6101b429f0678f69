package node_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// A node agent is node.New, a pod source feeding the node's Update, and Run; here on the
// fakes that ship with the library (an in-memory API server and container runtime). This
// function is README.md's usage sketch, quoted verbatim (TestREADMEUsageSketch in the
// repository's root checks it).
func Example_agent() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Your statusmgr.StatusPatcher and your node.Runtime: here an in-memory API server and
	// an in-memory container runtime.
	api := statusmgrtest.NewFakeAPI()
	runtime := nodetest.NewRuntime(plegtest.NewRuntime(nil), nodetest.ContainerBehaviour{})

	n, err := node.New(node.Config{NodeName: "node1", Runtime: runtime, Patcher: api})
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() {
		// The API server's pods of node1: the list as a Set, then each watch event (Add,
		// Update, Remove). nodetest.FeedAPI is this loop; examples/kube.Source does it with
		// client-go's Reflector. Other sources (a manifest directory) must be listed in
		// Config.Sources: Update fails for any other (node.ErrUnknownSource) and once Run returned.
		listed, watch := api.Watch(ctx, "node1")
		if n.Update(ctx, config.PodUpdate{Op: config.Set, Source: node.SourceAPI, Pods: listed}) != nil {
			return
		}
		for ev := range watch {
			if n.Update(ctx, nodetest.WatchUpdate(ev)) != nil {
				return
			}
		}
	}()
	done := make(chan error)
	go func() { done <- n.Run(ctx) }() // until ctx ends

	_, _ = api.Create(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1.PodSpec{NodeName: "node1", Containers: []v1.Container{{Name: "app", Image: "nginx"}}}})
	_ = api.WaitForPods(ctx, func(pods map[types.NamespacedName]*v1.Pod) bool {
		p := pods[types.NamespacedName{Namespace: "default", Name: "web"}]
		return p != nil && p.Status.Phase == v1.PodRunning
	})
	fmt.Println("web is running")

	cancel()
	fmt.Println("Run:", <-done) // every goroutine Run started has ended
	// Output:
	// web is running
	// Run: <nil>
}
