package pleg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
)

// slowRuntime steps the fake clock by delay on every ListPods: a relist that takes time.
type slowRuntime struct {
	*fakeRuntime
	clk   *testingclock.FakeClock
	delay time.Duration
}

func (s *slowRuntime) ListPods(ctx context.Context, all bool) ([]*Pod, error) {
	s.clk.Step(s.delay)
	return s.fakeRuntime.ListPods(ctx, all)
}

// TestHooks: every relist reports its duration, the interval since the previous
// successful one, the last successful start and the health; drops are reported with
// their count; the hooks run outside the relister's locks (they call its methods).
func TestHooks(t *testing.T) {
	fake := newFakeRuntime(mkPod("a", "c:c1:r", "c:c2:r", "c:c3:r"))
	rt := &slowRuntime{fakeRuntime: fake, delay: 200 * time.Millisecond}
	var got []string
	var dropped []int
	var r *Relister
	r, _, clk := newTestRelister(t, rt, func(c *Config) {
		c.EventChannelCapacity = 2
		c.RelistThreshold = time.Minute
		c.Hooks = Hooks{
			Relisted: func(rl Relist) {
				r.Healthy() // would deadlock under the lock
				got = append(got, fmt.Sprintf("start=+%v took=%v interval=%v lastSeen=+%v healthy=%v err=%v",
					rl.Start.Sub(t0), rl.Duration, rl.Interval, rl.LastSeen.Sub(t0), rl.Healthy, rl.Err != nil))
			},
			EventsDropped: func(n int) { r.DroppedEvents(); dropped = append(dropped, n) },
		}
	})
	rt.clk = clk
	ctx := context.Background()
	if err := r.Relist(ctx); err != nil { // 3 events, room for 2
		t.Fatal(err)
	}
	clk.Step(time.Second)
	fake.listErr = errors.New("down")
	_ = r.Relist(ctx)
	clk.Step(2 * time.Minute)
	fake.listErr = nil
	drain(r.Events())
	if err := r.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PushStatus(&PodStatus{ID: types.UID("b"), ContainerStatuses: []*ContainerStatus{
		{ID: "x", Name: "x", State: ContainerStateRunning}, {ID: "y", Name: "y", State: ContainerStateRunning},
		{ID: "z", Name: "z", State: ContainerStateRunning}}}, clk.Now()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"start=+0s took=200ms interval=0s lastSeen=+0s healthy=true err=false",
		"start=+1.2s took=200ms interval=1.2s lastSeen=+0s healthy=true err=true",
		"start=+2m1.4s took=200ms interval=2m1.4s lastSeen=+2m1.4s healthy=true err=false",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("relists (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 1}, dropped); diff != "" {
		t.Errorf("drops (-want +got):\n%s", diff)
	}
}

// lockProbe is a slog handler that checks, on every record, that the relister's lock is
// free: the logger's handler is the caller's code.
type lockProbe struct {
	t      *testing.T
	r      **Relister
	during []string
	msgs   []string
}

func (h *lockProbe) Enabled(context.Context, slog.Level) bool { return true }
func (h *lockProbe) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *lockProbe) WithGroup(string) slog.Handler            { return h }
func (h *lockProbe) Handle(_ context.Context, rec slog.Record) error {
	r := *h.r
	h.msgs = append(h.msgs, rec.Message)
	if !r.locksFree() {
		h.t.Errorf("%q logged with one of the relister's locks held", rec.Message)
		return nil
	}
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "during" {
			h.during = append(h.during, a.Value.String())
		}
		return true
	})
	return nil
}

// TestDropsLoggedOutsideLock: the log line about dropped events of a relist, a refresh
// and a push is written after the relister's lock is released.
func TestDropsLoggedOutsideLock(t *testing.T) {
	rt := newFakeRuntime(mkPod("a", "c:a1:r", "c:a2:r"))
	var r *Relister
	probe := &lockProbe{t: t, r: &r}
	r, _, clk := newTestRelister(t, rt, func(c *Config) {
		c.EventChannelCapacity = 1
		c.Logger = slog.New(probe)
	})
	ctx := context.Background()
	if err := r.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	rt.set(mkPod("a", "c:a1:e", "c:a2:e"))
	clk.Step(time.Second)
	if _, err := r.Refresh(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	if _, err := r.PushStatus(statusOf(mkPod("b", "c:b1:r", "c:b2:r")), clk.Now()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"relist", "refresh", "push"}, probe.during); diff != "" {
		t.Errorf("drop logs (-want +got):\n%s", diff)
	}
}

// TestRelistWarningsLoggedOutsideLocks: a relist's log records (a failed list, a pod
// without UID, a pod listed twice, a failed status) are written after the relist released
// its locks, each once.
func TestRelistWarningsLoggedOutsideLocks(t *testing.T) {
	a := mkPod("a", "c:a1:r")
	rt := newFakeRuntime(a, &Pod{Name: "no-uid"}, a, mkPod("b", "c:b1:r"))
	rt.failStatus("b", errors.New("runtime unavailable"))
	var r *Relister
	probe := &lockProbe{t: t, r: &r}
	r, _, _ = newTestRelister(t, rt, func(c *Config) { c.Logger = slog.New(probe) })
	ctx := context.Background()
	if err := r.Relist(ctx); !errors.Is(err, ErrPodStatus) {
		t.Fatalf("relist: %v, want ErrPodStatus", err)
	}
	rt.mu.Lock()
	rt.listErr = errors.New("runtime down")
	rt.mu.Unlock()
	if err := r.Relist(ctx); !errors.Is(err, ErrListPods) {
		t.Fatalf("relist: %v, want ErrListPods", err)
	}
	want := []string{
		"pleg: relist: ignoring a listed pod without UID",
		"pleg: relist: ignoring a pod listed twice",
		"pleg: relist: pod status failed; events dropped until the next relist",
		"pleg: relist: listing pods failed",
	}
	if diff := cmp.Diff(want, probe.msgs); diff != "" {
		t.Errorf("log records (-want +got):\n%s", diff)
	}
}
