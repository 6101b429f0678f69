package statusmgr_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// checkedAPI is a StatusPatcher over a FakeAPI that takes a random time for every call
// (0-2 ms on the clock; rtt if set), fails some calls at random, and checks the writers'
// contract: at most max calls in flight, at most MaxConcurrentStatusWrites of them for
// pods not finished, never two for one pod, and the versions each pod's patches leave on
// the server never go backwards. It logs every successful PATCH and DELETE ("patch p1").
type checkedAPI struct {
	t    *testing.T
	api  *statusmgrtest.FakeAPI
	clk  clock.Clock
	max  int
	fail float64       // probability of an injected error per call
	rtt  time.Duration // every call's round trip when set

	mu       sync.Mutex
	rnd      *rand.Rand
	inFlight int
	peak     int
	busy     map[string]bool
	written  map[string]int // the version the pod's last successful patch left
	deletes  map[string]int // successful final deletes per pod
	// finishing holds the pods the test is about to terminate (set before TerminatePod):
	// a call of any other pod is a write of a pod not finished.
	finishing      map[string]bool
	statusCall     map[string]bool // the pod's call in flight is counted in statusInFlight
	statusInFlight int
	log            []string
}

func newCheckedAPI(t *testing.T, api *statusmgrtest.FakeAPI, clk clock.Clock, maxWrites int) *checkedAPI {
	if maxWrites == 0 {
		maxWrites = statusmgr.DefaultMaxConcurrentWrites
	}
	return &checkedAPI{t: t, api: api, clk: clk, max: maxWrites, rnd: rand.New(rand.NewPCG(1, 2)),
		busy: map[string]bool{}, written: map[string]int{}, deletes: map[string]int{},
		finishing: map[string]bool{}, statusCall: map[string]bool{}}
}

// finish marks the pod as one the test terminates.
func (c *checkedAPI) finish(name string) {
	c.mu.Lock()
	c.finishing[name] = true
	c.mu.Unlock()
}

func (c *checkedAPI) enter(name string) (time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy[name] {
		c.t.Errorf("pod %s: two calls in flight at once", name)
	}
	c.busy[name] = true
	c.inFlight++
	c.peak = max(c.peak, c.inFlight)
	if c.inFlight > c.max {
		c.t.Errorf("%d calls in flight, bound %d", c.inFlight, c.max)
	}
	if !c.finishing[name] {
		c.statusCall[name] = true
		c.statusInFlight++
		if c.statusInFlight > statusmgr.MaxConcurrentStatusWrites {
			c.t.Errorf("%d calls of pods not finished in flight, bound %d", c.statusInFlight, statusmgr.MaxConcurrentStatusWrites)
		}
	}
	d := c.rtt
	if d == 0 {
		d = time.Duration(c.rnd.Int64N(int64(2*time.Millisecond) + 1))
	}
	var err error
	switch r := c.rnd.Float64(); {
	case r < c.fail/2:
		err = apierrors.NewInternalError(errors.New("injected"))
	case r < c.fail:
		err = apierrors.NewConflict(v1.Resource("pods"), name, errors.New("injected"))
	}
	return d, err
}

func (c *checkedAPI) leave(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.busy[name] = false
	c.inFlight--
	if c.statusCall[name] {
		delete(c.statusCall, name)
		c.statusInFlight--
	}
}

func (c *checkedAPI) GetPod(ctx context.Context, ns, name string) (*v1.Pod, error) {
	d, err := c.enter(name)
	defer c.leave(name)
	c.clk.Sleep(d)
	if err != nil {
		return nil, err
	}
	return c.api.GetPod(ctx, ns, name)
}

