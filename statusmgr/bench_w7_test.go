package statusmgr_test

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/internal/seedpod"
	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// slowAPI is a StatusPatcher over a FakeAPI whose every call takes a round trip of rtt
// (waited on the clock) while slow is set, and which records when each pod's final delete
// returned.
type slowAPI struct {
	api  *statusmgrtest.FakeAPI
	clk  clock.Clock
	rtt  time.Duration
	slow atomic.Bool

	mu      sync.Mutex
	deleted map[string]time.Time
}

func (s *slowAPI) wait() {
	if s.slow.Load() {
		s.clk.Sleep(s.rtt)
	}
}

func (s *slowAPI) GetPod(ctx context.Context, ns, name string) (*v1.Pod, error) {
	s.wait()
	return s.api.GetPod(ctx, ns, name)
}

func (s *slowAPI) PatchPodStatus(ctx context.Context, ns, name string, patch []byte) (*v1.Pod, error) {
	s.wait()
	return s.api.PatchPodStatus(ctx, ns, name, patch)
}

func (s *slowAPI) DeletePod(ctx context.Context, ns, name string, uid types.UID) error {
	s.wait()
	err := s.api.DeletePod(ctx, ns, name, uid)
	if err == nil {
		now := s.clk.Now()
		s.mu.Lock()
		s.deleted[name] = now
		s.mu.Unlock()
	}
	return err
}

// BenchmarkW7StatusWrites is BENCHMARKS.md's W7: 3,000 running pods (their Running status
// already on the server) are deleted at once; the node agent calls TerminatePod for each
// ("containers stopped") and the API answers every call after a 1 ms round trip (real
// time, on the real clock), with the default MaxConcurrentWrites. Reported: the time from each pod's TerminatePod to its final
// delete returning, p50 / p99 / max, and the wall time until every pod is deleted. Every
// pod must be deleted exactly once, in a terminal phase.
func BenchmarkW7StatusWrites(b *testing.B) {
	benchW7(b, 0)
}

// BenchmarkW7StatusWrites16 is W7 with MaxConcurrentWrites 16 (the default before the
// finished pods got their own queue).
func BenchmarkW7StatusWrites16(b *testing.B) {
	benchW7(b, 16)
}

func benchW7(b *testing.B, maxWrites int) {
	var lat []time.Duration
	var wall time.Duration
	b.ReportAllocs()
	for range b.N {
		lat, wall = runW7(b, 3000, maxWrites, clock.RealClock{})
	}
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(1), "max-ms")
	b.ReportMetric(float64(wall)/float64(time.Millisecond), "wall-ms")
}

// runW7 runs W7 once and returns the sorted latencies from TerminatePod to the final
// delete, and the time from the first TerminatePod until every pod was deleted. Only the terminations are timed (a benchmark's timer runs from the first TerminatePod
// until every pod is deleted).
func runW7(tb testing.TB, pods, maxWrites int, clk clock.Clock) ([]time.Duration, time.Duration) {
	b, _ := tb.(*testing.B)
	if b != nil {
		b.StopTimer()
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	seeds := make([]*v1.Pod, pods)
	deleting := make([]*v1.Pod, pods)
	for i := range seeds {
		seeds[i] = seedpod.Merged(i, start)
		d := seeds[i].DeepCopy()
		ts := metav1.NewTime(start.Add(time.Hour))
		d.DeletionTimestamp = &ts
		d.DeletionGracePeriodSeconds = ptrTo(int64(30))
		deleting[i] = d
	}
	api := statusmgrtest.NewFakeAPI(seeds...)
	asServer(tb, api, seeds)
	asServer(tb, api, deleting)
	slow := &slowAPI{api: api, clk: clk, rtt: time.Millisecond, deleted: make(map[string]time.Time, pods)}
	m, err := statusmgr.New(statusmgr.Config{Patcher: slow, Clock: clk, MaxConcurrentWrites: maxWrites})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	// Untimed: every pod Running on the server, the manager holding its copy.
	for i, p := range seeds {
		if err := m.SetPodStatus(p, seedpod.W4Status(p, 2, start)); err != nil {
			tb.Fatal(i, err)
		}
	}
	if err := api.WaitFor(ctx, func(c statusmgrtest.Counts) bool { return c.Patches == pods }); err != nil {
		tb.Fatal(err)
	}
	if err := m.Sync(ctx); err != nil { // every answer recorded: the copies are the server's
		tb.Fatal(err)
	}
	for _, d := range deleting {
		if !api.MarkDeleted(d.Namespace, d.Name, *d.DeletionTimestamp, 30) {
			tb.Fatalf("pod %s missing", d.Name)
		}
	}
	slow.slow.Store(true)
	terminated := make([]time.Time, pods)
	if b != nil {
		b.StartTimer()
	}

	t0 := clk.Now()
	for i, d := range deleting {
		terminated[i] = clk.Now()
		if err := m.TerminatePod(d); err != nil {
			tb.Fatal(err)
		}
	}
	if err := api.WaitFor(ctx, func(c statusmgrtest.Counts) bool { return c.Deleted == pods }); err != nil {
		tb.Fatal(err)
	}
	wall := clk.Since(t0)

	if b != nil {
		b.StopTimer()
	}
	cancel()
	if err := <-done; err != nil {
		tb.Fatal(err)
	}
	c := api.Counts()
	if api.Len() != 0 || c.Deletes != pods {
		tb.Fatalf("left %d pods, %d deletes", api.Len(), c.Deletes)
	}
	for _, p := range api.DeletedPods() {
		if p.Status.Phase != v1.PodFailed {
			tb.Fatalf("pod %s deleted in phase %s", p.Name, p.Status.Phase)
		}
	}
	lat := make([]time.Duration, 0, pods)
	for i, d := range deleting {
		at, ok := slow.deleted[d.Name]
		if !ok {
			tb.Fatalf("pod %s: no final delete", d.Name)
		}
		lat = append(lat, at.Sub(terminated[i]))
	}
	slices.Sort(lat)
	if b != nil {
		b.StartTimer()
	}
	return lat, wall
}

var w7Pods = flag.Int("w7pods", 300, "pods of TestW7VirtualTime (BENCHMARKS.md's W7: 3000)")

// TestW7VirtualTime runs W7 in a synctest bubble: virtual time, so the figures are the
// writers' scheduling alone (no CPU time counts; the in-memory API server's strategic
// merges are free). The API answers every call after 1 ms; the pods' Running status is on
// the server before they are terminated, so each needs two calls (the terminal status,
// the delete). With N writers every slot must stay busy: the last pod is deleted after
// 2 ms · ⌈pods/N⌉. Run with -v ./statusmgr/ -args -w7pods=3000 for BENCHMARKS.md's
// figures.
func TestW7VirtualTime(t *testing.T) {
	for _, n := range []int{1, 16, 0} {
		t.Run(fmt.Sprintf("MaxConcurrentWrites=%d", n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lat, _ := runW7(t, *w7Pods, n, clock.RealClock{})
				bound := n
				if bound == 0 {
					bound = statusmgr.DefaultMaxConcurrentWrites
				}
				q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
				t.Logf("%d pods, %d writers: TerminatePod -> final delete p50 %v, p99 %v, max %v (virtual time)",
					len(lat), bound, q(0.5), q(0.99), q(1))
				if ideal := 2 * time.Millisecond * time.Duration((len(lat)+bound-1)/bound); q(1) > ideal+time.Millisecond {
					t.Errorf("last pod deleted after %v, want about %v (every writer busy)", q(1), ideal)
				}
			})
		})
	}
}
