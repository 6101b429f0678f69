package pleg

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// TestStatusAfter: the pod workers' view of the runtime never waits for a relist. A
// status observed after minTime is returned as cached; otherwise (nothing cached, or only
// an observation of minTime itself, as on a clock that did not move since the caller's
// action) the pod is re-inspected now, with or without inspect; a failed inspection falls
// back to the cache.
func TestStatusAfter(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cachedAt   time.Time // zero: nothing cached
		inspect    bool
		fail       bool
		wantName   string
		wantCalls  int
		wantErrCtx bool
		later      bool // a newer status is cached a second after the call
	}{
		{name: "inspect, cached at minTime", cachedAt: t0, inspect: true, wantName: "runtime", wantCalls: 1},
		{name: "inspect, newer cached", cachedAt: t0.Add(time.Second), inspect: true, wantName: "cache", wantCalls: 0},
		{name: "inspect, nothing cached", inspect: true, wantName: "runtime", wantCalls: 1},
		{name: "newer cached", cachedAt: t0.Add(time.Second), wantName: "cache", wantCalls: 0},
		{name: "not newer cached", cachedAt: t0, wantName: "runtime", wantCalls: 1},
		{name: "inspection fails, older cached, then a newer one", cachedAt: t0, inspect: true, fail: true, wantName: "cache", wantCalls: 1, later: true},
		{name: "inspection fails, nothing newer", cachedAt: t0, fail: true, wantCalls: 1, wantErrCtx: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := newFakeRuntime(&Pod{ID: "a", Name: "runtime", Namespace: "default"})
				if tc.fail {
					rt.failStatus("a", errors.New("runtime unavailable"))
				}
				r, cache, _ := newTestRelister(t, rt, nil) // the clock never moves
				if !tc.cachedAt.IsZero() {
					cache.Set("a", &PodStatus{ID: "a", Name: "cache", TimeStamp: tc.cachedAt}, nil, tc.cachedAt)
				}
				if tc.later {
					go func() {
						time.Sleep(time.Second)
						cache.Set("a", &PodStatus{ID: "a", Name: "cache"}, nil, t0.Add(time.Second))
					}()
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if tc.wantErrCtx {
					cancel() // the wait for a newer status would never end
				}
				s, err := r.StatusAfter(ctx, "a", t0)
				switch {
				case tc.wantErrCtx:
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("StatusAfter = %v, %v; want context.Canceled", s, err)
					}
				case err != nil:
					t.Fatalf("StatusAfter: %v", err)
				case s.Name != tc.wantName:
					t.Errorf("status from %q, want %q", s.Name, tc.wantName)
				}
				if got := rt.statusCalls["a"]; got != tc.wantCalls {
					t.Errorf("runtime status calls %d, want %d", got, tc.wantCalls)
				}
				if last, _ := r.LastStatus("a"); err == nil && last != s {
					t.Errorf("LastStatus %v, want the status returned %v", last, s)
				}
			})
		})
	}
}

// blockingRuntime is a fakeRuntime whose calls for one pod, or whose list, wait until
// released; entered is signalled when one starts waiting.
type blockingRuntime struct {
	*fakeRuntime
	blockList   bool
	blockStatus types.UID
	entered     chan struct{}
	release     chan struct{}
}

func (b *blockingRuntime) ListPods(ctx context.Context, all bool) ([]*Pod, error) {
	if b.blockList {
		b.entered <- struct{}{}
		<-b.release
	}
	return b.fakeRuntime.ListPods(ctx, all)
}

func (b *blockingRuntime) PodStatus(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error) {
	if uid == b.blockStatus {
		b.blockStatus = "" // only the first call waits
		b.entered <- struct{}{}
		<-b.release
	}
	return b.fakeRuntime.PodStatus(ctx, uid, name, namespace)
}

