package node_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

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
		created := e.createWithInit("web", v1.RestartPolicyAlways, v1.PodRunning, sidecar("proxy", "envoy"), sidecar("log", "fluent"))
		st := e.runtimeStatus(created)
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
		want := map[string]time.Duration{"app": 2 * time.Second, "log": 4 * time.Second, "proxy": 6 * time.Second}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("finished after the delete (-want +got):\n%s", diff)
		}
	})
}