func (c *checkedAPI) PatchPodStatus(ctx context.Context, ns, name string, patch []byte) (*v1.Pod, error) {
	d, err := c.enter(name)
	defer c.leave(name)
	c.clk.Sleep(d)
	if err != nil {
		return nil, err
	}
	p, err := c.api.PatchPodStatus(ctx, ns, name, patch)
	if err == nil {
		v, _ := strconv.Atoi(p.Status.Message)
		c.mu.Lock()
		if v < c.written[name] {
			c.t.Errorf("pod %s: version %d written after version %d", name, v, c.written[name])
		}
		c.written[name] = v
		c.log = append(c.log, "patch "+name)
		c.mu.Unlock()
	}
	return p, err
}

func (c *checkedAPI) DeletePod(ctx context.Context, ns, name string, uid types.UID) error {
	d, err := c.enter(name)
	defer c.leave(name)
	c.clk.Sleep(d)
	if err != nil {
		return err
	}
	err = c.api.DeletePod(ctx, ns, name, uid)
	if err == nil {
		c.mu.Lock()
		c.deletes[name]++
		c.log = append(c.log, "delete "+name)
		c.mu.Unlock()
	}
	return err
}

// TestManagerParallelWritesStress: many pods, each setting a run of numbered statuses
// while the API answers after a random 0-2 ms and fails 10% of the calls, with Sync called
// beside Run; half the pods are then deleted and terminated. The patcher checks the bounds
// on calls in flight (all of them, and those of pods not finished), one call per pod at a time and that no pod's written version goes
// backwards; at the end every pod's last status is on the server and every terminated pod
// was deleted exactly once, with its last status.
func TestManagerParallelWritesStress(t *testing.T) {
	for _, tc := range []struct {
		name            string
		maxWrites, pods int
		fail            float64
	}{
		{"default bound", 0, 300, 0.1},
		{"bound 4", 4, 200, 0.1},
		{"one writer", 1, 50, 0.1},
		{"no failures", 8, 300, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { stressWrites(t, tc.maxWrites, tc.pods, tc.fail) })
		})
	}
}

func stressWrites(t *testing.T, maxWrites, pods int, fail float64) {
	bound := maxWrites
	if bound == 0 {
		bound = statusmgr.DefaultMaxConcurrentWrites
	}
	clk := clock.RealClock{} // virtual time inside the bubble
	var list []*v1.Pod
	for i := range pods {
		list = append(list, testPod(fmt.Sprintf("p%03d", i), types.UID(fmt.Sprintf("u%03d", i))))
	}
	api := statusmgrtest.NewFakeAPI(list...)
	c := newCheckedAPI(t, api, clk, maxWrites)
	c.fail = fail
	m, err := statusmgr.New(statusmgr.Config{Patcher: c, Clock: clk, MaxConcurrentWrites: maxWrites})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()

	const versions = 20
	last := make([]int, pods)
	var wg sync.WaitGroup
	for i, p := range list {
		rnd := rand.New(rand.NewPCG(uint64(i), 7))
		wg.Go(func() {
			for v := 1; v <= versions; v++ {
				st := runningStatus(v%2 == 0)
				st.Message = strconv.Itoa(v)
				if err := m.SetPodStatus(p, st); err != nil {
					t.Error(err)
				}
				last[i] = v
				clk.Sleep(time.Duration(rnd.Int64N(int64(3 * time.Millisecond))))
			}
		})
	}
	wg.Go(func() { // Sync beside Run
		for range 5 {
			clk.Sleep(7 * time.Millisecond)
			_ = m.Sync(ctx)
		}
	})
	wg.Wait()

	// Half the pods are deleted and their containers stop.
	for i, p := range list {
		if i%2 == 1 {
			continue
		}
		d := deleting(p)
		api.MarkDeleted(d.Namespace, d.Name, *d.DeletionTimestamp, 30)
		c.finish(d.Name)
		if err := m.TerminatePod(d); err != nil {
			t.Fatal(err)
		}
	}
	// Enough full syncs for every injected failure to be retried.
	for range 20 {
		clk.Sleep(statusmgr.DefaultSyncPeriod)
	}
	synctest.Wait()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	deleted := map[string]*v1.Pod{}
	for _, p := range api.DeletedPods() {
		deleted[p.Name] = p
	}
	for i, p := range list {
		want := strconv.Itoa(last[i])
		if i%2 == 0 {
			d, ok := deleted[p.Name]
			switch {
			case c.deletes[p.Name] != 1:
				t.Errorf("pod %s: %d final deletes, want 1", p.Name, c.deletes[p.Name])
			case !ok || d.Status.Message != want || d.Status.Phase != v1.PodFailed:
				t.Errorf("pod %s deleted with %+v, want phase Failed and version %s", p.Name, d, want)
			}
			if _, ok := m.GetPodStatus(p.UID); ok {
				t.Errorf("pod %s: status kept after the final delete", p.Name)
			}
			continue
		}
		got, ok := api.Pod(p.Namespace, p.Name)
		if !ok || got.Status.Message != want {
			t.Errorf("pod %s: server has %v, want version %s", p.Name, got, want)
		}
		if c.deletes[p.Name] != 0 {
			t.Errorf("pod %s deleted", p.Name)
		}
	}
	if bound > 1 && c.peak < 2 {
		t.Errorf("peak %d calls in flight: no parallel writes", c.peak)
	}
	t.Logf("peak %d calls in flight (bound %d); stats %+v", c.peak, bound, m.Stats())
}

