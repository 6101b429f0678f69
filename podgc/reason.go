package podgc

import "strconv"

// Reason says why the garbage collector deletes a pod. The four reasons are the four passes
// of one cycle, in the order the controller runs them.
type Reason int

const (
	// ReasonTerminated: the pod is terminated (see IsTerminated) and the number of terminated
	// pods exceeds the threshold; the oldest go first (see SortForDeletion).
	ReasonTerminated Reason = iota
	// ReasonTerminatingOutOfService: the pod is terminating (it has a deletionTimestamp) on a
	// node that is not Ready and carries the node.kubernetes.io/out-of-service taint.
	ReasonTerminatingOutOfService
	// ReasonOrphaned: the pod is bound to a node that has been missing for longer than the
	// quarantine period (see Quarantine).
	ReasonOrphaned
	// ReasonTerminatingUnscheduled: the pod is terminating and was never bound to a node,
	// so no kubelet will ever finish its deletion.
	ReasonTerminatingUnscheduled
)

// numReasons is the number of defined reasons; Reason values below it are valid.
const numReasons = 4

// String returns the reason as the controller's metrics label it: "terminated",
// "out-of-service", "orphaned" or "unscheduled". An undefined value gives "Reason(N)".
func (r Reason) String() string {
	switch r {
	case ReasonTerminated:
		return "terminated"
	case ReasonTerminatingOutOfService:
		return "out-of-service"
	case ReasonOrphaned:
		return "orphaned"
	case ReasonTerminatingUnscheduled:
		return "unscheduled"
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// Valid reports whether r is one of the defined reasons.
func (r Reason) Valid() bool { return r >= 0 && r < numReasons }
