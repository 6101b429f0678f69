package pleg

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
)

// locksFree reports whether the relister's locks and its cache's are all free: the
// caller's code (runtime, logger, hooks) must run outside them.
func (r *Relister) locksFree() bool {
	locks := []interface {
		TryLock() bool
		Unlock()
	}{&r.mu, &r.relistMu, &r.shared}
	for i := range r.podLocks {
		locks = append(locks, &r.podLocks[i])
	}
	for i := range r.cache.shards {
		locks = append(locks, &r.cache.shards[i].mu)
	}
	for _, l := range locks {
		if !l.TryLock() {
			return false
		}
		l.Unlock()
	}
	return true
}

// probeRuntime calls onStatus before answering each PodStatus.
type probeRuntime struct {
	RuntimeService
	onStatus func(uid types.UID)
}

func (p *probeRuntime) PodStatus(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error) {
	p.onStatus(uid)
	return p.RuntimeService.PodStatus(ctx, uid, name, namespace)
}

// TestRefreshAndPushOutsideLocks: a refresh (Refresh, StatusAfter, RequestRefresh handled by
// Run) calls the runtime, and a refresh or push logs, with every lock of the relister and
// of the cache free; a relist calls the runtime holding only the lock that serializes
// relists.
func TestRefreshAndPushOutsideLocks(t *testing.T) {
	fake := newFakeRuntime(mkPod("a", "s:sa:r", "c:a1:r"))
	var r *Relister
	var inRelist atomic.Bool
	var checked atomic.Int64
	rt := &probeRuntime{RuntimeService: fake, onStatus: func(uid types.UID) {
		checked.Add(1)
		if inRelist.Load() {
			if !r.relistMu.TryLock() && r.mu.TryLock() {
				r.mu.Unlock()
				return
			}
			t.Errorf("relist: PodStatus(%s) called with r.mu held or relistMu free", uid)
			return
		}
		if !r.locksFree() {
			t.Errorf("PodStatus(%s) called with a lock held", uid)
		}
	}}
	probe := &lockProbe{t: t, r: &r}
	r, _, clk := newTestRelister(t, rt, func(c *Config) {
		c.Logger = slog.New(probe)
		c.EventChannelCapacity = 1
	})
	ctx := context.Background()
	inRelist.Store(true)
	if err := r.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	inRelist.Store(false)
	clk.Step(time.Second)
	fake.set(mkPod("a", "s:sa:r", "c:a1:e"), mkPod("b", "c:b1:r"))
	if _, err := r.Refresh(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.StatusAfter(ctx, "b", clk.Now(), true); err != nil {
		t.Fatal(err)
	}
	fake.failStatus("b", fmt.Errorf("down"))
	clk.Step(time.Second)
	if _, err := r.Refresh(ctx, "b"); err == nil {
		t.Fatal("Refresh of a failing pod succeeded")
	}
	if _, err := r.PushStatus(statusOf(mkPod("c", "c:c1:r", "c:c2:r")), clk.Now()); err != nil {
		t.Fatal(err)
	}
	if checked.Load() != 4 {
		t.Errorf("%d runtime status calls, want 4", checked.Load())
	}
	want := []string{"relist", "refresh", "refresh", "push"} // one event fits
	if diff := cmp.Diff(want, probe.during); diff != "" {
		t.Errorf("drop logs (-want +got):\n%s", diff)
	}
}

// tickingClock is a fake clock that moves on by 1 ns at every Now, so that concurrent
// observations are ordered as their runtime calls were started.
type tickingClock struct {
	*testingclock.FakeClock
	mu sync.Mutex
}

func (c *tickingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Step(time.Nanosecond)
	return c.FakeClock.Now()
}

// TestConcurrentRefreshes refreshes pods at once, the same pod from several goroutines and
// different pods from each, while relists run and the first refresher makes the
// runtime's containers die one by one (for the race detector). Every event of a container must follow from its previous one (a diff
// against a view another refresh had replaced would repeat one), and once a last refresh
// of each pod has run, the cache holds each pod's final status, and the relister's record
// its containers.
func TestConcurrentRefreshes(t *testing.T) {
	const pods, refreshers, rounds = 6, 4, 40
	uid := func(i int) types.UID { return types.UID(fmt.Sprint("p", i)) }
	podAt := func(i int, state string) *Pod {
		return mkPod(uid(i), fmt.Sprintf("s:sb%d:r", i), fmt.Sprintf("c:c%d:%s", i, state))
	}
	all := func(state func(i int) string) []*Pod {
		var ps []*Pod
		for i := range pods {
			ps = append(ps, podAt(i, state(i)))
		}
		return ps
	}
	fake := newFakeRuntime(all(func(int) string { return "r" })...)
	clk := &tickingClock{FakeClock: testingclock.NewFakeClock(t0)}
	r, cache, _ := newTestRelister(t, fake, func(c *Config) {
		c.Clock = clk
		c.EventChannelCapacity = 100000
	})
	ctx := context.Background()
	dead := 0 // the containers of pods 0..dead-1 died
	var wg sync.WaitGroup
	for g := range refreshers {
		wg.Go(func() {
			for n := range rounds {
				if g == 0 && n%(rounds/pods) == 0 && dead < pods {
					dead++
					fake.set(all(func(i int) string {
						if i < dead {
							return "e"
						}
						return "r"
					})...)
				}
				u := uid((g + n) % pods)
				if n%2 == 0 {
					u = uid(n % pods) // every refresher: the same pod at about the same time
				}
				if s, err := r.Refresh(ctx, u); err != nil || s.ID != u {
					t.Errorf("Refresh(%s) = %+v, %v", u, s, err)
				}
			}
		})
	}
	wg.Go(func() {
		for range rounds / 4 {
			if err := r.Relist(ctx); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	if dead != pods {
		t.Fatalf("%d containers died, want %d", dead, pods)
	}
	for i := range pods {
		if _, err := r.Refresh(ctx, uid(i)); err != nil {
			t.Fatal(err)
		}
	}

	last := map[string]EventType{}
	for {
		var e *PodLifecycleEvent
		select {
		case e = <-r.Events():
		default:
		}
		if e == nil {
			break
		}
		id, _ := e.Data.(string)
		if prev, ok := last[id]; ok && prev == e.Type {
			t.Errorf("pod %s: %s %s twice in a row", e.ID, e.Type, id)
		}
		last[id] = e.Type
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range pods {
		u := uid(i)
		c := fmt.Sprint("c", i)
		if last[c] != ContainerDied {
			t.Errorf("pod %s: last event of %s is %q, want %s", u, c, last[c], ContainerDied)
		}
		st, err := cache.Get(u)
		if err != nil || st.FindContainerStatusByName("n-"+c).State != ContainerStateExited || len(st.IPs) != 1 {
			t.Errorf("cache of %s = %+v, %v; want %s exited and the IP", u, st, err, c)
		}
		rec := r.records[u]
		if rec == nil || rec.uid != u || len(rec.view.entries) != 2 {
			t.Fatalf("record of %s = %+v", u, rec)
		}
		if got := rec.view.entries[rec.view.index(c)].state.state(); got != ContainerStateExited {
			t.Errorf("record of %s: %s is %s, want exited", u, c, got)
		}
	}
}

// TestPushesOfOnePodChangeCacheAndRecordTogether: while the relister's shared lock is
// taken, a push of a pod stops on it after caching its status; a newer push of the same
// pod must then wait for the first to finish (the pod's lock) instead of caching its own
// status too, after which either may update the record first and the record would no
// longer match the cache.
func TestPushesOfOnePodChangeCacheAndRecordTogether(t *testing.T) {
	r, cache, _ := newTestRelister(t, newFakeRuntime(), nil)
	for k := range 20 {
		at := t0.Add(time.Duration(2*k) * time.Second)
		first, second := statusOf(mkPod("a", "c:a1:r")), statusOf(mkPod("a", "c:a1:e"))
		first.TimeStamp, second.TimeStamp = at, at.Add(time.Second) // cached as they are
		r.shared.Lock()
		var wg sync.WaitGroup
		wg.Go(func() { _, _ = r.PushStatus(first, at) })
		for st, _ := cache.Get("a"); st != first; st, _ = cache.Get("a") {
			runtime.Gosched() // until the first push cached its status
		}
		wg.Go(func() { _, _ = r.PushStatus(second, at.Add(time.Second)) })
		for range 100 { // time for the second push to cache its status, if it could
			runtime.Gosched()
		}
		if st, _ := cache.Get("a"); st != first {
			t.Errorf("round %d: a newer push cached its status while an older one was applied", k)
		}
		r.shared.Unlock()
		wg.Wait()
		st, _ := cache.Get("a")
		rec := r.records["a"]
		if got := rec.view.entries[rec.view.index("a1")].state.state(); st != second || got != ContainerStateExited {
			t.Fatalf("round %d: cache has the status of the second push: %v; record has a1 %s, want exited", k, st == second, got)
		}
	}
}
