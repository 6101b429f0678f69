package order

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/podres"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/prober"
)

// Startup gives the startup probe's result for a running container instance (by its
// runtime ID): prober.Unknown while it has none yet. A nil Startup knows no result.
type Startup func(containerID string) prober.Result

// Kill is an init container instance to stop before it is started again.
type Kill struct {
	// Index is the container's index in pod.Spec.InitContainers.
	Index int
	// ContainerID is the instance's runtime ID.
	ContainerID string
	// Message is the kubelet's message for the kill.
	Message string
}

// InitActions is what a runtime does about a pod's init containers (the init container
// part of the kubelet's podActions).
type InitActions struct {
	// Start lists indexes in pod.Spec.InitContainers to start now, in ascending order: the
	// next init container, and the sidecars to restart.
	Start []int
	// Kill lists instances to stop before their restart (a sidecar whose startup probe
	// failed, an init container in an unknown state).
	Kill []Kill
	// KillPod: a regular init container failed and the pod does not restart it
	// (restartPolicy Never): the pod fails; nothing is started.
	KillPod bool
	// Initialized: every init container is done; the main containers may start.
	Initialized bool
}

// IsSidecar reports whether c is a restartable init container (restartPolicy Always).
func IsSidecar(c *v1.Container) bool { return podres.IsRestartableInitContainer(c) }

// HasSidecar reports whether the pod has a restartable init container.
func HasSidecar(pod *v1.Pod) bool {
	for i := range pod.Spec.InitContainers {
		if IsSidecar(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	return false
}

// initFailed is the kubelet's isInitContainerFailed.
func initFailed(s *pleg.ContainerStatus) bool {
	return s.Reason == "OOMKilled" ||
		s.State == pleg.ContainerStateExited && s.ExitCode != 0 ||
		s.State == pleg.ContainerStateUnknown
}

// Init decides what to do about the pod's init containers from its runtime status (nil:
// nothing created yet), as the kubelet's computeInitContainerActions: a regular init
// container is done once it exited 0, a sidecar once it runs and, when it has a startup
// probe, once that succeeded (startup; a failed startup probe restarts it). A pod whose
// main containers have started is initialized for good: only its sidecars are restarted.
func Init(pod *v1.Pod, status *pleg.PodStatus, startup Startup) InitActions {
	var a InitActions
	if pod == nil {
		return a
	}
	inits := pod.Spec.InitContainers
	if len(inits) == 0 {
		a.Initialized = true
		return a
	}
	find := func(name string) *pleg.ContainerStatus {
		if status == nil {
			return nil
		}
		return status.FindContainerStatusByName(name)
	}
	// The kubelet's HasAnyActiveRegularContainerStarted.
	for i := range pod.Spec.Containers {
		if find(pod.Spec.Containers[i].Name) != nil {
			a.Initialized = true
			break
		}
	}
	previously := a.Initialized
	restartOnFailure := pod.Spec.RestartPolicy != v1.RestartPolicyNever
	for i := len(inits) - 1; i >= 0; i-- {
		c := &inits[i]
		sidecar := IsSidecar(c)
		s := find(c.Name)
		if s == nil {
			if previously && sidecar {
				a.Start = append(a.Start, i)
			}
			continue
		}
		if previously && !sidecar {
			continue
		}
		switch s.State {
		case pleg.ContainerStateCreated:
			a.Start = append(a.Start, i)
		case pleg.ContainerStateRunning:
			if !sidecar {
				break // wait for it
			}
			if c.StartupProbe != nil {
				r := prober.Unknown
				if startup != nil {
					r = startup(s.ID)
				}
				if r == prober.Failure {
					a.Kill = append(a.Kill, Kill{Index: i, ContainerID: s.ID, Message: fmt.Sprintf("Init container %s failed startup probe", c.Name)})
					a.Start = append(a.Start, i)
				}
				if r != prober.Success {
					break
				}
			}
			if i == len(inits)-1 {
				a.Initialized = true
			} else if !previously {
				a.Start = append(a.Start, i+1)
			}
		case pleg.ContainerStateExited:
			if sidecar {
				a.Start = append(a.Start, i)
				break
			}
			if initFailed(s) {
				if !restartOnFailure {
					return InitActions{KillPod: true}
				}
				a.Start = append(a.Start, i)
				break
			}
			if i == len(inits)-1 {
				a.Initialized = true
			} else {
				a.Start = append(a.Start, i+1)
			}
		default: // unknown
			if !sidecar && !restartOnFailure {
				return InitActions{KillPod: true}
			}
			a.Kill = append(a.Kill, Kill{Index: i, ContainerID: s.ID, Message: fmt.Sprintf("Init container is in %q state, try killing it before restart", s.State)})
			a.Start = append(a.Start, i)
		}
		previously = true
	}
	if !previously {
		a.Start = append(a.Start, 0)
	}
	slices.Sort(a.Start)
	a.Start = slices.Compact(a.Start)
	slices.SortFunc(a.Kill, func(x, y Kill) int { return x.Index - y.Index })
	return a
}
