package agent

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
)

// Backend is what runs the agent's pods: the view the PLEG relists (pleg.RuntimeService)
// and the runtime actions of the agent's PodSyncer, which itself writes the statuses. The
// in-memory runtime (Config.Runtime) is the default; package examples/vk adapts a
// virtual-kubelet provider. Every method may be called concurrently for different pods;
// calls for one pod never overlap (the pod workers serialize them).
type Backend interface {
	pleg.RuntimeService
	// StartPod creates the pod or brings it up to date with its spec. SyncPod calls it on
	// every sync of a pod that is not terminal, so it must be idempotent.
	StartPod(ctx context.Context, pod *v1.Pod) error
	// StopPod stops the pod's containers, giving them gracePeriod, and returns nil once none
	// runs. It is called for every pod that must stop, also one that never started (the
	// runtime may hold something of it), and again with a shorter grace period after ctx
	// was cancelled because a second delete shortened it.
	StopPod(ctx context.Context, pod *v1.Pod, gracePeriod time.Duration) error
	// StopRuntimePod stops a pod the runtime has and no configuration knows of (grace 1 s).
	StopRuntimePod(ctx context.Context, rp *pleg.Pod) error
	// CleanupPod runs from SyncTerminatedPod once the pod's containers are stopped for good
	// and its final status is set: release what the pod held besides its containers.
	CleanupPod(ctx context.Context, pod *v1.Pod) error
	// RemovePod removes the stopped leftovers of a pod no pod worker knows any more
	// (housekeeping).
	RemovePod(ctx context.Context, rp *pleg.Pod) error
	// APIStatus is the pod's API status given its runtime status (rs may be nil or empty);
	// podIsTerminal is true once every container is stopped for good (SyncTerminatedPod).
	// The status manager keeps StartTime and the conditions' transition times.
	APIStatus(pod *v1.Pod, rs *pleg.PodStatus, now time.Time, podIsTerminal bool) v1.PodStatus
}

// StatusPusher is implemented by a Backend whose runtime reports status changes itself
// (like virtual-kubelet's NotifyPods). Run calls PushStatuses once before it starts its
// loops; the backend hands every change to push (which caches it in the PLEG and sends its
// events at once) until ctx ends. Relisting goes on as the fallback.
type StatusPusher interface {
	PushStatuses(ctx context.Context, push func(*pleg.PodStatus))
}

// memBackend is the in-memory runtime (plegtest.Runtime), whose containers behave as
// Config.Containers and the pods' annotations say.
type memBackend struct {
	rt  *plegtest.Runtime
	def ContainerBehaviour
}

var _ Backend = memBackend{}

func (m memBackend) ListPods(ctx context.Context, all bool) ([]*pleg.Pod, error) {
	return m.rt.ListPods(ctx, all)
}

func (m memBackend) PodStatus(ctx context.Context, uid types.UID, name, namespace string) (*pleg.PodStatus, error) {
	return m.rt.PodStatus(ctx, uid, name, namespace)
}

func (m memBackend) StartPod(ctx context.Context, pod *v1.Pod) error {
	spec, err := runtimeSpec(pod, m.def)
	if err != nil {
		return err
	}
	return m.rt.StartPod(ctx, spec)
}

func (m memBackend) StopPod(ctx context.Context, pod *v1.Pod, gracePeriod time.Duration) error {
	if err := m.rt.KillPod(ctx, pod.UID, gracePeriod); err != nil {
		return err
	}
	stopped, err := m.rt.PodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return err
	}
	if n := stopped.RunningContainers(); n > 0 {
		return fmt.Errorf("agent: %d container(s) of %s still running after the kill", n, pod.Name)
	}
	return nil
}

func (m memBackend) StopRuntimePod(ctx context.Context, rp *pleg.Pod) error {
	return m.rt.KillPod(ctx, rp.ID, time.Second)
}

func (m memBackend) CleanupPod(context.Context, *v1.Pod) error { return nil }

func (m memBackend) RemovePod(_ context.Context, rp *pleg.Pod) error {
	m.rt.RemovePod(rp.ID)
	return nil
}

func (m memBackend) APIStatus(pod *v1.Pod, rs *pleg.PodStatus, now time.Time, podIsTerminal bool) v1.PodStatus {
	return apiStatus(pod, rs, metav1.NewTime(now), hostIP, podIsTerminal)
}