// A finished pod's terminal status and final delete are not stuck behind a queue of
// status writes of pods not finished: those get MaxConcurrentStatusWrites writers, the
// finished pod one of the others, in Run and in Sync alike. Every call takes 1 ms.
func TestManagerFinishedPodNotBehindStatusWrites(t *testing.T) {
	for _, viaSync := range []bool{false, true} {
		name := "Run"
		if viaSync {
			name = "Sync"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const pods = 50
				var list []*v1.Pod
				for i := range pods {
					list = append(list, testPod(fmt.Sprintf("p%02d", i), types.UID(fmt.Sprintf("u%02d", i))))
				}
				fin := testPod("fin", "ufin")
				api := statusmgrtest.NewFakeAPI(append(list, fin)...)
				clk := clock.RealClock{} // virtual time inside the bubble
				c := newCheckedAPI(t, api, clk, 4)
				c.rtt = time.Millisecond
				m, err := statusmgr.New(statusmgr.Config{Patcher: c, Clock: clk, MaxConcurrentWrites: 4})
				must(t, err)
				// fin's Running status is on the server first.
				must(t, m.SetPodStatus(fin, runningStatus(true)))
				must(t, m.Sync(t.Context()))

				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				done := make(chan error, 1)
				if !viaSync {
					go func() { done <- m.Run(ctx) }()
				}
				for i, p := range list {
					st := runningStatus(true)
					st.Message = strconv.Itoa(i + 1)
					must(t, m.SetPodStatus(p, st))
				}
				d := deleting(fin)
				api.MarkDeleted(d.Namespace, d.Name, *d.DeletionTimestamp, 30)
				c.finish(d.Name)
				must(t, m.TerminatePod(d))
				if viaSync {
					must(t, m.Sync(ctx))
				} else {
					must(t, api.WaitFor(ctx, func(n statusmgrtest.Counts) bool { return n.Patches == pods+2 && n.Deletes == 1 }))
					cancel()
					must(t, <-done)
				}

				at := slices.Index(c.log, "delete fin")
				if at < 0 || c.deletes["fin"] != 1 {
					t.Fatalf("fin not deleted once: %v", c.log)
				}
				// fin's two calls take 2 ms: the status writer patches at most 2 other
				// pods meanwhile (the earlier log lines are fin's Running and terminal
				// patches).
				if at > 2+2 {
					t.Errorf("fin deleted after %d patches of other pods, want it beside them: %v", at-2, c.log[:at+1])
				}
				for i, p := range list {
					if got := mustPod(t, api, p.Name); got.Status.Message != strconv.Itoa(i+1) {
						t.Errorf("pod %s: server has %q, want %d", p.Name, got.Status.Message, i+1)
					}
				}
				if c.peak < 2 {
					t.Errorf("peak %d calls in flight: the finished pod waited", c.peak)
				}
			})
		})
	}
}

