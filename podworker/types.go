package podworker

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg"
)

// WorkType is the kind of work a pod worker does next for a pod. It follows the pod's
// lifecycle one way: SyncPod, then TerminatingPod, then TerminatedPod.
type WorkType int

const (
	// SyncPod: the pod is desired and should be running; PodSyncer.SyncPod is called.
	SyncPod WorkType = iota
	// TerminatingPod: the pod must stop; PodSyncer.SyncTerminatingPod (or
	// SyncTerminatingRuntimePod for a runtime-only pod) is called until it returns nil.
	TerminatingPod
	// TerminatedPod: nothing of the pod runs any more; PodSyncer.SyncTerminatedPod is
	// called until it returns nil, after which the pod is finished.
	TerminatedPod
)

// String returns "sync", "terminating" or "terminated", and a descriptive string for
// any other value. It never panics.
func (w WorkType) String() string {
	switch w {
	case SyncPod:
		return "sync"
	case TerminatingPod:
		return "terminating"
	case TerminatedPod:
		return "terminated"
	default:
		return fmt.Sprintf("WorkType(%d)", int(w))
	}
}

// SyncPodType says why UpdatePod was called. The values and their order are the
// kubelet's (kubetypes.SyncPodType).
type SyncPodType int

const (
	// SyncPodSync: a periodic or synthetic resync of an unchanged pod.
	SyncPodSync SyncPodType = iota
	// SyncPodUpdate: the pod's configuration changed.
	SyncPodUpdate
	// SyncPodCreate: the pod was seen for the first time.
	SyncPodCreate
	// SyncPodKill: the pod must be stopped (deletion by the agent, eviction, orphan).
	SyncPodKill
)

// String returns "sync", "update", "create" or "kill", and a descriptive string for
// any other value.
func (t SyncPodType) String() string {
	switch t {
	case SyncPodSync:
		return "sync"
	case SyncPodUpdate:
		return "update"
	case SyncPodCreate:
		return "create"
	case SyncPodKill:
		return "kill"
	default:
		return fmt.Sprintf("SyncPodType(%d)", int(t))
	}
}

func (t SyncPodType) valid() bool { return t >= SyncPodSync && t <= SyncPodKill }

// Stage is where a pod is in its lifecycle, as seen by the pod workers. Unlike WorkType
// it also names the end (Finished) and absence (None).
type Stage int

const (
	// StageNone: the pod is not known (never seen, or forgotten).
	StageNone Stage = iota
	// StageSyncing: the pod is desired; SyncPod runs.
	StageSyncing
	// StageTerminating: termination was requested; SyncTerminatingPod runs.
	StageTerminating
	// StageTerminated: no container runs; SyncTerminatedPod runs.
	StageTerminated
	// StageFinished: SyncTerminatedPod succeeded (or the pod was stopped before it ever
	// started); updates are ignored until SyncKnownPods forgets the pod.
	StageFinished
)

// String returns "none", "syncing", "terminating", "terminated" or "finished".
func (s Stage) String() string {
	switch s {
	case StageNone:
		return "none"
	case StageSyncing:
		return "syncing"
	case StageTerminating:
		return "terminating"
	case StageTerminated:
		return "terminated"
	case StageFinished:
		return "finished"
	default:
		return fmt.Sprintf("Stage(%d)", int(s))
	}
}

// Transition is one change of a pod's Stage.
type Transition struct {
	UID      types.UID
	From, To Stage
	// Namespace and Name are the pod's (or the runtime pod's), when known.
	Namespace, Name string
}

// PodName returns namespace/name of the transition's pod, or "" when unknown.
func (t Transition) PodName() string {
	if t.Name == "" {
		return ""
	}
	return t.Namespace + "/" + t.Name
}

