//go:build unix

package node_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/internal/seedpod"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// BenchmarkNodeLifecycle runs N seed pods (internal/seedpod, status cleared) through package
// node end to end with the default configuration, an instant in-memory runtime
// (nodetest.Runtime over plegtest.Runtime, containers that stop at once) and the in-memory
// API server (statusmgrtest.FakeAPI, its watch fed to the node by nodetest.FeedAPI): all N
// are created at once on the API server, the run waits until every pod is Running there,
// deletes them all gracefully (grace 30 s: the objects stay), waits until the node has
// deleted every object (final delete) and until housekeeping has forgotten every pod
// (Workers().Len() == 0). Every run checks that each object was deleted exactly once, in a
// terminal phase.
//
// clock=real runs on the real clock in this process: the figures include the waits of the
// default periods (1 s relist, 2 s housekeeping). clock=virtual runs the same inside a
// testing/synctest bubble, in a fresh child process (synctest needs a *testing.T: the child
// runs TestNodeLifecycleVirtual): the periods pass in virtual time, so the wall figures
// measure the work only; clock-s is how long the run took on the node's clock.
//
// Reported per run (means over b.N, one run per -count with -benchtime 1x): pods/s end to
// end (wall), wall ms per phase (create: until all Running; delete: until every object is
// gone; forget: until housekeeping forgot the last pod), process CPU, allocs and bytes
// allocated per pod (runtime.MemStats deltas over the whole run, the in-memory API server's
// and runtime's included), peak goroutines and peak heap above the baseline per pod
// (sampled every millisecond on the real clock, garbage included), and the heap left per
// pod after every pod is forgotten (after a GC): left-B/pod is all of it, measured at once
// and relative to before the pods were created, the API server's record of deleted pods and
// the runtime's action log included; node-left-B/pod is what the node itself still holds
// above its idle state, one relist period later (the heap freed by stopping the node,
// minus what the idle node held). API calls per pod come from the API server's counts.
func BenchmarkNodeLifecycle(b *testing.B) {
	for _, clk := range []string{"real", "virtual"} {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("clock=%s/pods=%d", clk, n), func(b *testing.B) {
				var sum lifecycleResult
				for range b.N {
					var r lifecycleResult
					if clk == "real" {
						s := startSampler()
						r = runLifecycle(b, n, s)
						s.stop()
					} else {
						r = runVirtualChild(b, n)
					}
					sum.add(r)
				}
				sum.report(b, b.N, n)
			})
		}
	}
}

// lifecycleEnv names the number of pods TestNodeLifecycleVirtual runs; unset, it skips.
const lifecycleEnv = "PODLIFE_NODE_LIFECYCLE_PODS"

// lifecyclePrefix starts the line on which the child reports its result.
const lifecyclePrefix = "node-lifecycle-result: "

// TestNodeLifecycleVirtual is BenchmarkNodeLifecycle's clock=virtual run, inside a synctest
// bubble; it runs only as the benchmark's child process (lifecycleEnv set) and prints its
// result as one JSON line.
func TestNodeLifecycleVirtual(t *testing.T) {
	v := os.Getenv(lifecycleEnv)
	if v == "" {
		t.Skip(lifecycleEnv + " unset: run by BenchmarkNodeLifecycle only")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number of pods", lifecycleEnv, v)
	}
	s := startSampler() // outside the bubble: it samples on the real clock
	defer s.stop()
	var r lifecycleResult
	synctest.Test(t, func(t *testing.T) { r = runLifecycle(t, n, s) })
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(lifecyclePrefix + string(out))
}

// runVirtualChild runs TestNodeLifecycleVirtual in a child process and returns its result.
func runVirtualChild(b *testing.B, n int) lifecycleResult {
	return runChild[lifecycleResult](b, "TestNodeLifecycleVirtual", fmt.Sprintf("%s=%d", lifecycleEnv, n), lifecyclePrefix)
}

// runChild runs the test named test in a child process of this test binary, with env
// ("NAME=value") added to its environment, and decodes the JSON result it printed on the
// line starting with prefix.
func runChild[T any](b *testing.B, test, env, prefix string) T {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("child: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			var r T
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				b.Fatal(err)
			}
			return r
		}
	}
	b.Fatalf("child printed no result:\n%s", out)
	var zero T
	return zero
}

// runFigures are what every node benchmark run measures (sums, for add).
type runFigures struct {
	Create, Delete, Forget time.Duration // wall time of each phase
	CPU                    time.Duration // process user+system time over the run
	Allocs, Bytes          uint64        // allocated over the run
	PeakGoroutines         int64
	PeakHeap               int64 // sampled, above the baseline
	Left, NodeLeft         int64 // heap after every pod was forgotten (see the benchmarks)
	API                    statusmgrtest.Counts
}

