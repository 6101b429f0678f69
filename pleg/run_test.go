package pleg

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// startRun runs r.Run in the bubble and returns a function that cancels it and checks
// that it returned.
func startRun(t *testing.T, r *Relister) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := false
	go func() {
		r.Run(ctx)
		done = true
	}()
	synctest.Wait()
	return func() {
		t.Helper()
		cancel()
		synctest.Wait()
		if !done {
			t.Fatal("Run did not return after its context ended")
		}
	}
}

func TestRunRelistsPeriodically(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newFakeRuntime(mkPod("a", "c:c1:r"))
		r, _, clk := newTestRelister(t, rt, func(c *Config) { c.RelistPeriod = 5 * time.Second })
		stop := startRun(t, r)
		defer stop()
		if rt.listCalls != 1 {
			t.Fatalf("ListPods calls = %d, want 1 (Run relists at once)", rt.listCalls)
		}
		if diff := cmp.Diff([]string{"a ContainerStarted c1"}, drain(r.Events())); diff != "" {
			t.Fatalf("events mismatch (-want +got):\n%s", diff)
		}
		rt.set(mkPod("a", "c:c1:e"))
		clk.Step(5*time.Second - time.Nanosecond)
		synctest.Wait()
		if rt.listCalls != 1 {
			t.Fatalf("ListPods calls = %d before the period, want 1", rt.listCalls)
		}
		clk.Step(time.Nanosecond)
		synctest.Wait()
		if rt.listCalls != 2 {
			t.Fatalf("ListPods calls = %d after the period, want 2", rt.listCalls)
		}
		if diff := cmp.Diff([]string{"a ContainerDied c1"}, drain(r.Events())); diff != "" {
			t.Fatalf("events mismatch (-want +got):\n%s", diff)
		}
		clk.Step(5 * time.Second)
		synctest.Wait()
		if rt.listCalls != 3 {
			t.Fatalf("ListPods calls = %d after two periods, want 3", rt.listCalls)
		}
		if ok, err := r.Healthy(); !ok {
			t.Fatalf("Healthy = %v, %v", ok, err)
		}
	})
}

func TestRunStopsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newFakeRuntime()
		r, _, _ := newTestRelister(t, rt, nil)
		stop := startRun(t, r)
		stop()
		// A dead context: Run returns without listing.
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		calls := rt.listCalls
		r.Run(ctx)
		if rt.listCalls != calls {
			t.Fatalf("Run with a dead context listed the runtime")
		}
	})
}

func TestRequestRefreshHandledAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newFakeRuntime(mkPod("a", "s:sb1:r", "c:c1:r"))
		r, cache, clk := newTestRelister(t, rt, nil)
		stop := startRun(t, r)
		defer stop()
		drain(r.Events())
		lastSync := clk.Now() // the pod worker's sync started now

		// The pod worker stops the container, asks for a refresh and waits for a newer status.
		rt.set(mkPod("a", "s:sb1:r", "c:c1:e"))
		w := startWait(t.Context(), cache, "a", lastSync)
		synctest.Wait()
		if w.done {
			t.Fatal("GetNewerThan returned before the refresh")
		}
		lists := rt.listCalls
		r.RequestRefresh("a")
		r.RequestRefresh("a") // merged
		synctest.Wait()
		if !w.done || w.err != nil {
			t.Fatalf("waiter = %+v; want woken by the refresh, without a relist", w)
		}
		if diff := cmp.Diff([]string{"c1 exited", "sb1 ready"}, summarize(w.status)); diff != "" {
			t.Fatalf("refreshed status mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"a ContainerDied c1"}, drain(r.Events())); diff != "" {
			t.Fatalf("events mismatch (-want +got):\n%s", diff)
		}
		if rt.listCalls != lists || rt.statusCalls["a"] != 2 {
			t.Fatalf("ListPods calls %d (want %d), PodStatus calls %d (want 2)", rt.listCalls, lists, rt.statusCalls["a"])
		}
		// The next periodic relist sees nothing new.
		clk.Step(time.Second)
		synctest.Wait()
		if got := drain(r.Events()); got != nil {
			t.Fatalf("relist after a refresh repeated events: %v", got)
		}
	})
}

func TestRequestRefreshUnknownPodAndFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newFakeRuntime(mkPod("a", "c:c1:r"))
		r, cache, clk := newTestRelister(t, rt, nil)
		stop := startRun(t, r)
		defer stop()
		drain(r.Events())

		// A pod the runtime never listed: an empty status is cached at once...
		w := startWait(t.Context(), cache, "ghost", clk.Now())
		synctest.Wait() // registered before the refresh (a Set at minTime itself then wakes it)
		r.RequestRefresh("ghost")
		r.RequestRefresh("") // ignored
		synctest.Wait()
		if !w.done || w.err != nil || w.status.ID != "ghost" || len(w.status.ContainerStatuses) != 0 {
			t.Fatalf("waiter = %+v; want an empty status of ghost", w)
		}
		// ...and dropped by the next relist, which does not list it.
		clk.Step(time.Second)
		synctest.Wait()
		if cache.has("ghost") {
			t.Fatal("the cache entry of a pod no relist lists was kept")
		}

		// A failing refresh caches the error and makes the next relist re-inspect: PodSync.
		rt.failStatus("a", errors.New("flaky"))
		r.RequestRefresh("a")
		synctest.Wait()
		if _, err := cache.Get("a"); err == nil {
			t.Fatal("a failed refresh did not cache its error")
		}
		rt.failStatus("a", nil)
		clk.Step(time.Second)
		synctest.Wait()
		if diff := cmp.Diff([]string{"a PodSync"}, drain(r.Events())); diff != "" {
			t.Fatalf("events mismatch (-want +got):\n%s", diff)
		}
		if st, err := cache.Get("a"); err != nil || len(st.ContainerStatuses) != 1 {
			t.Fatalf("cache of a = %v, %v after recovery", st, err)
		}
	})
}

