package statusmgr

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Reasons of the generated ContainersReady and Ready conditions.
const (
	// ReasonContainersNotReady: some container is not ready or has no status.
	ReasonContainersNotReady = "ContainersNotReady"
	// ReasonReadinessGatesNotReady: the containers are ready but a readiness gate is not.
	ReasonReadinessGatesNotReady = "ReadinessGatesNotReady"
	// ReasonUnknownContainerStatuses: the pod has no container statuses at all.
	ReasonUnknownContainerStatuses = "UnknownContainerStatuses"
)

// ContainersReadyCondition computes the ContainersReady condition of pod from status (the
// kubelet's GenerateContainersReadyCondition): True when every regular container and every
// sidecar (restartable init container) of the spec has a ready status; for a Succeeded pod
// whose containers all have a status, False with reason PodCompleted; for a Failed pod,
// False with reason PodFailed; otherwise False with
// reason ContainersNotReady (or UnknownContainerStatuses) and a message naming the
// containers. LastTransitionTime is left zero (the manager stamps it). A nil pod or status
// counts as an empty one.
func ContainersReadyCondition(pod *v1.Pod, status *v1.PodStatus) v1.PodCondition {
	pod, status = orEmpty(pod, status)
	c := v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, ObservedGeneration: pod.Generation}
	if status.ContainerStatuses == nil && status.InitContainerStatuses == nil {
		c.Reason = ReasonUnknownContainerStatuses
		return c
	}
	// Room for a few names on the stack: the lists live only as long as the message is built.
	var unknownRoom, unreadyRoom [4]string
	unknown, unready := unknownRoom[:0], unreadyRoom[:0]
	check := func(name string, statuses []v1.ContainerStatus) {
		for i := range statuses {
			if statuses[i].Name == name {
				if !statuses[i].Ready {
					unready = append(unready, name)
				}
				return
			}
		}
		unknown = append(unknown, name)
	}
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		if ic.RestartPolicy != nil && *ic.RestartPolicy == v1.ContainerRestartPolicyAlways {
			check(ic.Name, status.InitContainerStatuses)
		}
	}
	for i := range pod.Spec.Containers {
		check(pod.Spec.Containers[i].Name, status.ContainerStatuses)
	}
	if status.Phase == v1.PodSucceeded && len(unknown) == 0 {
		c.Reason = ReasonPodCompleted
		return c
	}
	if status.Phase == v1.PodFailed {
		// The containers may still be stopping: not ready, whatever they say (1.37).
		c.Reason = ReasonPodFailed
		return c
	}
	if len(unknown) > 0 || len(unready) > 0 {
		c.Reason = ReasonContainersNotReady
		c.Message = notReadyMessage(unknown, unready)
		return c
	}
	c.Status = v1.ConditionTrue
	return c
}

// notReadyMessage is the message of a ContainersReady condition that is not True, as the
// kubelet's ("containers with unknown status: [a b], containers with unready status: [c]",
// each part only when it names a container), without fmt.
func notReadyMessage(unknown, unready []string) string {
	var b strings.Builder
	b.Grow(notReadyMessageLen(unknown) + notReadyMessageLen(unready))
	part := func(what string, names []string) {
		if len(names) == 0 {
			return
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString("containers with ")
		b.WriteString(what)
		b.WriteString(" status: [")
		for i, n := range names {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(n)
		}
		b.WriteByte(']')
	}
	part("unknown", unknown)
	part("unready", unready)
	return b.String()
}

// notReadyMessageLen is the length of notReadyMessage's part for names at most (its
// longest kind, "unknown" or "unready", and the separator before it included).
func notReadyMessageLen(names []string) int {
	if len(names) == 0 {
		return 0
	}
	n := len(", containers with unknown status: []") + len(names) - 1
	for _, name := range names {
		n += len(name)
	}
	return n
}

// PodReadyCondition computes the Ready condition of pod from status (the kubelet's
// GeneratePodReadyCondition): ContainersReady's verdict when that is not True, else False
// with reason ReadinessGatesNotReady while a readiness gate's condition is missing or not
// True, else True. A nil pod or status counts as an empty one.
func PodReadyCondition(pod *v1.Pod, status *v1.PodStatus) v1.PodCondition {
	pod, status = orEmpty(pod, status)
	cr := ContainersReadyCondition(pod, status)
	c := v1.PodCondition{Type: v1.PodReady, Status: cr.Status, Reason: cr.Reason, Message: cr.Message, ObservedGeneration: pod.Generation}
	if cr.Status != v1.ConditionTrue {
		return c
	}
	var msgs []string
	for _, g := range pod.Spec.ReadinessGates {
		i := findCondition(status.Conditions, g.ConditionType)
		switch {
		case i < 0:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		case status.Conditions[i].Status != v1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, status.Conditions[i].Status))
		}
	}
	if len(msgs) > 0 {
		c.Status = v1.ConditionFalse
		c.Reason = ReasonReadinessGatesNotReady
		c.Message = strings.Join(msgs, ", ")
	}
	return c
}

func orEmpty(pod *v1.Pod, status *v1.PodStatus) (*v1.Pod, *v1.PodStatus) {
	if pod == nil {
		pod = &v1.Pod{}
	}
	if status == nil {
		status = &v1.PodStatus{}
	}
	return pod, status
}