func (s *runFigures) add(r runFigures) {
	s.Create += r.Create
	s.Delete += r.Delete
	s.Forget += r.Forget
	s.CPU += r.CPU
	s.Allocs += r.Allocs
	s.Bytes += r.Bytes
	s.PeakGoroutines = max(s.PeakGoroutines, r.PeakGoroutines)
	s.PeakHeap += r.PeakHeap
	s.Left += r.Left
	s.NodeLeft += r.NodeLeft
	s.API.Gets += r.API.Gets
	s.API.Patches += r.API.Patches
	s.API.Deletes += r.API.Deletes
	s.API.PatchBytes += r.API.PatchBytes
}

// report reports the means of runs runs of n pods each (the peak of the goroutines).
func (s *runFigures) report(b *testing.B, runs, n int) {
	perRun := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(runs) }
	perPod := func(v float64) float64 { return v / float64(runs*n) }
	wall := s.Create + s.Delete + s.Forget
	b.ReportMetric(float64(runs*n)/wall.Seconds(), "pods/s")
	b.ReportMetric(perRun(wall), "wall-ms")
	b.ReportMetric(perRun(s.Create), "create-ms")
	b.ReportMetric(perRun(s.Delete), "delete-ms")
	b.ReportMetric(perRun(s.Forget), "forget-ms")
	b.ReportMetric(perRun(s.CPU), "cpu-ms")
	b.ReportMetric(perPod(float64(s.Allocs)), "allocs/pod")
	b.ReportMetric(perPod(float64(s.Bytes)), "B/pod")
	b.ReportMetric(float64(s.PeakGoroutines), "peak-goroutines")
	b.ReportMetric(perPod(float64(s.PeakHeap)), "peak-heap-B/pod")
	b.ReportMetric(perPod(float64(s.Left)), "left-B/pod")
	b.ReportMetric(perPod(float64(s.NodeLeft)), "node-left-B/pod")
	b.ReportMetric(perPod(float64(s.API.Gets)), "get/pod")
	b.ReportMetric(perPod(float64(s.API.Patches)), "patch/pod")
	b.ReportMetric(perPod(float64(s.API.Deletes)), "delete/pod")
}

// lifecycleResult is what one run of BenchmarkNodeLifecycle measured.
type lifecycleResult struct {
	runFigures
	Virtual time.Duration // the whole run on the node's clock
}

func (s *lifecycleResult) add(r lifecycleResult) {
	s.runFigures.add(r.runFigures)
	s.Virtual += r.Virtual
}

func (s *lifecycleResult) report(b *testing.B, runs, n int) {
	s.runFigures.report(b, runs, n)
	b.ReportMetric(s.Virtual.Seconds()/float64(runs), "clock-s")
}

