package pleg

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
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
	}{&r.mu, &r.relistMu, &r.cache.updateMu}
	for i := range r.stripes {
		locks = append(locks, &r.stripes[i].lock)
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
	if _, err := r.StatusAfter(ctx, "b", clk.Now()); err != nil {
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

	last := lastAlternating(t, drainEvents(r.Events()))
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
		rec := r.recordFor(u)
		if rec == nil || rec.uid != u || len(rec.view.entries) != 2 {
			t.Fatalf("record of %s = %+v", u, rec)
		}
		if got := rec.view.entries[rec.view.index(c)].state.state(); got != ContainerStateExited {
			t.Errorf("record of %s: %s is %s, want exited", u, c, got)
		}
	}
}

// TestPushWaitsForItsStripe: a push caches its status only once it holds its pod's stripe
// lock (the cache write and the record change together). With the stripe held, as an apply
// of another pod of the stripe holds it, a newer push of the pod must not reach the cache;
// once the stripe is free it does.
func TestPushWaitsForItsStripe(t *testing.T) {
	r, cache, _ := newTestRelister(t, newFakeRuntime(), nil)
	first := statusOf(mkPod("a", "c:a1:r"))
	if _, err := r.PushStatus(first, t0); err != nil {
		t.Fatal(err)
	}
	second := statusOf(mkPod("a", "c:a1:e"))
	s := r.stripe("a")
	s.lock.Lock()
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = r.PushStatus(second, t0.Add(time.Second)) })
	for range 100 { // give the push every chance to run up to the stripe lock
		runtime.Gosched()
	}
	if st, _ := cache.Get("a"); st == nil || st.ContainerStatuses[0].State != ContainerStateRunning {
		t.Errorf("a push cached its status while its pod's stripe was locked: %+v", st)
	}
	s.lock.Unlock()
	wg.Wait()
	if st, _ := cache.Get("a"); st == nil || st.ContainerStatuses[0].State != ContainerStateExited {
		t.Errorf("after the stripe was free the cache has %+v, want the second push's status", st)
	}
}

// TestPushesOfOnePodChangeCacheAndRecordTogether: pushes of one pod from several
// goroutines, each a status newer than the one before, the container running and exited
// by turns. A push caches its status and updates the record holding the pod's lock, so
// that no newer push caches its own in between: then either may update the record last,
// and the record would no longer match the cache (and the race detector sees two pushes
// write the record at once). Once they are done, the record has the cached state.
func TestPushesOfOnePodChangeCacheAndRecordTogether(t *testing.T) {
	r, cache, _ := newTestRelister(t, newFakeRuntime(), nil)
	const pushers, rounds = 4, 50
	var tick atomic.Int64
	for k := range 20 {
		var wg sync.WaitGroup
		for range pushers {
			wg.Go(func() {
				for range rounds {
					n := tick.Add(1)
					st := statusOf(mkPod("a", "c:a1:"+[]string{"r", "e"}[n%2]))
					at := t0.Add(time.Duration(n) * time.Second)
					st.TimeStamp = at // cached as it is
					_, _ = r.PushStatus(st, at)
				}
			})
		}
		wg.Wait()
		st, _ := cache.Get("a")
		rec := r.recordFor("a")
		want := st.FindContainerStatusByName("n-a1").State
		if got := rec.view.entries[rec.view.index("a1")].state.state(); got != want {
			t.Fatalf("round %d: record has a1 %s, the cache %s", k, got, want)
		}
		if st.TimeStamp != t0.Add(time.Duration(tick.Load())*time.Second) {
			t.Fatalf("round %d: the cache has the status of %v, not of the last push", k, st.TimeStamp)
		}
	}
}

// recordFor returns the record of uid, nil if none. r.mu must be held for writing, or no
// call may be in progress.
func (r *Relister) recordFor(uid types.UID) *podRecord { return r.stripe(uid).record(uid) }

// allRecords returns every record by UID; r.mu must be held for writing.
func (r *Relister) allRecords() map[types.UID]*podRecord {
	all := make(map[types.UID]*podRecord)
	for i := range r.stripes {
		maps.Copy(all, r.stripes[i].records)
	}
	return all
}