// TestRefreshDuringSlowRelist: a refresh of one pod returns while a relist waits for the
// runtime (in its list, or in another pod's status), without waiting for it.
func TestRefreshDuringSlowRelist(t *testing.T) {
	for _, tc := range []struct {
		name string
		rt   func(*fakeRuntime) *blockingRuntime
	}{
		{"slow list", func(f *fakeRuntime) *blockingRuntime { return &blockingRuntime{fakeRuntime: f, blockList: true} }},
		{"slow status of another pod", func(f *fakeRuntime) *blockingRuntime { return &blockingRuntime{fakeRuntime: f, blockStatus: "a"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := tc.rt(newFakeRuntime(mkPod("a", "c:ca:r"), mkPod("b", "c:cb:r")))
				rt.entered, rt.release = make(chan struct{}), make(chan struct{})
				r, _, _ := newTestRelister(t, rt, nil)
				relisted := make(chan error)
				go func() { relisted <- r.Relist(context.Background()) }()
				<-rt.entered // the relist waits for the runtime
				s, err := r.Refresh(context.Background(), "b")
				if err != nil || len(s.ContainerStatuses) != 1 || s.ContainerStatuses[0].State != ContainerStateRunning {
					t.Fatalf("Refresh during a relist = %+v, %v; want b running", s, err)
				}
				close(rt.release)
				if err := <-relisted; err != nil {
					t.Fatal(err)
				}
				// b's start is reported once, by the refresh; the relist left b alone.
				if diff := cmp.Diff([]string{"a ContainerStarted ca", "b ContainerStarted cb"}, slices.Sorted(slices.Values(drain(r.Events())))); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// TestRefreshOlderThanRelist: a refresh whose observation started before a relist's
// observation of the same pod, and finished after it, does not replace it in the cache
// nor in the record (no event of the older state).
func TestRefreshOlderThanRelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := &blockingRuntime{fakeRuntime: newFakeRuntime(mkPod("a", "c:ca:r")), blockStatus: "a",
			entered: make(chan struct{}), release: make(chan struct{})}
		r, cache, clk := newTestRelister(t, rt, nil)
		refreshed := make(chan *PodStatus)
		go func() {
			s, err := r.Refresh(context.Background(), "a")
			if err != nil {
				t.Error(err)
			}
			refreshed <- s
		}()
		<-rt.entered // the refresh observes at t0 and waits for the runtime
		clk.Step(time.Second)
		rt.set(mkPod("a", "c:ca:e"))
		if err := r.Relist(context.Background()); err != nil { // observes at t0+1s
			t.Fatal(err)
		}
		rt.set(mkPod("a", "c:ca:r")) // what the refresh's stale answer will say
		close(rt.release)
		s := <-refreshed
		if got := s.ContainerStatuses[0].State; got != ContainerStateExited {
			t.Errorf("Refresh returned %s, want the relist's newer exited", got)
		}
		if cached, _ := cache.Get("a"); cached.ContainerStatuses[0].State != ContainerStateExited {
			t.Errorf("cache holds %s, want exited", cached.ContainerStatuses[0].State)
		}
		if diff := cmp.Diff([]string{"a ContainerDied ca"}, slices.Sorted(slices.Values(drain(r.Events())))); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}

// gatedRuntime is a fakeRuntime whose first list (taken at once, returned late) and
// whose first status of one pod each wait for their own gate after saying so on entered.
type gatedRuntime struct {
	*fakeRuntime
	gatedPod               types.UID
	entered                chan string
	listGate, statusGate   chan struct{}
	listGated, statusGated bool
}

func (g *gatedRuntime) ListPods(ctx context.Context, all bool) ([]*Pod, error) {
	pods, err := g.fakeRuntime.ListPods(ctx, all)
	if !g.listGated {
		g.listGated = true
		g.entered <- "list"
		<-g.listGate
	}
	return pods, err
}

func (g *gatedRuntime) PodStatus(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error) {
	if uid == g.gatedPod && !g.statusGated {
		g.statusGated = true
		g.entered <- "status"
		<-g.statusGate
	}
	return g.fakeRuntime.PodStatus(ctx, uid, name, namespace)
}

// TestRefreshAcrossARelistStart: a refresh whose inspection started before a relist's
// list and was applied during it is left alone by that relist, whose list may be older
// (here it is): no event of the list's older view, and the next relist finds nothing new.
func TestRefreshAcrossARelistStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := &gatedRuntime{fakeRuntime: newFakeRuntime(mkPod("a", "c:ca:r")), gatedPod: "a",
			entered: make(chan string), listGate: make(chan struct{}), statusGate: make(chan struct{})}
		r, _, _ := newTestRelister(t, rt, nil)
		refreshed := make(chan error)
		go func() {
			_, err := r.Refresh(context.Background(), "a")
			refreshed <- err
		}()
		if got := <-rt.entered; got != "status" {
			t.Fatalf("entered %s, want the refresh's status", got)
		}
		relisted := make(chan error)
		go func() { relisted <- r.Relist(context.Background()) }()
		if got := <-rt.entered; got != "list" {
			t.Fatalf("entered %s, want the relist's list", got)
		}
		rt.set(mkPod("a", "c:ca:e")) // the refresh sees exited; the list saw running
		close(rt.statusGate)
		if err := <-refreshed; err != nil {
			t.Fatal(err)
		}
		close(rt.listGate)
		if err := <-relisted; err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"a ContainerDied ca"}, drain(r.Events())); diff != "" {
			t.Errorf("events of the refresh and the overlapping relist (-want +got):\n%s", diff)
		}
		if err := r.Relist(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := drain(r.Events()); len(got) != 0 {
			t.Errorf("events of the next relist %v, want none", got)
		}
	})
}
