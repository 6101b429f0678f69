package agent

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/pleg"
)

// apiStatus computes the pod's API status from its runtime status, the way the kubelet's
// generateAPIPodStatus does for pods without init containers, probes or volumes: one
// container status per spec container (waiting until it has an instance, running, or
// terminated), the phase those give under the restart policy, and the kubelet-owned
// conditions. The status manager keeps StartTime and the transition times.
//
// podIsTerminal is true once the pod worker has stopped every container for good
// (SyncTerminatedPod): exited containers then give a terminal phase whatever the restart
// policy.
func apiStatus(pod *v1.Pod, rs *pleg.PodStatus, now metav1.Time, hostIP string, podIsTerminal bool) v1.PodStatus {
	st := v1.PodStatus{QOSClass: v1.PodQOSBestEffort, HostIP: hostIP, StartTime: &now}
	if hostIP != "" {
		st.HostIPs = []v1.HostIP{{IP: hostIP}}
	}
	if rs != nil {
		for _, ip := range rs.IPs {
			st.PodIPs = append(st.PodIPs, v1.PodIP{IP: ip})
		}
		if len(rs.IPs) > 0 {
			st.PodIP = rs.IPs[0]
		}
	}
	sandboxReady := false
	if rs != nil && len(rs.SandboxStatuses) > 0 && rs.SandboxStatuses[0] != nil {
		sandboxReady = rs.SandboxStatuses[0].State == pleg.SandboxReady
	}

	ready := len(pod.Spec.Containers) > 0
	for _, c := range pod.Spec.Containers {
		cs := v1.ContainerStatus{Name: c.Name, Image: c.Image}
		if r := rs.FindContainerStatusByName(c.Name); r == nil {
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: "ContainerCreating"}
		} else {
			cs.ContainerID, cs.ImageID, cs.RestartCount = "fake://"+r.ID, r.ImageID, int32(r.RestartCount)
			switch r.State {
			case pleg.ContainerStateRunning:
				cs.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(r.StartedAt)}
				cs.Ready, cs.Started = true, ptrTo(true)
			default:
				cs.State.Terminated = &v1.ContainerStateTerminated{ExitCode: int32(r.ExitCode), Reason: r.Reason,
					Message: r.Message, StartedAt: metav1.NewTime(r.StartedAt), FinishedAt: metav1.NewTime(r.FinishedAt), ContainerID: "fake://" + r.ID}
				cs.Started = ptrTo(false)
			}
		}
		ready = ready && cs.Ready
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	st.Phase = phase(pod, st.ContainerStatuses, podIsTerminal)

	cond := func(t v1.PodConditionType, ok bool) v1.PodCondition {
		c := v1.PodCondition{Type: t, Status: v1.ConditionFalse}
		if ok {
			c.Status = v1.ConditionTrue
		}
		return c
	}
	st.Conditions = []v1.PodCondition{
		cond(v1.PodReadyToStartContainers, sandboxReady),
		cond(v1.PodInitialized, true),
		cond(v1.PodReady, ready),
		cond(v1.ContainersReady, ready),
		cond(v1.PodScheduled, true),
	}
	return st
}

// phase is the kubelet's getPhase for pods without init containers.
func phase(pod *v1.Pod, statuses []v1.ContainerStatus, podIsTerminal bool) v1.PodPhase {
	var waiting, running, succeeded, failed int
	for _, cs := range statuses {
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			succeeded++
		case cs.State.Terminated != nil:
			failed++
		default:
			waiting++
		}
	}
	policy := pod.Spec.RestartPolicy
	switch {
	case waiting > 0:
		return v1.PodPending
	case running > 0:
		return v1.PodRunning
	case running == 0 && (succeeded > 0 || failed > 0):
		// Every container has exited.
		switch {
		case podIsTerminal && failed > 0:
			return v1.PodFailed
		case podIsTerminal:
			return v1.PodSucceeded
		case policy == v1.RestartPolicyAlways:
			return v1.PodRunning // they will be restarted
		case failed > 0 && policy == v1.RestartPolicyOnFailure:
			return v1.PodRunning
		case failed > 0:
			return v1.PodFailed
		default:
			return v1.PodSucceeded
		}
	default:
		return v1.PodPending
	}
}

func ptrTo[T any](v T) *T { return &v }
