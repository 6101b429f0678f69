package statusmgr

import (
	"errors"

	"github.com/podlife/podlife/statusmgr/internal/patch"
)

// Sentinel errors. Every error the package returns wraps one of them; test with errors.Is.
var (
	// ErrNilPod is returned when a nil *v1.Pod is passed where a pod is required.
	ErrNilPod = errors.New("statusmgr: nil pod")
	// ErrEmptyUID is returned for a pod (or pod UID) whose UID is empty.
	ErrEmptyUID = errors.New("statusmgr: empty pod UID")
	// ErrIllegalTransition is returned when a status would move a terminated container back
	// to a non-terminated state (see CheckContainerStateTransition). The status is refused.
	ErrIllegalTransition = errors.New("statusmgr: illegal container state transition")
	// ErrInvalidPhase is returned for a status with an unknown phase value, or one that
	// would move the pod out of the terminal phase its cached status already has
	// (Succeeded or Failed are final). The status is refused.
	ErrInvalidPhase = errors.New("statusmgr: invalid pod phase")
	// ErrUnknownPod is returned by the container readiness and startup setters when the
	// manager holds no status for the pod, or cannot find the container.
	ErrUnknownPod = errors.New("statusmgr: unknown pod or container")
	// ErrInvalidConfig is returned by New for an unusable Config.
	ErrInvalidConfig = errors.New("statusmgr: invalid config")
	// ErrNotImplemented is returned by a StatusPatcherFuncs or PodLookupFuncs method whose
	// function is nil.
	ErrNotImplemented = errors.New("statusmgr: method not implemented")
	// ErrAlreadyRunning is returned by Run when another Run of the same Manager is active.
	ErrAlreadyRunning = errors.New("statusmgr: Run already active")
	// ErrAPI wraps the error of a failed StatusPatcher call (the call's own error is
	// wrapped too: test it with apierrors.IsConflict and the like), and a call that
	// answered neither a pod nor an error. The status stays pending and is retried.
	ErrAPI = errors.New("statusmgr: API call failed")
	// ErrEncode is returned when a status patch cannot be encoded.
	ErrEncode = patch.ErrEncode
	// ErrInterrupted is returned by Sync when its context ended before every pod was
	// synced (the context's error is wrapped too); the rest stay queued.
	ErrInterrupted = errors.New("statusmgr: sync interrupted")
)
