package statusmgr

import (
	"cmp"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxTerminationMessageBytes is the budget for all termination messages of one pod status;
// NormalizeStatus splits it evenly across the containers of the pod's spec (the kubelet's
// MaxPodTerminationMessageLogLength).
const MaxTerminationMessageBytes = 12 * 1024

// NormalizeStatus puts status into the form the API server stores, so that a status read
// back from the server compares equal to the cached one: every time is truncated to whole
// seconds (RFC 3339), termination messages are cut to MaxTerminationMessageBytes divided by
// the number of containers in pod.Spec (containers, init containers and ephemeral
// containers, as the kubelet counts them; the number of statuses when pod is nil; the
// whole budget when the spec has none), container and ephemeral container statuses are sorted
// by name, and init container statuses follow the order of pod.Spec.InitContainers (pod may
// be nil: they are then sorted by name too). status is modified in place; a nil status is a
// no-op.
func NormalizeStatus(pod *v1.Pod, status *v1.PodStatus) {
	if status == nil {
		return
	}
	budget := messageBudget(pod, status)
	truncTime(status.StartTime)
	for i := range status.Conditions {
		truncTime(&status.Conditions[i].LastProbeTime)
		truncTime(&status.Conditions[i].LastTransitionTime)
	}
	for _, list := range containerStatusLists(status) {
		for i := range list {
			normalizeState(&list[i].State, budget)
			normalizeState(&list[i].LastTerminationState, budget)
		}
	}
	byName := func(a, b v1.ContainerStatus) int { return cmp.Compare(a.Name, b.Name) }
	slices.SortStableFunc(status.ContainerStatuses, byName)
	slices.SortStableFunc(status.EphemeralContainerStatuses, byName)
	if pod == nil {
		slices.SortStableFunc(status.InitContainerStatuses, byName)
		return
	}
	specIndex := func(name string) int {
		for i := range pod.Spec.InitContainers {
			if pod.Spec.InitContainers[i].Name == name {
				return i
			}
		}
		return len(pod.Spec.InitContainers)
	}
	slices.SortStableFunc(status.InitContainerStatuses, func(a, b v1.ContainerStatus) int {
		return cmp.Compare(specIndex(a.Name), specIndex(b.Name))
	})
}

// messageBudget is the length NormalizeStatus cuts each termination message to.
func messageBudget(pod *v1.Pod, status *v1.PodStatus) int {
	if n := containerCount(pod, status); n > 0 {
		return MaxTerminationMessageBytes / n
	}
	return MaxTerminationMessageBytes
}

// containerStatusLists are status's lists of container statuses: its containers', init
// containers' and ephemeral containers'.
func containerStatusLists(status *v1.PodStatus) [3][]v1.ContainerStatus {
	return [...][]v1.ContainerStatus{status.ContainerStatuses, status.InitContainerStatuses, status.EphemeralContainerStatuses}
}

// cutsNoMessage reports whether NormalizeStatus(pod, status) would leave every termination
// message of status as it is (none is longer than the budget). Read only.
func cutsNoMessage(pod *v1.Pod, status *v1.PodStatus) bool {
	budget := messageBudget(pod, status)
	for _, list := range containerStatusLists(status) {
		for i := range list {
			for _, t := range [...]*v1.ContainerStateTerminated{list[i].State.Terminated, list[i].LastTerminationState.Terminated} {
				if t != nil && len(t.Message) > budget {
					return false
				}
			}
		}
	}
	return true
}

// containerCount is the number of containers the termination message budget is split
// over: the pod spec's containers, init containers and ephemeral containers (as the
// kubelet counts them, whether or not they have a status yet); without a pod, the
// statuses.
func containerCount(pod *v1.Pod, status *v1.PodStatus) int {
	if pod == nil {
		return len(status.ContainerStatuses) + len(status.InitContainerStatuses) + len(status.EphemeralContainerStatuses)
	}
	return len(pod.Spec.Containers) + len(pod.Spec.InitContainers) + len(pod.Spec.EphemeralContainers)
}

func normalizeState(s *v1.ContainerState, budget int) {
	if s.Running != nil {
		truncTime(&s.Running.StartedAt)
	}
	if t := s.Terminated; t != nil {
		truncTime(&t.StartedAt)
		truncTime(&t.FinishedAt)
		if len(t.Message) > budget {
			t.Message = t.Message[:budget]
		}
	}
}

func truncTime(t *metav1.Time) {
	if t != nil && !t.IsZero() {
		*t = rfc3339Copy(*t)
	}
}

// rfc3339Copy is metav1.Time.Rfc3339Copy (format as RFC 3339, parse back) without the
// format and parse for what the manager sees: times in UTC, or in Local while the local
// offset is 0 (both come back in UTC, truncated to the second). Anything else (another
// zone, whose offset RFC 3339 may not keep to the second, or a year outside 0-9999, which
// it cannot write) takes the slow path, so the result is always Rfc3339Copy's.
func rfc3339Copy(t metav1.Time) metav1.Time {
	if y := t.Year(); y < 0 || y > 9999 {
		return t.Rfc3339Copy()
	}
	switch loc := t.Location(); {
	case loc == time.UTC:
	case loc == time.Local:
		if _, off := t.Zone(); off != 0 {
			return t.Rfc3339Copy()
		}
	default:
		return t.Rfc3339Copy()
	}
	return metav1.Time{Time: t.Truncate(time.Second).UTC()}
}
