//go:build unix

package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/internal/seedpod"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// BenchmarkW6Scale is W6 (shared/BENCHMARKS.md): N seed pods (internal/seedpod, status
// cleared) through create -> Running -> graceful delete -> final delete -> forgotten, in one
// process, through node.New + Run with the default configuration (syncs=default;
// syncs=1024 sets Config.MaxConcurrentSyncs), with instant fakes:
//
//   - the runtime is nodetest.Runtime over plegtest.Runtime, containers stop at once;
//   - the API side is instantAPI: it answers at once, keeps the pods in a map and applies a
//     status patch without JSON or strategic-merge work (the status it stores is the status
//     the manager sends: the manager's cached status, with the phase the patch carries);
//   - the pods reach the node through Node.Update as an API source fed by a watch delivers
//     them, one pod per update: a first (empty) Set, one Add per pod, then every change on
//     the API side in order: an Update per status patch (the config merge makes it a
//     Reconcile) and per graceful delete (deletionTimestamp, grace 30 s: a Delete), a
//     Remove per final delete.
//
// Each run is a fresh child process (TestW6ScaleVirtual) inside a testing/synctest bubble:
// the relist (1 s) and housekeeping (2 s) periods pass in virtual time, so the wall figures
// are the work only. The run is phased: all Adds, wait until the API side has every pod
// Running; all graceful deletes, wait until it has deleted every pod and the source has
// fed every Remove; wait until the pod workers forgot every pod (OnTransition to
// StageNone). Every run checks that each pod became Running on the API side exactly once,
// was deleted exactly once, in a terminal phase, and was forgotten, and that CleanupPod ran
// once per pod.
//
// Reported (means over the runs; run with -benchtime 1x -count k): pods/s end to end
// (wall), wall ms per phase, process CPU, allocs and bytes allocated per pod (MemStats
// deltas, the fakes' included), the PLEG events dropped for a full channel, peak goroutines (sampled every millisecond of real time),
// and the heap, per pod:
//   - lib-peak-B/pod: the library-held live heap at its peak, when every pod is Running
//     (after a GC, above the baseline, minus the fakes' shares): the baseline is the heap
//     with the node running idle and the API fake already holding every pod; the runtime
//     fake's share (every pod started, its action log) is measured in the same process
//     before the node starts, by building the same runtime state without a node; the API
//     fake's share (per pod, the object and the status its patches stored: the API
//     server's and an informer's objects, not the library's) is measured at the peak by
//     building a copy of what it holds; the input pods are in the baseline (the source
//     owns them, as an informer's store);
//   - peak-heap-B/pod: the sampled peak of the heap including garbage, above the baseline,
//     the runtime fake's share included; peak-stack-B/pod: the sampled peak of goroutine
//     stacks above the baseline's;
//   - left-B/pod: the heap after every pod is forgotten and one more relist ran (after a
//     GC, above the baseline; the runtime's action log included); node-left-B/pod: what
//     the node itself still holds then (the heap freed by stopping it, minus what it held
//     idle).
//
// Profile one run with the child directly:
//
//	PODLIFE_W6=100000,0 go test -run '^TestW6ScaleVirtual$' -cpuprofile cpu.out ./node/
func BenchmarkW6Scale(b *testing.B) {
	for _, syncs := range []int{0, 1024} {
		for _, n := range []int{10000, 30000, 100000} {
			name := "default"
			if syncs > 0 {
				name = strconv.Itoa(syncs)
			}
			b.Run(fmt.Sprintf("syncs=%s/pods=%d", name, n), func(b *testing.B) {
				var sum w6Result
				for range b.N {
					sum.add(runW6Child(b, n, syncs))
				}
				sum.report(b, b.N, n)
			})
		}
	}
}

// w6Env names the run TestW6ScaleVirtual does ("pods,maxConcurrentSyncs"); unset, it skips.
const w6Env = "PODLIFE_W6"

