package pleg

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestCacheGetSetDelete(t *testing.T) {
	c := NewCache()
	errRuntime := errors.New("runtime down")
	s1 := &PodStatus{ID: "a", Name: "one", IPs: []string{"10.0.0.1"}}

	got, err := c.Get("a")
	if diff := cmp.Diff(&PodStatus{ID: "a"}, got); diff != "" || err != nil {
		t.Fatalf("Get of a missing pod = %v, %v; want empty status, nil (-want +got):\n%s", got, err, diff)
	}
	if !c.Set("a", s1, nil, t0) {
		t.Fatal("Set of a new pod = false")
	}
	if got, err := c.Get("a"); got != s1 || err != nil {
		t.Fatalf("Get = %v, %v; want the status set", got, err)
	}
	if !c.Set("a", nil, errRuntime, t0) {
		t.Fatal("Set with the same timestamp = false, want true")
	}
	if got, err := c.Get("a"); !errors.Is(err, errRuntime) || got == nil || got.ID != "a" {
		t.Fatalf("Get after an error Set = %v, %v; want an empty status and the error", got, err)
	}
	if c.Set("a", s1, nil, t0.Add(-time.Nanosecond)) {
		t.Fatal("Set of an older observation = true, want false")
	}
	if _, err := c.Get("a"); !errors.Is(err, errRuntime) {
		t.Fatalf("an older Set replaced the entry: err = %v", err)
	}
	if c.Set("", s1, nil, t0) {
		t.Fatal("Set with an empty UID = true, want false")
	}
	c.Delete("a")
	if got, err := c.Get("a"); got.ID != "a" || len(got.IPs) != 0 || err != nil {
		t.Fatalf("Get after Delete = %v, %v; want empty status", got, err)
	}
	c.Delete("never-there") // no panic
}

// TestCacheSetObserved: a status the relister observed is prepared under the lock of its
// write, from the entry it replaces: a stopped pod's status (no IPs, no ready sandbox)
// takes the IPs of the replaced status unless that one came with an error; a running
// pod's status, one with IPs and the first status of a pod are stored as given; a
// status missing its ID or time is completed; an older observation changes nothing.
func TestCacheSetObserved(t *testing.T) {
	ips := []string{"10.0.0.1"}
	errRuntime := errors.New("runtime down")
	ready := []*SandboxStatus{{ID: "sb", State: SandboxReady}}
	stopped := []*SandboxStatus{{ID: "sb", State: SandboxNotReady}}
	tests := []struct {
		name    string
		old     *PodStatus // set first at t0, with oldErr; nil: no entry
		oldErr  error
		status  *PodStatus // observed at t0+1s
		wantIPs []string
		same    bool // the status itself is stored (no copy)
	}{
		{name: "first status of a stopped pod", status: &PodStatus{ID: "a", TimeStamp: t0, SandboxStatuses: stopped}, same: true},
		{name: "stopped pod keeps the IPs", old: &PodStatus{ID: "a", IPs: ips}, status: &PodStatus{ID: "a", TimeStamp: t0, SandboxStatuses: stopped}, wantIPs: ips},
		{name: "not after an error", old: &PodStatus{ID: "a", IPs: ips}, oldErr: errRuntime, status: &PodStatus{ID: "a", TimeStamp: t0, SandboxStatuses: stopped}, same: true},
		{name: "ready sandbox without IPs", old: &PodStatus{ID: "a", IPs: ips}, status: &PodStatus{ID: "a", TimeStamp: t0, SandboxStatuses: ready}, same: true},
		{name: "own IPs", old: &PodStatus{ID: "a", IPs: ips}, status: &PodStatus{ID: "a", TimeStamp: t0, IPs: []string{"10.0.0.2"}}, wantIPs: []string{"10.0.0.2"}, same: true},
		{name: "ID and time completed", old: &PodStatus{ID: "a", IPs: ips}, status: &PodStatus{Name: "one"}, wantIPs: ips},
		{name: "nil status", old: &PodStatus{ID: "a", IPs: ips}, status: nil, wantIPs: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCache()
			if tc.old != nil {
				c.Set("a", tc.old, tc.oldErr, t0)
			}
			at := t0.Add(time.Second)
			got := c.shard("a").setObserved("a", tc.status, at)
			if got == nil {
				t.Fatal("setObserved refused a newer observation")
			}
			if cached, err := c.Get("a"); cached != got || err != nil {
				t.Fatalf("Get = %p, %v; want the stored status %p, nil", cached, err, got)
			}
			if (got == tc.status) != tc.same {
				t.Errorf("stored the given status: %v, want %v", got == tc.status, tc.same)
			}
			if diff := cmp.Diff(tc.wantIPs, got.IPs); diff != "" {
				t.Errorf("IPs (-want +got):\n%s", diff)
			}
			if got.ID != "a" || got.TimeStamp.IsZero() {
				t.Errorf("stored ID %q, time %v; want a, not zero", got.ID, got.TimeStamp)
			}
			if tc.status != nil && tc.status.ID == "" { // completed in a copy
				if !tc.status.TimeStamp.IsZero() {
					t.Error("the given status was modified")
				}
				if !got.TimeStamp.Equal(at) {
					t.Errorf("completed time %v, want %v", got.TimeStamp, at)
				}
			}
			if c.shard("a").setObserved("a", &PodStatus{ID: "a", TimeStamp: t0}, t0) != nil {
				t.Error("setObserved of an older observation stored it")
			}
			if cached, _ := c.Get("a"); cached != got {
				t.Error("an older observation replaced the entry")
			}
		})
	}
	if NewCache().shard("").setObserved("", &PodStatus{}, t0) != nil {
		t.Error("setObserved with an empty UID stored it")
	}
}

