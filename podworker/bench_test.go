package podworker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/internal/seedpod"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
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

// BenchmarkW2 is BENCHMARKS.md's W2: 10,000 pods created, synced, deleted (grace 30),
// terminated, finished and forgotten, with a PodSyncer and a runtime view that answer at
// once. Every run is a fresh process (see runW2) with the default configuration, and
// with the bounds to compare: MaxConcurrentSyncs Unbounded (the kubelet's rule) and 64;
// on the Runner's engine, then on its plain twin ("plain/...").
// Reported per run: pods/s, wall and CPU time, peak goroutines and peak heap (garbage
// included) over the whole run, heap retained per known pod once all are finished, heap
// left per pod after they were forgotten, allocations (objects and bytes) per pod, and
// the goroutines started.
func BenchmarkW2(b *testing.B) {
	for _, engine := range podworker.EngineNames {
		for _, tc := range []struct {
			name  string
			bound int
		}{{"default", 0}, {"unbounded", podworker.Unbounded}, {"max=64", 64}} {
			b.Run(w2Name(engine, tc.name), func(b *testing.B) {
				benchW2(b, w2Params{Pods: 10000, Bound: tc.bound, Engine: engine})
			})
		}
	}
}

// w2Name names a W2 sub-benchmark: the bound, after the engine unless it is the one
// Runners use (the first).
func w2Name(engine, bound string) string {
	if engine == podworker.EngineNames[0] {
		return bound
	}
	return engine + "/" + bound
}

// BenchmarkW2RealCache is W2 with the real runtime view: a pleg.Relister (relisting every
// second) over a plegtest runtime that holds the pods, one running container each from
// its first SyncPod until SyncTerminatingPod stops it (SyncTerminatedPod removes it). A
// transition must not wait for a relist. Also reported: the runtime's status calls per pod.
func BenchmarkW2RealCache(b *testing.B) {
	for _, engine := range podworker.EngineNames {
		for _, tc := range []struct {
			name  string
			bound int
		}{{"default", 0}, {"max=64", 64}} {
			b.Run(w2Name(engine, tc.name), func(b *testing.B) {
				benchW2(b, w2Params{Pods: 10000, Bound: tc.bound, RealCache: true, Engine: engine})
			})
		}
	}
}

// w2Params is one W2 run, handed to the child process as JSON.
type w2Params struct {
	Pods      int
	Bound     int
	RealCache bool
	Engine    string // one of podworker.EngineNames
}

// w2Result is what one W2 run measured.
type w2Result struct {
	Wall, CPU      time.Duration
	PeakGoroutines int64
	// PeakHeap is the largest heap (live objects and garbage not yet swept) seen during
	// the run, Retained the live heap once every pod finished, Left the live heap after
	// the runner was stopped; all three above the heap before the run.
	PeakHeap, Retained, Left int64
	// Allocs and AllocBytes count the objects and bytes allocated during the run,
	// Goroutines the goroutines started.
	Allocs, AllocBytes, Goroutines uint64
	StatusCalls                    int
}

// w2Env carries a W2 run's parameters to the child process that runs it.
const w2Env = "PODLIFE_W2_RUN"

// w2ResultPrefix starts the child's line of results.
const w2ResultPrefix = "W2RESULT "

// TestW2Child runs one W2 run for benchW2, in the fresh process benchW2 started; it is
// skipped otherwise.
func TestW2Child(t *testing.T) {
	spec := os.Getenv(w2Env)
	if spec == "" {
		t.Skip("run by BenchmarkW2 in a child process")
	}
	var p w2Params
	if err := json.Unmarshal([]byte(spec), &p); err != nil {
		t.Fatal(err)
	}
	res, err := runW2(p)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(w2ResultPrefix + string(out))
}

