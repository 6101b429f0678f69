//go:build unix

package vk_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
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

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/vk"
	"github.com/podlife/podlife/examples/vk/vktest"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// w5Pods is W5's number of pods on the virtual node.
const w5Pods = 1000

// wall is the benchmark's clock: W5 runs in real time.
var wall clock.PassiveClock = clock.RealClock{}

// BenchmarkW5VirtualNode is the W5 workload of docs/PERFORMANCE.md: 1,000 pods bound to one
// virtual node whose provider starts a pod at once and stops it at once when asked. All
// are created and the benchmark waits until every pod is Running on the API server; then
// every pod is deleted gracefully (grace 30 s: the object stays) and it waits until every
// object is gone. Real clock, the agent's default 1 s relist and the adapter's default 1 s
// poll. Each iteration checks, for every pod, that DeletePod was called before the final
// delete and that the pod's phase on the server was terminal before it, and stops every
// goroutine it started.
func BenchmarkW5VirtualNode(b *testing.B) {
	for _, kind := range []struct {
		name   string
		notify bool
	}{{"notifying", true}, {"polled", false}} {
		b.Run("provider="+kind.name, func(b *testing.B) {
			var sum w5Result
			for range b.N {
				r := runW5(b, kind.notify, w5Pods)
				sum.add(r)
			}
			sum.report(b, b.N, w5Pods)
		})
	}
}

// w5Result is what one W5 run measured.
type w5Result struct {
	createWall, deleteWall time.Duration
	createCPU, deleteCPU   time.Duration
	api                    statusmgrtest.Counts
	provider               map[string]int
	peakGoroutines         int64
	heapCreated, heapGone  int64 // heap in use after the phase, above the run's baseline
	stopToDelete           []time.Duration
	// stopToTerminal is the part of stopToDelete until the terminal phase was on the server.
	stopToTerminal []time.Duration
	// terminalToDelete is the rest: from the terminal phase on the server to the final delete.
	terminalToDelete []time.Duration
	// startToRunning is per pod the time from CreatePod (the pod runs at once) to the
	// first status patch that put phase Running on the server.
	startToRunning []time.Duration
}

func (s *w5Result) add(r w5Result) {
	s.createWall += r.createWall
	s.deleteWall += r.deleteWall
	s.createCPU += r.createCPU
	s.deleteCPU += r.deleteCPU
	s.api.Gets += r.api.Gets
	s.api.Patches += r.api.Patches
	s.api.Deletes += r.api.Deletes
	s.api.PatchBytes += r.api.PatchBytes
	if s.provider == nil {
		s.provider = map[string]int{}
	}
	for v, c := range r.provider {
		s.provider[v] += c
	}
	s.peakGoroutines = max(s.peakGoroutines, r.peakGoroutines)
	s.heapCreated += r.heapCreated
	s.heapGone += r.heapGone
	s.stopToDelete = append(s.stopToDelete, r.stopToDelete...)
	s.stopToTerminal = append(s.stopToTerminal, r.stopToTerminal...)
	s.terminalToDelete = append(s.terminalToDelete, r.terminalToDelete...)
	s.startToRunning = append(s.startToRunning, r.startToRunning...)
}

// report reports the averages of runs runs of n pods each (latencies pooled, the peak of
// the goroutines).
func (s *w5Result) report(b *testing.B, runs, n int) {
	perRun := func(d time.Duration) float64 { return d.Seconds() / float64(runs) }
	perPod := func(c int) float64 { return float64(c) / float64(runs*n) }
	b.ReportMetric(perRun(s.createWall), "create-s")
	b.ReportMetric(perRun(s.deleteWall), "delete-s")
	b.ReportMetric(perRun(s.createCPU), "create-cpu-s")
	b.ReportMetric(perRun(s.deleteCPU), "delete-cpu-s")
	b.ReportMetric(perPod(s.api.Gets), "get/pod")
	b.ReportMetric(perPod(s.api.Patches), "patch/pod")
	b.ReportMetric(perPod(s.api.Deletes), "delete/pod")
	b.ReportMetric(perPod(s.api.PatchBytes), "patch-B/pod")
	for _, v := range []string{vktest.Create, vktest.Update, vktest.Delete, vktest.Get, vktest.GetStatus} {
		b.ReportMetric(perPod(s.provider[v]), v+"/pod")
	}
	b.ReportMetric(float64(s.provider[vktest.List])/float64(runs), vktest.List+"-calls")
	b.ReportMetric(float64(s.peakGoroutines), "peak-goroutines")
	b.ReportMetric(float64(s.heapCreated)/float64(runs*n), "heap-created-B/pod")
	b.ReportMetric(float64(s.heapGone)/float64(runs*n), "heap-gone-B/pod")
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for _, m := range []struct {
		name string
		lat  []time.Duration
	}{{"stop-to-delete", s.stopToDelete}, {"stop-to-terminal", s.stopToTerminal},
		{"terminal-to-delete", s.terminalToDelete}, {"start-to-running", s.startToRunning}} {
		lat := m.lat
		slices.Sort(lat)
		b.ReportMetric(ms(lat[len(lat)/2]), m.name+"-p50-ms")
		b.ReportMetric(ms(lat[len(lat)*99/100]), m.name+"-p99-ms")
		b.ReportMetric(ms(lat[len(lat)-1]), m.name+"-max-ms")
	}
	// Pods whose Running reached the server half a relist period or more after CreatePod:
	// every pod of the polled provider (its start is seen by the 1 s relist), none of the
	// notifying one's if every notification is acted on at once.
	late := 0
	for _, d := range s.startToRunning {
		if d >= agent.DefaultRelistPeriod/2 {
			late++
		}
	}
	b.ReportMetric(float64(late)/float64(runs), "late-running-pods")
}