// TestCacheGetNewerThanImmediate covers the immediate answers of GetNewerThan (the
// kubelet's cases: the pod's entry or the global timestamp is newer than minTime).
func TestCacheGetNewerThanImmediate(t *testing.T) {
	status := &PodStatus{ID: "a", Name: "one"}
	tests := []struct {
		name      string
		global    time.Time // zero: never updated
		modified  time.Time // zero: no entry
		wantReady bool
		want      *PodStatus
	}{
		{name: "both newer", global: t0.Add(time.Second), modified: t0, wantReady: true, want: status},
		{name: "global newer, entry older", global: t0.Add(time.Second), modified: t0.Add(-10 * time.Second), wantReady: true, want: status},
		{name: "entry newer, global older", global: t0.Add(-time.Second), modified: t0.Add(3 * time.Second), wantReady: true, want: status},
		{name: "both older", global: t0.Add(-time.Second), modified: t0.Add(-time.Second)},
		{name: "entry equal is not newer", global: t0.Add(-time.Second), modified: t0},
		{name: "global equal is not newer", global: t0, modified: t0.Add(-time.Second)},
		{name: "no entry, global newer", global: t0.Add(time.Second), wantReady: true, want: &PodStatus{ID: "a"}},
		{name: "no entry, global older", global: t0.Add(-time.Second)},
		{name: "no entry, never updated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCache()
			if !tc.global.IsZero() {
				c.UpdateTime(tc.global)
			}
			if !tc.modified.IsZero() {
				c.Set("a", status, nil, tc.modified)
			}
			s := c.shard("a")
			s.mu.Lock()
			a, ready := s.newerThanLocked("a", t0)
			s.mu.Unlock()
			if ready != tc.wantReady {
				t.Fatalf("ready = %v, want %v", ready, tc.wantReady)
			}
			if diff := cmp.Diff(tc.want, a.status); diff != "" {
				t.Errorf("status mismatch (-want +got):\n%s", diff)
			}
			if ready {
				// The public call returns the same at once, even with a dead context.
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				got, err := c.GetNewerThan(ctx, "a", t0)
				if err != nil || !cmp.Equal(tc.want, got) {
					t.Errorf("GetNewerThan = %v, %v; want %v, nil", got, err, tc.want)
				}
			}
		})
	}
}

