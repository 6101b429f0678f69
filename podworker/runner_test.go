package podworker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/pleg"
)

func TestNewValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"nil syncer", Config{}},
		{"negative resync", Config{Syncer: PodSyncerFuncs{}, ResyncInterval: -time.Second}},
		{"negative bound", Config{Syncer: PodSyncerFuncs{}, MaxConcurrentSyncs: -2}},
		{"backoff max below initial", Config{Syncer: PodSyncerFuncs{}, BackoffInitial: time.Minute, BackoffMax: time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("New() = %v, want ErrInvalidConfig", err)
			}
		})
	}
}

// TestRunnerStopsEverything: ending Run's context cancels a sync in flight, Run waits for
// it and returns, and no goroutine is left (synctest fails the test otherwise). Updates
// after that start nothing.
func TestRunnerStopsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cancelled atomic.Bool
		var calls atomic.Int32
		syncer := PodSyncerFuncs{SyncPodFunc: func(ctx context.Context, _ SyncPodType, _, _ *v1.Pod, _ *pleg.PodStatus) (bool, error) {
			calls.Add(1)
			<-ctx.Done()
			cancelled.Store(true)
			return false, ctx.Err()
		}}
		r, err := New(Config{Syncer: syncer})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- r.Run(ctx) }()
		if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if err := r.Run(ctx); !errors.Is(err, ErrRunning) {
			t.Errorf("second Run = %v, want ErrRunning", err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !cancelled.Load() {
			t.Error("the sync in flight was not cancelled")
		}
		if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: testPod("b")}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := calls.Load(); got != 1 {
			t.Errorf("SyncPod called %d times, want 1 (nothing after Run returned)", got)
		}
	})
}

// TestRunnerQueuesBeforeRun: updates given before Run start when Run starts.
func TestRunnerQueuesBeforeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var synced atomic.Int32
		r, err := New(Config{Syncer: PodSyncerFuncs{SyncPodFunc: func(context.Context, SyncPodType, *v1.Pod, *v1.Pod, *pleg.PodStatus) (bool, error) {
			synced.Add(1)
			return false, nil
		}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, uid := range []string{"a", "b"} {
			if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod(uid)}); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if synced.Load() != 0 {
			t.Fatal("synced before Run")
		}
		stop := startRun(t, r)
		synctest.Wait()
		if got := synced.Load(); got != 2 {
			t.Errorf("SyncPod ran %d times, want 2", got)
		}
		stop()
	})
}

// TestRunnerReadsNewerStatus: each sync asks the view for a status observed after the
// end of the pod's previous sync; a failed read is retried like a sync error.
func TestRunnerReadsNewerStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clocktesting.NewFakeClock(t0)
		var reads []time.Duration
		fail := true
		view := RuntimeViewFuncs{
			StatusAfterFunc: func(_ context.Context, _ types.UID, min time.Time) (*pleg.PodStatus, error) {
				d := time.Duration(-1)
				if !min.IsZero() {
					d = min.Sub(t0)
				}
				reads = append(reads, d)
				clk.Step(time.Second) // each read and sync "takes" a second
				if fail {
					fail = false
					return nil, errors.New("runtime unavailable")
				}
				return &pleg.PodStatus{}, nil
			},
			LastStatusFunc: func(types.UID) (*pleg.PodStatus, error) { return &pleg.PodStatus{}, nil },
		}
		r, err := New(Config{Syncer: PodSyncerFuncs{}, View: view, Clock: clk, Rand: func() float64 { return 0 }})
		if err != nil {
			t.Fatal(err)
		}
		stop := startRun(t, r)
		if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		clk.Step(time.Second) // the backoff after the failed read
		synctest.Wait()
		if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: testPod("a", deleted(5))}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		want := []time.Duration{-1, time.Second, 3 * time.Second, 4 * time.Second}
		if diff := cmp.Diff(want, reads); diff != "" {
			t.Errorf("status reads (-want +got):\n%s", diff)
		}
		if s, _ := r.PodState("a"); s.Stage != StageFinished {
			t.Errorf("stage %v, want finished", s.Stage)
		}
		stop()
	})
}

// TestRunnerForgetsEverything: after pods ran their whole lifecycle and were forgotten,
// nothing of them is left in the Runner or its Machine.
func TestRunnerForgetsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var transitions []Transition
		r, err := New(Config{Syncer: PodSyncerFuncs{}, MaxConcurrentSyncs: 2,
			OnTransition: func(tr Transition) { transitions = append(transitions, tr) }})
		if err != nil {
			t.Fatal(err)
		}
		stop := startRun(t, r)
		uids := []string{"a", "b", "c", "d", "e"}
		for _, uid := range uids {
			if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod(uid)}); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		for _, uid := range uids {
			if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: testPod(uid, deleted(1))}); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if known := r.SyncKnownPods(nil); len(known) != 0 {
			t.Fatalf("SyncKnownPods left %v", known)
		}
		r.mu.Lock()
		left := []int{r.m.Len(), len(r.cancels), len(r.deferred), len(r.m.requeue), r.m.inFlight, len(r.m.queue) - r.m.qhead}
		r.mu.Unlock()
		for i, n := range left {
			if n != 0 {
				t.Errorf("left behind (field %d): %v", i, left)
				break
			}
		}
		// Every pod went none -> syncing -> terminating -> terminated -> finished -> none.
		if got, want := len(transitions), 5*len(uids); got != want {
			t.Errorf("%d transitions, want %d: %v", got, want, transitions)
		}
		stop()
	})
}