// TestManagerWritesRaceStress runs the writers on real goroutines without a bubble (run it
// with -race): setters on 8 goroutines, each pod's statuses numbered, every other pod then
// terminated, Sync called in a loop beside Run, and an API that answers at once (its
// round trips are on a fake clock). The patcher checks both bounds, one call per pod and
// the order of each pod's versions; at the end every status is on the server and every
// terminated pod was deleted once, with its last version.
func TestManagerWritesRaceStress(t *testing.T) {
	const pods, setters, versions = 200, 8, 20
	var list []*v1.Pod
	for i := range pods {
		list = append(list, testPod(fmt.Sprintf("p%03d", i), types.UID(fmt.Sprintf("u%03d", i))))
	}
	api := statusmgrtest.NewFakeAPI(list...)
	c := newCheckedAPI(t, api, clocktesting.NewFakeClock(epoch), 0)
	m, err := statusmgr.New(statusmgr.Config{Patcher: c})
	must(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()

	var setting, syncing sync.WaitGroup
	for g := range setters {
		setting.Go(func() {
			for v := 1; v <= versions; v++ {
				for i := g; i < pods; i += setters {
					st := runningStatus(v%2 == 0)
					st.Message = strconv.Itoa(v)
					if err := m.SetPodStatus(list[i], st); err != nil {
						t.Error(err)
					}
				}
			}
			for i := g; i < pods; i += 2 * setters {
				d := deleting(list[i])
				api.MarkDeleted(d.Namespace, d.Name, *d.DeletionTimestamp, 30)
				c.finish(d.Name)
				if err := m.TerminatePod(d); err != nil {
					t.Error(err)
				}
			}
		})
	}
	stop := make(chan struct{})
	syncing.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := m.Sync(ctx); err != nil {
				t.Error(err)
			}
		}
	})
	setting.Wait()
	close(stop)
	syncing.Wait()
	cancel()
	must(t, <-done)
	must(t, m.Sync(t.Context())) // what Run left queued

	want := strconv.Itoa(versions)
	for i, p := range list {
		if i%(2*setters) < setters {
			if c.deletes[p.Name] != 1 {
				t.Errorf("pod %s: %d final deletes, want 1", p.Name, c.deletes[p.Name])
			}
			if _, ok := m.GetPodStatus(p.UID); ok {
				t.Errorf("pod %s: status kept after the final delete", p.Name)
			}
			continue
		}
		if got, ok := api.Pod(p.Namespace, p.Name); !ok || got.Status.Message != want || c.deletes[p.Name] != 0 {
			t.Errorf("pod %s: server has %v (%d deletes), want version %s", p.Name, got, c.deletes[p.Name], want)
		}
	}
	for _, d := range api.DeletedPods() {
		if d.Status.Message != want || d.Status.Phase != v1.PodFailed {
			t.Errorf("pod %s deleted with message %q, phase %s", d.Name, d.Status.Message, d.Status.Phase)
		}
	}
}

// Sync whose context ends while a pod's write is in flight returns ErrInterrupted (and the
// context's error); the pods not synced stay pending.
func TestManagerSyncInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blocking := statusmgr.StatusPatcherFuncs{
			GetPodFunc: func(ctx context.Context, ns, name string) (*v1.Pod, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			},
		}
		m, err := statusmgr.New(statusmgr.Config{Patcher: blocking, MaxConcurrentWrites: 1})
		must(t, err)
		must(t, m.SetPodStatus(testPod("a", "ua"), runningStatus(true)))
		must(t, m.SetPodStatus(testPod("b", "ub"), runningStatus(true)))
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			synctest.Wait()
			cancel()
		}()
		err = m.Sync(ctx)
		if !errors.Is(err, statusmgr.ErrInterrupted) || !errors.Is(err, context.Canceled) {
			t.Errorf("Sync = %v, want ErrInterrupted and context.Canceled", err)
		}
		for _, uid := range []types.UID{"ua", "ub"} {
			if _, ok := m.GetPodStatus(uid); !ok {
				t.Errorf("status %s lost", uid)
			}
		}
	})
}