// w5Event is one observed event: its place in the order of every observed event and when.
type w5Event struct {
	seq int64
	at  time.Time
}

// w5Pod is what the observers saw of one pod.
type w5Pod struct {
	createPod     *w5Event // the provider's first successful CreatePod of the pod
	running       *w5Event // the first status patch that put phase Running on the server
	deletePod     *w5Event // the provider's first successful DeletePod of the pod
	terminal      *w5Event // the first status patch that put a terminal phase on the server
	phase         string   // the phase the latest status patch left on the server
	phaseAtDelete string
	final         *w5Event // the final delete
	finals        int
}

// w5Log orders the provider's calls and the server's changes (each observer runs under its
// component's lock, after the call took effect; the lock here is a leaf).
type w5Log struct {
	mu    sync.Mutex
	seq   int64
	pods  map[types.UID]*w5Pod
	peakG atomic.Int64
}

func (l *w5Log) sampleGoroutines() {
	g := int64(runtime.NumGoroutine())
	for {
		cur := l.peakG.Load()
		if g <= cur || l.peakG.CompareAndSwap(cur, g) {
			return
		}
	}
}

// event returns the pod's record and the next event. l.mu must be held.
func (l *w5Log) event(uid types.UID) (*w5Pod, *w5Event) {
	l.seq++
	p := l.pods[uid]
	if p == nil {
		p = &w5Pod{}
		l.pods[uid] = p
	}
	return p, &w5Event{seq: l.seq, at: wall.Now()}
}

func (l *w5Log) providerCall(c vktest.Call) {
	l.sampleGoroutines()
	if c.Verb != vktest.Create && c.Verb != vktest.Delete || c.Err != nil || c.UID == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ev := l.event(c.UID)
	switch {
	case c.Verb == vktest.Create && p.createPod == nil:
		p.createPod = ev
	case c.Verb == vktest.Delete && p.deletePod == nil:
		p.deletePod = ev
	}
}

