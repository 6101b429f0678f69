package order_test

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/order"
	"github.com/podlife/podlife/pleg"
)

// A pod with a proxy sidecar: the app starts once the proxy runs; on stop the app goes
// first, the proxy after it.
func Example() {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "proxy", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "app"}},
	}}
	status := &pleg.PodStatus{}
	fmt.Printf("nothing runs: %+v\n", order.Init(pod, status, nil))
	status.ContainerStatuses = []*pleg.ContainerStatus{{ID: "c1", Name: "proxy", State: pleg.ContainerStateRunning}}
	fmt.Printf("proxy runs: %+v\n", order.Init(pod, status, nil))

	for _, s := range order.Termination(pod, []string{"proxy", "app"}) {
		fmt.Printf("stop %s after %v\n", s.Name, s.After)
	}
	fmt.Println("app's timeout:", order.StopGrace(30, 0, 0))
	fmt.Println("proxy's timeout after 12 s waiting:", order.StopGrace(30, 0, 12500*time.Millisecond))
	// Output:
	// nothing runs: {Start:[0] Kill:[] KillPod:false Initialized:false}
	// proxy runs: {Start:[] Kill:[] KillPod:false Initialized:true}
	// stop proxy after [app]
	// stop app after []
	// app's timeout: 30
	// proxy's timeout after 12 s waiting: 18
}