// A Machine driven by hand: NextWrite grants the write once, StartWrite and Answer refuse
// a write that is not theirs to take, the calls reach the server, the end is reported with
// the time the version was set, and nothing is left to write.
func TestMachineWriteByHand(t *testing.T) {
	pod := testPod("p", "u1")
	api := statusmgrtest.NewFakeAPI(pod)
	m, err := statusmgr.NewMachine(statusmgr.MachineConfig{})
	must(t, err)
	if changed, err := m.SetPodStatus(epoch, pod, runningStatus(true), nil); err != nil || !changed {
		t.Fatalf("SetPodStatus: changed %v, %v", changed, err)
	}
	if _, err := m.Answer(epoch, "u1", statusmgr.Answer{}); !errors.Is(err, statusmgr.ErrUnknownPod) {
		t.Errorf("Answer before NextWrite = %v, want ErrUnknownPod", err)
	}
	w, ok := m.NextWrite()
	if !ok || w.UID != "u1" || w.Pod != pod || w.Finished {
		t.Fatalf("NextWrite = %+v %v, want u1's write", w, ok)
	}
	if _, again := m.NextWrite(); again {
		t.Error("the pod granted twice")
	}
	if _, err := m.Answer(epoch, "u1", statusmgr.Answer{}); !errors.Is(err, statusmgr.ErrUnknownPod) {
		t.Errorf("Answer before StartWrite = %v, want ErrUnknownPod", err)
	}
	later := epoch.Add(time.Second)
	r, err := m.StartWrite(later, "u1", statusmgr.Facts{CouldRunContainers: true})
	must(t, err)
	if _, err := m.StartWrite(later, "u1", statusmgr.Facts{}); !errors.Is(err, statusmgr.ErrUnknownPod) {
		t.Errorf("StartWrite twice = %v, want ErrUnknownPod", err)
	}
	end := driveWrite(t, m, "u1", r, api)
	if end.Outcome != "synced" || end.Err != nil || end.Pod != pod || end.Version != 1 || !end.Since.Equal(epoch) {
		t.Errorf("end %+v, want synced, version 1, since %v", end, epoch)
	}
	if got := mustPod(t, api, "p"); got.Status.Phase != v1.PodRunning {
		t.Errorf("phase %s on the server", got.Status.Phase)
	}
	if s := m.Stats(); s.Gets != 1 || s.Patches != 1 {
		t.Errorf("stats %+v", s)
	}
	m.QueueAll()
	if w, again := m.NextWrite(); again {
		t.Errorf("a write of %s after the status reached the server", w.UID)
	}
}

// goroutineID is the id of the calling goroutine (from runtime.Stack).
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