func TestRequestRefreshNeverBlocks(t *testing.T) {
	r, _, _ := newTestRelister(t, newFakeRuntime(), nil)
	for range 10000 {
		r.RequestRefresh("a")
		r.RequestRefresh("b")
	}
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	if diff := cmp.Diff([]string{"a", "b"}, func() (out []string) {
		for _, u := range r.refreshQueue {
			out = append(out, string(u))
		}
		return out
	}()); diff != "" {
		t.Fatalf("queue mismatch (-want +got):\n%s", diff)
	}
}

func TestPushStatus(t *testing.T) {
	rt := newFakeRuntime(mkPod("a", "s:sb1:r", "c:c1:r"))
	r, cache, clk := newTestRelister(t, rt, nil)
	ctx := context.Background()
	if err := r.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	drain(r.Events())

	if _, err := r.PushStatus(nil, clk.Now()); !errors.Is(err, ErrInvalidStatus) {
		t.Fatalf("PushStatus(nil) = %v, want ErrInvalidStatus", err)
	}
	if _, err := r.PushStatus(&PodStatus{}, clk.Now()); !errors.Is(err, ErrInvalidStatus) {
		t.Fatalf("PushStatus without ID = %v, want ErrInvalidStatus", err)
	}

	pushed := statusOf(mkPod("a", "s:sb1:r", "c:c1:e", "c:c2:r"))
	applied, err := r.PushStatus(pushed, clk.Now().Add(time.Millisecond))
	if !applied || err != nil {
		t.Fatalf("PushStatus = %v, %v; want applied", applied, err)
	}
	if diff := cmp.Diff([]string{"a ContainerDied c1", "a ContainerStarted c2"}, drain(r.Events())); diff != "" {
		t.Fatalf("events mismatch (-want +got):\n%s", diff)
	}
	if st, _ := cache.Get("a"); !st.TimeStamp.Equal(t0.Add(time.Millisecond)) {
		t.Fatalf("cached TimeStamp = %v, want the push time", st.TimeStamp)
	}
	// An older observation is ignored.
	applied, err = r.PushStatus(statusOf(mkPod("a", "s:sb1:r", "c:c1:r")), clk.Now())
	if applied || err != nil {
		t.Fatalf("stale PushStatus = %v, %v; want ignored", applied, err)
	}
	if got := drain(r.Events()); got != nil {
		t.Fatalf("stale push sent events: %v", got)
	}
	// The fallback relist agrees with the push: nothing new.
	rt.set(mkPod("a", "s:sb1:r", "c:c1:e", "c:c2:r"))
	clk.Step(time.Second)
	if err := r.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if got := drain(r.Events()); got != nil {
		t.Fatalf("relist after a push repeated events: %v", got)
	}
}

// TestConcurrentUse runs Run, Relist, PushStatus, RequestRefresh, Healthy and a consumer
// at once (for the race detector), then checks that the final state is consistent.
func TestConcurrentUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newFakeRuntime(mkPod("a", "s:sa:r", "c:a1:r"), mkPod("b", "s:sb:r", "c:b1:r"))
		r, cache, clk := newTestRelister(t, rt, nil)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go r.Run(ctx)
		consumed := 0
		go func() {
			for {
				select {
				case <-r.Events():
					consumed++
				case <-ctx.Done():
					return
				}
			}
		}()
		done := make(chan struct{})
		for g := range 3 {
			go func() {
				defer func() { done <- struct{}{} }()
				for i := range 50 {
					switch (g + i) % 4 {
					case 0:
						r.RequestRefresh("a")
					case 1:
						_, _ = r.PushStatus(statusOf(mkPod("b", "s:sb:r", "c:b1:r")), clk.Now())
					case 2:
						_ = r.Relist(ctx)
					case 3:
						_, _ = r.Healthy()
						_, _ = cache.Get("a")
					}
				}
			}()
		}
		for range 3 {
			<-done
		}
		rt.set(mkPod("a", "s:sa:r", "c:a1:e"))
		clk.Step(time.Second)
		synctest.Wait()
		if st, _ := cache.Get("a"); st.FindContainerStatusByName("n-a1").State != ContainerStateExited {
			t.Fatalf("cache of a = %+v after the final relist", st)
		}
		if _, err := cache.Get("b"); err != nil {
			t.Fatal(err)
		}
		if cache.has("b") {
			t.Fatal("b vanished from the runtime but kept its cache entry")
		}
		if consumed < 3 { // a1 and sa started, a1 died, at least
			t.Fatalf("consumed %d events", consumed)
		}
	})
}