// w6HeapProfileEnv, if set in the child's environment, names the file that gets a heap
// profile (pprof's) of the moment every pod is Running.
const w6HeapProfileEnv = "PODLIFE_W6_HEAPPROFILE"

// w6Prefix starts the line on which the child reports its result.
const w6Prefix = "w6-result: "

// TestW6ScaleVirtual is one run of BenchmarkW6Scale, in a synctest bubble; it runs only
// as the benchmark's child process (w6Env set) and prints its result as one JSON line.
func TestW6ScaleVirtual(t *testing.T) {
	v := os.Getenv(w6Env)
	if v == "" {
		t.Skip(w6Env + " unset: run by BenchmarkW6Scale only")
	}
	var n, syncs int
	if _, err := fmt.Sscanf(v, "%d,%d", &n, &syncs); err != nil || n <= 0 || syncs < 0 {
		t.Fatalf("%s=%q: want pods,maxConcurrentSyncs", w6Env, v)
	}
	s := startSampler() // outside the bubble: it samples on the real clock
	defer s.stop()
	var r w6Result
	synctest.Test(t, func(t *testing.T) { r = runW6(t, n, syncs, s) })
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(w6Prefix + string(out))
}

// runW6Child runs TestW6ScaleVirtual in a child process and returns its result.
func runW6Child(b *testing.B, n, syncs int) w6Result {
	return runChild[w6Result](b, "TestW6ScaleVirtual", fmt.Sprintf("%s=%d,%d", w6Env, n, syncs), w6Prefix)
}

// w6Result is what one run of BenchmarkW6Scale measured.
type w6Result struct {
	runFigures
	LibPeak   int64 // library-held live heap, every pod Running
	PeakStack int64 // sampled, above the baseline
	// DroppedEvents are the PLEG events dropped for a full channel (each delays its
	// pod's sync to its resync).
	DroppedEvents uint64
}

func (s *w6Result) add(r w6Result) {
	s.runFigures.add(r.runFigures)
	s.LibPeak += r.LibPeak
	s.PeakStack += r.PeakStack
	s.DroppedEvents += r.DroppedEvents
}

func (s *w6Result) report(b *testing.B, runs, n int) {
	s.runFigures.report(b, runs, n)
	perPod := func(v float64) float64 { return v / float64(runs*n) }
	b.ReportMetric(perPod(float64(s.LibPeak)), "lib-peak-B/pod")
	b.ReportMetric(perPod(float64(s.PeakStack)), "peak-stack-B/pod")
	b.ReportMetric(float64(s.DroppedEvents)/float64(runs), "dropped-events")
}

