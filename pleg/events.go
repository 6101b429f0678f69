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
	return codeOf(s).state()
}

// stateCode is a normalized state in a byte, as a view keeps it: comparing two is one
// instruction, and a view entry is smaller.
type stateCode uint8

const (
	codeNonExistent stateCode = iota
	codeRunning
	codeExited
	codeUnknown
)

var codeStates = [...]ContainerState{
	codeNonExistent: ContainerStateNonExistent,
	codeRunning:     ContainerStateRunning,
	codeExited:      ContainerStateExited,
	codeUnknown:     ContainerStateUnknown,
}

// codeOf returns the code of the normalized s.
func codeOf(s ContainerState) stateCode {
	switch s {
	case ContainerStateRunning:
		return codeRunning
	case ContainerStateExited:
		return codeExited
	case ContainerStateNonExistent:
		return codeNonExistent
	default:
		return codeUnknown
	}
}

// state returns the normalized state of code c.
func (c stateCode) state() ContainerState { return codeStates[c] }

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
	ts, n := transition(normalize(old), normalize(new))
	if n == 0 {
		return nil
	}
	out := make([]*PodLifecycleEvent, n)
	for i := range n {
		out[i] = &PodLifecycleEvent{ID: podID, Type: ts[i], Data: containerID}
	}
	return out
}

// transition returns the event types of a move between two normalized states, in order:
// n is 0, 1 or 2. It allocates nothing, so the relister uses it on its hot path.
func transition(old, new ContainerState) (ts [2]EventType, n int) {
	if old == new {
		return ts, 0
	}
	switch new {
	case ContainerStateRunning:
		return [2]EventType{ContainerStarted}, 1
	case ContainerStateExited:
		return [2]EventType{ContainerDied}, 1
	case ContainerStateUnknown:
		return [2]EventType{ContainerChanged}, 1
	default: // non-existent
		if old == ContainerStateExited {
			return [2]EventType{ContainerRemoved}, 1
		}
		return [2]EventType{ContainerDied, ContainerRemoved}, 2
	}
}
