package statusmgr

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// This file is the write policy, a decision of the cache (pure: no lock, no goroutine, no
// clock): which pod's status is written next and whether a write may start at all. The
// runner (writers.go) only asks: it starts the writes nextWrite and claim grant and
// reports their end with done. The policy:
//
//   - two lanes, each a FIFO in arrival order: laneStatus for the pods not finished,
//     laneFinal for the finished ones (TerminatePod ran); a pod is queued at most once, and a
//     pod finishing while queued moves to the end of laneFinal;
//   - at most bounds.max writes in flight (Config.MaxConcurrentWrites), of which at most
//     bounds.maxStatus (MaxConcurrentStatusWrites) in laneStatus, so that a burst of status
//     changes coalesces; laneFinal may take every other slot;
//   - laneStatus goes first when it has a slot, so neither lane waits behind the other's
//     queue;
//   - at most one write per pod: a queued pod whose write is in flight is set aside and
//     queued again (in its lane as it is then) when that write is done.

// lane is one of the two queues of pods to write; their writes have separate bounds.
type lane int

const (
	// laneStatus holds the pods not finished: their statuses are written by a few writers,
	// so that a burst of changes coalesces.
	laneStatus lane = iota
	// laneFinal holds the finished pods (TerminatePod ran): their terminal status and final
	// delete may use every writer.
	laneFinal
	numLanes
)

// laneOf is the lane of a pod: laneFinal once it is finished.
func laneOf(finished bool) lane {
	if finished {
		return laneFinal
	}
	return laneStatus
}

// writeBounds are the bounds of the writes in flight.
type writeBounds struct {
	// max bounds every write in flight (Config.MaxConcurrentWrites, >= 1).
	max int
	// maxStatus bounds the writes of laneStatus within max (MaxConcurrentStatusWrites, at
	// most max).
	maxStatus int
}

// newWriteBounds returns the bounds for Config.MaxConcurrentWrites max (>= 1).
func newWriteBounds(maxWrites int) writeBounds {
	return writeBounds{max: maxWrites, maxStatus: min(MaxConcurrentStatusWrites, maxWrites)}
}

// write is a sync in flight of one pod (cache.writing).
type write struct {
	// again is true when the pod was taken from its queue while the write ran: done queues
	// it again.
	again bool
	// lane is the lane whose slot the write holds.
	lane lane
}

// queue is a FIFO of UIDs; items[head:] is live.
type queue struct {
	items []types.UID
	head  int
}

// enqueue queues the pod in its lane, unless it is queued there already; a pod queued in
// the other lane (it finished meanwhile) moves to the end of its lane's queue.
func (c *cache) enqueue(uid types.UID, e *entry) {
	l := laneOf(e.podIsFinished)
	if e.queued && e.lane == l {
		return
	}
	e.queued, e.lane = true, l
	c.queues[l].items = append(c.queues[l].items, uid)
}

// takeQueue returns the queued UIDs, the finished pods' first, and empties the queues.
func (c *cache) takeQueue() []types.UID {
	var out []types.UID
	for _, l := range [...]lane{laneFinal, laneStatus} {
		q := &c.queues[l]
		for _, uid := range q.items[q.head:] {
			if e := c.entries[uid]; e != nil && e.queued && e.lane == l {
				e.queued = false
				out = append(out, uid)
			}
		}
		*q = queue{}
	}
	return out
}

// queueAll queues, after the pods already queued, every other pod whose status needs a
// sync, in UID order (the full sync).
func (c *cache) queueAll() {
	var rest []types.UID
	for uid, e := range c.entries {
		if !e.queued && e.needsUpdate() {
			rest = append(rest, uid)
		}
	}
	slices.Sort(rest)
	for _, uid := range rest {
		c.enqueue(uid, c.entries[uid])
	}
}

// hasSlot reports whether a write of lane l may start now.
func (c *cache) hasSlot(l lane) bool {
	if c.inFlight[laneStatus]+c.inFlight[laneFinal] >= c.bounds.max {
		return false
	}
	return l != laneStatus || c.inFlight[laneStatus] < c.bounds.maxStatus
}

// nextWrite is the policy's decision for one free slot: the first queued pod of laneStatus
// that needs a sync and has none in flight, if that lane has a slot, else the first such
// pod of laneFinal. The write is then in flight (it holds its slot until done); false when
// no write may start (no slot, or nothing to write).
func (c *cache) nextWrite() (snapshot, lane, bool) {
	for _, l := range [...]lane{laneStatus, laneFinal} {
		if !c.hasSlot(l) {
			continue
		}
		if s, ok := c.next(l); ok {
			return s, l, true
		}
	}
	return snapshot{}, 0, false
}

// next takes the first queued pod of the lane that needs a sync and has none in flight,
// marks its write in flight in lane l (holding a slot: the caller checked hasSlot) and
// returns its snapshot; false when there is none. A queued pod with a sync in flight is set
// aside and queued again by done.
func (c *cache) next(l lane) (snapshot, bool) {
	q := &c.queues[l]
	for q.head < len(q.items) {
		uid := q.items[q.head]
		q.items[q.head] = ""
		q.head++
		e := c.entries[uid]
		if e == nil || !e.queued || e.lane != l {
			continue
		}
		e.queued = false
		if w, busy := c.writing[uid]; busy {
			w.again = true
			c.writing[uid] = w
			continue
		}
		if !e.needsUpdate() {
			continue
		}
		c.start(uid, l)
		return e.snapshot(uid), true
	}
	q.items, q.head = q.items[:0], 0
	if cap(q.items) > 4096 {
		q.items = nil // a burst does not pin memory
	}
	return snapshot{}, false
}

// start marks a write of the pod in flight, holding a slot of lane l.
func (c *cache) start(uid types.UID, l lane) {
	c.writing[uid] = write{lane: l}
	c.inFlight[l]++
}

// claimResult is what claim found.
type claimResult int

const (
	// claimed: the snapshot is the caller's to sync; call done when the sync ends.
	claimed claimResult = iota
	// claimBusy: a sync of the pod is in flight, or its lane has no free slot; wait for a
	// write to end and claim again.
	claimBusy
	// claimNone: the pod is gone or needs no sync.
	claimNone
)

// claim marks a write of the pod with the UID in flight and returns its snapshot, if it
// needs a sync, has none in flight and its lane has a free slot, which the write then
// holds until done (Sync's way in; the queue is left as it is).
func (c *cache) claim(uid types.UID) (snapshot, claimResult) {
	if _, busy := c.writing[uid]; busy {
		return snapshot{}, claimBusy
	}
	e := c.entries[uid]
	if e == nil || !e.needsUpdate() {
		return snapshot{}, claimNone
	}
	l := laneOf(e.podIsFinished)
	if !c.hasSlot(l) {
		return snapshot{}, claimBusy
	}
	c.start(uid, l)
	return e.snapshot(uid), claimed
}

// done ends the write in flight of the pod with the UID and frees its slot. It returns
// true when the pod was queued again (it was taken from the queue while the write ran and
// still needs one).
func (c *cache) done(uid types.UID) bool {
	w, ok := c.writing[uid]
	if !ok {
		return false
	}
	delete(c.writing, uid)
	c.inFlight[w.lane]--
	if e := c.entries[uid]; w.again && e != nil && e.needsUpdate() {
		c.enqueue(uid, e)
		return true
	}
	return false
}
