package pleg_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/pleg"
)

// A runtime with one pod whose container exits between two relists.
func Example() {
	state := pleg.ContainerStateRunning
	runtime := pleg.RuntimeServiceFuncs{
		ListPodsFunc: func(ctx context.Context, all bool) ([]*pleg.Pod, error) {
			return []*pleg.Pod{{
				ID: "uid-1", Name: "web", Namespace: "default",
				Containers: []*pleg.Container{{ID: "c1", Name: "app", State: state}},
				Sandboxes:  []*pleg.Container{{ID: "sb1", State: pleg.ContainerStateRunning}},
			}}, nil
		},
		PodStatusFunc: func(ctx context.Context, uid types.UID, name, namespace string) (*pleg.PodStatus, error) {
			return &pleg.PodStatus{
				ID: uid, Name: name, Namespace: namespace, IPs: []string{"10.0.0.7"},
				ContainerStatuses: []*pleg.ContainerStatus{{ID: "c1", Name: "app", State: state}},
				SandboxStatuses:   []*pleg.SandboxStatus{{ID: "sb1", State: pleg.SandboxReady}},
			}, nil
		},
	}
	cache := pleg.NewCache()
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := pleg.New(pleg.Config{Runtime: runtime, Cache: cache, Clock: clk})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	printEvents := func() {
		for {
			select {
			case e := <-r.Events():
				fmt.Println(e.Type, e.Data)
			default:
				return
			}
		}
	}

	_ = r.Relist(ctx)
	printEvents()

	state = pleg.ContainerStateExited
	clk.Step(time.Second)
	_ = r.Relist(ctx)
	printEvents()

	status, _ := cache.GetNewerThan(ctx, "uid-1", clk.Now().Add(-time.Millisecond))
	fmt.Println(status.IPs, status.FindContainerStatusByName("app").State, status.IsRunning())
	// Output:
	// ContainerStarted c1
	// ContainerStarted sb1
	// ContainerDied c1
	// [10.0.0.7] exited true
}

// Events is the kubelet's table for one container between two relists.
func ExampleEvents() {
	for _, e := range pleg.Events("uid-1", "c1", pleg.ContainerStateRunning, pleg.ContainerStateNonExistent) {
		fmt.Println(e.Type)
	}
	// Output:
	// ContainerDied
	// ContainerRemoved
}
