package pleg

import "k8s.io/apimachinery/pkg/types"

// EventType is the kind of a pod lifecycle event.
type EventType string

const (
	// ContainerStarted: a container moved to running.
	ContainerStarted EventType = "ContainerStarted"
	// ContainerDied: a container moved to exited (or vanished without being seen exited).
	ContainerDied EventType = "ContainerDied"
	// ContainerRemoved: a container the runtime listed before is gone.
	ContainerRemoved EventType = "ContainerRemoved"
	// PodSync: the pod's status was refreshed without a container change (a re-inspection).
	PodSync EventType = "PodSync"
	// ContainerChanged: a container moved to an unknown (or created) state. Events
	// returns it; a relister delivers it only when asked to (the kubelet never does).
	ContainerChanged EventType = "ContainerChanged"
)

// PodLifecycleEvent is one event for the pod workers: ID is the pod's UID and Data,
// for container events, the container ID as a string.
type PodLifecycleEvent struct {
	ID   types.UID
	Type EventType
	Data any
}

// normalize maps a runtime state to the state the relister compares: "created" is
// treated as "unknown", and a value that is not a known state is "unknown" too (the
// kubelet panics on it).
func normalize(s ContainerState) ContainerState {
	switch s {
	case ContainerStateRunning, ContainerStateExited, ContainerStateNonExistent:
		return s
	default:
		return ContainerStateUnknown
	}
}

// Events returns the events one relist emits for one container moving from old to new,
// with the kubelet's generateEvents semantics:
//
//	old \ new      running   exited   unknown/created   non-existent
//	non-existent   Started   Died     Changed           -
//	running        -         Died     Changed           Died, Removed
//	exited         Started   -        Changed           Removed
//	unknown        Started   Died     -                 Died, Removed
//
// "created" is the same state as "unknown"; equal states give nil. Every event has
// ID podID and Data containerID.
func Events(podID types.UID, containerID string, old, new ContainerState) []*PodLifecycleEvent {
	old, new = normalize(old), normalize(new)
	if old == new {
		return nil
	}
	ev := func(t EventType) *PodLifecycleEvent {
		return &PodLifecycleEvent{ID: podID, Type: t, Data: containerID}
	}
	switch new {
	case ContainerStateRunning:
		return []*PodLifecycleEvent{ev(ContainerStarted)}
	case ContainerStateExited:
		return []*PodLifecycleEvent{ev(ContainerDied)}
	case ContainerStateUnknown:
		return []*PodLifecycleEvent{ev(ContainerChanged)}
	default: // non-existent
		if old == ContainerStateExited {
			return []*PodLifecycleEvent{ev(ContainerRemoved)}
		}
		return []*PodLifecycleEvent{ev(ContainerDied), ev(ContainerRemoved)}
	}
}
