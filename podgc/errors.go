package podgc

import "errors"

// Sentinel errors. Every error this package returns or reports wraps one of them, so callers
// can test with errors.Is.
var (
	// ErrNilPod marks a nil entry in a pod list; the entry is skipped.
	ErrNilPod = errors.New("podgc: nil pod")
	// ErrInvalidPod marks a pod that cannot be deleted safely (no name or no UID, so no
	// UID precondition could guard its deletion); the pod is skipped.
	ErrInvalidPod = errors.New("podgc: invalid pod")
	// ErrNilNode marks a nil entry in a node list; the entry is skipped.
	ErrNilNode = errors.New("podgc: nil node")
	// ErrInvalidNode marks a node without a name; the entry is skipped.
	ErrInvalidNode = errors.New("podgc: invalid node")
	// ErrInvalidConfig marks a Config that New rejects.
	ErrInvalidConfig = errors.New("podgc: invalid config")
	// ErrList wraps a failure of the caller's Lister; the cycle is abandoned and retried at
	// the next period.
	ErrList = errors.New("podgc: list failed")
	// ErrNodeCheck wraps a failure of the caller's NodeChecker; the node's pods are not
	// deleted this cycle and the check is repeated at the next period.
	ErrNodeCheck = errors.New("podgc: node check failed")
	// ErrPatch wraps a failure to mark a pod Failed; the pod is not deleted this cycle and
	// is reconsidered at the next period.
	ErrPatch = errors.New("podgc: patch pod status failed")
	// ErrDelete wraps a failure to delete a pod; the pod is reconsidered at the next period.
	ErrDelete = errors.New("podgc: delete pod failed")
	// ErrNotImplemented is returned by a ...Funcs adapter whose function field is nil.
	ErrNotImplemented = errors.New("podgc: function not set")
	// ErrCycleInProgress is returned by RunOnce while another cycle of the same Runner runs.
	ErrCycleInProgress = errors.New("podgc: a cycle is already running")
)
