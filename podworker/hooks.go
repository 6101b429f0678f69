package podworker

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg"
)

// Hooks are the Runner's observation points, for metrics and tracing (package
// examples/metrics turns them into the kubelet's Prometheus series). A nil func is
// skipped; the zero Hooks observes nothing.
//
//   - Every hook is called outside the runner's lock, so it may call the Runner's query
//     methods; it must be quick and safe for concurrent use (it slows the goroutine that
//     calls it: a pod worker, or whoever called UpdatePod, SyncKnownPods or the timer).
//   - SyncStarted and SyncFinished are called by the pod worker that runs the work,
//     right before it reads the pod's runtime status and calls the PodSyncer, and right
//     after the PodSyncer returned: one pair per work, in order per pod.
//   - Transition is called once per stage change, in the order the Machine decided them
//     (across pods too), after the lock that decided them was released: a transition may
//     be delivered a moment after the call that caused it returned, by another goroutine
//     that was already delivering, never out of order and never twice. A work, and the
//     cancellation of a work, that a transition caused wait until it was delivered: an
//     observer sees a pod enter a stage before its PodSyncer does, and must not wait for
//     the pod workers' progress itself.
type Hooks struct {
	SyncStarted  func(Sync)
	SyncFinished func(Sync)
	Transition   func(t Transition, at time.Time)
}

// Sync describes one work of a pod worker: one call of the caller's PodSyncer.
type Sync struct {
	UID types.UID
	// Pod is the pod's configuration; nil for a runtime-only pod (RunningPod is set).
	Pod        *v1.Pod
	RunningPod *pleg.Pod
	WorkType   WorkType
	// UpdateType is the reason of the update that produced a SyncPod work.
	UpdateType SyncPodType
	// Started is when the work started, on the runner's clock.
	Started time.Time
	// Duration, Err and IsTerminal are set for SyncFinished: how long the status read and
	// the PodSyncer call took, and what they returned (Err is a context error when the
	// work was cancelled).
	Duration   time.Duration
	Err        error
	IsTerminal bool
	// Cancelled is set for SyncFinished when the work's context was cancelled before it
	// returned (the work was superseded, or Run ended): its error is then not the pod's.
	Cancelled bool
}

// OperationType is the kubelet's operation_type label of kubelet_pod_worker_duration_seconds
// for the work: the update type of a SyncPod work ("create", "update", "sync"), "kill"
// for a TerminatingPod work and "terminated" for a TerminatedPod work.
func (s Sync) OperationType() string {
	switch s.WorkType {
	case SyncPod:
		return s.UpdateType.String()
	case TerminatingPod:
		return SyncPodKill.String()
	default:
		return s.WorkType.String()
	}
}

// PodName returns namespace/name of the work's pod (or runtime pod).
func (s Sync) PodName() string {
	switch {
	case s.Pod != nil:
		return s.Pod.Namespace + "/" + s.Pod.Name
	case s.RunningPod != nil:
		return s.RunningPod.Namespace + "/" + s.RunningPod.Name
	}
	return ""
}

// timedTransition is a transition waiting to be delivered to Config.OnTransition and
// Hooks.Transition, or (cancel set) the cancellation of a work, which waits for the
// transitions queued before it.
type timedTransition struct {
	t      Transition
	at     time.Time
	cancel canceler
}

// queueTransitionsLocked queues rd's transitions for OnTransition and Hooks.Transition.
// r.mu must be held: the queue's order is the Machine's.
func (r *Runner) queueTransitionsLocked(ts []Transition, at time.Time) {
	if (r.hooks.Transition == nil && r.onTransition == nil) || len(ts) == 0 {
		return
	}
	r.hmu.Lock()
	for _, t := range ts {
		r.hq = append(r.hq, timedTransition{t: t, at: at})
	}
	r.queued.Add(uint64(len(ts)))
	r.hmu.Unlock()
}

// cancelAfterTransitionsLocked cancels a work's context, after the transitions queued so
// far were delivered when they have observers (an observer sees a pod stop syncing
// before its SyncPod sees its context end). r.mu must be held.
func (r *Runner) cancelAfterTransitionsLocked(c canceler) {
	if r.hooks.Transition == nil && r.onTransition == nil {
		c.Cancel()
		return
	}
	r.hmu.Lock()
	r.hq = append(r.hq, timedTransition{cancel: c})
	r.queued.Add(1)
	r.hmu.Unlock()
}

// deliver hands the queued transitions to OnTransition and Hooks.Transition (golang-lru's
// rule: collected under the lock, delivered after it), without holding any lock
// during the calls. One goroutine delivers at a time, in queue order; a goroutine that
// finds another delivering leaves its transitions to it. Every holder of r.mu calls it
// after unlocking, so no transition is stranded.
func (r *Runner) deliver() {
	if (r.hooks.Transition == nil && r.onTransition == nil) || r.allDelivered() {
		return
	}
	r.hmu.Lock()
	if r.delivering || len(r.hq) == 0 {
		r.hmu.Unlock()
		return
	}
	r.delivering = true
	for len(r.hq) > 0 {
		batch := r.hq
		r.hq, r.hspare = r.hspare[:0], nil
		r.hmu.Unlock()
		for _, tt := range batch {
			if tt.cancel != nil {
				tt.cancel.Cancel()
				continue
			}
			if r.onTransition != nil {
				r.onTransition(tt.t)
			}
			if r.hooks.Transition != nil {
				r.hooks.Transition(tt.t, tt.at)
			}
		}
		clear(batch)
		r.hmu.Lock()
		if r.hspare == nil && keepBuffer(len(batch), cap(batch)) {
			r.hspare = batch[:0]
		}
		r.delivered.Add(uint64(len(batch)))
		r.hdone.Broadcast()
	}
	r.delivering = false
	r.hmu.Unlock()
}

// awaitDelivery returns once every transition queued so far was delivered, delivering
// them itself if no other goroutine does. A work calls it before it starts, so that an
// observer sees a pod's transition before the work it caused (the transitions of every
// pod are delivered in one order: a slow observer delays the works that start after it
// was called, never the runner's lock or its callers).
func (r *Runner) awaitDelivery() {
	if (r.hooks.Transition == nil && r.onTransition == nil) || r.allDelivered() {
		return
	}
	r.deliver()
	r.hmu.Lock()
	for target := r.queued.Load(); r.delivered.Load() < target; {
		r.hdone.Wait()
	}
	r.hmu.Unlock()
}

// allDelivered reports whether every transition queued so far was delivered (it may be
// out of date at once; a goroutine that queued transitions sees them as undelivered).
func (r *Runner) allDelivered() bool {
	return r.delivered.Load() >= r.queued.Load()
}