// TestRunnerStress hammers a Runner from several goroutines with random updates of a few
// pods and checks, inside every PodSyncer call, that no other call for the same pod is in
// flight and that the concurrency bound holds; in the end every pod finishes and is
// forgotten, and no goroutine is left (synctest).
func TestRunnerStress(t *testing.T) {
	for _, bound := range []int{0, 3} {
		t.Run(fmt.Sprintf("max=%d", bound), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { stress(t, New, bound) })
		})
	}
}

func stress(t *testing.T, newRunner func(Config) (*Runner, error), bound int) {
	const pods = 20
	var inCall [pods]atomic.Int32
	var total, peak atomic.Int32
	var calls atomic.Int64
	enter := func(pod *v1.Pod) func() {
		i, _ := strconv.Atoi(string(pod.UID))
		if inCall[i].Add(1) != 1 {
			t.Errorf("two calls in flight for pod %d", i)
		}
		n := total.Add(1)
		if bound > 0 && n > int32(bound) {
			t.Errorf("%d calls in flight, bound %d", n, bound)
		}
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		calls.Add(1)
		runtime.Gosched()
		return func() { total.Add(-1); inCall[i].Add(-1) }
	}
	syncer := PodSyncerFuncs{
		SyncPodFunc: func(_ context.Context, _ SyncPodType, pod, _ *v1.Pod, _ *pleg.PodStatus) (bool, error) {
			defer enter(pod)()
			return pod.Generation%7 == 3, nil
		},
		SyncTerminatingPodFunc: func(_ context.Context, pod *v1.Pod, _ *pleg.PodStatus, _ int64, _ func(*v1.PodStatus)) error {
			defer enter(pod)()
			return nil
		},
		SyncTerminatedPodFunc: func(_ context.Context, pod *v1.Pod, _ *pleg.PodStatus) error {
			defer enter(pod)()
			return nil
		},
	}
	r, err := newRunner(Config{Syncer: syncer, MaxConcurrentSyncs: bound})
	if err != nil {
		t.Fatal(err)
	}
	stop := startRun(t, r)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(g), 42))
			for range 500 {
				i := rnd.IntN(pods)
				p := testPod(strconv.Itoa(i))
				p.Generation = rnd.Int64N(100)
				opts := UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: p}
				switch rnd.IntN(10) {
				case 0:
					deleted(rnd.Int64N(30))(p)
				case 1:
					opts.UpdateType = SyncPodKill
					opts.KillPodOptions = &KillPodOptions{Completion: NewCompletion(), PodTerminationGracePeriodSecondsOverride: ptr(rnd.Int64N(20))}
				case 2:
					r.SyncKnownPods([]*v1.Pod{p})
					continue
				}
				if err := r.UpdatePod(opts); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	synctest.Wait()
	r.SyncKnownPods(nil) // everything not yet terminating is asked to terminate
	synctest.Wait()
	if known := r.SyncKnownPods(nil); len(known) != 0 {
		t.Errorf("pods left after all finished: %v", known)
	}
	if calls.Load() == 0 || (bound > 0 && peak.Load() > int32(bound)) {
		t.Errorf("calls %d, peak %d", calls.Load(), peak.Load())
	}
	stop()
}

// syncRefresher is a StatusRefresher whose Refresh returns a status naming the call.

// TestRunnerRandOutsideLock: Config.Rand is called without the runner's lock held (a Rand
// that calls the Runner does not deadlock), once per finished work, and the number it gave
// is the jitter of the resync that work's completion schedules.
func TestRunnerRandOutsideLock(t *testing.T) {
	for _, engine := range []struct {
		name  string
		plain bool
	}{{"combining", false}, {"plain", true}} {
		t.Run(engine.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var (
					r     *Runner
					draws atomic.Int32
					syncs []time.Duration
				)
				t0 := time.Now()
				rnd := func() float64 {
					draws.Add(1)
					r.PodState("a") // takes the runner's lock: would deadlock under it
					return 1        // the largest jitter: a resync after half the interval
				}
				syncer := PodSyncerFuncs{SyncPodFunc: func(context.Context, SyncPodType, *v1.Pod, *v1.Pod, *pleg.PodStatus) (bool, error) {
					syncs = append(syncs, time.Since(t0))
					return false, nil
				}}
				var err error
				r, err = New(Config{Syncer: syncer, ResyncInterval: 10 * time.Second, Rand: rnd})
				if err != nil {
					t.Fatal(err)
				}
				if engine.plain {
					r.eng = plainEngine{r}
				}
				stop := startRun(t, r)
				if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(12 * time.Second) // virtual time: the create and two resyncs
				synctest.Wait()
				want := []time.Duration{0, 5 * time.Second, 10 * time.Second}
				if diff := cmp.Diff(want, syncs); diff != "" {
					t.Errorf("sync times (-want +got):\n%s", diff)
				}
				if got := draws.Load(); got != int32(len(syncs)) {
					t.Errorf("Rand called %d times for %d finished works, want one each", got, len(syncs))
				}
				stop()
			})
		})
	}
}

// startRun runs r.Run on a goroutine; stop ends Run's context, waits until Run returned
// and fails the test if it returned an error.
func startRun(t testing.TB, r *Runner) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}