// Run's writes are made by at most MaxConcurrentWrites long-lived goroutines, not one
// goroutine per write: 100 pods written, then deleted, in two bursts, make every call on
// one of 4 goroutines; they all stop with Run's context (the bubble checks nothing is
// left).
func TestManagerRunReusesWriters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const pods, bound = 100, 4
		clk := clock.RealClock{} // virtual time inside the bubble
		var list []*v1.Pod
		for i := range pods {
			list = append(list, testPod(fmt.Sprintf("p%03d", i), types.UID(fmt.Sprintf("u%03d", i))))
		}
		api := statusmgrtest.NewFakeAPI(list...)
		// The reactor runs on the goroutine making each call: record it, and take 1 ms.
		var mu sync.Mutex
		callers := map[string]bool{}
		api.SetReactor(func(statusmgrtest.Verb, string, string) error {
			mu.Lock()
			callers[goroutineID()] = true
			mu.Unlock()
			clk.Sleep(time.Millisecond)
			return nil
		})
		m, err := statusmgr.New(statusmgr.Config{Patcher: api, Clock: clk, MaxConcurrentWrites: bound})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		for _, p := range list {
			if err := m.SetPodStatus(p, runningStatus(true)); err != nil {
				t.Fatal(err)
			}
		}
		clk.Sleep(time.Second) // every write is done
		for _, p := range list {
			d := deleting(p)
			api.MarkDeleted(d.Namespace, d.Name, *d.DeletionTimestamp, 30)
			if err := m.TerminatePod(d); err != nil {
				t.Fatal(err)
			}
		}
		clk.Sleep(time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := len(api.DeletedPods()); got != pods {
			t.Fatalf("%d pods deleted, want %d", got, pods)
		}
		if st := m.Stats(); st.Patches < 2*pods {
			t.Fatalf("%d patches, want at least %d", st.Patches, 2*pods)
		}
		if n := len(callers); n > bound {
			t.Errorf("calls made by %d goroutines, want at most %d (MaxConcurrentWrites)", n, bound)
		}
	})
}

// driveWrite runs the write of the pod with the UID to its end from r, answering its GETs
// and PATCHes against p (any other call fails the test), and returns how it ended.
func driveWrite(t *testing.T, m *statusmgr.Machine, uid types.UID, r statusmgr.Ready, p statusmgr.StatusPatcher) statusmgr.End {
	t.Helper()
	for !r.Done() {
		var a statusmgr.Answer
		switch r.Call.Verb {
		case statusmgr.VerbGet:
			a.Pod, a.Err = p.GetPod(t.Context(), r.Call.Namespace, r.Call.Name)
		case statusmgr.VerbPatch:
			a.Pod, a.Err = p.PatchPodStatus(t.Context(), r.Call.Namespace, r.Call.Name, r.Call.Patch)
		default:
			t.Fatalf("unexpected call %+v", r.Call)
		}
		var err error
		if r, err = m.Answer(epoch, uid, a); err != nil {
			t.Fatal(err)
		}
	}
	return r.End
}

// A patch stays its receiver's (a harness keeps them to compare; net/http may read a
// request's body after the call returned): every patch kept is unchanged after the
// Manager's later syncs.
func TestPatchesStayTheirReceivers(t *testing.T) {
	pods := []*v1.Pod{testPod("p1", "u1"), testPod("p2", "u2")}
	api := statusmgrtest.NewFakeAPI(pods...)
	var kept, copies [][]byte
	keep := statusmgr.StatusPatcherFuncs{
		GetPodFunc: api.GetPod,
		PatchPodStatusFunc: func(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
			kept, copies = append(kept, patch), append(copies, slices.Clone(patch))
			return api.PatchPodStatus(ctx, namespace, name, patch)
		},
		DeletePodFunc: api.DeletePod,
	}
	m, err := statusmgr.New(statusmgr.Config{Patcher: keep})
	must(t, err)
	for _, p := range pods {
		must(t, m.SetPodStatus(p, runningStatus(false)))
	}
	must(t, m.Sync(t.Context()))
	for i := range 4 {
		for _, p := range pods {
			must(t, m.SetPodStatus(p, runningStatus(i%2 == 0)))
		}
		must(t, m.Sync(t.Context()))
	}
	if len(kept) != 10 {
		t.Fatalf("%d patches, want 10", len(kept))
	}
	for i := range kept {
		if string(kept[i]) != string(copies[i]) {
			t.Errorf("patch %d changed after later syncs:\n%s\nwas\n%s", i, kept[i], copies[i])
		}
	}
}

