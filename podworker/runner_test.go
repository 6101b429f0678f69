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
		{"negative bound", Config{Syncer: PodSyncerFuncs{}, MaxConcurrentSyncs: -1}},
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
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- r.Run(ctx) }()
		synctest.Wait()
		if got := synced.Load(); got != 2 {
			t.Errorf("SyncPod ran %d times, want 2", got)
		}
		cancel()
		<-done
	})
}

// TestRunnerReadsNewerStatus: each sync asks the cache for a status newer than the end
// of the previous sync, refreshes before every terminating and terminated read, and a
// cache error is retried like a sync error.
func TestRunnerReadsNewerStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clocktesting.NewFakeClock(t0)
		var reads []time.Duration
		var refreshes []types.UID
		fail := true
		cache := StatusCacheFunc(func(_ context.Context, _ types.UID, min time.Time) (*pleg.PodStatus, error) {
			if min.IsZero() {
				reads = append(reads, -1)
			} else {
				reads = append(reads, min.Sub(t0))
			}
			clk.Step(time.Second) // each read and sync "takes" a second
			if fail {
				fail = false
				return nil, errors.New("cache unavailable")
			}
			return &pleg.PodStatus{}, nil
		})
		r, err := New(Config{Syncer: PodSyncerFuncs{}, Cache: cache, Clock: clk, Rand: func() float64 { return 0 },
			Refresher: RefresherFunc(func(uid types.UID) { refreshes = append(refreshes, uid) })})
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
		clk.Step(time.Second) // the backoff after the failed read
		synctest.Wait()
		if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: testPod("a", deleted(5))}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		want := []time.Duration{-1, time.Second, 3 * time.Second, 4 * time.Second}
		if len(reads) != len(want) {
			t.Fatalf("reads %v, want %v", reads, want)
		}
		for i := range want {
			if reads[i] != want[i] {
				t.Fatalf("reads %v, want %v", reads, want)
			}
		}
		if len(refreshes) != 2 {
			t.Errorf("refreshes %v, want one per terminating and terminated work", refreshes)
		}
		if s, _ := r.PodState("a"); s.Stage != StageFinished {
			t.Errorf("stage %v, want finished", s.Stage)
		}
		cancel()
		<-done
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
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- r.Run(ctx) }()
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
		cancel()
		<-done
	})
}

// TestRunnerStress hammers a Runner from several goroutines with random updates of a few
// pods and checks, inside every PodSyncer call, that no other call for the same pod is in
// flight and that the concurrency bound holds; in the end every pod finishes and is
// forgotten, and no goroutine is left (synctest).
func TestRunnerStress(t *testing.T) {
	for _, bound := range []int{0, 3} {
		t.Run(fmt.Sprintf("max=%d", bound), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { stress(t, bound) })
		})
	}
}

func stress(t *testing.T, bound int) {
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
	r, err := New(Config{Syncer: syncer, MaxConcurrentSyncs: bound})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
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
					opts.KillPodOptions = &KillPodOptions{CompletedCh: make(chan struct{}), PodTerminationGracePeriodSecondsOverride: ptr(rnd.Int64N(20))}
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
	cancel()
	<-done
}

// syncRefresher is a StatusRefresher whose Refresh returns a status naming the call.
type syncRefresher struct {
	calls int
	fail  bool
}

func (f *syncRefresher) RequestRefresh(types.UID) {
	panic("RequestRefresh called on a StatusRefresher")
}

func (f *syncRefresher) Refresh(_ context.Context, uid types.UID) (*pleg.PodStatus, error) {
	f.calls++
	if f.fail {
		return nil, errors.New("runtime unavailable")
	}
	return &pleg.PodStatus{ID: uid, Name: fmt.Sprintf("refresh-%d", f.calls)}, nil
}

