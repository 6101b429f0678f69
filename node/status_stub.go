package node

// TEMPORARY: replaced by status.go (branch status). Same logic as examples/agent/status.go.

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/pleg"
)

type GenerateOptions struct {
	HostIPs           []string
	Now               time.Time
	PodIsTerminal     bool
	OldStatus         v1.PodStatus
	ContainerIDPrefix string
}

func GenerateAPIStatus(pod *v1.Pod, rs *pleg.PodStatus, opts GenerateOptions) v1.PodStatus {
	now := metav1.NewTime(opts.Now)
	st := v1.PodStatus{QOSClass: v1.PodQOSBestEffort, StartTime: &now}
	if len(opts.HostIPs) > 0 {
		st.HostIP = opts.HostIPs[0]
		for _, ip := range opts.HostIPs {
			st.HostIPs = append(st.HostIPs, v1.HostIP{IP: ip})
		}
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
				t := true
				cs.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(r.StartedAt)}
				cs.Ready, cs.Started = true, &t
			default:
				f := false
				cs.State.Terminated = &v1.ContainerStateTerminated{ExitCode: int32(r.ExitCode), Reason: r.Reason,
					Message: r.Message, StartedAt: metav1.NewTime(r.StartedAt), FinishedAt: metav1.NewTime(r.FinishedAt), ContainerID: "fake://" + r.ID}
				cs.Started = &f
			}
		}
		ready = ready && cs.Ready
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	st.Phase = stubPhase(pod, st.ContainerStatuses, opts.PodIsTerminal)
	cond := func(t v1.PodConditionType, ok bool) v1.PodCondition {
		c := v1.PodCondition{Type: t, Status: v1.ConditionFalse}
		if ok {
			c.Status = v1.ConditionTrue
		}
		return c
	}
	st.Conditions = []v1.PodCondition{cond(v1.PodReadyToStartContainers, sandboxReady), cond(v1.PodInitialized, true),
		cond(v1.PodReady, ready), cond(v1.ContainersReady, ready), cond(v1.PodScheduled, true)}
	return st
}

func stubPhase(pod *v1.Pod, statuses []v1.ContainerStatus, podIsTerminal bool) v1.PodPhase {
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
	case succeeded > 0 || failed > 0:
		switch {
		case podIsTerminal && failed > 0:
			return v1.PodFailed
		case podIsTerminal:
			return v1.PodSucceeded
		case policy == v1.RestartPolicyAlways || policy == "":
			return v1.PodRunning
		case failed > 0 && policy == v1.RestartPolicyOnFailure:
			return v1.PodRunning
		case failed > 0:
			return v1.PodFailed
		default:
			return v1.PodSucceeded
		}
	}
	return v1.PodPending
}
