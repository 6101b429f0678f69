package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/pleg"
)

// EnvCRIBench enables TestE2ECRIMeasure (it takes about a minute).
const EnvCRIBench = "PODLIFE_E2E_CRI_BENCH"

// TestE2ECRIMeasure creates 50 pods on the agent over real containerd, waits until every
// one is Running and Ready on the server, deletes them all (their containers exit on
// SIGTERM) and waits until every object is gone and housekeeping removed the containers.
// It logs time to Running and delete-to-gone (p50, p99, max), pods/s and CRI calls per pod
// (docs/PERFORMANCE.md, "CRI"). Run it with
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

	var mu sync.Mutex
	running, gone := map[types.UID]time.Time{}, map[types.UID]time.Time{}
	changed := make(chan struct{}, 1)
	w, err := admin.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{LabelSelector: "bench=" + run})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1.Pod)
			if !ok {
				continue
			}
			now := time.Now()
			mu.Lock()
			if _, seen := running[p.UID]; !seen && p.Status.Phase == v1.PodRunning && ready(p) {
				running[p.UID] = now
			}
			if ev.Type == watch.Deleted {
				gone[p.UID] = now
			}
			mu.Unlock()
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}()
	waitCount := func(what string, m map[types.UID]time.Time) {
		t.Helper()
		for {
			mu.Lock()
			k := len(m)
			mu.Unlock()
			if k == n {
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatalf("waiting for %s: %d of %d", what, k, n)
			}
		}
	}

	a := startCRIAgent(t, nodeClient, rt)
	base := rt.Stats()
	pods := make([]*v1.Pod, n)
	created := map[types.UID]time.Time{}
	t0 := time.Now()
	for i := range pods {
		p := criPod(t, "bench", image, v1.RestartPolicyAlways, 30)
		p.Labels = map[string]string{"bench": run}
		created0 := time.Now()
		pods[i] = createPod(t, ctx, admin, p)
		created[pods[i].UID] = created0
	}
	removeLeftovers(t, rt, pods...)
	waitCount("every pod Running", running)
	t1 := time.Now()
	afterCreate := rt.Stats()

	deleted := map[types.UID]time.Time{}
	for _, p := range pods {
		deleted[p.UID] = time.Now()
		deletePod(t, ctx, admin, p.Name, nil)
	}
	waitCount("every pod gone", gone)
	t2 := time.Now()
	// Housekeeping removes the containers and sandboxes of the forgotten pods.
	poll := newCRI(t, ep) // its calls do not count
	for _, p := range pods {
		waitRuntime(t, ctx, poll, p.UID, "leftovers removed", func(st *pleg.PodStatus) bool {
			return len(st.ContainerStatuses)+len(st.SandboxStatuses) == 0
		})
	}
	t3 := time.Now()
	final := rt.Stats()

	var toRunning, toGone []time.Duration
	for _, p := range pods {
		toRunning = append(toRunning, running[p.UID].Sub(created[p.UID]))
		toGone = append(toGone, gone[p.UID].Sub(deleted[p.UID]))
	}
	perPod := func(a, b map[string]int64) (float64, string) {
		var total int64
		diff := map[string]int64{}
		for k, v := range b {
			if d := v - a[k]; d > 0 {
				diff[k] = d
				total += d
			}
		}
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(diff)) {
			parts = append(parts, fmt.Sprintf("%s %.1f", k, float64(diff[k])/n))
		}
		return float64(total) / n, strings.Join(parts, ", ")
	}
	createCalls, createBy := perPod(base, afterCreate)
	allCalls, allBy := perPod(base, final)
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

// pct is the p-th percentile (nearest rank) of ds, rounded to milliseconds.
func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (p*len(s)+99)/100 - 1
	i = max(0, min(i, len(s)-1))
	return s[i].Round(time.Millisecond)
}
