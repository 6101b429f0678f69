package nodetest_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/pleg/plegtest"
)

func webPod() *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "nginx"}}}}
}

// The containers SyncPod starts run on after it returned and its context ended (the node
// ends it then), until KillPod stops them.
func TestContainersOutliveSyncPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := nodetest.NewRuntime(plegtest.NewRuntime(nil), nodetest.ContainerBehaviour{})
		pod := webPod()
		ctx, cancel := context.WithCancel(t.Context())
		if err := rt.SyncPod(ctx, pod, nil); err != nil {
			t.Fatal(err)
		}
		cancel()
		time.Sleep(time.Hour)
		running := func() int {
			st, err := rt.PodStatus(t.Context(), pod.UID, pod.Name, pod.Namespace)
			if err != nil {
				t.Fatal(err)
			}
			return st.RunningContainers()
		}
		if got := running(); got != 1 {
			t.Fatalf("%d containers running an hour after SyncPod's context ended, want 1", got)
		}
		if err := rt.KillPod(t.Context(), pod, nil, 1); err != nil {
			t.Fatal(err)
		}
		if got := running(); got != 0 {
			t.Errorf("%d containers running after KillPod, want 0", got)
		}
	})
}

// A Runtime's containers outlive the SyncPod that started them: the context the node
// passes ends when SyncPod returns, and bounds only the call. (A runtime of real
// processes starts them under a context of its own, never with exec.CommandContext and
// SyncPod's ctx.)
func ExampleRuntime_SyncPod() {
	rt := nodetest.NewRuntime(plegtest.NewRuntime(nil), nodetest.ContainerBehaviour{})
	pod := webPod()
	ctx, cancel := context.WithCancel(context.Background())
	err := rt.SyncPod(ctx, pod, nil)
	cancel() // SyncPod returned: the node ends its context
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := rt.PodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("running containers:", st.RunningContainers())
	// Output: running containers: 1
}
