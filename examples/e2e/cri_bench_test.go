package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/pleg"
)

// EnvCRIBench enables TestE2ECRIMeasure (it takes about a minute).
const EnvCRIBench = "PODLIFE_E2E_CRI_BENCH"

// TestE2ECRIMeasure creates 50 pods on the agent over real containerd, waits until every
// one is Running and Ready on the server, deletes them all (their containers exit on
// SIGTERM) and waits until every object is gone and housekeeping removed the containers.
// It logs time to Running and delete-to-gone (p50, p99, max), pods/s and CRI calls per pod
// (docs/PERFORMANCE.md, "W8": TestE2EW8SideBySide compares it with the kubelet). Run it with
//
//	PODLIFE_E2E_CRI_BENCH=1 hack/e2e.sh -v -run CRIMeasure
func TestE2ECRIMeasure(t *testing.T) {
	if os.Getenv(EnvCRIBench) == "" {
		t.Skipf("%s is not set", EnvCRIBench)
	}
	admin, nodeClient, ep, image := criEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	const n = 50
	rt := newCRI(t, ep)
	run := fmt.Sprintf("m%d", time.Now().UnixNano()%1e6)

	w := watchBench(t, ctx, admin, "bench="+run, nil)
	a := startCRIAgent(t, nodeClient, rt)
	base := rt.Stats()
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = criPod(t, "bench", image, v1.RestartPolicyAlways, 30)
		pods[i].Labels = map[string]string{"bench": run}
	}
	t0 := time.Now()
	created := createAtOnce(t, ctx, admin, pods)
	removeLeftovers(t, rt, pods...)
	uids := keys(created)
	t1 := w.wait(t, ctx, uids, false)
	afterCreate := rt.Stats()

	deleted := deleteAtOnce(t, ctx, admin, pods)
	t2 := w.wait(t, ctx, uids, true)
	// Housekeeping removes the containers and sandboxes of the forgotten pods.
	poll := newCRI(t, ep) // its calls do not count
	for _, p := range pods {
		waitRuntime(t, ctx, poll, p.UID, "leftovers removed", func(st *pleg.PodStatus) bool {
			return len(st.ContainerStatuses)+len(st.SandboxStatuses) == 0
		})
	}
	t3 := time.Now()
	final := rt.Stats()

	toRunning, toGone := w.since(created, false), w.since(deleted, true)
	createCalls, createBy := callsPerPod(diffCalls(base, afterCreate), n, nil)
	allCalls, allBy := callsPerPod(diffCalls(base, final), n, nil)
	t.Logf("CRI %s, %d pods: time to Running p50 %v p99 %v max %v; all Running after %v (%.1f pods/s)",
		rt.RuntimeVersion(), n, pct(toRunning, 50), pct(toRunning, 99), pct(toRunning, 100), t1.Sub(t0).Round(time.Millisecond), n/t1.Sub(t0).Seconds())
	t.Logf("delete to gone p50 %v p99 %v max %v; all gone after %v (%.1f pods/s); leftovers removed %v later",
		pct(toGone, 50), pct(toGone, 99), pct(toGone, 100), t2.Sub(t1).Round(time.Millisecond), n/t2.Sub(t1).Seconds(), t3.Sub(t2).Round(time.Millisecond))
	t.Logf("CRI calls per pod up to Running: %.1f (%s)", createCalls, createBy)
	t.Logf("CRI calls per pod, whole lifecycle (relists included): %.1f (%s)", allCalls, allBy)
	spent := rt.Spent()
	var lat []string
	for _, m := range []string{"RunPodSandbox", "CreateContainer", "StartContainer", "StopContainer", "StopPodSandbox", "RemovePodSandbox", "ListPodSandbox", "ListContainers"} {
		if c := final[m]; c > 0 {
			lat = append(lat, fmt.Sprintf("%s %v", m, (spent[m]/time.Duration(c)).Round(time.Millisecond)))
		}
	}
	t.Logf("mean CRI call latency: %s", strings.Join(lat, ", "))
	a.mu.Lock()
	var errs []string
	for _, s := range a.steps {
		if s.Kind == agent.KindError {
			errs = append(errs, s.String())
		}
	}
	a.mu.Unlock()
	t.Logf("agent errors: %d", len(errs))
	for _, e := range errs[:min(len(errs), 10)] {
		t.Log(e)
	}
}
