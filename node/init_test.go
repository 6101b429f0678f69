package node_test

import (
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/pleg"
)

// Scenario (nodetest's init containers, issue 28 item 4): a pod with a regular init
// container "setup" (it runs 2 s and exits 0), a sidecar "proxy" (a restartable init
// container) and the app. setup runs first, alone; proxy starts once setup exited 0; the
// app starts once proxy runs, and the sidecar does not block it (it never exits); the
// pod is Running with setup Completed.
func TestInitContainersInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, nil, nil, envOpts{containers: nodetest.ContainerBehaviour{InitRunFor: 2 * time.Second}})
		defer e.stop()
		created := e.createWithInit("web", v1.RestartPolicyAlways, v1.PodRunning, v1.Container{Name: "setup", Image: "busybox"}, sidecar("proxy", "envoy"))
		st := e.runtimeStatus(created)
		setup, proxy, app := st.FindContainerStatusByName("setup"), st.FindContainerStatusByName("proxy"), st.FindContainerStatusByName("app")
		if setup == nil || proxy == nil || app == nil {
			t.Fatalf("containers: setup %v, proxy %v, app %v", setup, proxy, app)
		}
		if setup.State != pleg.ContainerStateExited || setup.ExitCode != 0 || setup.FinishedAt.Sub(setup.StartedAt) != 2*time.Second {
			t.Errorf("setup: %s exit %d after %v, want exited 0 after 2s", setup.State, setup.ExitCode, setup.FinishedAt.Sub(setup.StartedAt))
		}
		if proxy.State != pleg.ContainerStateRunning || proxy.StartedAt.Before(setup.FinishedAt) {
			t.Errorf("proxy: %s, started %v, setup finished %v; want running, started after setup", proxy.State, proxy.StartedAt, setup.FinishedAt)
		}
		if app.State != pleg.ContainerStateRunning || app.StartedAt.Before(proxy.StartedAt) {
			t.Errorf("app: %s, started %v, proxy started %v; want running, started after proxy", app.State, app.StartedAt, proxy.StartedAt)
		}
		got, _ := e.api.Pod("default", "web")
		if len(got.Status.InitContainerStatuses) != 2 || got.Status.InitContainerStatuses[0].State.Terminated == nil ||
			got.Status.InitContainerStatuses[0].State.Terminated.Reason != "Completed" {
			t.Errorf("init statuses %+v, want setup Completed first", got.Status.InitContainerStatuses)
		}
	})
}

// Scenario: a regular init container that exits 1 under restartPolicy Never fails the
// pod; the app never starts.
func TestInitContainerFailsPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, nil, nil, envOpts{containers: nodetest.ContainerBehaviour{InitRunFor: time.Second, InitExitCode: 1}})
		defer e.stop()
		st := e.runtimeStatus(e.createWithInit("job", v1.RestartPolicyNever, v1.PodFailed, v1.Container{Name: "setup", Image: "busybox"}))
		if app := st.FindContainerStatusByName("app"); app != nil {
			t.Errorf("the app started: %+v", app)
		}
		if setup := st.FindContainerStatusByName("setup"); setup == nil || setup.ExitCode != 1 {
			t.Errorf("setup: %+v, want exited 1", setup)
		}
	})
}
