package podworker

import (
	"container/heap"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// enqueue appends the pod to the ready queue.
func (m *Machine) enqueue(st *podState) {
	st.queued = true
	if m.qhead > 0 && m.qhead == len(m.queue) {
		m.queue, m.qhead = m.queue[:0], 0
	}
	m.queue = append(m.queue, st)
}

// fill starts work for queued pods, in arrival order, while the concurrency bound allows.
func (m *Machine) fill(now time.Time, r *Ready) {
	for m.qhead < len(m.queue) && (m.cfg.MaxConcurrentSyncs == Unbounded || m.inFlight < m.cfg.MaxConcurrentSyncs) {
		st := m.queue[m.qhead]
		m.queue[m.qhead] = nil
		m.qhead++
		if st.forgotten || !st.queued {
			continue
		}
		st.queued = false
		if w, ok := m.start(st, now, r); ok {
			r.Start = append(r.Start, w)
		}
	}
	if m.qhead == len(m.queue) {
		m.queue, m.qhead = m.queue[:0], 0
	}
}

// start consumes the pod's pending update and returns the work to run, or false if the
// pod cannot run now (a static pod waiting for its full name keeps its update) or ever
// (a static pod whose termination was requested before it started is finished at once).
func (m *Machine) start(st *podState, now time.Time, r *Ready) (Work, bool) {
	if !st.hasPending || st.finished || st.working {
		return Work{}, false
	}
	wt := st.workType()
	if !st.isStarted() {
		switch {
		case st.pod == nil && st.running == nil:
			st.hasPending = false // cannot happen: every known pod has one of them
			return Work{}, false
		case st.pod == nil || !st.byName:
		case st.isTerminated():
			// A static pod first seen terminal: clean it up without claiming its name.
		case st.static && st.isTerminationRequested():
			m.note(st, r)
			m.finish(st, now, r)
			m.note(st, r)
			return Work{}, false
		case !m.claimName(st):
			st.waitingForName = true
			return Work{}, false
		}
		st.startedAt = now
	}
	st.hasPending = false
	st.waitingForName = false
	st.working = true
	m.inFlight++
	w := Work{
		UID:             st.uid,
		WorkType:        wt,
		UpdateType:      st.pendingType,
		Pod:             st.pod,
		MirrorPod:       st.mirror,
		StatusNewerThan: st.lastSyncAt,
	}
	st.lastWork = wt
	if wt == TerminatingPod {
		st.terminationStarted = true
		w.GracePeriodSeconds = st.gracePeriod
		w.PodStatusFunc = st.statusFn
		if st.pod == nil {
			w.RunningPod = st.running
		}
	}
	return w, true
}

// claimName grants the pod's full name to st if no other UID holds it and st is the
// first live pod waiting for it (the kubelet's allowStaticPodStart).
func (m *Machine) claimName(st *podState) bool {
	if holder, ok := m.nameHolders[st.fullname]; ok {
		return holder == st.uid
	}
	waiting := m.nameWaiters[st.fullname]
	if st.isTerminationRequested() {
		// A pod serialized by name whose termination was requested before it started
		// (static ones never get here): stop it now that the name is free, ahead of the
		// live waiters, which start after it finished.
		m.setWaiting(st.fullname, withoutUID(waiting, st.uid))
		m.nameHolders[st.fullname] = st.uid
		return true
	}
	for _, uid := range waiting {
		if other, ok := m.pods[uid]; ok && !other.static && !other.finished && other.isTerminationRequested() {
			return false // a waiter serialized by name and deleted before it started goes first
		}
	}
	for i, uid := range waiting {
		other, ok := m.pods[uid]
		if !ok || other.isTerminationRequested() {
			continue
		}
		if uid != st.uid {
			m.nameWaiters[st.fullname] = waiting[i:]
			return false
		}
		waiting = waiting[i+1:]
		break
	}
	m.setWaiting(st.fullname, waiting)
	m.nameHolders[st.fullname] = st.uid
	return true
}

// setWaiting stores the UIDs waiting for a full name, or forgets the name if none is.
func (m *Machine) setWaiting(fullname string, waiting []types.UID) {
	if len(waiting) == 0 {
		delete(m.nameWaiters, fullname)
	} else {
		m.nameWaiters[fullname] = waiting
	}
}

// releaseName gives up st's full name and queues the pods waiting for it.
func (m *Machine) releaseName(st *podState) {
	if !st.byName {
		return
	}
	if holder, ok := m.nameHolders[st.fullname]; ok && holder == st.uid {
		delete(m.nameHolders, st.fullname)
	}
	for _, uid := range m.nameWaiters[st.fullname] {
		if other, ok := m.pods[uid]; ok && other.waitingForName && !other.queued && !other.working {
			other.waitingForName = false
			m.enqueue(other)
		}
	}
}

// schedule sets the pod's resync/retry time to now+d.
func (m *Machine) schedule(st *podState, now time.Time, d time.Duration, r *Ready) {
	st.due = now.Add(d)
	if st.heapIdx >= 0 {
		heap.Fix(&m.requeue, st.heapIdx)
	} else {
		heap.Push(&m.requeue, st)
	}
	r.Requeue = append(r.Requeue, Requeue{UID: st.uid, After: d})
}

// unschedule cancels the pod's resync/retry.
func (m *Machine) unschedule(st *podState) {
	if st.heapIdx >= 0 {
		heap.Remove(&m.requeue, st.heapIdx)
	}
	st.due = time.Time{}
}

// requeueHeap orders pods by due time; each pod records its index.
type requeueHeap []*podState

func (h requeueHeap) Len() int           { return len(h) }
func (h requeueHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h requeueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}
func (h *requeueHeap) Push(x any) {
	st := x.(*podState)
	st.heapIdx = len(*h)
	*h = append(*h, st)
}
func (h *requeueHeap) Pop() any {
	old := *h
	n := len(old) - 1
	st := old[n]
	old[n] = nil
	st.heapIdx = -1
	*h = old[:n]
	return st
}

// withoutUID returns uids without uid's first occurrence, in a new slice if it was there.
func withoutUID(uids []types.UID, uid types.UID) []types.UID {
	for i, u := range uids {
		if u == uid {
			return append(uids[:i:i], uids[i+1:]...)
		}
	}
	return uids
}
