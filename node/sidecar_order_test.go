package node_test

import (
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/pleg"
)

// Scenario (package order on nodetest's runtime, issue 29): a pod with two sidecars
// "proxy" and "log" (restartable init containers) and the app; every container takes
// 2 s to exit after its stop signal. The app starts after both sidecars; on delete the
// app stops first, then "log" (declared last), then "proxy", 2 s apart.
func TestSidecarsStopInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, nil, nil, envOpts{containers: nodetest.ContainerBehaviour{StopDelay: 2 * time.Second}})
		defer e.stop()
		p := newPod("web", 30, v1.RestartPolicyAlways, nil)
		always := ptr.To(v1.ContainerRestartPolicyAlways)
		p.Spec.InitContainers = []v1.Container{{Name: "proxy", Image: "envoy", RestartPolicy: always},
			{Name: "log", Image: "fluent", RestartPolicy: always}}
		created := e.create(p)
		e.waitPhase("web", v1.PodRunning)
		st, err := e.mem.PodStatus(t.Context(), created.UID, created.Name, created.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		proxy, log, app := st.FindContainerStatusByName("proxy"), st.FindContainerStatusByName("log"), st.FindContainerStatusByName("app")
		if proxy == nil || log == nil || app == nil || log.StartedAt.Before(proxy.StartedAt) || app.StartedAt.Before(log.StartedAt) {
			t.Fatalf("start order: proxy %+v, log %+v, app %+v; want proxy, log, app", proxy, log, app)
		}
		deleted := time.Now()
		if err := e.api.Delete("default", "web", nil); err != nil {
			t.Fatal(err)
		}
		var final *pleg.PodStatus
		for range 100 {
			time.Sleep(100 * time.Millisecond)
			st, err := e.mem.PodStatus(t.Context(), created.UID, created.Name, created.Namespace)
			if err != nil || len(st.ContainerStatuses) == 0 {
				break
			}
			if !st.IsRunning() {
				final = st
				break
			}
		}
		if final == nil {
			t.Fatal("never saw the pod's containers stopped in the runtime")
		}
		got := map[string]time.Duration{}
		for _, c := range final.ContainerStatuses {
			got[c.Name] = c.FinishedAt.Sub(deleted)
		}
		if want := (map[string]time.Duration{"app": 2 * time.Second, "log": 4 * time.Second, "proxy": 6 * time.Second}); !equalDurations(got, want) {
			t.Errorf("finished after the delete: %v, want %v", got, want)
		}
	})
}

func equalDurations(a, b map[string]time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
