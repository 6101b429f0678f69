package statusmgr

import (
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/podfacts"
)

// Values TerminatedStatus writes into a container status that has no terminated state.
const (
	// ReasonContainerStatusUnknown is the terminated reason of a container whose real state
	// could not be found when the pod was terminated.
	ReasonContainerStatusUnknown = "ContainerStatusUnknown"
	// MessageContainerNotFound is the terminated message of such a container.
	MessageContainerNotFound = "The container could not be located when the pod was terminated"
	// ExitCodeContainerNotFound is the exit code of such a container (SIGKILL).
	ExitCodeContainerNotFound = 137
)

// TerminatedStatus returns the status of a pod at the end of its lifecycle (the pure part of
// the kubelet's TerminatePod), starting from status (the manager's cached status, else
// pod.Status). status is not modified; the result shares no memory with it.
//   - Once the pod has initialized (see hasPodInitialized; judged on pod.Status), every
//     container status without a terminated state becomes Terminated with reason
//     ContainerStatusUnknown, exit code 137 and MessageContainerNotFound: an absent status
//     is a failure, never a success.
//   - Init container statuses get the same treatment, except a trailing run of statuses
//     still Waiting that never terminated (but always including the first one).
//   - A pod that is not static and whose phase is not Succeeded or Failed becomes Failed
//     (Pending, Running and unknown phases alike). A static pod keeps its phase.
//
// pod nil gives ErrNilPod.
func TerminatedStatus(pod *v1.Pod, status v1.PodStatus) (v1.PodStatus, error) {
	if pod == nil {
		return v1.PodStatus{}, ErrNilPod
	}
	var out v1.PodStatus
	terminatedStatusInto(pod, &status, &out)
	return out, nil
}

// terminatedStatusInto is TerminatedStatus (pod not nil) into *out, a zero struct.
func terminatedStatusInto(pod *v1.Pod, status, out *v1.PodStatus) {
	status.DeepCopyInto(out)
	terminate(pod, out)
}

// needsTermination reports whether TerminatedStatus would change s, a status of pod (not
// nil): some initialized container has no terminated state, or the phase of a pod that
// is not static is not terminal. s is not modified.
func needsTermination(pod *v1.Pod, s *v1.PodStatus) bool {
	for _, list := range terminable(pod, s) {
		for i := range list {
			if list[i].State.Terminated == nil {
				return true
			}
		}
	}
	return !IsStaticPod(pod) && !IsTerminalPhase(s.Phase)
}

// terminate makes s TerminatedStatus's status of pod (not nil), in place.
func terminate(pod *v1.Pod, s *v1.PodStatus) {
	for _, list := range terminable(pod, s) {
		for i := range list {
			if list[i].State.Terminated == nil {
				markTerminated(&list[i])
			}
		}
	}
	if !IsStaticPod(pod) && !IsTerminalPhase(s.Phase) {
		s.Phase = v1.PodFailed
	}
}

// terminable returns the container statuses of s that termination marks: the regular
// ones once the pod is initialized, and the init ones that were initialized.
func terminable(pod *v1.Pod, s *v1.PodStatus) [2][]v1.ContainerStatus {
	var lists [2][]v1.ContainerStatus
	if hasPodInitialized(pod) {
		lists[0] = s.ContainerStatuses
	}
	lists[1] = initializedContainers(s.InitContainerStatuses)
	return lists
}

// markTerminated gives cs, which has no terminated state, the state of a container not
// found.
func markTerminated(cs *v1.ContainerStatus) {
	cs.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		Reason:   ReasonContainerStatusUnknown,
		Message:  MessageContainerNotFound,
		ExitCode: ExitCodeContainerNotFound,
	}}
}

// hasPodInitialized reports whether the pod ever got past its init containers: it has none,
// a regular container ever left Waiting (or has a last termination), or the last init
// container completed with exit code 0 (a sidecar: is running and started).
func hasPodInitialized(pod *v1.Pod) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.LastTerminationState.Terminated != nil || cs.State.Waiting == nil {
			return true
		}
	}
	n := len(pod.Status.InitContainerStatuses)
	if n == 0 {
		return false
	}
	last := pod.Status.InitContainerStatuses[n-1]
	c := podfacts.ContainerByName(pod.Spec.InitContainers, last.Name)
	if c == nil {
		return false
	}
	if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
		return last.State.Running != nil && last.Started != nil && *last.Started
	}
	if t := last.LastTerminationState.Terminated; t != nil && t.ExitCode == 0 {
		return true
	}
	if t := last.State.Terminated; t != nil && t.ExitCode == 0 {
		return true
	}
	return false
}

// initializedContainers returns the statuses up to the last one that ever attempted to
// start (not Waiting, or with a last termination); at least the first when there is any.
func initializedContainers(cs []v1.ContainerStatus) []v1.ContainerStatus {
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].State.Waiting == nil || cs[i].LastTerminationState.Terminated != nil {
			return cs[:i+1]
		}
	}
	if len(cs) > 0 {
		return cs[:1]
	}
	return nil
}
