package podworker_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/internal/seedpod"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/podworker"
)

// seenAt is the first-seen time the config merge stamped on the benchmarks' pods.
func seenAt() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// countdown closes done when it has been hit n times.
type countdown struct {
	left atomic.Int64
	done chan struct{}
}

func newCountdown(n int) *countdown {
	c := &countdown{done: make(chan struct{})}
	c.left.Store(int64(n))
	return c
}

func (c *countdown) hit() {
	if c.left.Add(-1) == 0 {
		close(c.done)
	}
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapNow() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// BenchmarkW2 is BENCHMARKS.md's W2: 10,000 pods created, synced, deleted (grace 30),
// terminated, finished and forgotten, with a PodSyncer and a status cache that answer at
// once. Reported per run: pods/s, peak goroutines, retained heap per known pod once all
// are finished, heap left per pod after SyncKnownPods forgot them, allocs per pod.
func BenchmarkW2(b *testing.B) {
	for _, bound := range []int{0, 64} {
		name := "unbounded"
		if bound > 0 {
			name = fmt.Sprintf("max=%d", bound)
		}
		b.Run(name, func(b *testing.B) { benchW2(b, 10000, bound, false) })
	}
}

// BenchmarkW2RealCache is W2 with the real pleg.Cache filled by a pleg.Relister relisting
// every second: a transition must not wait for a relist (the Runner asks the relister to
// re-inspect the pod before the first status read of a new stage).
func BenchmarkW2RealCache(b *testing.B) {
	b.Run("max=64", func(b *testing.B) { benchW2(b, 10000, 64, true) })
}

func benchW2(b *testing.B, n, bound int, realCache bool) {
	creates := make([]*v1.Pod, n)
	deletes := make([]*v1.Pod, n)
	for i := range n {
		creates[i] = seedpod.Merged(i, seenAt())
		d := creates[i].DeepCopy()
		ts := metav1.NewTime(time.Now())
		g := int64(30)
		d.DeletionTimestamp, d.DeletionGracePeriodSeconds = &ts, &g
		deletes[i] = d
	}
	empty := &pleg.PodStatus{}
	index := make(map[types.UID]int, n)
	for i, p := range creates {
		index[p.UID] = i
	}
	var total, cpu time.Duration
	var peakG atomic.Int64
	var heapPerPod, leftPerPod, allocsPerPod float64
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		synced, finished := newCountdown(n), newCountdown(n)
		var syncs, terminating, terminated atomic.Int64
		first := make([]atomic.Bool, n)
		sample := func() {
			if g := int64(runtime.NumGoroutine()); g > peakG.Load() {
				peakG.Store(g)
			}
		}
		syncer := podworker.PodSyncerFuncs{
			SyncPodFunc: func(_ context.Context, _ podworker.SyncPodType, pod, _ *v1.Pod, _ *pleg.PodStatus) (bool, error) {
				syncs.Add(1)
				sample()
				if !first[index[pod.UID]].Swap(true) {
					synced.hit()
				}
				return false, nil
			},
			SyncTerminatingPodFunc: func(_ context.Context, _ *v1.Pod, _ *pleg.PodStatus, g int64, _ func(*v1.PodStatus)) error {
				if g != 30 {
					b.Errorf("grace %d, want 30", g)
				}
				terminating.Add(1)
				sample()
				return nil
			},
			SyncTerminatedPodFunc: func(context.Context, *v1.Pod, *pleg.PodStatus) error {
				terminated.Add(1)
				finished.hit()
				return nil
			},
		}
		cfg := podworker.Config{
			Syncer: syncer,
			View: podworker.RuntimeViewFuncs{
				StatusAfterFunc: func(context.Context, types.UID, time.Time, bool) (*pleg.PodStatus, error) { return empty, nil },
				LastStatusFunc:  func(types.UID) (*pleg.PodStatus, error) { return empty, nil },
			},
			MaxConcurrentSyncs: bound,
		}
		ctx, cancel := context.WithCancel(context.Background())
		relisted := make(chan struct{})
		if realCache {
			cache := pleg.NewCache()
			rel, err := pleg.New(pleg.Config{Runtime: pleg.RuntimeServiceFuncs{}, Cache: cache, RelistPeriod: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			cfg.View = rel
			go func() { defer close(relisted); rel.Run(ctx) }()
		} else {
			close(relisted)
		}
		r, err := podworker.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		stopped := make(chan struct{})
		go func() { defer close(stopped); _ = r.Run(ctx) }()
		base := heapNow()
		m0 := mallocs()
		b.StartTimer()

		c0 := cpuTime()
		start := time.Now()
		for _, p := range creates {
			if err := r.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: p}); err != nil {
				b.Fatal(err)
			}
		}
		<-synced.done
		for _, p := range deletes {
			if err := r.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: p}); err != nil {
				b.Fatal(err)
			}
		}
		<-finished.done
		phase := time.Since(start)
		cpu += cpuTime() - c0

		b.StopTimer()
		heapPerPod = float64(heapNow()-base) / float64(n)
		if r.Len() != n {
			b.Fatalf("known pods %d, want %d", r.Len(), n)
		}
		b.StartTimer()

		c0 = cpuTime()
		start = time.Now()
		if known := r.SyncKnownPods(nil); len(known) != 0 {
			b.Fatalf("SyncKnownPods left %d pods", len(known))
		}
		total += phase + time.Since(start)
		cpu += cpuTime() - c0

		b.StopTimer()
		allocsPerPod = float64(mallocs()-m0) / float64(n)
		if r.Len() != 0 {
			b.Fatalf("known pods %d after forgetting, want 0", r.Len())
		}
		if got := terminating.Load(); got != int64(n) {
			b.Fatalf("SyncTerminatingPod ran %d times, want %d", got, n)
		}
		if got := terminated.Load(); got != int64(n) {
			b.Fatalf("SyncTerminatedPod ran %d times, want %d", got, n)
		}
		if got := syncs.Load(); got < int64(n) {
			b.Fatalf("SyncPod ran %d times, want >= %d", got, n)
		}
		cancel()
		<-stopped
		<-relisted
		left := float64(heapNow()) - float64(base)
		leftPerPod = max(left, 0) / float64(n)
		b.StartTimer()
	}
	b.StopTimer()
	iters := float64(b.N)
	b.ReportMetric(float64(n)*iters/total.Seconds(), "pods/s")
	b.ReportMetric(float64(total.Milliseconds())/iters, "wall-ms")
	b.ReportMetric(float64(cpu.Milliseconds())/iters, "cpu-ms")
	b.ReportMetric(float64(peakG.Load()), "peak-goroutines")
	b.ReportMetric(heapPerPod, "heap-B/pod")
	b.ReportMetric(leftPerPod, "left-B/pod")
	b.ReportMetric(allocsPerPod, "allocs/pod")
}