func (l *w5Log) step(s agent.Step) {
	l.sampleGoroutines()
	if s.UID == "" || s.Kind != agent.KindStatus && s.Kind != agent.KindDelete {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ev := l.event(s.UID)
	switch s.Kind {
	case agent.KindStatus:
		// "patched status: phase Running (123 bytes)"
		_, rest, ok := strings.Cut(s.Detail, "phase ")
		if !ok {
			return
		}
		phase, _, _ := strings.Cut(rest, " ")
		p.phase = phase
		if p.running == nil && phase == string(v1.PodRunning) {
			p.running = ev
		}
		if p.terminal == nil && (phase == string(v1.PodSucceeded) || phase == string(v1.PodFailed)) {
			p.terminal = ev
		}
	case agent.KindDelete:
		p.finals++
		if p.final == nil {
			p.final, p.phaseAtDelete = ev, p.phase
		}
	}
}

// cpuTime is the process's user+system CPU time so far (every thread, GC included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// runW5 runs W5 once with n pods and checks its invariants.
func runW5(b *testing.B, notify bool, n int) w5Result {
	b.Helper()
	l := &w5Log{pods: make(map[types.UID]*w5Pod, n)}
	pcfg := vktest.Config{Observer: l.providerCall} // zero delays: start and stop at once
	provider, handler := vktest.NewHandler(pcfg, notify)
	server := statusmgrtest.NewFakeAPI()
	adapter, err := vk.NewAdapter(vk.AdapterConfig{Provider: handler, PollPeriod: vk.DefaultPollPeriod})
	if err != nil {
		b.Fatal(err)
	}
	a, err := vk.NewAgent(agent.Config{Server: server, RelistPeriod: agent.DefaultRelistPeriod, Observer: l.step}, adapter)
	if err != nil {
		b.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	baseG := runtime.NumGoroutine()
	baseHeap := heapInUse()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()

	var r w5Result
	uids := make([]types.UID, 0, n)
	grace := int64(30)
	start, cpu0 := wall.Now(), cpuTime()
	for i := range n {
		p, err := server.Create(&v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("busybox-%d", i), Namespace: "default"},
			Spec: v1.PodSpec{NodeName: agent.DefaultNodeName, RestartPolicy: v1.RestartPolicyAlways,
				TerminationGracePeriodSeconds: &grace, Containers: []v1.Container{{Name: "busybox", Image: "busybox"}}},
		})
		if err != nil {
			b.Fatal(err)
		}
		uids = append(uids, p.UID)
	}
	err = server.WaitForPods(ctx, func(pods map[types.NamespacedName]*v1.Pod) bool {
		if len(pods) != n {
			return false
		}
		for _, p := range pods {
			if p.Status.Phase != v1.PodRunning {
				return false
			}
		}
		return true
	})
	r.createWall, r.createCPU = wall.Since(start), cpuTime()-cpu0
	if err != nil {
		b.Fatalf("waiting until every pod is Running: %v", err)
	}
	r.heapCreated = heapInUse() - baseHeap

	start, cpu0 = wall.Now(), cpuTime()
	for i := range n {
		if err := server.Delete("default", fmt.Sprintf("busybox-%d", i), &grace); err != nil {
			b.Fatal(err)
		}
	}
	err = server.WaitForPods(ctx, func(pods map[types.NamespacedName]*v1.Pod) bool { return len(pods) == 0 })
	r.deleteWall, r.deleteCPU = wall.Since(start), cpuTime()-cpu0
	if err != nil {
		b.Fatalf("waiting until every object is gone (%d left): %v", server.Len(), err)
	}
	r.heapGone = heapInUse() - baseHeap

	stop()
	if err := <-done; err != nil {
		b.Fatalf("agent.Run: %v", err)
	}
	r.peakGoroutines = l.peakG.Load()
	r.api = server.Counts()
	r.provider = map[string]int{}
	for _, v := range []string{vktest.Create, vktest.Update, vktest.Delete, vktest.Get, vktest.GetStatus, vktest.List} {
		r.provider[v] = provider.Count(v)
	}

	// Every pod: one final delete, after DeletePod and after a terminal phase on the server.
	if r.api.Deleted != n {
		b.Fatalf("%d pods deleted by the agent, want %d", r.api.Deleted, n)
	}
	finalPhase := map[types.UID]v1.PodPhase{}
	for _, p := range server.DeletedPods() {
		finalPhase[p.UID] = p.Status.Phase
	}
	phases := map[v1.PodPhase]int{}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, uid := range uids {
		p := l.pods[uid]
		switch {
		case p == nil || p.final == nil:
			b.Fatalf("pod %s: no final delete observed", uid)
		case p.finals != 1:
			b.Fatalf("pod %s: %d final deletes", uid, p.finals)
		case p.createPod == nil || p.running == nil:
			b.Fatalf("pod %s: created %v, Running on the server %v", uid, p.createPod != nil, p.running != nil)
		case p.deletePod == nil:
			b.Fatalf("pod %s: deleted from the API without a DeletePod call", uid)
		case p.deletePod.seq > p.final.seq:
			b.Fatalf("pod %s: DeletePod came %v after the final delete", uid, p.deletePod.at.Sub(p.final.at))
		case p.terminal == nil || p.terminal.seq > p.final.seq:
			b.Fatalf("pod %s: no terminal phase on the server before the final delete", uid)
		case p.phaseAtDelete != string(v1.PodSucceeded) && p.phaseAtDelete != string(v1.PodFailed):
			b.Fatalf("pod %s: phase %q on the server at the final delete", uid, p.phaseAtDelete)
		}
		ph := finalPhase[uid]
		if ph != v1.PodSucceeded && ph != v1.PodFailed {
			b.Fatalf("pod %s: deleted with phase %q", uid, ph)
		}
		phases[ph]++
		r.stopToDelete = append(r.stopToDelete, p.final.at.Sub(p.deletePod.at))
		r.stopToTerminal = append(r.stopToTerminal, p.terminal.at.Sub(p.deletePod.at))
		r.terminalToDelete = append(r.terminalToDelete, p.final.at.Sub(p.terminal.at))
		r.startToRunning = append(r.startToRunning, p.running.at.Sub(p.createPod.at))
	}
	b.Logf("final phases: %v", phases)

	// Every goroutine of the run ends with it (the provider's NotifyPods goroutine may take
	// a moment to see the cancel).
	for deadline := wall.Now().Add(5 * time.Second); runtime.NumGoroutine() > baseG && wall.Now().Before(deadline); {
		runtime.Gosched()
	}
	if g := runtime.NumGoroutine(); g > baseG {
		b.Fatalf("%d goroutines left after the run (%d before it)", g, baseG)
	}
	return r
}
