package metrics_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/metrics"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// TestSeries: the hooks update the kubelet's series with the values they are given.
func TestSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.New(reg); err == nil {
		t.Error("registering twice: no error")
	}
	h := m.Hooks()
	seen := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns",
		Annotations: map[string]string{"kubernetes.io/config.seen": seen.Format("2006-01-02T15:04:05.000000000Z07:00")}}}
	h.PodWorkers.SyncStarted(podworker.Sync{Pod: pod, WorkType: podworker.SyncPod, UpdateType: podworker.SyncPodCreate,
		Started: seen.Add(300 * time.Millisecond)})
	h.PodWorkers.SyncStarted(podworker.Sync{Pod: pod, WorkType: podworker.SyncPod, UpdateType: podworker.SyncPodSync,
		Started: seen.Add(time.Hour)}) // not a create: not a start
	h.PodWorkers.SyncFinished(podworker.Sync{Pod: pod, WorkType: podworker.SyncPod, UpdateType: podworker.SyncPodCreate, Duration: 2 * time.Second})
	h.PodWorkers.SyncFinished(podworker.Sync{Pod: pod, WorkType: podworker.TerminatingPod, Duration: 3 * time.Second})
	h.PodWorkers.SyncFinished(podworker.Sync{Pod: pod, WorkType: podworker.TerminatedPod, Duration: time.Millisecond})
	h.PLEG.Relisted(pleg.Relist{Duration: 20 * time.Millisecond, Interval: 1500 * time.Millisecond, LastSeen: seen, Healthy: true})
	h.PLEG.EventsDropped(3)
	h.StatusSyncLatency(70 * time.Millisecond)
	h.Housekeeping(node.HousekeepingRound{DesiredPods: 2, DesiredStaticPods: 1, OrphansKilled: 1, Restarted: 1, RestartedStatic: 2,
		Working: []node.WorkingPods{{Lifecycle: "sync", Config: "desired", Static: "", Count: 2},
			{Lifecycle: "terminating", Config: "runtime_only", Static: "unknown", Count: 1}}})

	if n := testutil.CollectAndCount(m.PodWorkerDuration); n != 3 {
		t.Errorf("%d pod worker duration series, want 3", n)
	}
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"pleg_last_seen_seconds", testutil.ToFloat64(m.PLEGLastSeen), float64(seen.Unix())},
		{"pleg_discard_events", testutil.ToFloat64(m.PLEGDiscardEvents), 3},
		{"orphaned_runtime_pods_total", testutil.ToFloat64(m.OrphanedRuntimePods), 1},
		{"restarted_pods_total static", testutil.ToFloat64(m.RestartedPods.WithLabelValues("true")), 2},
		{"restarted_pods_total", testutil.ToFloat64(m.RestartedPods.WithLabelValues("")), 1},
		{"desired_pods", testutil.ToFloat64(m.DesiredPods.WithLabelValues("")), 2},
		{"desired_pods static", testutil.ToFloat64(m.DesiredPods.WithLabelValues("true")), 1},
		{"working_pods", testutil.ToFloat64(m.WorkingPods.WithLabelValues("sync", "desired", "")), 2},
		{"working_pods runtime_only", testutil.ToFloat64(m.WorkingPods.WithLabelValues("terminating", "runtime_only", "unknown")), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// The histograms, in the exposition format: names, labels, buckets, sums.
	want := `
# HELP kubelet_pod_worker_start_duration_seconds Duration in seconds from kubelet seeing a pod to starting a worker.
# TYPE kubelet_pod_worker_start_duration_seconds histogram
kubelet_pod_worker_start_duration_seconds_bucket{le="0.005"} 0
kubelet_pod_worker_start_duration_seconds_bucket{le="0.01"} 0
kubelet_pod_worker_start_duration_seconds_bucket{le="0.025"} 0
kubelet_pod_worker_start_duration_seconds_bucket{le="0.05"} 0
kubelet_pod_worker_start_duration_seconds_bucket{le="0.1"} 0
kubelet_pod_worker_start_duration_seconds_bucket{le="0.25"} 0
kubelet_pod_worker_start_duration_seconds_bucket{le="0.5"} 1
kubelet_pod_worker_start_duration_seconds_bucket{le="1"} 1
kubelet_pod_worker_start_duration_seconds_bucket{le="2.5"} 1
kubelet_pod_worker_start_duration_seconds_bucket{le="5"} 1
kubelet_pod_worker_start_duration_seconds_bucket{le="10"} 1
kubelet_pod_worker_start_duration_seconds_bucket{le="+Inf"} 1
kubelet_pod_worker_start_duration_seconds_sum 0.3
kubelet_pod_worker_start_duration_seconds_count 1
# HELP kubelet_pod_status_sync_duration_seconds Duration in seconds to sync a pod status update. Measures time from detection of a change to pod status until the API is successfully updated for that pod, even if multiple intevening changes to pod status occur.
# TYPE kubelet_pod_status_sync_duration_seconds histogram
kubelet_pod_status_sync_duration_seconds_bucket{le="0.01"} 0
kubelet_pod_status_sync_duration_seconds_bucket{le="0.05"} 0
kubelet_pod_status_sync_duration_seconds_bucket{le="0.1"} 1
kubelet_pod_status_sync_duration_seconds_bucket{le="0.5"} 1
kubelet_pod_status_sync_duration_seconds_bucket{le="1"} 1
kubelet_pod_status_sync_duration_seconds_bucket{le="5"} 1
kubelet_pod_status_sync_duration_seconds_bucket{le="10"} 1
kubelet_pod_status_sync_duration_seconds_bucket{le="20"} 1
kubelet_pod_status_sync_duration_seconds_bucket{le="30"} 1
kubelet_pod_status_sync_duration_seconds_bucket{le="45"} 1
kubelet_pod_status_sync_duration_seconds_bucket{le="60"} 1
kubelet_pod_status_sync_duration_seconds_bucket{le="+Inf"} 1
kubelet_pod_status_sync_duration_seconds_sum 0.07
kubelet_pod_status_sync_duration_seconds_count 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"kubelet_pod_worker_start_duration_seconds", "kubelet_pod_status_sync_duration_seconds"); err != nil {
		t.Error(err)
	}
	for _, c := range []struct {
		labels string
		sum    float64
	}{{"create", 2}, {"kill", 3}, {"terminated", 0.001}} {
		if got := sampleSum(t, reg, "kubelet_pod_worker_duration_seconds", c.labels); got != c.sum {
			t.Errorf("pod_worker_duration_seconds{operation_type=%q} sum = %v, want %v", c.labels, got, c.sum)
		}
	}
	if got := sampleSum(t, reg, "kubelet_pleg_relist_interval_seconds", ""); got != 1.5 {
		t.Errorf("relist interval sum = %v", got)
	}
	if got := sampleSum(t, reg, "kubelet_pleg_relist_duration_seconds", ""); got != 0.02 {
		t.Errorf("relist duration sum = %v", got)
	}
}

// sampleSum returns the sample sum of a histogram (with operation_type = label, if set).
func sampleSum(t *testing.T, g prometheus.Gatherer, name, label string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" || (len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == label) {
				return m.GetHistogram().GetSampleSum()
			}
		}
	}
	t.Fatalf("no %s{%s}", name, label)
	return 0
}

// TestAgent: a node agent wired to the metrics runs a pod's lifecycle; every series the
// kubelet has moves.
func TestAgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := metrics.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		server := statusmgrtest.NewFakeAPI()
		a, err := agent.New(agent.Config{Server: server, Runtime: plegtest.NewRuntime(nil), Metrics: m.Hooks(),
			Containers: agent.ContainerBehaviour{StopDelay: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- a.Run(ctx) }()
		g := int64(30)
		if _, err := server.Create(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: v1.PodSpec{NodeName: agent.DefaultNodeName, TerminationGracePeriodSeconds: &g,
				Containers: []v1.Container{{Name: "app", Image: "busybox"}}}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if got := testutil.ToFloat64(m.WorkingPods.WithLabelValues("sync", "desired", "")); got != 1 {
			t.Errorf("working pods (sync, desired) = %v, want 1", got)
		}
		if got := testutil.ToFloat64(m.DesiredPods.WithLabelValues("")); got != 1 {
			t.Errorf("desired pods = %v, want 1", got)
		}
		if err := server.Delete("default", "web", nil); err != nil {
			t.Fatal(err)
		}
		if err := server.WaitForPods(ctx, func(p map[types.NamespacedName]*v1.Pod) bool { return len(p) == 0 }); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"kubelet_pod_worker_duration_seconds", "kubelet_pod_worker_start_duration_seconds",
			"kubelet_pleg_relist_duration_seconds", "kubelet_pleg_relist_interval_seconds", "kubelet_pod_status_sync_duration_seconds"} {
			if n, err := testutil.GatherAndCount(reg, name); err != nil || n == 0 {
				t.Errorf("%s: %d series, %v", name, n, err)
			}
		}
		if got := testutil.ToFloat64(m.WorkingPods.WithLabelValues("sync", "desired", "")); got != 0 {
			t.Errorf("working pods after the delete = %v, want 0", got)
		}
		if testutil.ToFloat64(m.PLEGLastSeen) == 0 {
			t.Error("pleg_last_seen_seconds not set")
		}
	})
}

// TestHealthz: /healthz is 500 while the relister is unhealthy (before its first relist,
// and once a relist is overdue), 200 otherwise; /metrics serves the series.
func TestHealthz(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rl, err := pleg.New(pleg.Config{Runtime: plegtest.NewRuntime(clk), Cache: pleg.NewCache(), Clock: clk, RelistThreshold: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(metrics.Handler(reg, rl.Healthy))
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 1<<16)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, b.String()
	}
	if code, body := get("/healthz"); code != http.StatusInternalServerError || !strings.Contains(body, "no successful relist") {
		t.Errorf("before the first relist: %d %q", code, body)
	}
	if err := rl.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, body := get("/healthz"); code != http.StatusOK || body != "ok" {
		t.Errorf("after a relist: %d %q", code, body)
	}
	clk.Step(2 * time.Minute)
	if code, _ := get("/healthz"); code != http.StatusInternalServerError {
		t.Errorf("relist overdue: %d, want 500", code)
	}
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, "kubelet_pleg_discard_events 0") {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
}