// benchW2 runs every iteration of W2 in a fresh process (the test binary running
// TestW2Child), so no run inherits the heap, goroutines or caches of another.
func benchW2(b *testing.B, p w2Params) {
	spec, err := json.Marshal(p)
	if err != nil {
		b.Fatal(err)
	}
	var sum w2Result
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestW2Child$", "-test.count=1")
		cmd.Env = append(os.Environ(), w2Env+"="+string(spec))
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("W2 child: %v\n%s", err, out)
		}
		var res w2Result
		found := false
		for line := range strings.Lines(string(out)) {
			if rest, ok := strings.CutPrefix(line, w2ResultPrefix); ok {
				if err := json.Unmarshal([]byte(rest), &res); err != nil {
					b.Fatal(err)
				}
				found = true
			}
		}
		if !found {
			b.Fatalf("W2 child printed no result:\n%s", out)
		}
		sum.Wall += res.Wall
		sum.CPU += res.CPU
		sum.PeakGoroutines = max(sum.PeakGoroutines, res.PeakGoroutines)
		sum.PeakHeap += res.PeakHeap
		sum.Retained += res.Retained
		sum.Left += res.Left
		sum.Allocs += res.Allocs
		sum.AllocBytes += res.AllocBytes
		sum.Goroutines += res.Goroutines
		sum.StatusCalls += res.StatusCalls
	}
	runs, pods := float64(b.N), float64(p.Pods)
	b.ReportMetric(pods*runs/sum.Wall.Seconds(), "pods/s")
	b.ReportMetric(float64(sum.Wall.Milliseconds())/runs, "wall-ms")
	b.ReportMetric(float64(sum.CPU.Milliseconds())/runs, "cpu-ms")
	b.ReportMetric(float64(sum.PeakGoroutines), "peak-goroutines")
	b.ReportMetric(float64(sum.PeakHeap)/runs/pods, "peak-heap-B/pod")
	b.ReportMetric(float64(sum.Retained)/runs/pods, "heap-B/pod")
	b.ReportMetric(max(float64(sum.Left), 0)/runs/pods, "left-B/pod")
	b.ReportMetric(float64(sum.Allocs)/runs/pods, "allocs/pod")
	b.ReportMetric(float64(sum.AllocBytes)/runs/pods, "alloc-B/pod")
	b.ReportMetric(float64(sum.Goroutines)/runs, "goroutines-started")
	if p.RealCache {
		b.ReportMetric(float64(sum.StatusCalls)/runs/pods, "status-calls/pod")
	}
}

// sampler keeps the peaks of the heap (garbage included) and of the goroutines, read
// from runtime/metrics every sample call.
type sampler struct {
	mu       sync.Mutex
	samples  []metrics.Sample // the heap, then the goroutines
	peakHeap uint64
	peakG    uint64
}

func newSampler() *sampler {
	return &sampler{samples: []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/sched/goroutines:goroutines"},
	}}
}

func (s *sampler) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	metrics.Read(s.samples)
	s.peakHeap = max(s.peakHeap, s.samples[0].Value.Uint64())
	s.peakG = max(s.peakG, s.samples[1].Value.Uint64())
}

// run samples every millisecond until ctx ends.
func (s *sampler) run(ctx context.Context) {
	t := clock.RealClock{}.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			s.sample()
		}
	}
}