// runLifecycle is one run of n pods (see BenchmarkNodeLifecycle), on the real clock or,
// called inside a synctest bubble, on its virtual one. s samples the peaks.
func runLifecycle(tb testing.TB, n int, s *sampler) lifecycleResult {
	pods := make([]*v1.Pod, n)
	keys := make([]types.NamespacedName, n)
	for i := range n {
		p := seedpod.New(i)
		p.ResourceVersion, p.Status = "", v1.PodStatus{} // as a user creates it
		pods[i], keys[i] = p, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	}
	api := statusmgrtest.NewFakeAPI()
	mem := plegtest.NewRuntime(nil)
	rt := nodetest.NewRuntime(mem, nodetest.ContainerBehaviour{StopDelay: 0})
	var forgotten atomic.Int64
	allForgotten := make(chan struct{})
	heapPre := heapAfterGC()

	nd, err := node.New(node.Config{NodeName: nodeName, Runtime: rt, Patcher: api,
		OnTransition: func(tr podworker.Transition) {
			if tr.To == podworker.StageNone && forgotten.Add(1) == int64(n) {
				close(allForgotten)
			}
		}})
	if err != nil {
		tb.Fatal(err)
	}
	nodeCtx, stopNode := context.WithCancel(context.Background())
	defer stopNode()
	feedCtx, stopFeed := context.WithCancel(context.Background())
	defer stopFeed()
	ran, fed := make(chan error, 1), make(chan error, 1)
	go func() { ran <- nd.Run(nodeCtx) }()
	go func() { fed <- nodetest.FeedAPI(feedCtx, nd, api, nodeName) }()
	<-nd.Ready()
	// A stuck run fails after 10 minutes (virtual ones at once: time jumps when all wait).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	base := heapAfterGC()
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	s.reset()
	cpu0, t0, start := cpuTime(), time.Now(), wallNow()

	for _, p := range pods {
		if _, err := api.Create(p); err != nil {
			tb.Fatal(err)
		}
	}
	next := 0 // keys[:next] are Running; a pod stays Running until it is deleted
	if err := api.WaitForPods(ctx, func(m map[types.NamespacedName]*v1.Pod) bool {
		for ; next < n; next++ {
			if p, ok := m[keys[next]]; !ok || p.Status.Phase != v1.PodRunning {
				return false
			}
		}
		return true
	}); err != nil {
		tb.Fatalf("waiting until every pod is Running (%d of %d): %v", next, n, err)
	}
	running := wallNow()

	for _, k := range keys {
		if err := api.Delete(k.Namespace, k.Name, nil); err != nil {
			tb.Fatal(err)
		}
	}
	if err := api.WaitForPods(ctx, func(m map[types.NamespacedName]*v1.Pod) bool { return len(m) == 0 }); err != nil {
		tb.Fatalf("waiting until every object is gone (%d left): %v", api.Len(), err)
	}
	gone := wallNow()

	select {
	case <-allForgotten:
	case <-ctx.Done():
		tb.Fatalf("waiting until every pod is forgotten (%d of %d): %v", forgotten.Load(), n, ctx.Err())
	}
	end := wallNow()
	r := lifecycleResult{runFigures: runFigures{Create: running - start, Delete: gone - running, Forget: end - gone,
		CPU: cpuTime() - cpu0}, Virtual: time.Since(t0)}
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	r.Allocs, r.Bytes = ms1.Mallocs-ms0.Mallocs, ms1.TotalAlloc-ms0.TotalAlloc
	peakHeap, peakG, _ := s.peaks()
	r.PeakHeap, r.PeakGoroutines = int64(peakHeap)-int64(base), int64(peakG)
	r.Left = int64(heapAfterGC()) - int64(base)

	if k := nd.Workers().Len(); k != 0 {
		tb.Fatalf("the pod workers still know %d pods", k)
	}
	r.API = api.Counts()
	if r.API.Deletes != n || r.API.Deleted != n {
		tb.Fatalf("final deletes: %d calls, %d pods deleted, want %d", r.API.Deletes, r.API.Deleted, n)
	}
	deleted := api.DeletedPods()
	if len(deleted) != n {
		tb.Fatalf("%d pods deleted, want %d", len(deleted), n)
	}
	seen := make(map[types.UID]bool, n)
	for _, p := range deleted {
		if seen[p.UID] {
			tb.Fatalf("%s/%s deleted twice", p.Namespace, p.Name)
		}
		seen[p.UID] = true
		if ph := p.Status.Phase; ph != v1.PodSucceeded && ph != v1.PodFailed {
			tb.Fatalf("%s/%s deleted in phase %q, want a terminal one", p.Namespace, p.Name, ph)
		}
	}
	if k := rt.Count(nodetest.VerbCleanupPod, ""); k != n {
		tb.Fatalf("CleanupPod called %d times, want %d", k, n)
	}
	deleted, seen = nil, nil

	// What the node holds: the heap it frees when it stops, above what it held idle, one
	// relist after the last pod was forgotten (the relist that sees the pods removed from
	// the runtime drops them from the PLEG's records and cache; virtual time in a bubble).
	time.Sleep(node.DefaultRelistPeriod * 3 / 2)
	stopFeed()
	if err := <-fed; err != nil {
		tb.Fatal(err)
	}
	fedStopped := heapAfterGC()
	stopNode()
	if err := <-ran; err != nil {
		tb.Fatal(err)
	}
	nd = nil
	nodeStopped := heapAfterGC()
	r.NodeLeft = (int64(fedStopped) - int64(nodeStopped)) - (int64(base) - int64(heapPre))
	runtime.KeepAlive(api)
	runtime.KeepAlive(rt)
	runtime.KeepAlive(pods)
	return r
}

// sampler samples the heap (garbage included), the goroutines and their stacks every
// millisecond of real time until stopped. Start it outside any synctest bubble.
type sampler struct {
	mu       sync.Mutex
	heap     uint64
	stacks   uint64
	routines int
	quit     chan struct{}
	done     chan struct{}
	sample   []metrics.Sample
}

func startSampler() *sampler {
	s := &sampler{quit: make(chan struct{}), done: make(chan struct{}),
		sample: []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}}
	go func() {
		defer close(s.done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			s.take()
			select {
			case <-t.C:
			case <-s.quit:
				return
			}
		}
	}()
	return s
}

// take records one sample.
func (s *sampler) take() {
	s.mu.Lock()
	defer s.mu.Unlock()
	metrics.Read(s.sample)
	s.heap = max(s.heap, s.sample[0].Value.Uint64())
	s.stacks = max(s.stacks, s.sample[1].Value.Uint64())
	s.routines = max(s.routines, runtime.NumGoroutine())
}

// reset forgets the peaks so far.
func (s *sampler) reset() {
	s.mu.Lock()
	s.heap, s.stacks, s.routines = 0, 0, 0
	s.mu.Unlock()
	s.take()
}

// peaks returns the peaks since the last reset, a sample taken now included.
func (s *sampler) peaks() (heap uint64, goroutines int, stacks uint64) {
	s.take()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heap, s.routines, s.stacks
}

func (s *sampler) stop() {
	close(s.quit)
	<-s.done
}

// heapAfterGC is the live heap after a collection.
func heapAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// wallNow is the real time, also inside a synctest bubble (where time.Now is virtual).
func wallNow() time.Duration {
	var tv syscall.Timeval
	if err := syscall.Gettimeofday(&tv); err != nil {
		panic(err)
	}
	return time.Duration(tv.Nano())
}