// Sync with a context that has already ended returns its error every time, writes nothing
// and leaves every status pending, whether or not a pod needs a write: it must not race a
// free write slot against the ended context.
func TestManagerSyncCancelledContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		pods int
	}{
		{"nothing to sync", 0},
		{"one pod to sync", 1},
		{"two pods to sync", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			for i := range 1000 {
				var mu sync.Mutex
				calls := 0
				counting := statusmgr.StatusPatcherFuncs{
					GetPodFunc: func(context.Context, string, string) (*v1.Pod, error) {
						mu.Lock()
						defer mu.Unlock()
						calls++
						return nil, errors.New("refused")
					},
				}
				m, err := statusmgr.New(statusmgr.Config{Patcher: counting})
				must(t, err)
				for p := range tc.pods {
					must(t, m.SetPodStatus(testPod(fmt.Sprint("p", p), types.UID(fmt.Sprint("u", p))), runningStatus(true)))
				}
				err = m.Sync(ctx)
				if !errors.Is(err, statusmgr.ErrInterrupted) || !errors.Is(err, context.Canceled) {
					t.Fatalf("run %d: Sync = %v, want ErrInterrupted and context.Canceled", i, err)
				}
				mu.Lock() // Sync returned: its writes have ended
				if calls != 0 {
					t.Fatalf("run %d: %d API calls with an ended context, want 0", i, calls)
				}
				mu.Unlock()
				_ = m.Sync(t.Context()) // the statuses were left pending: written now
				if calls != tc.pods {
					t.Fatalf("run %d: %d writes after the ended Sync, want %d", i, calls, tc.pods)
				}
			}
		})
	}
}

// The Machine's write policy as its runner sees it: one write of a pod not finished at a
// time (MaxConcurrentStatusWrites), a finished pod's write beside it, a pod set again
// during its write granted again once that write ended, with its newer version.
func TestMachineWritePolicy(t *testing.T) {
	p, q, f := testPod("p", "u1"), testPod("q", "u2"), testPod("f", "u3")
	api := statusmgrtest.NewFakeAPI(p, q, f)
	m, err := statusmgr.NewMachine(statusmgr.MachineConfig{})
	must(t, err)
	for _, pod := range []*v1.Pod{p, q} {
		if _, err := m.SetPodStatus(epoch, pod, runningStatus(false), nil); err != nil {
			t.Fatal(err)
		}
	}
	wp, ok := m.NextWrite()
	if !ok || wp.UID != "u1" {
		t.Fatalf("first write %+v %v, want u1's", wp, ok)
	}
	if w, ok := m.NextWrite(); ok {
		t.Fatalf("a second write of a pod not finished granted: %s", w.UID)
	}
	if _, err := m.TerminatePod(epoch, f, nil); err != nil {
		t.Fatal(err)
	}
	if w, ok := m.NextWrite(); !ok || w.UID != "u3" || !w.Finished {
		t.Fatalf("the finished pod's write %+v %v, want u3's beside u1's", w, ok)
	}
	r, err := m.StartWrite(epoch, "u1", statusmgr.Facts{CouldRunContainers: true})
	must(t, err)
	if _, err := m.SetPodStatus(epoch, p, runningStatus(true), nil); err != nil { // during the write
		t.Fatal(err)
	}
	if end := driveWrite(t, m, "u1", r, api); end.Version != 1 || end.Outcome != "synced" {
		t.Fatalf("u1's first write ended %+v, want version 1 synced", end)
	}
	// u1, set again during its write, was queued again when it ended: after u2.
	for _, want := range []types.UID{"u2", "u1"} {
		w, ok := m.NextWrite()
		if !ok || w.UID != want {
			t.Fatalf("next write of %s (%v), want %s", w.UID, ok, want)
		}
		r, err = m.StartWrite(epoch, w.UID, statusmgr.Facts{CouldRunContainers: true})
		must(t, err)
		end := driveWrite(t, m, w.UID, r, api)
		if want == "u1" && end.Version != 2 {
			t.Fatalf("u1's second write ended %+v, want version 2", end)
		}
	}
	if got := mustPod(t, api, "p"); !got.Status.ContainerStatuses[0].Ready {
		t.Error("the server does not have u1's newer version")
	}
	if w, ok := m.NextWrite(); ok {
		t.Fatalf("a write of %s after every pod was written", w.UID)
	}
}