// TestRunnerUsesSynchronousRefresh: with a StatusRefresher, terminating and terminated
// work get the refreshed status directly, even on a clock that never moves (where a cache
// read "newer than the previous sync" could only wait); a failing Refresh falls back to
// the cache.
func TestRunnerUsesSynchronousRefresh(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("refresh fails=%t", fail), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clk := clocktesting.NewFakeClock(t0) // never stepped
				var got []string
				cacheReads := 0
				cache := StatusCacheFunc(func(_ context.Context, uid types.UID, _ time.Time) (*pleg.PodStatus, error) {
					cacheReads++
					return &pleg.PodStatus{ID: uid, Name: "cache"}, nil
				})
				syncer := PodSyncerFuncs{
					SyncTerminatingPodFunc: func(_ context.Context, _ *v1.Pod, s *pleg.PodStatus, _ int64, _ func(*v1.PodStatus)) error {
						got = append(got, "terminating:"+s.Name)
						return nil
					},
					SyncTerminatedPodFunc: func(_ context.Context, _ *v1.Pod, s *pleg.PodStatus) error {
						got = append(got, "terminated:"+s.Name)
						return nil
					},
				}
				ref := &syncRefresher{fail: fail}
				r, err := New(Config{Syncer: syncer, Cache: cache, Refresher: ref, Clock: clk, Rand: func() float64 { return 0 }})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error)
				go func() { done <- r.Run(ctx) }()
				if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a", deleted(5))}); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				want := []string{"terminating:refresh-1", "terminated:refresh-2"}
				wantReads := 0
				if fail {
					want = []string{"terminating:cache", "terminated:cache"}
					wantReads = 2
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("statuses passed on (-want +got):\n%s", diff)
				}
				if ref.calls != 2 || cacheReads != wantReads {
					t.Errorf("Refresh calls %d, cache reads %d; want 2 and %d", ref.calls, cacheReads, wantReads)
				}
				cancel()
				<-done
			})
		})
	}
}

// TestRunnerRefreshesStaleSyncStatus: a status observed while the previous call ran (here
// pushed into the cache during SyncPod, on a clock that never moves) is not newer than
// that call, so the next SyncPod re-inspects the pod at once, through a StatusRefresher's
// Refresh or a plain Refresher's request, instead of waiting for the next relist; a
// status already newer is used without any refresh.
func TestRunnerRefreshesStaleSyncStatus(t *testing.T) {
	for _, synchronous := range []bool{true, false} {
		t.Run(fmt.Sprintf("synchronous=%t", synchronous), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				clk := clocktesting.NewFakeClock(t0) // never stepped
				cache := pleg.NewCache()
				var got []string
				syncer := PodSyncerFuncs{SyncPodFunc: func(_ context.Context, _ SyncPodType, p *v1.Pod, _ *v1.Pod, s *pleg.PodStatus) (bool, error) {
					got = append(got, s.Name)
					if len(got) == 1 {
						cache.Set(p.UID, &pleg.PodStatus{ID: p.UID, Name: "pushed"}, nil, clk.Now())
					}
					return false, nil
				}}
				sr := &syncRefresher{}
				var requested []types.UID
				var refresher Refresher = sr
				if !synchronous {
					refresher = RefresherFunc(func(uid types.UID) {
						requested = append(requested, uid)
						// What a relister's refresh does: observe the pod now (later than the sync).
						cache.Set(uid, &pleg.PodStatus{ID: uid, Name: "requested"}, nil, clk.Now().Add(time.Millisecond))
					})
				}
				r, err := New(Config{Syncer: syncer, Cache: cache, Refresher: refresher, Clock: clk, Rand: func() float64 { return 0 }})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error)
				go func() { done <- r.Run(ctx) }()
				cache.Set("a", &pleg.PodStatus{ID: "a", Name: "first"}, nil, t0)
				if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodSync, Pod: testPod("a")}); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				want := []string{"first", "refresh-1"}
				if !synchronous {
					want = []string{"first", "requested"}
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("statuses passed to SyncPod (-want +got):\n%s", diff)
				}
				if synchronous && sr.calls != 1 || !synchronous && len(requested) != 1 {
					t.Errorf("Refresh calls %d, requests %v; want exactly one", sr.calls, requested)
				}
				cancel()
				<-done
			})
		})
	}
}
