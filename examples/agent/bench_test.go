package agent

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// BenchmarkNodeAgent runs N pods through creation and graceful deletion on the in-memory
// API server and runtime (real clock, 1 s relist, containers that stop at once) and reports
// pods/s over the whole lifecycle, the peak heap, API calls per pod, and the latency from
// "every container stopped" (SyncTerminatingPod done) to "final delete issued".
func BenchmarkNodeAgent(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			for range b.N {
				benchLifecycle(b, n)
			}
		})
	}
}

func benchLifecycle(b *testing.B, n int) {
	var (
		mu      sync.Mutex
		stopped = make(map[types.UID]time.Time, n)
		lat     = make([]time.Duration, 0, n)
	)
	server, rt := statusmgrtest.NewFakeAPI(), plegtest.NewRuntime(nil)
	observer := func(s Step) {
		switch {
		case s.Kind == KindWork && s.Detail == "SyncTerminatingPod done: every container stopped":
			mu.Lock()
			stopped[s.UID] = time.Now()
			mu.Unlock()
		case s.Kind == KindDelete:
			mu.Lock()
			if t, ok := stopped[s.UID]; ok {
				lat = append(lat, time.Since(t))
			}
			mu.Unlock()
		}
	}
	a, err := New(Config{Server: server, Runtime: rt, Observer: observer})
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	start := time.Now()
	grace := int64(30)
	for i := range n {
		_, err := server.Create(&v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("busybox-%d", i), Namespace: "default"},
			Spec: v1.PodSpec{NodeName: DefaultNodeName, RestartPolicy: v1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace,
				Containers: []v1.Container{{Name: "busybox", Image: "busybox"}}},
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	running := func(p map[types.NamespacedName]*v1.Pod) bool {
		for _, pod := range p {
			if pod.Status.Phase != v1.PodRunning {
				return false
			}
		}
		return true
	}
	if err := server.WaitForPods(ctx, running); err != nil {
		b.Fatal(err)
	}
	var peak runtime.MemStats
	runtime.ReadMemStats(&peak)
	created := time.Since(start)
	for i := range n {
		if err := server.Delete("default", fmt.Sprintf("busybox-%d", i), nil); err != nil {
			b.Fatal(err)
		}
	}
	if err := server.WaitForPods(ctx, func(p map[types.NamespacedName]*v1.Pod) bool { return len(p) == 0 }); err != nil {
		b.Fatal(err)
	}
	total := time.Since(start)
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	calls := server.Counts()
	if calls.Deletes != n {
		b.Fatalf("final deletes = %d, want %d", calls.Deletes, n)
	}
	mu.Lock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) != n {
		b.Fatalf("%d stop-to-delete latencies for %d pods", len(lat), n)
	}
	b.ReportMetric(float64(n)/total.Seconds(), "pods/s")
	b.ReportMetric(created.Seconds(), "create-s")
	b.ReportMetric((total - created).Seconds(), "delete-s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "stop-to-delete-p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "stop-to-delete-p99-ms")
	b.ReportMetric(float64(peak.HeapAlloc-min(base.HeapAlloc, peak.HeapAlloc))/float64(n), "heap-B/pod")
	b.ReportMetric(float64(calls.Gets)/float64(n), "get/pod")
	b.ReportMetric(float64(calls.Patches)/float64(n), "patch/pod")
	mu.Unlock()
}
