package node

import (
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The kubelet's active-deadline handler's reason and message (active_deadline.go): the
// status of a pod active longer than its spec.activeDeadlineSeconds, and its Normal event.
const (
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	MessageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// ActiveDeadlineExceeded reports whether pod, started at startTime, has been active at
// now for its spec.activeDeadlineSeconds or longer (the kubelet's pastActiveDeadline),
// and otherwise how long until it will be (0 when it has no deadline or has not
// started: a zero startTime). A nil pod has no deadline.
func ActiveDeadlineExceeded(pod *v1.Pod, startTime, now time.Time) (exceeded bool, wait time.Duration) {
	if pod == nil || pod.Spec.ActiveDeadlineSeconds == nil || startTime.IsZero() {
		return false, 0
	}
	allowed := time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second
	active := now.Sub(startTime)
	if active >= allowed {
		return true, 0
	}
	return false, allowed - active
}

// deadlines holds, per pod, when its active deadline passes, for the loop's single timer
// (set by SyncPod, which knows the pod's start time; no per-second polling). wake tells
// the loop that the earliest deadline may have changed.
type deadlines struct {
	mu   sync.Mutex
	at   map[types.UID]time.Time
	wake chan struct{}
	// size is len(at): forgetting a deadline when there is none takes no lock (most
	// pods have none, and every SyncPod sets its pod's).
	size atomic.Int64
}

// set records the pod's deadline (a zero time forgets it) and wakes the loop.
func (d *deadlines) set(uid types.UID, at time.Time) {
	if at.IsZero() && d.size.Load() == 0 {
		return
	}
	d.mu.Lock()
	old, had := d.at[uid]
	if at.IsZero() {
		delete(d.at, uid)
	} else {
		if d.at == nil {
			d.at = make(map[types.UID]time.Time)
		}
		d.at[uid] = at
	}
	d.size.Store(int64(len(d.at)))
	d.mu.Unlock()
	if (had || !at.IsZero()) && !old.Equal(at) {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// due removes and returns the pods whose deadline passed at now, and returns the
// earliest deadline left (zero if none).
func (d *deadlines) due(now time.Time) (uids []types.UID, next time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for uid, at := range d.at {
		if !at.After(now) {
			uids = append(uids, uid)
			delete(d.at, uid)
			d.size.Store(int64(len(d.at)))
			continue
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return uids, next
}

// applyActiveDeadline makes st Failed DeadlineExceeded when the pod is past its active
// deadline (the kubelet's ShouldEvict in generateAPIPodStatus), unless the pod's phase in
// the API is already terminal (no transition out of it). It returns whether it did, and
// otherwise when the deadline passes (zero: no deadline).
func applyActiveDeadline(pod *v1.Pod, st *v1.PodStatus, now time.Time) (exceeded bool, at time.Time) {
	if st.StartTime == nil || pod.Status.Phase == v1.PodFailed || pod.Status.Phase == v1.PodSucceeded {
		return false, time.Time{}
	}
	exceeded, wait := ActiveDeadlineExceeded(pod, st.StartTime.Time, now)
	if !exceeded {
		if wait == 0 {
			return false, time.Time{}
		}
		return false, now.Add(wait)
	}
	st.Phase, st.Reason, st.Message = v1.PodFailed, ReasonDeadlineExceeded, MessageDeadlineExceeded
	return true, time.Time{}
}