// waitResult runs GetNewerThan in a goroutine of the bubble.
type waitResult struct {
	status *PodStatus
	err    error
	done   bool
}

func startWait(ctx context.Context, c *Cache, uid types.UID, minTime time.Time) *waitResult {
	r := &waitResult{}
	go func() {
		r.status, r.err = c.GetNewerThan(ctx, uid, minTime)
		r.done = true
	}()
	return r
}

func TestCacheWaiterWokenBySet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewCache()
		c.UpdateTime(t0.Add(-time.Second))
		s := &PodStatus{ID: "a", Name: "one"}
		w := startWait(t.Context(), c, "a", t0)
		other := startWait(t.Context(), c, "b", t0)
		synctest.Wait()
		if w.done || other.done {
			t.Fatal("GetNewerThan returned before a newer status existed")
		}
		c.Set("a", &PodStatus{ID: "a", Name: "stale"}, nil, t0.Add(-time.Millisecond))
		synctest.Wait()
		if w.done {
			t.Fatal("a Set older than minTime woke the waiter")
		}
		c.Set("a", s, nil, t0) // equal to minTime: wakes, as in the kubelet
		synctest.Wait()
		if !w.done || w.status != s || w.err != nil {
			t.Fatalf("waiter = %+v; want woken with the new status", w)
		}
		if other.done {
			t.Fatal("a Set of pod a woke the waiter of pod b")
		}
		if n := c.waiterCount(); n != 1 {
			t.Fatalf("waiterCount = %d, want 1 (pod b)", n)
		}
		c.UpdateTime(t0)
		synctest.Wait()
		if !other.done || other.status.ID != "b" || other.err != nil {
			t.Fatalf("waiter of b = %+v; want woken with an empty status", other)
		}
		if n := c.waiterCount(); n != 0 {
			t.Fatalf("waiterCount = %d, want 0", n)
		}
	})
}

func TestCacheWaiterWokenByUpdateTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewCache()
		s := &PodStatus{ID: "a"}
		c.Set("a", s, nil, t0.Add(-time.Minute))
		early := startWait(t.Context(), c, "a", t0)
		late := startWait(t.Context(), c, "a", t0.Add(time.Second))
		synctest.Wait()
		c.UpdateTime(t0.Add(time.Millisecond))
		synctest.Wait()
		if !early.done || early.status != s {
			t.Fatalf("early waiter = %+v; want woken with the cached status", early)
		}
		if late.done {
			t.Fatal("UpdateTime before minTime woke the late waiter")
		}
		c.UpdateTime(t0.Add(time.Second))
		synctest.Wait()
		if !late.done || late.status != s {
			t.Fatalf("late waiter = %+v; want woken", late)
		}
		if n := c.waiterCount(); n != 0 {
			t.Fatalf("waiterCount = %d, want 0", n)
		}
	})
}

func TestCacheWaiterCancelledIsRemoved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewCache()
		ctx, cancel := context.WithCancel(t.Context())
		w1 := startWait(ctx, c, "a", t0)
		w2 := startWait(t.Context(), c, "a", t0)
		w3 := startWait(ctx, c, "a", t0)
		synctest.Wait()
		if n := c.waiterCount(); n != 3 {
			t.Fatalf("waiterCount = %d, want 3", n)
		}
		cancel()
		synctest.Wait()
		for i, w := range []*waitResult{w1, w3} {
			if !w.done || !errors.Is(w.err, context.Canceled) || w.status != nil {
				t.Errorf("cancelled waiter %d = %+v; want context.Canceled", i, w)
			}
		}
		if w2.done {
			t.Fatal("cancelling one context ended another waiter")
		}
		if n := c.waiterCount(); n != 1 {
			t.Fatalf("waiterCount = %d after cancel, want 1", n)
		}
		c.Set("a", &PodStatus{ID: "a"}, nil, t0)
		synctest.Wait()
		if !w2.done || w2.err != nil {
			t.Fatalf("remaining waiter = %+v; want woken", w2)
		}
		if n := c.waiterCount(); n != 0 {
			t.Fatalf("waiterCount = %d, want 0", n)
		}
	})
}

func TestCacheWaiterDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewCache()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		start := time.Now()
		_, err := c.GetNewerThan(ctx, "a", t0)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want DeadlineExceeded", err)
		}
		if d := time.Since(start); d != time.Minute {
			t.Fatalf("returned after %v, want 1m", d)
		}
		if n := c.waiterCount(); n != 0 {
			t.Fatalf("waiterCount = %d, want 0", n)
		}
	})
}

// globalTime returns the global timestamp (every shard has it once UpdateTime returned);
// zero before the first UpdateTime.
func (c *Cache) globalTime() time.Time { return c.shardGlobal(0) }

// shardGlobal returns shard i's copy of the global timestamp.
func (c *Cache) shardGlobal(i int) time.Time {
	s := &c.shards[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.global
}

// has reports whether the cache holds an entry for uid.
func (c *Cache) has(uid types.UID) bool {
	s := c.shard(uid)
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.pods[uid]
	return ok
}

// TestCacheConcurrentWaiters: GetNewerThan calls of many pods, Sets and an UpdateTime run
// at once (for the race detector, over every shard); each call is answered with its pod's
// status whatever the order: one that registers its wait after UpdateTime visited its
// shard finds the new global timestamp.
func TestCacheConcurrentWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewCache()
		const pods = 4 * cacheShards
		var wg sync.WaitGroup
		for i := range pods {
			uid := types.UID(fmt.Sprint("p", i))
			wg.Go(func() {
				st, err := c.GetNewerThan(context.Background(), uid, t0)
				if err != nil || st.ID != uid {
					t.Errorf("GetNewerThan(%s) = %+v, %v", uid, st, err)
				}
			})
			if i%2 == 0 {
				wg.Go(func() { c.Set(uid, &PodStatus{ID: uid}, nil, t0.Add(time.Second)) })
			}
			if i == pods/2 {
				wg.Go(func() { c.UpdateTime(t0.Add(time.Second)) })
			}
		}
		wg.Wait()
		if n := c.waiterCount(); n != 0 {
			t.Errorf("waiterCount = %d, want 0", n)
		}
		for i := range pods {
			if uid := types.UID(fmt.Sprint("p", i)); c.has(uid) != (i%2 == 0) {
				t.Errorf("has(%s) = %v", uid, !(i%2 == 0))
			}
		}
	})
}

// TestCacheUpdateTimeSerialized: an UpdateTime waits for one in progress (stopped here on
// a shard's lock), so that every shard ends with the global timestamp of the last one.
func TestCacheUpdateTimeSerialized(t *testing.T) {
	c := NewCache()
	global := c.shardGlobal
	t1, t2 := t0.Add(time.Second), t0.Add(2*time.Second)
	c.shards[1].mu.Lock()
	var wg sync.WaitGroup
	wg.Go(func() { c.UpdateTime(t1) })
	for !global(0).Equal(t1) {
		runtime.Gosched() // until the first call set shard 0 and waits for shard 1
	}
	wg.Go(func() { c.UpdateTime(t2) })
	for range 100 { // time for the second call to set shard 0, if it could
		runtime.Gosched()
	}
	if got := global(0); !got.Equal(t1) {
		t.Errorf("shard 0 has %v while the first UpdateTime was in progress, want %v", got, t1)
	}
	c.shards[1].mu.Unlock()
	wg.Wait()
	for i := range c.shards {
		if got := global(i); !got.Equal(t2) {
			t.Fatalf("shard %d has global timestamp %v, want the last call's %v", i, got, t2)
		}
	}
}
