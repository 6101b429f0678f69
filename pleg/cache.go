package pleg

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Cache holds the last observed runtime status of every pod, with the time it was
// observed, plus a global timestamp: the start of the last complete relist, before which
// every entry is known to be fresh. It is safe for concurrent use; calls about different
// pods rarely wait for each other (the pods are spread over shards, each with its lock).
//
// The relister writes it (Set, Delete, UpdateTime); the pod workers read it, usually with
// GetNewerThan so that a sync never acts on a status older than its previous sync.
//
// Statuses are stored and returned by pointer, not copied: a status handed to Set, or
// returned by Get or GetNewerThan, must not be modified afterwards.
type Cache struct {
	// shards come first, so that each is on its own cache line (see cacheShard.pad).
	shards [cacheShards]cacheShard
	seed   maphash.Seed
	// updateMu serializes UpdateTime calls, so that every shard ends with the global
	// timestamp of the last one.
	updateMu sync.Mutex
}

// cacheShards is how many shards a cache has: enough that the pod workers' calls rarely
// share one (two goroutines that wait for each other's shard cost the pod workers a
// goroutine switch each time).
const cacheShards = 256

// cacheShard holds the pods whose UID hashes to it.
type cacheShard struct {
	mu sync.Mutex
	// pods maps a pod UID to its entry; nil until the first. Invariant: no entry has an
	// empty UID key.
	pods map[types.UID]cacheEntry
	// waiters holds, per pod, the blocked GetNewerThan calls. Invariant: every waiter
	// listed here has not been answered; a waiter is removed when it is answered or when
	// its context ends, and an empty list is deleted from the map. Nil until the first.
	waiters map[types.UID][]*cacheWaiter
	// global is the global timestamp (zero until the first UpdateTime), kept in every
	// shard: UpdateTime sets it and wakes the shard's waiters under the same lock, so a
	// GetNewerThan that registers a waiter afterwards finds the new timestamp, and reading
	// it costs a call nothing more than its shard's lock.
	global time.Time
	// pad keeps each shard on its own cache line, so that locking one does not slow its
	// neighbours.
	pad [16]byte
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
	return &Cache{seed: maphash.MakeSeed()}
}

// podHash returns the hash of pod uid that places it in a shard (shardOf), and in a
// stripe of the relister that writes the cache (Relister.stripeOf): one hash serves
// both.
func (c *Cache) podHash(uid types.UID) uint64 { return maphash.String(c.seed, string(uid)) }

// shardOf returns the shard of the pod whose podHash is h.
func (c *Cache) shardOf(h uint64) *cacheShard { return &c.shards[h%cacheShards] }

// shard returns the shard of pod uid.
func (c *Cache) shard(uid types.UID) *cacheShard { return c.shardOf(c.podHash(uid)) }

// Get returns the cached status of a pod and the error recorded with it (the error of the
// runtime call that produced it, if that call failed). A pod without an entry gives an
// empty status {ID: uid} and a nil error; the returned status is never nil.
func (c *Cache) Get(uid types.UID) (*PodStatus, error) {
	s := c.shard(uid)
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.getLocked(uid)
	return a.status, a.err
}

func (s *cacheShard) getLocked(uid types.UID) cacheAnswer {
	e, ok := s.pods[uid]
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
	s := c.shard(uid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.pods[uid]; ok && e.modified.After(timestamp) {
		return false
	}
	s.storeLocked(uid, cacheEntry{status: status, err: err, modified: timestamp})
	return true
}

// storeLocked makes e the entry of uid and answers the waiters it satisfies.
func (s *cacheShard) storeLocked(uid types.UID, e cacheEntry) {
	if s.pods == nil {
		s.pods = make(map[types.UID]cacheEntry)
	}
	s.pods[uid] = e
	s.notifyLocked(uid, e.modified)
}

// setObserved is Cache.Set(uid, prepare(...), nil, ts), s being uid's shard, for a
// status the relister observed (nil for "nothing of the pod"), with the status prepared
// under the same lock as the write, from the entry it replaces (one lock and one
// lookup). It returns the status it stored, or nil when it changed nothing (see Set).
func (s *cacheShard) setObserved(uid types.UID, status *PodStatus, ts time.Time) *PodStatus {
	if uid == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.pods[uid]
	if ok && old.modified.After(ts) {
		return nil
	}
	status = prepare(uid, status, ts, old)
	s.storeLocked(uid, cacheEntry{status: status, modified: ts})
	return status
}

// Delete removes the entry of a pod. Waiters are not woken: the pod's next answer comes
// from a later Set or UpdateTime.
func (c *Cache) Delete(uid types.UID) {
	s := c.shard(uid)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pods, uid)
}

