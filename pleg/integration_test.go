package pleg_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
)

// TestLifecycleWithPlegtestRuntime runs the relister over plegtest's runtime, the way a
// pod worker uses it: each transition is seen at once through RequestRefresh and
// GetNewerThan, not at the next periodic relist.
func TestLifecycleWithPlegtestRuntime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		rt := plegtest.NewRuntime(clk)
		cache := pleg.NewCache()
		r, err := pleg.New(pleg.Config{Runtime: rt, Cache: cache, Clock: clk, RelistPeriod: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go r.Run(ctx)
		synctest.Wait()

		events := func() []string {
			var out []string
			for {
				select {
				case e := <-r.Events():
					out = append(out, string(e.Type))
				default:
					return out
				}
			}
		}
		// refreshAndWait is what a pod worker does after acting on the runtime. The fake
		// clock stands still, so the sync is taken to have started a nanosecond before: a
		// status observed in the very instant of minTime is not "newer" (the kubelet's
		// strict comparison), and whether the waiter registers before the refresh lands
		// would otherwise decide whether it returns.
		refreshAndWait := func(syncStart time.Time) *pleg.PodStatus {
			t.Helper()
			r.RequestRefresh("uid-1")
			st, err := cache.GetNewerThan(ctx, "uid-1", syncStart.Add(-time.Nanosecond))
			if err != nil {
				t.Fatal(err)
			}
			return st
		}

		clk.Step(time.Second)
		start := clk.Now()
		if err := rt.StartPod(ctx, plegtest.PodSpec{UID: "uid-1", Name: "web", Namespace: "default",
			Containers: []plegtest.ContainerSpec{{Name: "app", StopDelay: 2 * time.Second}}}); err != nil {
			t.Fatal(err)
		}
		st := refreshAndWait(start)
		if !st.IsRunning() || st.FindContainerStatusByName("app").State != pleg.ContainerStateRunning {
			t.Fatalf("after start: %+v", st)
		}
		synctest.Wait()
		if diff := cmp.Diff([]string{"ContainerStarted", "ContainerStarted"}, events()); diff != "" {
			t.Fatalf("start events (-want +got):\n%s", diff)
		}

		clk.Step(time.Second)
		killStart := clk.Now()
		killed := make(chan error, 1)
		go func() { killed <- rt.KillPod(ctx, "uid-1", 30*time.Second) }()
		synctest.Wait()
		clk.Step(2 * time.Second) // the stop delay
		if err := <-killed; err != nil {
			t.Fatal(err)
		}
		st = refreshAndWait(killStart)
		if st.IsRunning() {
			t.Fatalf("after kill: still running: %+v", st)
		}
		synctest.Wait()
		if diff := cmp.Diff([]string{"ContainerDied", "ContainerDied"}, events()); diff != "" {
			t.Fatalf("kill events (-want +got):\n%s", diff)
		}
		if calls := rt.Calls(); calls.ListPods != 1 {
			t.Fatalf("ListPods calls = %d: a transition waited for a relist", calls.ListPods)
		}

		rt.RemovePod("uid-1")
		clk.Step(time.Second)
		removed := clk.Now()
		if err := r.Relist(ctx); err != nil {
			t.Fatal(err)
		}
		st, err = cache.GetNewerThan(ctx, "uid-1", removed.Add(-time.Nanosecond))
		if err != nil || len(st.ContainerStatuses) != 0 {
			t.Fatalf("after removal: %+v, %v", st, err)
		}
		if diff := cmp.Diff([]string{"ContainerRemoved", "ContainerRemoved"}, events()); diff != "" {
			t.Fatalf("removal events (-want +got):\n%s", diff)
		}
	})
}

// TestRefreshSynchronous checks Refresh: right after the runtime changed, with the clock
// standing still, it returns the changed status and sends the events of the change.
func TestRefreshSynchronous(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := plegtest.NewRuntime(clk)
	cache := pleg.NewCache()
	r, err := pleg.New(pleg.Config{Runtime: rt, Cache: cache, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := rt.StartPod(ctx, plegtest.PodSpec{UID: "uid-1", Name: "web", Namespace: "default",
		Containers: []plegtest.ContainerSpec{{Name: "app"}}}); err != nil {
		t.Fatal(err)
	}
	if err := r.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	for len(r.Events()) > 0 {
		<-r.Events()
	}
	if err := rt.KillPod(ctx, "uid-1", 30*time.Second); err != nil { // stops at once
		t.Fatal(err)
	}
	st, err := r.Refresh(ctx, "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	if st.IsRunning() || st.FindContainerStatusByName("app").State != pleg.ContainerStateExited {
		t.Fatalf("Refresh after the kill = %+v, want nothing running", st)
	}
	if cached, _ := cache.Get("uid-1"); cached != st {
		t.Errorf("Refresh returned a status that is not the cached one")
	}
	var got []string
	for len(r.Events()) > 0 {
		got = append(got, string((<-r.Events()).Type))
	}
	if diff := cmp.Diff([]string{"ContainerDied", "ContainerDied"}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	rt.SetPodStatusError("uid-1", context.DeadlineExceeded)
	if _, err := r.Refresh(ctx, "uid-1"); !errors.Is(err, pleg.ErrPodStatus) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Refresh with a failing runtime = %v, want ErrPodStatus wrapping the runtime's error", err)
	}
	if _, err := r.Refresh(ctx, ""); !errors.Is(err, pleg.ErrInvalidStatus) {
		t.Errorf("Refresh of an empty UID = %v, want ErrInvalidStatus", err)
	}
}
