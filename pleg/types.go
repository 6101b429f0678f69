package pleg

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// ContainerState is the state of a container as the relister sees it.
// The values are the kubelet's (pkg/kubelet/pleg: plegContainerState).
type ContainerState string

const (
	// ContainerStateCreated is a container that exists but has not started.
	// The relister treats it as ContainerStateUnknown, as the kubelet does.
	ContainerStateCreated ContainerState = "created"
	// ContainerStateRunning is a running container (or a ready sandbox).
	ContainerStateRunning ContainerState = "running"
	// ContainerStateExited is a container that has stopped (or a sandbox that is not ready).
	ContainerStateExited ContainerState = "exited"
	// ContainerStateUnknown is a container whose state the runtime cannot tell.
	ContainerStateUnknown ContainerState = "unknown"
	// ContainerStateNonExistent is a container the runtime no longer lists.
	ContainerStateNonExistent ContainerState = "non-existent"
)

// Pod is one pod as the runtime lists it: the library's stand-in for the kubelet's
// kubecontainer.Pod. Sandboxes are listed as containers whose State is
// ContainerStateRunning while the sandbox is ready and ContainerStateExited otherwise.
type Pod struct {
	ID        types.UID
	Name      string
	Namespace string
	// CreatedAt is when the runtime created the pod (its first sandbox); zero if unknown.
	CreatedAt  time.Time
	Containers []*Container
	Sandboxes  []*Container
}

// Container is one container (or sandbox) of a runtime pod.
type Container struct {
	// ID is the runtime's container ID; unique within the runtime.
	ID    string
	Name  string
	Image string
	State ContainerState
}

// SandboxState is the state of a pod sandbox.
type SandboxState string

const (
	SandboxReady    SandboxState = "ready"
	SandboxNotReady SandboxState = "notready"
)

// PodStatus is the detailed runtime status of one pod: the library's stand-in for the
// kubelet's kubecontainer.PodStatus. A nil *PodStatus and a PodStatus without containers
// both mean "nothing of this pod exists in the runtime".
type PodStatus struct {
	ID        types.UID
	Name      string
	Namespace string
	// IPs of the pod, the primary first.
	IPs []string
	// ContainerStatuses holds every container the runtime knows of, including exited
	// instances of earlier attempts, newest first for a given name.
	ContainerStatuses []*ContainerStatus
	// SandboxStatuses holds every sandbox of the pod, newest first.
	SandboxStatuses []*SandboxStatus
	// TimeStamp is when the status was observed (set by the cache/relister).
	TimeStamp time.Time
}

// ContainerStatus is the runtime status of one container instance.
type ContainerStatus struct {
	ID         string
	Name       string
	Image      string
	ImageID    string
	State      ContainerState
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   int
	// RestartCount is the number of times this container was restarted before this instance.
	RestartCount int
	Reason       string
	Message      string
}

// SandboxStatus is the runtime status of one pod sandbox.
type SandboxStatus struct {
	ID        string
	State     SandboxState
	CreatedAt time.Time
	// Attempt counts the sandboxes created for the pod before this one.
	Attempt uint32
	IP      string
}

// FindContainerStatusByName returns the newest status of the named container, or nil.
// It is safe on a nil receiver.
func (s *PodStatus) FindContainerStatusByName(name string) *ContainerStatus {
	if s == nil {
		return nil
	}
	for _, cs := range s.ContainerStatuses {
		if cs != nil && cs.Name == name {
			return cs
		}
	}
	return nil
}

// RunningContainers returns how many container instances are running.
func (s *PodStatus) RunningContainers() int {
	if s == nil {
		return 0
	}
	n := 0
	for _, cs := range s.ContainerStatuses {
		if cs != nil && cs.State == ContainerStateRunning {
			n++
		}
	}
	return n
}

// IsRunning reports whether any container is running or any sandbox is ready: whether
// the pod could still be using resources of the node. It is safe on a nil receiver.
func (s *PodStatus) IsRunning() bool {
	if s == nil {
		return false
	}
	if s.RunningContainers() > 0 {
		return true
	}
	for _, sb := range s.SandboxStatuses {
		if sb != nil && sb.State == SandboxReady {
			return true
		}
	}
	return false
}

// RuntimeService is what the relister and the status cache need from the caller's
// container runtime. It is implemented by the caller and must be safe for concurrent use.
//
//   - ListPods returns every pod the runtime has, with its containers and sandboxes. With
//     all=false only pods with at least one running container or ready sandbox are needed
//     (the relister always asks for all=true). The returned pods must not be modified by
//     the runtime afterwards. An error fails the whole relist: nothing is diffed, no event
//     is sent, and the next period retries.
//   - PodStatus returns the detailed status of one pod. A pod the runtime does not know
//     returns an empty status (ID set, no containers) and a nil error. An error makes the
//     relister drop that pod's events for this relist and inspect it again next time.
//     The status must list the same containers and sandboxes, with the same states, as
//     ListPods would at that moment (RequestRefresh and PushStatus derive the pod's
//     containers from it; a mismatch shows up as spurious events at the next relist).
//     The relister never modifies a returned status; it caches it, or a shallow copy
//     with ID, TimeStamp and IPs completed. Nor may the runtime once it returned it: the
//     cache hands it to the pod workers as it is, and a status in the cache stands for one
//     observation (a later one is a new status).
//
// Both calls get the context of Relist or Run and should return when it ends.
type RuntimeService interface {
	ListPods(ctx context.Context, all bool) ([]*Pod, error)
	PodStatus(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error)
}

// RuntimeServiceFuncs adapts two functions to a RuntimeService. A nil function returns
// no pods and an empty status.
type RuntimeServiceFuncs struct {
	ListPodsFunc  func(ctx context.Context, all bool) ([]*Pod, error)
	PodStatusFunc func(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error)
}

var _ RuntimeService = RuntimeServiceFuncs{}

// ListPods calls ListPodsFunc.
func (f RuntimeServiceFuncs) ListPods(ctx context.Context, all bool) ([]*Pod, error) {
	if f.ListPodsFunc == nil {
		return nil, nil
	}
	return f.ListPodsFunc(ctx, all)
}

// PodStatus calls PodStatusFunc.
func (f RuntimeServiceFuncs) PodStatus(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error) {
	if f.PodStatusFunc == nil {
		return &PodStatus{ID: uid, Name: name, Namespace: namespace}, nil
	}
	return f.PodStatusFunc(ctx, uid, name, namespace)
}
