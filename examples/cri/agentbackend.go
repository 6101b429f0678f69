package cri

// TEMPORARY, until examples/agent runs on package node (its Backend becomes node.Runtime
// and a *Runtime plugs in as it is): the runtime as an agent.Backend.

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/pleg"
)

// AgentBackend is the runtime as an agent.Backend whose API statuses name hostIP as the
// node's address.
func (r *Runtime) AgentBackend(hostIP string) agent.Backend { return criBackend{r, hostIP} }

type criBackend struct {
	rt     *Runtime
	hostIP string
}

var _ agent.Backend = criBackend{}

func (b criBackend) ListPods(ctx context.Context, all bool) ([]*pleg.Pod, error) {
	return b.rt.ListPods(ctx, all)
}

func (b criBackend) PodStatus(ctx context.Context, uid types.UID, name, ns string) (*pleg.PodStatus, error) {
	return b.rt.PodStatus(ctx, uid, name, ns)
}

func (b criBackend) StartPod(ctx context.Context, pod *v1.Pod) error {
	return b.rt.SyncPod(ctx, pod, nil)
}

func (b criBackend) StopPod(ctx context.Context, pod *v1.Pod, grace time.Duration) error {
	return b.rt.KillPod(ctx, pod, nil, int64(grace/time.Second))
}

func (b criBackend) StopRuntimePod(ctx context.Context, rp *pleg.Pod) error {
	return b.rt.KillRuntimePod(ctx, rp)
}

func (b criBackend) CleanupPod(ctx context.Context, pod *v1.Pod) error {
	return b.rt.CleanupPod(ctx, pod)
}

func (b criBackend) RemovePod(ctx context.Context, rp *pleg.Pod) error {
	return b.rt.RemovePod(ctx, rp)
}

func (b criBackend) APIStatus(pod *v1.Pod, rs *pleg.PodStatus, now time.Time, podIsTerminal bool) v1.PodStatus {
	return b.rt.APIStatus(pod, rs, tmpAPIStatus(pod, rs, metav1.NewTime(now), b.hostIP, podIsTerminal), podIsTerminal)
}

// tmpAPIStatus is examples/agent's apiStatus (pods without init containers).
func tmpAPIStatus(pod *v1.Pod, rs *pleg.PodStatus, now metav1.Time, hostIP string, podIsTerminal bool) v1.PodStatus {
	st := v1.PodStatus{QOSClass: v1.PodQOSBestEffort, HostIP: hostIP, StartTime: &now, HostIPs: []v1.HostIP{{IP: hostIP}}}
	sandboxReady := rs != nil && len(rs.SandboxStatuses) > 0 && rs.SandboxStatuses[0].State == pleg.SandboxReady
	ready := len(pod.Spec.Containers) > 0
	var waiting, running, succeeded, failed int
	for _, c := range pod.Spec.Containers {
		cs := v1.ContainerStatus{Name: c.Name, Image: c.Image}
		r := rs.FindContainerStatusByName(c.Name)
		switch {
		case r == nil:
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: "ContainerCreating"}
			waiting++
		case r.State == pleg.ContainerStateRunning:
			cs.ContainerID, cs.ImageID, cs.RestartCount = r.ID, r.ImageID, int32(r.RestartCount)
			cs.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(r.StartedAt)}
			cs.Ready, cs.Started = true, new(true)
			running++
		default:
			cs.ContainerID, cs.ImageID, cs.RestartCount = r.ID, r.ImageID, int32(r.RestartCount)
			cs.State.Terminated = &v1.ContainerStateTerminated{ExitCode: int32(r.ExitCode), Reason: r.Reason, Message: r.Message,
				StartedAt: metav1.NewTime(r.StartedAt), FinishedAt: metav1.NewTime(r.FinishedAt), ContainerID: r.ID}
			cs.Started = new(false)
			if r.ExitCode == 0 {
				succeeded++
			} else {
				failed++
			}
		}
		ready = ready && cs.Ready
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	switch {
	case waiting > 0:
		st.Phase = v1.PodPending
	case running > 0:
		st.Phase = v1.PodRunning
	case !podIsTerminal && pod.Spec.RestartPolicy == v1.RestartPolicyAlways:
		st.Phase = v1.PodRunning
	case !podIsTerminal && pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure && failed > 0:
		st.Phase = v1.PodRunning
	case failed > 0:
		st.Phase = v1.PodFailed
	default:
		st.Phase = v1.PodSucceeded
	}
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
