package podworker

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg"
)

// podState is everything the Machine knows about one pod UID: the kubelet's
// podSyncStatus plus the scheduling flags of the Machine. Invariants are stated per
// field; the timestamps only ever go from zero to set, in the order
// startedAt/terminatingAt <= terminatedAt, and finished implies terminatedAt is set.
// One is kept per known pod: the fields are ordered (the flags together, the rare kill
// channels behind a pointer) so that it takes 256 bytes, an allocation size class.
type podState struct {
	uid types.UID
	// fullname is the pod's full name, set (at first sight) only if byName.
	fullname string

	// pod is the latest configuration (nil for a runtime-only pod); mirror the latest
	// mirror pod; running the runtime pod, kept only while pod is nil.
	pod     *v1.Pod
	mirror  *v1.Pod
	running *pleg.Pod

	// pendingType is the type of the latest update that no started work has consumed
	// yet, if hasPending (updates coalesce: only the latest is kept).
	pendingType SyncPodType

	// startedAt is set when the first work is started (for static pods: once the full
	// name was granted to this UID).
	startedAt time.Time
	// terminatingAt is set when termination was requested (deletion, terminal phase,
	// kill, orphan, SyncPod reporting terminal).
	terminatingAt time.Time
	// terminatedAt is set when SyncTerminatingPod returned nil (or at first sight of a
	// terminal pod that nothing runs for, or when an unstarted pod is dropped).
	terminatedAt time.Time
	// lastSyncAt is when the last work ended: the next status read must be newer.
	lastSyncAt time.Time
	// due is when the Machine resyncs the pod (zero: not scheduled); heapIdx is the
	// pod's index in the requeue heap, -1 when absent.
	due     time.Time
	heapIdx int

	// gracePeriod is the effective grace period in force, 0 before termination; it only
	// ever decreases once set.
	gracePeriod int64
	// kill holds the completion channels of the pod's kill requests; nil until it is
	// given one (few pods are), see killChans.
	kill *killChans
	// statusFn is the latest status function of a kill request.
	statusFn func(*v1.PodStatus)

	// reported is the stage last reported in a Transition (StageNone before the first).
	reported Stage

	// failures counts consecutive failed works, for the backoff.
	failures int32
	// lastWork is the WorkType of the last started work, -1 before any.
	lastWork WorkType

	// static is fixed at first sight: the pod's config source is not the API server.
	static bool
	// byName is fixed at first sight: the pod waits for its full name before it starts
	// (static pods, and every pod under MachineConfig.SerializeByName).
	byName bool
	// hasPending: an update arrived that no started work has consumed yet (its type is
	// pendingType).
	hasPending bool

	terminationStarted bool // SyncPod will never run again
	deleted            bool // deleted from config (or orphaned, or runtime-only)
	evicted            bool // killed with Evict
	finished           bool // SyncTerminatedPod returned nil; updates are ignored
	restartRequested   bool // a create arrived while terminating
	working            bool // a work is in flight
	queued             bool // in the Machine's ready queue
	cancelRequested    bool // the in-flight work's context was (asked to be) cancelled
	waitingForName     bool // a pod serialized by name waiting for its full name, with a pending update
	// observedRuntime: a RunningPod update was received for the UID, so something of it
	// may run and it must be stopped even if it never started (the kubelet's field).
	observedRuntime bool
	// forgotten: the Machine dropped the pod (it is no longer in Machine.pods); a later
	// update of the UID gets a new podState.
	forgotten bool
}

// killChans are the completions a pod holds: notify holds those of its kill requests,
// released at terminated (each listed in Ready.Close once no other pod waits on it); no
// duplicates, none already listed.
type killChans struct {
	notify []*Completion
}

// kills returns the pod's completion channels, creating the record if needed.
func (s *podState) kills() *killChans {
	if s.kill == nil {
		s.kill = &killChans{}
	}
	return s.kill
}

func (s *podState) isStarted() bool              { return !s.startedAt.IsZero() }
func (s *podState) isTerminationRequested() bool { return !s.terminatingAt.IsZero() }
func (s *podState) isTerminated() bool           { return !s.terminatedAt.IsZero() }

// workType is the kubelet's podSyncStatus.WorkType.
func (s *podState) workType() WorkType {
	switch {
	case s.isTerminated():
		return TerminatedPod
	case s.isTerminationRequested():
		return TerminatingPod
	}
	return SyncPod
}

func (s *podState) stage() Stage {
	switch {
	case s.finished:
		return StageFinished
	case s.isTerminated():
		return StageTerminated
	case s.isTerminationRequested():
		return StageTerminating
	}
	return StageSyncing
}

func (s *podState) snapshot() PodState {
	return PodState{
		Stage:              s.stage(),
		WorkType:           s.workType(),
		Working:            s.working,
		TerminationStarted: s.terminationStarted,
		GracePeriodSeconds: s.gracePeriod,
		Deleted:            s.deleted,
		Evicted:            s.evicted,
		Static:             s.static,
		RestartRequested:   s.restartRequested,
	}
}