// TestConcurrentAppliesAcrossStripes runs refreshes and pushes of many pods at once, pods
// that share a stripe of the relister and pods that do not, while relists run and pods
// vanish and come back (for the race detector: records of one stripe are added, read and
// deleted by applies of different pods and by relists). Each pod's container starts and
// dies by turns; every event of a container must follow from its previous one, and once
// the last refresh of each pod has run, its record, its cache entry and its last event
// agree with the runtime.
func TestConcurrentAppliesAcrossStripes(t *testing.T) {
	const rounds = 30
	fake := newFakeRuntime()
	clk := &tickingClock{FakeClock: testingclock.NewFakeClock(t0)}
	r, cache, _ := newTestRelister(t, fake, func(c *Config) {
		c.Clock = clk
		c.EventChannelCapacity = 100000
	})
	// Pods four by four in the same stripes, and as many alone in theirs.
	byStripe := map[*podStripe][]types.UID{}
	var order []*podStripe
	for i := range 4 * podStripes {
		u := types.UID(fmt.Sprint("pod-", i))
		s := r.stripe(u)
		if byStripe[s] == nil {
			order = append(order, s)
		}
		byStripe[s] = append(byStripe[s], u)
	}
	var shared, alone []types.UID
	for _, s := range order {
		if us := byStripe[s]; len(us) >= 4 && len(shared) < 16 {
			shared = append(shared, us[:4]...)
		} else if len(alone) < 16 {
			alone = append(alone, us[0])
		}
	}
	uids := append(shared, alone...)
	podAt := func(u types.UID, state string) *Pod {
		return mkPod(u, fmt.Sprintf("s:sb-%s:r", u), fmt.Sprintf("c:c-%s:%s", u, state))
	}
	for _, u := range uids[:len(uids)/2] { // the others appear during the test
		fake.setPod(podAt(u, "r"))
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := r.Relist(ctx); err != nil {
				t.Error(err)
			}
		}
	})
	var appliers sync.WaitGroup
	for k, u := range uids {
		appliers.Go(func() {
			for n := range rounds {
				if n%10 == 5 && n < rounds-1 {
					fake.removePod(u) // a relist may forget it; the next round brings it back
					continue
				}
				state := []string{"r", "e"}[n%2]
				p := podAt(u, state)
				fake.setPod(p)
				if (n+k)%3 == 0 {
					if _, err := r.PushStatus(statusOf(p), clk.Now()); err != nil {
						t.Errorf("PushStatus(%s): %v", u, err)
					}
					continue
				}
				if s, err := r.Refresh(ctx, u); err != nil || s.ID != u {
					t.Errorf("Refresh(%s) = %+v, %v", u, s, err)
				}
			}
		})
	}
	appliers.Wait()
	close(stop)
	wg.Wait()
	for _, u := range uids {
		if _, err := r.Refresh(ctx, u); err != nil {
			t.Fatal(err)
		}
	}

	last := lastAlternating(t, drainEvents(r.Events()))
	r.mu.Lock()
	defer r.mu.Unlock()
	if got := r.recordCount(); got != len(uids) {
		t.Errorf("%d records, want %d", got, len(uids))
	}
	for _, u := range uids {
		c := "c-" + string(u)
		want := []ContainerState{ContainerStateRunning, ContainerStateExited}[(rounds-1)%2]
		if got := last[c]; got != map[ContainerState]EventType{ContainerStateRunning: ContainerStarted, ContainerStateExited: ContainerDied}[want] {
			t.Errorf("pod %s: last event of %s is %q, want the one of %s", u, c, got, want)
		}
		if st, err := cache.Get(u); err != nil || st.FindContainerStatusByName("n-"+c).State != want {
			t.Errorf("cache of %s = %+v, %v; want %s %s", u, st, err, c, want)
		}
		rec := r.recordFor(u)
		if rec == nil || rec.uid != u || len(rec.view.entries) != 2 {
			t.Fatalf("record of %s = %+v", u, rec)
		}
		if got := rec.view.entries[rec.view.index(c)].state.state(); got != want {
			t.Errorf("record of %s: %s is %s, want %s", u, c, got, want)
		}
	}
}

// lastAlternating returns the type of each container's last event in events (by the
// container ID in Data), failing the test where a container has the same type twice in a
// row.
func lastAlternating(t *testing.T, events []*PodLifecycleEvent) map[string]EventType {
	t.Helper()
	last := map[string]EventType{}
	for _, e := range events {
		id, _ := e.Data.(string)
		if prev, ok := last[id]; ok && prev == e.Type {
			t.Errorf("pod %s: %s %s twice in a row", e.ID, e.Type, id)
		}
		last[id] = e.Type
	}
	return last
}