// Work is one call of the caller's PodSyncer that the Machine decided to make. The
// runner (or any driver of a Machine) reads the pod's runtime status newer than
// StatusNewerThan (unless RunningPod is set), calls the PodSyncer method named by
// WorkType, and reports the outcome with Machine.Complete.
type Work struct {
	UID      types.UID
	WorkType WorkType
	// UpdateType is the reason of the update that produced this work (SyncPod only).
	UpdateType SyncPodType
	// Pod is the latest configuration of the pod; nil for a runtime-only pod.
	Pod *v1.Pod
	// MirrorPod is the latest mirror pod seen for a static pod, or nil.
	MirrorPod *v1.Pod
	// RunningPod is set only for a runtime-only pod (WorkType is then TerminatingPod and
	// SyncTerminatingRuntimePod is to be called).
	RunningPod *pleg.Pod
	// GracePeriodSeconds is the effective grace period (>= 1) for TerminatingPod work.
	GracePeriodSeconds int64
	// PodStatusFunc is the latest status function of a kill request, or nil.
	PodStatusFunc func(*v1.PodStatus)
	// StatusNewerThan is when the pod's previous sync ended (zero for the first): the
	// status passed to the PodSyncer must have been observed after it.
	// The driver must not wait for a periodic observation of the runtime to get it
	// (see RuntimeView.StatusAfter): a terminating or terminated work follows one that
	// changed the runtime.
	StatusNewerThan time.Time
}

// podName returns namespace/name of the work's pod, or "".
func (w *Work) podName() string {
	switch {
	case w.Pod != nil:
		return w.Pod.Namespace + "/" + w.Pod.Name
	case w.RunningPod != nil:
		return w.RunningPod.Namespace + "/" + w.RunningPod.Name
	}
	return ""
}

// Result is the outcome of one Work, reported with Machine.Complete.
type Result struct {
	// Err is the error the PodSyncer (or the status read before it) returned.
	Err error
	// IsTerminal is SyncPod's report that the pod reached a terminal phase on its own.
	IsTerminal bool
}

// Requeue says that the Machine will resync a pod After this delay (a backoff after an
// error, the resync interval after a successful SyncPod). It is informational: the
// Machine keeps the due time itself and acts on it in Tick.
type Requeue struct {
	UID   types.UID
	After time.Duration
}

// Ready is what one call of a Machine decided. Its slices belong to the Machine, which
// reuses them (a Ready costs no allocation in the steady state): they stay as handed out
// until the next call that returns a Ready (UpdatePod, Complete, Tick, SyncKnownPods),
// whatever else the driver calls meanwhile (the queries, RefreshPod); copy what must
// outlive that call (Clone). The driver must apply it in this order: record Transitions, cancel the contexts of the in-flight work of the pods in Cancel,
// close every Completion in Close, and start every Work in Start. A Completion is listed
// in Close at most once, however often and for whichever pods it was passed (see
// KillPodOptions.Completion).
type Ready struct {
	Transitions []Transition
	Cancel      []types.UID
	Close       []*Completion
	Start       []Work
	Requeue     []Requeue
}

// Clone returns a copy of r that does not share the Machine's buffers.
func (r *Ready) Clone() Ready {
	return Ready{
		Transitions: append([]Transition(nil), r.Transitions...),
		Cancel:      append([]types.UID(nil), r.Cancel...),
		Close:       append([]*Completion(nil), r.Close...),
		Start:       append([]Work(nil), r.Start...),
		Requeue:     append([]Requeue(nil), r.Requeue...),
	}
}

// PodWorkerSync is one known pod's entry in the result of SyncKnownPods.
type PodWorkerSync struct {
	// State is the pod's current WorkType.
	State WorkType
	// Orphan is true if the pod was not in the desired set.
	Orphan bool
	// HasConfig is true if a configuration (not only a runtime pod) is known.
	HasConfig bool
	// Static is true for a static pod (config source annotation other than "api").
	Static bool
}

// PodState is a snapshot of one known pod, for observers and tests.
type PodState struct {
	Stage    Stage
	WorkType WorkType
	// Working is true while a PodSyncer call for the pod is in flight.
	Working bool
	// TerminationStarted is true once SyncPod will never run again for the pod.
	TerminationStarted bool
	// GracePeriodSeconds is the grace period in force (0 before termination).
	GracePeriodSeconds int64
	Deleted            bool
	Evicted            bool
	Static             bool
	// RestartRequested: a create arrived while the pod was terminating; SyncKnownPods
	// forgets the pod once finished so the next create starts it afresh.
	RestartRequested bool
}
