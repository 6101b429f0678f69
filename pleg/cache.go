package pleg

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Cache holds the last observed runtime status of every pod, with the time it was
// observed, plus a global timestamp: the start of the last complete relist, before which
// every entry is known to be fresh. It is safe for concurrent use.
//
// The relister writes it (Set, Delete, UpdateTime); the pod workers read it, usually with
// GetNewerThan so that a sync never acts on a status older than its previous sync.
//
// Statuses are stored and returned by pointer, not copied: a status handed to Set, or
// returned by Get or GetNewerThan, must not be modified afterwards.
type Cache struct {
	mu sync.Mutex
	// pods maps a pod UID to its entry. Invariant: no entry has an empty UID key.
	pods map[types.UID]cacheEntry
	// timestamp is the global timestamp; zero until the first UpdateTime.
	timestamp time.Time
	// waiters holds, per pod, the blocked GetNewerThan calls. Invariant: every waiter
	// listed here has not been answered; a waiter is removed when it is answered or when
	// its context ends, and an empty list is deleted from the map.
	waiters map[types.UID][]*cacheWaiter
}

// cacheEntry is one pod's cached status.
type cacheEntry struct {
	status   *PodStatus
	err      error
	modified time.Time
}

// cacheWaiter is one blocked GetNewerThan call.
type cacheWaiter struct {
	minTime time.Time
	// ch has capacity 1 and receives exactly one answer.
	ch chan cacheAnswer
}

type cacheAnswer struct {
	status *PodStatus
	err    error
}

// NewCache returns an empty cache with a zero global timestamp.
func NewCache() *Cache {
	return &Cache{
		pods:    make(map[types.UID]cacheEntry),
		waiters: make(map[types.UID][]*cacheWaiter),
	}
}

// Get returns the cached status of a pod and the error recorded with it (the error of the
// runtime call that produced it, if that call failed). A pod without an entry gives an
// empty status {ID: uid} and a nil error; the returned status is never nil.
func (c *Cache) Get(uid types.UID) (*PodStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.getLocked(uid)
	return a.status, a.err
}

func (c *Cache) getLocked(uid types.UID) cacheAnswer {
	e, ok := c.pods[uid]
	if !ok || e.status == nil {
		return cacheAnswer{status: &PodStatus{ID: uid}, err: e.err}
	}
	return cacheAnswer{status: e.status, err: e.err}
}

// Set records the status of a pod (and the error of the runtime call that produced it, or
// nil) as observed at timestamp, and wakes every GetNewerThan waiter of that pod whose
// minTime is not after timestamp. It returns false, and changes nothing, when the entry
// already holds a status observed after timestamp (an older observation never replaces a
// newer one) or when uid is empty. A nil status is stored as "no status": Get then
// returns an empty one.
func (c *Cache) Set(uid types.UID, status *PodStatus, err error, timestamp time.Time) (updated bool) {
	if uid == "" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.pods[uid]; ok && e.modified.After(timestamp) {
		return false
	}
	c.pods[uid] = cacheEntry{status: status, err: err, modified: timestamp}
	c.notifyLocked(uid, timestamp)
	return true
}

// Delete removes the entry of a pod. Waiters are not woken: the pod's next answer comes
// from a later Set or UpdateTime.
func (c *Cache) Delete(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, uid)
}

// UpdateTime sets the global timestamp: every entry is at least as fresh as t (a pod
// without an entry had nothing in the runtime at t). It wakes every waiter whose minTime
// is not after t. The relister calls it with the start time of each successful relist.
func (c *Cache) UpdateTime(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timestamp = t
	for uid := range c.waiters {
		c.notifyLocked(uid, t)
	}
}

// GetNewerThan returns the status of a pod once the cache holds one newer than minTime:
// at once if the pod's entry was modified after minTime or the global timestamp is after
// minTime (then an empty status {ID: uid} if the pod has no entry); otherwise it blocks
// until a Set of that pod or an UpdateTime at or after minTime, and returns what the cache
// then holds for the pod. It returns ctx.Err() if ctx ends first; the abandoned wait is
// removed, so nothing leaks.
//
// The comparisons are the kubelet's: the immediate check is strict ("after minTime"),
// while a Set or UpdateTime wakes a waiter whose minTime equals its timestamp.
func (c *Cache) GetNewerThan(ctx context.Context, uid types.UID, minTime time.Time) (*PodStatus, error) {
	c.mu.Lock()
	if a, ok := c.newerThanLocked(uid, minTime); ok {
		c.mu.Unlock()
		return a.status, a.err
	}
	if err := ctx.Err(); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	w := &cacheWaiter{minTime: minTime, ch: make(chan cacheAnswer, 1)}
	c.waiters[uid] = append(c.waiters[uid], w)
	c.mu.Unlock()

	select {
	case a := <-w.ch:
		return a.status, a.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	removed := c.removeWaiterLocked(uid, w)
	c.mu.Unlock()
	if !removed {
		// Answered while ctx ended: the answer is in the channel; prefer it.
		a := <-w.ch
		return a.status, a.err
	}
	return nil, ctx.Err()
}

// newerThanLocked is GetNewerThan's immediate check.
func (c *Cache) newerThanLocked(uid types.UID, minTime time.Time) (cacheAnswer, bool) {
	e, ok := c.pods[uid]
	globalNewer := !c.timestamp.IsZero() && c.timestamp.After(minTime)
	if (ok && e.modified.After(minTime)) || globalNewer {
		return c.getLocked(uid), true
	}
	return cacheAnswer{}, false
}

// notifyLocked answers and removes every waiter of uid whose minTime is not after t.
func (c *Cache) notifyLocked(uid types.UID, t time.Time) {
	ws, ok := c.waiters[uid]
	if !ok {
		return
	}
	kept := ws[:0]
	for _, w := range ws {
		if t.Before(w.minTime) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.getLocked(uid) // capacity 1, answered once: never blocks
	}
	clear(ws[len(kept):])
	if len(kept) == 0 {
		delete(c.waiters, uid)
		return
	}
	c.waiters[uid] = kept
}

// removeWaiterLocked removes w from the waiters of uid and reports whether it was there.
func (c *Cache) removeWaiterLocked(uid types.UID, w *cacheWaiter) bool {
	ws := c.waiters[uid]
	for i, x := range ws {
		if x != w {
			continue
		}
		last := len(ws) - 1
		copy(ws[i:], ws[i+1:])
		ws[last] = nil
		if last == 0 {
			delete(c.waiters, uid)
		} else {
			c.waiters[uid] = ws[:last]
		}
		return true
	}
	return false
}

// waiterCount returns how many GetNewerThan calls are blocked (for tests).
func (c *Cache) waiterCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, ws := range c.waiters {
		n += len(ws)
	}
	return n
}