// drainEvents returns the events waiting on ch, in order.
func drainEvents(ch <-chan *PodLifecycleEvent) []*PodLifecycleEvent {
	var out []*PodLifecycleEvent
	for {
		select {
		case e := <-ch:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestConcurrentDropsCounted: pushes of different pods from several goroutines into a full
// channel; every event but the one that fits is counted once by DroppedEvents and reported
// once to Hooks.EventsDropped, whichever stripe's count it went to.
func TestConcurrentDropsCounted(t *testing.T) {
	const pushers, pushes = 8, 40
	var reported atomic.Int64
	r, _, _ := newTestRelister(t, newFakeRuntime(), func(c *Config) {
		c.EventChannelCapacity = 1
		c.Hooks.EventsDropped = func(n int) { reported.Add(int64(n)) }
	})
	var wg sync.WaitGroup
	for g := range pushers {
		wg.Go(func() {
			u := types.UID(fmt.Sprint("pod-", g))
			for n := range pushes { // one event each: the container starts or dies
				st := statusOf(mkPod(u, "c:c-"+string(u)+":"+[]string{"r", "e"}[n%2]))
				if _, err := r.PushStatus(st, t0.Add(time.Duration(n)*time.Second)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	want := uint64(pushers*pushes - 1)
	if got := r.DroppedEvents(); got != want {
		t.Errorf("DroppedEvents = %d, want %d", got, want)
	}
	if got := reported.Load(); got != int64(want) {
		t.Errorf("EventsDropped reported %d, want %d", got, want)
	}
	if got := len(drainEvents(r.Events())); got != 1 {
		t.Errorf("%d events delivered, want 1", got)
	}
}

// TestRefreshAfterItsRecordVanished: a relist that drops a pod's record while a refresh
// of the pod waits for the runtime (the pod vanished from the list) leaves the refresh
// a stale record; the refresh applies the status to the pod's current record (a new
// one), which a stale one would not be: no record would hold the pod afterwards.
func TestRefreshAfterItsRecordVanished(t *testing.T) {
	a := mkPod("a", "s:sa:r", "c:a1:r")
	fake := newFakeRuntime(a)
	var r *Relister
	var armed bool
	var stale *podRecord
	rt := &probeRuntime{RuntimeService: fake, onStatus: func(uid types.UID) {
		if !armed || stale != nil {
			return
		}
		stale = r.recordFor(uid)
		fake.removePod(uid)
		if err := r.Relist(context.Background()); err != nil {
			t.Error(err)
		}
		fake.setPod(a) // the runtime has it again when it answers
	}}
	r, cache, clk := newTestRelister(t, rt, nil)
	ctx := context.Background()
	if err := r.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	armed = true
	st, err := r.Refresh(ctx, "a")
	if err != nil || !st.IsRunning() {
		t.Fatalf("Refresh = %v, %v; want the running pod", st, err)
	}
	if stale == nil || !stale.vanished {
		t.Fatalf("the relist during the refresh did not drop the pod's record (%+v)", stale)
	}
	r.mu.Lock()
	rec := r.recordFor("a")
	r.mu.Unlock()
	if rec == nil || rec == stale {
		t.Fatalf("record after the refresh = %p, want a new one (the stale one is %p)", rec, stale)
	}
	if got := rec.view.index("a1"); got < 0 || rec.view.entries[got].state.state() != ContainerStateRunning {
		t.Errorf("the new record's view %+v lacks the running container a1", rec.view)
	}
	if cached, _ := cache.Get("a"); cached != st {
		t.Errorf("cached %+v, want the refreshed status", cached)
	}
}

// TestApplyKeepsTheViewUpToDate: an apply whose status has the record's containers in
// the same order updates their states in place, and one with the same containers under
// a new name records the name; each sends the events of its changes.
func TestApplyKeepsTheViewUpToDate(t *testing.T) {
	r, _, _ := newTestRelister(t, newFakeRuntime(), nil)
	steps := []struct {
		pod    *Pod
		events []EventType
	}{
		{mkPod("a", "s:sa:r", "c:a1:r"), []EventType{ContainerStarted, ContainerStarted}},
		{mkPod("a", "s:sa:e", "c:a1:e"), []EventType{ContainerDied, ContainerDied}},
		{mkPod("a", "s:sa:e", "c:a1:r"), []EventType{ContainerStarted}},
	}
	for i, st := range steps {
		if i == 2 {
			st.pod.Name = "renamed"
		}
		if ok, err := r.PushStatus(statusOf(st.pod), t0.Add(time.Duration(i)*time.Second)); !ok || err != nil {
			t.Fatalf("step %d: PushStatus = %v, %v", i, ok, err)
		}
		var got []EventType
		for _, e := range drainEvents(r.Events()) {
			got = append(got, e.Type)
		}
		if diff := cmp.Diff(st.events, got); diff != "" {
			t.Errorf("step %d: events (-want +got):\n%s", i, diff)
		}
		r.mu.Lock()
		v := r.recordFor("a").view
		r.mu.Unlock()
		want := viewOf(st.pod)
		same := v.name == want.name && v.containers == want.containers && len(v.entries) == len(want.entries)
		for j := range want.entries {
			same = same && v.entries[j].id == want.entries[j].id && v.entries[j].state == want.entries[j].state
		}
		if !same {
			t.Errorf("step %d: view %+v, want %+v", i, v, want)
		}
	}
}
