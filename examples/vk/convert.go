package vk

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg"
)

// A provider pod in the PLEG's terms: its init and app containers as reported, and one
// sandbox standing for the pod itself, ready until the pod is stopped.

// stopped reports whether the provider's status says the pod runs nothing: a terminal
// phase, or a terminated status for every container of the spec (a container without
// status may still start).
func stopped(spec *v1.PodSpec, st *v1.PodStatus) bool {
	if st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed {
		return true
	}
	for i := range spec.Containers {
		cs := findStatus(st.ContainerStatuses, spec.Containers[i].Name)
		if cs == nil || cs.State.Terminated == nil {
			return false
		}
	}
	return true
}

// sameStates reports whether two statuses of a pod show the same phase, IP and
// containers in the same states (what its runtime status is made of, timestamps aside).
func sameStates(a, b *v1.PodStatus) bool {
	if a.Phase != b.Phase || a.PodIP != b.PodIP || len(a.InitContainerStatuses) != len(b.InitContainerStatuses) ||
		len(a.ContainerStatuses) != len(b.ContainerStatuses) {
		return false
	}
	for _, l := range [][2][]v1.ContainerStatus{{a.InitContainerStatuses, b.InitContainerStatuses}, {a.ContainerStatuses, b.ContainerStatuses}} {
		for i := range l[0] {
			x, y := &l[0][i], &l[1][i]
			if x.Name != y.Name || x.ContainerID != y.ContainerID || x.RestartCount != y.RestartCount ||
				containerState(&x.State) != containerState(&y.State) {
				return false
			}
		}
	}
	return true
}

func findStatus(statuses []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

// containerID is the status's container ID, or one made up from the pod, the name and
// the restart count when the provider reports none (each restart is a new container).
func containerID(uid types.UID, cs *v1.ContainerStatus) string {
	if cs.ContainerID != "" {
		return cs.ContainerID
	}
	return fmt.Sprintf("vk://%s/%s/%d", uid, cs.Name, cs.RestartCount)
}

func containerState(s *v1.ContainerState) pleg.ContainerState {
	switch {
	case s.Running != nil:
		return pleg.ContainerStateRunning
	case s.Terminated != nil:
		return pleg.ContainerStateExited
	case s.Waiting != nil:
		return pleg.ContainerStateCreated
	}
	return pleg.ContainerStateUnknown
}

func sandboxID(uid types.UID) string { return "vk-sandbox://" + string(uid) }

// runtimePod is the provider's pod p (status st) as a runtime pod with UID uid.
func runtimePod(uid types.UID, p *v1.Pod, st *v1.PodStatus) *pleg.Pod {
	rp := &pleg.Pod{ID: uid, Name: p.Name, Namespace: p.Namespace, CreatedAt: p.CreationTimestamp.Time,
		Containers: make([]*pleg.Container, 0, len(st.InitContainerStatuses)+len(st.ContainerStatuses))}
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range list {
			cs := &list[i]
			rp.Containers = append(rp.Containers, &pleg.Container{ID: containerID(uid, cs), Name: cs.Name,
				Image: cs.Image, State: containerState(&cs.State)})
		}
	}
	sb := pleg.ContainerStateRunning
	if stopped(&p.Spec, st) {
		sb = pleg.ContainerStateExited
	}
	rp.Sandboxes = []*pleg.Container{{ID: sandboxID(uid), State: sb}}
	return rp
}

// runtimeStatus is the provider's pod p (status st) as a runtime status with UID uid.
func runtimeStatus(uid types.UID, p *v1.Pod, st *v1.PodStatus) *pleg.PodStatus {
	rs := &pleg.PodStatus{ID: uid, Name: p.Name, Namespace: p.Namespace,
		ContainerStatuses: make([]*pleg.ContainerStatus, 0, len(st.InitContainerStatuses)+len(st.ContainerStatuses))}
	for _, ip := range st.PodIPs {
		rs.IPs = append(rs.IPs, ip.IP)
	}
	if len(rs.IPs) == 0 && st.PodIP != "" {
		rs.IPs = []string{st.PodIP}
	}
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range list {
			cs := &list[i]
			c := &pleg.ContainerStatus{ID: containerID(uid, cs), Name: cs.Name, Image: cs.Image, ImageID: cs.ImageID,
				State: containerState(&cs.State), RestartCount: int(cs.RestartCount)}
			switch {
			case cs.State.Running != nil:
				c.StartedAt = cs.State.Running.StartedAt.Time
			case cs.State.Terminated != nil:
				t := cs.State.Terminated
				c.StartedAt, c.FinishedAt = t.StartedAt.Time, t.FinishedAt.Time
				c.ExitCode, c.Reason, c.Message = int(t.ExitCode), t.Reason, t.Message
			case cs.State.Waiting != nil:
				c.Reason, c.Message = cs.State.Waiting.Reason, cs.State.Waiting.Message
			}
			rs.ContainerStatuses = append(rs.ContainerStatuses, c)
		}
	}
	sb := &pleg.SandboxStatus{ID: sandboxID(uid), State: pleg.SandboxReady, CreatedAt: p.CreationTimestamp.Time}
	if stopped(&p.Spec, st) {
		sb.State = pleg.SandboxNotReady
	}
	if len(rs.IPs) > 0 {
		sb.IP = rs.IPs[0]
	}
	rs.SandboxStatuses = []*pleg.SandboxStatus{sb}
	return rs
}

// pendingStatus is the status of a pod the provider reported nothing of yet: Pending, its
// containers waiting to be created.
func pendingStatus(pod *v1.Pod, now metav1.Time) v1.PodStatus {
	st := v1.PodStatus{Phase: v1.PodPending, StartTime: &now}
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, v1.ContainerStatus{Name: c.Name, Image: c.Image,
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}})
	}
	st.Conditions = []v1.PodCondition{
		{Type: v1.PodInitialized, Status: v1.ConditionTrue},
		{Type: v1.PodReady, Status: v1.ConditionFalse},
		{Type: v1.ContainersReady, Status: v1.ConditionFalse},
		{Type: v1.PodScheduled, Status: v1.ConditionTrue},
	}
	return st
}

// terminatedPhase is the phase of a terminated pod whose containers all have terminated
// statuses: Succeeded if every exit code is 0, else Failed. ok is false if a container of
// the spec has no terminated status.
func terminatedPhase(pod *v1.Pod, st *v1.PodStatus) (v1.PodPhase, bool) {
	ph := v1.PodSucceeded
	for i := range pod.Spec.Containers {
		cs := findStatus(st.ContainerStatuses, pod.Spec.Containers[i].Name)
		if cs == nil || cs.State.Terminated == nil {
			return "", false
		}
		if cs.State.Terminated.ExitCode != 0 {
			ph = v1.PodFailed
		}
	}
	return ph, true
}