// BenchmarkW2Hot is BENCHMARKS.md's W2-hot: one pod receives 100,000 UpdatePod calls
// while each SyncPod takes 1 ms. Reported: SyncPod calls and wall time (ms) until the
// last update was synced.
func BenchmarkW2Hot(b *testing.B) {
	const updates = 100000
	p := seedpod.Merged(0, seenAt())
	last := p.DeepCopy()
	var calls atomic.Int64
	var wall time.Duration
	for b.Loop() {
		calls.Store(0)
		done := make(chan struct{})
		syncer := podworker.PodSyncerFuncs{
			SyncPodFunc: func(ctx context.Context, _ podworker.SyncPodType, pod, _ *v1.Pod, _ *pleg.PodStatus) (bool, error) {
				calls.Add(1)
				t := time.NewTimer(time.Millisecond)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
					return false, ctx.Err()
				}
				if pod == last {
					close(done)
				}
				return false, nil
			},
		}
		r, err := podworker.New(podworker.Config{Syncer: syncer})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { defer close(stopped); _ = r.Run(ctx) }()

		start := time.Now()
		if err := r.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: p}); err != nil {
			b.Fatal(err)
		}
		for range updates - 2 {
			if err := r.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: p}); err != nil {
				b.Fatal(err)
			}
		}
		if err := r.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: last}); err != nil {
			b.Fatal(err)
		}
		<-done
		wall += time.Since(start)
		cancel()
		<-stopped
	}
	b.ReportMetric(float64(calls.Load()), "syncpod-calls")
	b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "wall-ms")
}
