package node

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/config"
)

// EventKind classifies an Event.
type EventKind int

// The kinds of Event.
const (
	// EventConfig: the loop dispatched a config change (Op says which).
	EventConfig EventKind = iota
	// EventPLEG: the loop handled a PLEG event (PLEG says which).
	EventPLEG
	// EventWork: a pod worker called the node's PodSyncer, or one of its steps finished,
	// or KillPod handed a kill to the pod workers.
	EventWork
	// EventHousekeeping: a step of the housekeeping round.
	EventHousekeeping
	// EventRuntime: the node had the runtime act outside a pod's work (leftovers).
	EventRuntime
	// EventError: something failed (Err says what); it is retried where the kubelet
	// retries it.
	EventError
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case EventConfig:
		return "config"
	case EventPLEG:
		return "pleg"
	case EventWork:
		return "work"
	case EventHousekeeping:
		return "housekeeping"
	case EventRuntime:
		return "runtime"
	case EventError:
		return "error"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Reasons of Events: the kubelet's event reasons where it emits one for the step.
const (
	ReasonSyncPod           = "SyncPod"
	ReasonKilling           = "Killing"
	ReasonKillingOrphan     = "KillingOrphan"
	ReasonTerminated        = "Terminated"
	ReasonFailedSync        = "FailedSync"
	ReasonFailedKillPod     = "FailedKillPod"
	ReasonDropped           = "Dropped"
	ReasonUpdateFailed      = "UpdateFailed"
	ReasonRemoveRefused     = "RemoveRefused"
	ReasonForgot            = "Forgot"
	ReasonRestarted         = "Restarted"
	ReasonRemovedLeftovers  = "RemovedLeftovers"
	ReasonMirrorPodCreated  = "MirrorPodCreated"
	ReasonMirrorPodDeleted  = "MirrorPodDeleted"
	ReasonHousekeepingError = "HousekeepingFailed"
	// ReasonFailed and ReasonBackOff are the kubelet's recorded events for a container
	// SyncPod did not start (a ContainerError): Failed "Error: ErrImagePull", BackOff
	// "Back-off restarting failed container app in pod web_default(uid)".
	ReasonFailed  = "Failed"
	ReasonBackOff = "BackOff"
)

// Event is one step of the node's loop, reported to Config.OnEvent.
type Event struct {
	Kind EventKind
	// Pod is the pod concerned, if its configuration is known.
	Pod *v1.Pod
	// UID is the pod's UID (also when Pod is nil, e.g. a runtime-only pod).
	UID types.UID
	// Op is the config op of an EventConfig.
	Op config.Op
	// PLEG is the PLEG event of an EventPLEG.
	PLEG string
	// Reason is a short CamelCase reason (the Reason* constants).
	Reason string
	// Message says more, for people.
	Message string
	// Err is the error of an EventError (or a failed step).
	Err error
}

// PodName returns namespace/name of the event's pod, or "" when unknown.
func (e Event) PodName() string {
	if e.Pod == nil {
		return ""
	}
	return e.Pod.Namespace + "/" + e.Pod.Name
}

// observed reports whether anyone receives the events: the hot paths build an event's
// Message (fmt) only then.
func (n *Node) observed() bool { return n.cfg.OnEvent != nil }

// emit reports e to the hook, filling in the UID from the pod.
func (n *Node) emit(e Event) {
	if n.cfg.OnEvent == nil {
		return
	}
	if e.Pod != nil && e.UID == "" {
		e.UID = e.Pod.UID
	}
	n.cfg.OnEvent(e)
}