// runW6 is one run of n pods (see BenchmarkW6Scale) inside a synctest bubble; syncs is
// node.Config.MaxConcurrentSyncs. s samples the peaks.
func runW6(t *testing.T, n, syncs int, s *sampler) w6Result {
	pods := make([]*v1.Pod, n)
	for i := range n {
		p := seedpod.New(i)
		p.ResourceVersion, p.Status = "1", v1.PodStatus{} // as a user creates it
		pods[i] = p
	}
	rtHeld := runtimeShare(t, pods)
	api := newInstantAPI(pods) // every pod is on the API server before the node hears of it
	rt := nodetest.NewRuntime(plegtest.NewRuntime(nil), nodetest.ContainerBehaviour{StopDelay: 0})
	var forgotten atomic.Int64
	allForgotten := make(chan struct{})
	heapPre := heapAfterGC()

	nd, err := node.New(node.Config{NodeName: nodeName, Runtime: rt, Patcher: api, MaxConcurrentSyncs: syncs,
		OnTransition: func(tr podworker.Transition) {
			if tr.To == podworker.StageNone && forgotten.Add(1) == int64(n) {
				close(allForgotten)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	api.status = nd.Status().GetPodStatus
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- nd.Run(ctx) }()
	if err := nd.Update(ctx, config.PodUpdate{Op: config.Set, Source: node.SourceAPI}); err != nil {
		t.Fatal(err)
	}
	<-nd.Ready()
	fed := make(chan error, 1)
	go func() { fed <- api.feed(ctx, nd, n) }()

	base := heapAfterGC()
	stacks0 := stackBytes()
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	s.reset()
	cpu0, start := cpuTime(), wallNow()

	for _, p := range pods {
		if err := nd.Update(ctx, config.PodUpdate{Op: config.Add, Source: node.SourceAPI, Pods: []*v1.Pod{p}}); err != nil {
			t.Fatal(err)
		}
	}
	<-api.allRunning
	running := wallNow()
	libPeak := int64(heapAfterGC()) - int64(base) - rtHeld - api.share()
	writeHeapProfile(t, os.Getenv(w6HeapProfileEnv))
	paused := wallNow() - running // the GC above is not part of the run

	for _, p := range pods {
		if !api.markDeleted(p, metav1.Now(), 30) {
			t.Fatalf("%s/%s gone before its graceful delete", p.Namespace, p.Name)
		}
	}
	if err := <-fed; err != nil {
		t.Fatal(err)
	}
	gone := wallNow()
	<-allForgotten
	end := wallNow()

	r := w6Result{runFigures: runFigures{Create: running - start, Delete: gone - running - paused, Forget: end - gone, CPU: cpuTime() - cpu0}, LibPeak: libPeak}
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	r.Allocs, r.Bytes = ms1.Mallocs-ms0.Mallocs, ms1.TotalAlloc-ms0.TotalAlloc
	peakHeap, peakG, peakStack := s.peaks()
	r.PeakHeap, r.PeakGoroutines, r.PeakStack = int64(peakHeap)-int64(base), int64(peakG), int64(peakStack)-int64(stacks0)
	if err := api.check(); err != nil {
		t.Fatal(err)
	}
	r.API = api.counts()
	r.DroppedEvents = nd.Relister().DroppedEvents()
	if k := nd.Workers().Len(); k != 0 {
		t.Fatalf("the pod workers still know %d pods", k)
	}
	if k := rt.Count(nodetest.VerbCleanupPod, ""); k != n {
		t.Fatalf("CleanupPod called %d times, want %d", k, n)
	}

	// One relist later the PLEG has dropped the removed pods (virtual time).
	time.Sleep(node.DefaultRelistPeriod * 3 / 2)
	left := heapAfterGC()
	r.Left = int64(left) - int64(base)
	stop()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	nd = nil
	r.NodeLeft = (int64(left) - int64(heapAfterGC())) - (int64(base) - int64(heapPre))
	runtime.KeepAlive(api)
	runtime.KeepAlive(rt)
	runtime.KeepAlive(pods)
	return r
}

// runtimeShare is the live heap the runtime fake holds when every pod is Running: every
// pod started through two SyncPod calls (the first sync and the one after the relist saw
// the containers start), without a node.
func runtimeShare(t *testing.T, pods []*v1.Pod) int64 {
	before := heapAfterGC()
	rt := nodetest.NewRuntime(plegtest.NewRuntime(nil), nodetest.ContainerBehaviour{StopDelay: 0})
	for range 2 {
		for _, p := range pods {
			if err := rt.SyncPod(context.Background(), p, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	held := int64(heapAfterGC()) - int64(before)
	runtime.KeepAlive(rt)
	return held
}

// share is the live heap the API fake holds beyond its records made before the run: per
// pod, the object its last status patch stored, whose status is its own (the manager's
// cached status, copied) and whose other fields are shared with the pod it replaced. It
// is measured by building the same objects again, once.
func (a *instantAPI) share() int64 {
	before := heapAfterGC()
	a.mu.Lock()
	copies := make([]*v1.Pod, 0, len(a.pods))
	for _, sp := range a.pods {
		if sp.pod.ResourceVersion != "1" { // replaced by a write
			np := *sp.pod
			np.Status = *sp.pod.Status.DeepCopy()
			copies = append(copies, &np)
		}
	}
	a.mu.Unlock()
	n := int64(heapAfterGC()) - int64(before)
	runtime.KeepAlive(copies)
	return n
}

// writeHeapProfile writes the heap profile to the file path ("": none).
func writeHeapProfile(t *testing.T, path string) {
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		t.Fatal(err)
	}
}

// stackBytes is the memory of the goroutine stacks now (what the sampler samples).
func stackBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// instantAPI is W6's API side: a statusmgr.StatusPatcher that answers at once. It keeps
// the pods in a map and does no JSON or strategic-merge work: a status patch stores the
// status the manager sends (its cached status, status, with the phase the patch carries:
// the manager holds a terminal phase back while containers may run) in a new pod object;
// GET and PATCH answer with a deep copy of the stored pod, as a client decodes every
// answer into its caller's own object (memory the library holds if it keeps it); DELETE
// removes it and counts it. The stored pods are never modified (replaced whole), so the
// API side and the source share them, as an informer's store and the node do. Every
// change is queued, in order, for the source (feed), as the API server's watch delivers
// it.
type instantAPI struct {
	// status returns the manager's cached status of a pod (Manager.GetPodStatus).
	status func(types.UID) (v1.PodStatus, bool)

	mu         sync.Mutex
	pods       map[types.NamespacedName]*serverPod
	rv         int                  // the last resourceVersion given, as the API server bumps it on every write
	c          statusmgrtest.Counts // the calls answered (Gets, Patches, Deletes)
	n, running int
	allRunning chan struct{}
	// events are the changes not yet fed to the node; queued is signalled when some are.
	events []config.PodUpdate
	queued chan struct{}
}

// serverPod is one pod on the API side.
type serverPod struct {
	pod        *v1.Pod // never modified: replaced whole
	running    int     // how often it became Running
	deletes    int     // how often it was deleted
	finalPhase v1.PodPhase
}

func newInstantAPI(pods []*v1.Pod) *instantAPI {
	a := &instantAPI{pods: make(map[types.NamespacedName]*serverPod, len(pods)), n: len(pods),
		allRunning: make(chan struct{}), queued: make(chan struct{}, 1)}
	for _, p := range pods {
		a.pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = &serverPod{pod: p}
	}
	return a
}

var _ statusmgr.StatusPatcher = (*instantAPI)(nil)

func notFound(name string) error { return apierrors.NewNotFound(v1.Resource("pods"), name) }

// lookup returns the live record of a pod; a.mu must be held.
func (a *instantAPI) lookup(namespace, name string) (*serverPod, error) {
	sp := a.pods[types.NamespacedName{Namespace: namespace, Name: name}]
	if sp == nil || sp.deletes > 0 {
		return nil, notFound(name)
	}
	return sp, nil
}

// queue queues a change for the source; a.mu must be held.
func (a *instantAPI) queue(op config.Op, p *v1.Pod) {
	a.events = append(a.events, config.PodUpdate{Op: op, Source: node.SourceAPI, Pods: []*v1.Pod{p}})
	select {
	case a.queued <- struct{}{}:
	default:
	}
}

// feed hands the queued changes to the node in order, one pod per update, as a source
// fed by the API server's watch does, until it has handed over removes Removes.
func (a *instantAPI) feed(ctx context.Context, nd *node.Node, removes int) error {
	for removes > 0 {
		select {
		case <-a.queued:
		case <-ctx.Done():
			return ctx.Err()
		}
		a.mu.Lock()
		evs := a.events
		a.events = nil
		a.mu.Unlock()
		for _, u := range evs {
			if err := nd.Update(ctx, u); err != nil {
				return err
			}
			if u.Op == config.Remove {
				removes--
			}
		}
	}
	return nil
}

// GetPod returns the stored pod.
func (a *instantAPI) GetPod(_ context.Context, namespace, name string) (*v1.Pod, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.c.Gets++
	sp, err := a.lookup(namespace, name)
	if err != nil {
		return nil, err
	}
	return sp.pod.DeepCopy(), nil
}

// PatchPodStatus stores the status the manager sends (see instantAPI).
func (a *instantAPI) PatchPodStatus(_ context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
	a.mu.Lock()
	a.c.Patches++
	sp, err := a.lookup(namespace, name)
	if err != nil {
		a.mu.Unlock()
		return nil, err
	}
	uid := sp.pod.UID
	a.mu.Unlock()
	if !bytes.HasPrefix(patch, []byte(`{"metadata":{"uid":"`+string(uid)+`"`)) {
		return nil, apierrors.NewConflict(v1.Resource("pods"), name, fmt.Errorf("patch for another UID: %.80s", patch))
	}
	st, ok := a.status(uid)
	if !ok {
		return nil, fmt.Errorf("instantAPI: the manager has no status for %s/%s", namespace, name)
	}
	ph, set := patchPhase(patch)

	a.mu.Lock()
	defer a.mu.Unlock()
	if sp.deletes > 0 {
		return nil, notFound(name)
	}
	cur := sp.pod
	if !set {
		ph = cur.Status.Phase
	}
	if ph == v1.PodRunning && cur.Status.Phase != v1.PodRunning {
		sp.running++
		if a.running++; a.running == a.n {
			close(a.allRunning)
		}
	}
	np := *cur
	np.Status = st
	np.Status.Phase = ph
	np.ResourceVersion = a.nextResourceVersion()
	sp.pod = &np
	a.queue(config.Update, &np)
	return np.DeepCopy(), nil
}

// patchPhase returns the phase a status patch sets, if it sets one (the only "phase" key
// of a pod status patch is the status's own).
func patchPhase(patch []byte) (v1.PodPhase, bool) {
	const key = `"phase":"`
	i := bytes.Index(patch, []byte(key))
	if i < 0 {
		return "", false
	}
	rest := patch[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return "", false
	}
	return v1.PodPhase(rest[:j]), true
}

// DeletePod deletes the pod if it has the UID.
func (a *instantAPI) DeletePod(_ context.Context, namespace, name string, uid types.UID) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.c.Deletes++
	sp, err := a.lookup(namespace, name)
	if err != nil {
		return err
	}
	if sp.pod.UID != uid {
		return apierrors.NewConflict(v1.Resource("pods"), name, fmt.Errorf("UID precondition %s, pod has %s", uid, sp.pod.UID))
	}
	sp.deletes++
	sp.finalPhase = sp.pod.Status.Phase
	a.queue(config.Remove, sp.pod)
	return nil
}

// nextResourceVersion is the resourceVersion of a write (a.mu held): a new one every time,
// as the API server's, which the config merge's resourceVersion shortcut relies on.
func (a *instantAPI) nextResourceVersion() string {
	a.rv++
	return strconv.Itoa(a.rv + 1) // the pods are created with "1"
}

// markDeleted is the API server's graceful delete of p: the stored pod gets a
// deletionTimestamp and grace period.
func (a *instantAPI) markDeleted(p *v1.Pod, at metav1.Time, grace int64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	sp, err := a.lookup(p.Namespace, p.Name)
	if err != nil {
		return false
	}
	np := *sp.pod
	np.DeletionTimestamp, np.DeletionGracePeriodSeconds = &at, &grace
	np.ResourceVersion = a.nextResourceVersion()
	sp.pod = &np
	a.queue(config.Update, &np)
	return true
}

// check reports the first pod that did not become Running exactly once or was not deleted
// exactly once, in a terminal phase.
func (a *instantAPI) check() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, sp := range a.pods {
		switch {
		case sp.running != 1:
			return fmt.Errorf("%s became Running %d times, want 1", k, sp.running)
		case sp.deletes != 1:
			return fmt.Errorf("%s deleted %d times, want 1", k, sp.deletes)
		case !statusmgr.IsTerminalPhase(sp.finalPhase):
			return fmt.Errorf("%s deleted in phase %q, want a terminal one", k, sp.finalPhase)
		}
	}
	return nil
}

func (a *instantAPI) counts() statusmgrtest.Counts {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.c
}