// allocated is how many objects and bytes the process allocated on the heap so far.
func allocated() (objects, bytes uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// runW2 is one W2 run in this process: the pods are built first, then the clock runs
// from the first create until every pod is finished (not only its last sync returned:
// until the Runner reports it finished and idle) and forgotten.
func runW2(p w2Params) (w2Result, error) {
	n := p.Pods
	creates := make([]*v1.Pod, n)
	deletes := make([]*v1.Pod, n)
	index := make(map[types.UID]int, n)
	for i := range n {
		creates[i] = seedpod.Merged(i, seenAt())
		d := creates[i].DeepCopy()
		ts := metav1.NewTime(time.Now())
		g := int64(30)
		d.DeletionTimestamp, d.DeletionGracePeriodSeconds = &ts, &g
		deletes[i] = d
		index[creates[i].UID] = i
	}
	var res w2Result
	var errMu sync.Mutex
	var firstErr error
	fail := func(err error) {
		errMu.Lock()
		defer errMu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
	}
	synced, finished := newCountdown(n), newCountdown(n)
	var syncs, terminating, terminated atomic.Int64
	first := make([]atomic.Bool, n)
	var rt *plegtest.Runtime
	if p.RealCache {
		rt = plegtest.NewRuntime(nil)
	}
	syncer := podworker.PodSyncerFuncs{
		SyncPodFunc: func(ctx context.Context, _ podworker.SyncPodType, pod, _ *v1.Pod, _ *pleg.PodStatus) (bool, error) {
			syncs.Add(1)
			if rt != nil {
				spec := plegtest.PodSpec{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace,
					Containers: []plegtest.ContainerSpec{{Name: "app"}}}
				if err := rt.StartPod(ctx, spec); err != nil {
					return false, err
				}
			}
			if !first[index[pod.UID]].Swap(true) {
				synced.hit()
			}
			return false, nil
		},
		SyncTerminatingPodFunc: func(ctx context.Context, pod *v1.Pod, _ *pleg.PodStatus, g int64, _ func(*v1.PodStatus)) error {
			if g != 30 {
				fail(fmt.Errorf("grace %d, want 30", g))
			}
			terminating.Add(1)
			if rt != nil {
				return rt.KillPod(ctx, pod.UID, time.Duration(g)*time.Second)
			}
			return nil
		},
		SyncTerminatedPodFunc: func(_ context.Context, pod *v1.Pod, s *pleg.PodStatus) error {
			if rt != nil {
				if s == nil || s.IsRunning() {
					fail(fmt.Errorf("pod %s: terminated with status %+v, want nothing running", pod.UID, s))
				}
				rt.RemovePod(pod.UID)
			}
			terminated.Add(1)
			finished.hit()
			return nil
		},
	}
	empty := &pleg.PodStatus{}
	cfg := podworker.Config{
		Syncer: syncer,
		View: podworker.RuntimeViewFuncs{
			StatusAfterFunc: func(context.Context, types.UID, time.Time) (*pleg.PodStatus, error) { return empty, nil },
			LastStatusFunc:  func(types.UID) (*pleg.PodStatus, error) { return empty, nil },
		},
		MaxConcurrentSyncs: p.Bound,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var bg sync.WaitGroup
	if rt != nil {
		rel, err := pleg.New(pleg.Config{Runtime: rt, Cache: pleg.NewCache()})
		if err != nil {
			return res, err
		}
		cfg.View = rel
		bg.Go(func() { rel.Run(ctx) })
	}
	r, err := podworker.NewOnEngine(p.Engine)(cfg)
	if err != nil {
		return res, err
	}
	bg.Go(func() { _ = r.Run(ctx) })
	base := int64(heapNow())
	smp := newSampler()
	smp.sample()
	sctx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	bg.Go(func() { smp.run(sctx) })
	var calls0 int
	if rt != nil {
		calls0 = rt.Calls().PodStatus
	}
	a0, b0 := allocated()
	g0 := podworker.GoroutinesCreated()
	c0 := cpuTime()
	start := time.Now()

	for _, pod := range creates {
		if err := r.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: pod}); err != nil {
			return res, err
		}
	}
	<-synced.done
	smp.sample()
	for _, pod := range deletes {
		if err := r.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: pod}); err != nil {
			return res, err
		}
	}
	<-finished.done
	for _, pod := range creates { // until the Runner itself has finished every pod
		for {
			st, ok := r.PodState(pod.UID)
			if !ok {
				return res, fmt.Errorf("pod %s forgotten before SyncKnownPods", pod.UID)
			}
			if st.Stage == podworker.StageFinished && !st.Working {
				break
			}
			runtime.Gosched()
		}
	}
	smp.sample()
	wall := time.Since(start)
	cpu := cpuTime() - c0
	res.Retained = int64(heapNow()) - base
	if r.Len() != n {
		return res, fmt.Errorf("known pods %d, want %d", r.Len(), n)
	}
	c0 = cpuTime()
	start = time.Now()
	if known := r.SyncKnownPods(nil); len(known) != 0 {
		return res, fmt.Errorf("SyncKnownPods left %d pods", len(known))
	}
	res.Wall = wall + time.Since(start)
	res.CPU = cpu + cpuTime() - c0
	smp.sample()
	stopSampling()
	a1, b1 := allocated()
	res.Allocs, res.AllocBytes = a1-a0, b1-b0
	res.Goroutines = podworker.GoroutinesCreated() - g0
	if rt != nil {
		res.StatusCalls = rt.Calls().PodStatus - calls0
	}
	if r.Len() != 0 {
		return res, fmt.Errorf("known pods %d after forgetting, want 0", r.Len())
	}
	if got := terminating.Load(); got != int64(n) {
		return res, fmt.Errorf("SyncTerminatingPod ran %d times, want %d", got, n)
	}
	if got := terminated.Load(); got != int64(n) {
		return res, fmt.Errorf("SyncTerminatedPod ran %d times, want %d", got, n)
	}
	if got := syncs.Load(); got < int64(n) {
		return res, fmt.Errorf("SyncPod ran %d times, want >= %d", got, n)
	}
	cancel()
	bg.Wait()
	res.Left = int64(heapNow()) - base
	runtime.KeepAlive(creates) // the pods were there before the run: not counted
	runtime.KeepAlive(deletes)
	res.PeakHeap = int64(smp.peakHeap) - base
	res.PeakGoroutines = int64(smp.peakG)
	errMu.Lock()
	defer errMu.Unlock()
	return res, firstErr
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
