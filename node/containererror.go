package node

import (
	"errors"
	"fmt"
)

// The kubelet's reasons for a container that is not running (a Waiting state's reason).
// A Runtime reports them from SyncPod through ContainerError; the node shows them in the
// container's status until a later SyncPod no longer reports them.
const (
	ReasonErrImagePull               = "ErrImagePull"
	ReasonImagePullBackOff           = "ImagePullBackOff"
	ReasonErrImageNeverPull          = "ErrImageNeverPull"
	ReasonInvalidImageName           = "InvalidImageName"
	ReasonCrashLoopBackOff           = "CrashLoopBackOff"
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonCreateContainerError       = "CreateContainerError"
	ReasonRunContainerError          = "RunContainerError"
	ReasonPreStartHookError          = "PreStartHookError"
	ReasonPostStartHookError         = "PostStartHookError"
)

// ErrContainer is wrapped by every ContainerError.
var ErrContainer = errors.New("node: container not started")

// ContainerError is why SyncPod did not start (or restart) one container, in the
// kubelet's words: Reason is one of the reasons above (or a runtime's own), Message the
// kubelet's message (for CrashLoopBackOff "back-off 10s restarting failed container=app
// pod=web_default(uid)", for ErrImagePull the pull's error). SyncPod returns one, or
// several joined with errors.Join (possibly with other errors); the node then shows
// each named container as Waiting with that reason and message, its last termination
// in lastState, until a SyncPod returns without an error for it. A back-off
// (CrashLoopBackOff, ImagePullBackOff) is reported as a ContainerError too: the node
// retries the sync after its own back-off; the runtime decides when the container is
// really started again.
type ContainerError struct {
	// Container is the container's name (an init, regular or ephemeral container).
	Container string
	Reason    string
	Message   string
	// Err is the underlying error, if any (Unwrap returns it besides ErrContainer).
	Err error
}

// Error returns "container app: ErrImagePull: message".
func (e *ContainerError) Error() string {
	return fmt.Sprintf("container %s: %s: %s", e.Container, e.Reason, e.Message)
}

// Unwrap returns ErrContainer and Err.
func (e *ContainerError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrContainer}
	}
	return []error{ErrContainer, e.Err}
}

// ContainerErrors returns every ContainerError in err's tree (errors.Join, %w), in
// order, the first one of each container only.
func ContainerErrors(err error) []*ContainerError {
	var out []*ContainerError
	seen := map[string]bool{}
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if ce, ok := err.(*ContainerError); ok && ce != nil {
			if !seen[ce.Container] {
				seen[ce.Container] = true
				out = append(out, ce)
			}
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}