// UpdateTime sets the global timestamp: every entry is at least as fresh as t (a pod
// without an entry had nothing in the runtime at t). It wakes every waiter whose minTime
// is not after t. The relister calls it with the start time of each successful relist.
func (c *Cache) UpdateTime(t time.Time) {
	c.updateMu.Lock()
	defer c.updateMu.Unlock()
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.global = t
		for uid := range s.waiters {
			s.notifyLocked(uid, t)
		}
		s.mu.Unlock()
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
	s := c.shard(uid)
	s.mu.Lock()
	if a, ok := s.newerThanLocked(uid, minTime); ok {
		s.mu.Unlock()
		return a.status, a.err
	}
	if err := ctx.Err(); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	w := &cacheWaiter{minTime: minTime, ch: make(chan cacheAnswer, 1)}
	if s.waiters == nil {
		s.waiters = make(map[types.UID][]*cacheWaiter)
	}
	s.waiters[uid] = append(s.waiters[uid], w)
	s.mu.Unlock()

	select {
	case a := <-w.ch:
		return a.status, a.err
	case <-ctx.Done():
	}
	s.mu.Lock()
	removed := s.removeWaiterLocked(uid, w)
	s.mu.Unlock()
	if !removed {
		// Answered while ctx ended: the answer is in the channel; prefer it.
		a := <-w.ch
		return a.status, a.err
	}
	return nil, ctx.Err()
}

// newerThan is GetNewerThan's immediate check alone, s being uid's shard: the answer,
// and true, if GetNewerThan would answer at once; false otherwise.
func (s *cacheShard) newerThan(uid types.UID, minTime time.Time) (cacheAnswer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newerThanLocked(uid, minTime)
}

// newerThanLocked is GetNewerThan's immediate check in s, uid's shard, locked.
func (s *cacheShard) newerThanLocked(uid types.UID, minTime time.Time) (cacheAnswer, bool) {
	e, ok := s.pods[uid]
	globalNewer := !s.global.IsZero() && s.global.After(minTime)
	if (ok && e.modified.After(minTime)) || globalNewer {
		return s.getLocked(uid), true
	}
	return cacheAnswer{}, false
}

// notifyLocked answers and removes every waiter of uid whose minTime is not after t.
func (s *cacheShard) notifyLocked(uid types.UID, t time.Time) {
	ws, ok := s.waiters[uid]
	if !ok {
		return
	}
	kept := ws[:0]
	for _, w := range ws {
		if t.Before(w.minTime) {
			kept = append(kept, w)
			continue
		}
		w.ch <- s.getLocked(uid) // capacity 1, answered once: never blocks
	}
	clear(ws[len(kept):])
	if len(kept) == 0 {
		delete(s.waiters, uid)
		return
	}
	s.waiters[uid] = kept
}

// removeWaiterLocked removes w from the waiters of uid and reports whether it was there.
func (s *cacheShard) removeWaiterLocked(uid types.UID, w *cacheWaiter) bool {
	ws := s.waiters[uid]
	for i, x := range ws {
		if x != w {
			continue
		}
		last := len(ws) - 1
		copy(ws[i:], ws[i+1:])
		ws[last] = nil
		if last == 0 {
			delete(s.waiters, uid)
		} else {
			s.waiters[uid] = ws[:last]
		}
		return true
	}
	return false
}

// waiterCount returns how many GetNewerThan calls are blocked (for tests).
func (c *Cache) waiterCount() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for _, ws := range s.waiters {
			n += len(ws)
		}
		s.mu.Unlock()
	}
	return n
}
