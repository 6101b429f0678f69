package cri

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/grace"
	"github.com/podlife/podlife/order"
	"github.com/podlife/podlife/pleg"
)

// runtimePodGrace is the grace period of a pod only the runtime knows (the kubelet's
// override for orphans).
const runtimePodGrace int64 = 1

func isNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// StopTimeout is the StopContainer timeout, in seconds, of a container of a pod stopped
// with the pod-level grace period gracePeriod, once its preStop hook ran for
// preStopElapsed: grace.ContainerStopTimeout with gracePeriod as the override (the hook's
// time taken out, at least grace.MinContainerStopSeconds, so a runtime pod's 1 s gives 2 s).
func StopTimeout(pod *v1.Pod, c *v1.Container, gracePeriod int64, preStopElapsed time.Duration) int64 {
	return grace.ContainerStopTimeout(pod, c, &gracePeriod, grace.KillPodTermination, preStopElapsed)
}

// KillPod stops every container of the pod that runs (all in parallel: preStop hook, then
// StopContainer, see StopTimeout; a sidecar, once its preStop hook ran, waits for the main
// containers and the sidecars declared after it to stop, see order.Termination), then its
// sandboxes. It returns nil only when nothing of
// the pod runs any more.
func (r *Runtime) KillPod(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus, gracePeriod int64) error {
	if pod == nil || pod.UID == "" {
		return errors.New("cri: KillPod: pod without a UID")
	}
	if gracePeriod < 1 {
		return fmt.Errorf("cri: KillPod %s/%s: grace period %d < 1", pod.Namespace, pod.Name, gracePeriod)
	}
	leave, err := r.stopping.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	return r.killPod(ctx, pod, status, gracePeriod)
}

// KillRuntimePod stops a pod no source knows of with a grace period of 1 s.
func (r *Runtime) KillRuntimePod(ctx context.Context, rp *pleg.Pod) error {
	if rp == nil || rp.ID == "" {
		return errors.New("cri: KillRuntimePod: pod without a UID")
	}
	pod := &v1.Pod{}
	pod.UID, pod.Name, pod.Namespace = rp.ID, rp.Name, rp.Namespace
	leave, err := r.stopping.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	return r.killPod(ctx, pod, nil, runtimePodGrace)
}

// liveContainer is a container of a pod that has not exited (running, created, unknown).
type liveContainer struct {
	id, name string
	running  bool
}

// live returns the pod's containers that have not exited and its ready sandboxes: for a pod
// the index knows, from their statuses by ID (see PodStatus), else from the runtime's lists.
func (r *Runtime) live(ctx context.Context, uid types.UID) ([]liveContainer, []string, error) {
	r.mu.Lock()
	sandboxIDs, containerIDs, known := r.index.ids(uid)
	r.mu.Unlock()
	if !known {
		return r.liveByList(ctx, uid)
	}
	st, err := r.podStatusByID(ctx, &pleg.PodStatus{ID: uid}, sandboxIDs, containerIDs)
	if err != nil {
		return nil, nil, err
	}
	var containers []liveContainer
	for _, c := range st.ContainerStatuses {
		if c.State != pleg.ContainerStateExited {
			containers = append(containers, liveContainer{id: c.ID, name: c.Name, running: c.State == pleg.ContainerStateRunning})
		}
	}
	var sandboxes []string
	for _, sb := range st.SandboxStatuses {
		if sb.State == pleg.SandboxReady {
			sandboxes = append(sandboxes, sb.ID)
		}
	}
	return containers, sandboxes, nil
}

// liveByList is live from the runtime's lists, filtered by the pod's UID label.
func (r *Runtime) liveByList(ctx context.Context, uid types.UID) ([]liveContainer, []string, error) {
	cs, err := r.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{LabelPodUID: string(uid)}}})
	if err != nil {
		return nil, nil, fmt.Errorf("cri: ListContainers: %w", err)
	}
	sbs, err := r.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{LabelPodUID: string(uid)},
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}})
	if err != nil {
		return nil, nil, fmt.Errorf("cri: ListPodSandbox: %w", err)
	}
	var containers []liveContainer
	for _, c := range cs.GetContainers() {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
			continue
		}
		name := c.GetLabels()[LabelContainerName]
		if name == "" {
			name = c.GetMetadata().GetName()
		}
		containers = append(containers, liveContainer{id: c.GetId(), name: name, running: c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING})
	}
	var sandboxes []string
	for _, sb := range sbs.GetItems() {
		sandboxes = append(sandboxes, sb.GetId())
	}
	return containers, sandboxes, nil
}

// runningContainers lists the pod's running containers.
func (r *Runtime) runningContainers(ctx context.Context, uid types.UID) ([]*runtimeapi.Container, error) {
	cs, err := r.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{LabelPodUID: string(uid)},
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}})
	if err != nil {
		return nil, fmt.Errorf("cri: ListContainers: %w", err)
	}
	return cs.GetContainers(), nil
}

func (r *Runtime) killPod(ctx context.Context, pod *v1.Pod, _ *pleg.PodStatus, gracePeriod int64) error {
	// The runtime's objects as of now, not the status the node saw: a container created
	// since (a sync cancelled half-way) must be stopped too.
	containers, sandboxes, err := r.live(ctx, pod.UID)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(containers))
	t := newTurns(pod, containers) // sidecars after the main containers (sidecar.go)
	for i, c := range containers {
		wg.Go(func() { errs[i] = r.killContainerTurn(ctx, pod, c, gracePeriod, t) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, id := range sandboxes {
		if _, err := r.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil && !isNotFound(err) {
			return fmt.Errorf("cri: StopPodSandbox %s: %w", id, err)
		}
	}
	// Only when nothing runs, as the runtime lists it: a container the runtime did not know
	// of (started by someone else, or created by a cancelled call) is caught. (A sandbox
	// whose StopPodSandbox succeeded is stopped: not listed again.)
	running, err := r.runningContainers(ctx, pod.UID)
	if err != nil {
		return err
	}
	if len(running) > 0 {
		return fmt.Errorf("%w: pod %s/%s: %d container(s) after the kill", ErrStillRunning, pod.Namespace, pod.Name, len(running))
	}
	return nil
}

// specContainer finds the container's spec in the pod, an ephemeral one's included (nil
// for a runtime pod).
func specContainer(pod *v1.Pod, name string) *v1.Container {
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
	}
	return nil
}

// killContainer runs the container's preStop hook (when it runs and the pod has a
// budget) and stops it.
func (r *Runtime) killContainer(ctx context.Context, pod *v1.Pod, c liveContainer, gracePeriod int64) error {
	return r.killContainerTurn(ctx, pod, c, gracePeriod, nil)
}

// killContainerTurn is killContainer that waits for the container's turn (t, nil: none)
// after its preStop hook, as the kubelet's killContainer: the wait and the stop share
// what the hook left of the grace period (order.TurnBudget, order.StopGrace).
func (r *Runtime) killContainerTurn(ctx context.Context, pod *v1.Pod, c liveContainer, gracePeriod int64, t *turns) error {
	name := c.name
	defer t.done(name)
	spec := specContainer(pod, name)
	var elapsed time.Duration
	if c.running && grace.HasPreStop(spec) {
		elapsed = r.runPreStop(ctx, pod, spec, c.id, gracePeriod)
	}
	timeout := StopTimeout(pod, spec, gracePeriod, elapsed)
	if waited := t.wait(ctx, r.clock, name, order.TurnBudget(gracePeriod, elapsed)); waited > 0 {
		timeout = order.StopGrace(gracePeriod, elapsed, waited)
	}
	// The node records Killing ("Stopping container <name>") when it asks for the kill
	// (node.EventRecorder): not again here.
	r.log.Debug("StopContainer", "pod", pod.Namespace+"/"+pod.Name, "container", name, "timeout", timeout)
	if _, err := r.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c.id, Timeout: timeout}); err != nil && !isNotFound(err) {
		return fmt.Errorf("cri: StopContainer %s of %s/%s: %w", name, pod.Namespace, pod.Name, err)
	}
	return nil
}

// runPreStop runs the container's preStop hook (runHook) with gracePeriod as its budget
// and returns how long it took. A failing hook is reported (FailedPreStopHook, "PreStopHook
// failed", the kubelet's event without the hook's message) and the stop goes on, as the
// kubelet does.
func (r *Runtime) runPreStop(ctx context.Context, pod *v1.Pod, c *v1.Container, id string, gracePeriod int64) time.Duration {
	start := r.clock.Now()
	if _, err := r.runHook(ctx, pod, c, id, c.Lifecycle.PreStop, gracePeriod); err != nil {
		r.log.Debug("PreStopHook failed", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "error", err)
		r.event(pod, v1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed")
	}
	return r.clock.Since(start)
}

// CleanupPod stops the pod's sandboxes that are still ready (the containers are stopped
// already and kept for their logs until RemovePod), forgets its back-off and releases
// its volumes (cleanupVolumes).
func (r *Runtime) CleanupPod(ctx context.Context, pod *v1.Pod) error {
	if pod == nil || pod.UID == "" {
		return errors.New("cri: CleanupPod: pod without a UID")
	}
	_, sandboxes, err := r.live(ctx, pod.UID)
	if err != nil {
		return err
	}
	for _, id := range sandboxes {
		if _, err := r.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil && !isNotFound(err) {
			return fmt.Errorf("cri: StopPodSandbox %s: %w", id, err)
		}
	}
	r.mu.Lock()
	r.backOff.Forget(string(pod.UID))
	r.backOff.GC(r.clock.Now())
	r.pullBackOff.Forget(string(pod.UID))
	r.pullBackOff.GC(r.clock.Now())
	r.mu.Unlock()
	return r.cleanupVolumes(pod.UID)
}

// RemovePod removes the pod's containers, its sandboxes, its log directory and its
// volumes' directory.
func (r *Runtime) RemovePod(ctx context.Context, rp *pleg.Pod) error {
	if rp == nil || rp.ID == "" {
		return errors.New("cri: RemovePod: pod without a UID")
	}
	sel := map[string]string{LabelPodUID: string(rp.ID)}
	cs, err := r.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: sel}})
	if err != nil {
		return fmt.Errorf("cri: ListContainers: %w", err)
	}
	var errs []error
	for _, c := range cs.GetContainers() {
		if _, err := r.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.GetId()}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("cri: RemoveContainer %s: %w", c.GetId(), err))
			continue
		}
		r.mu.Lock()
		delete(r.statuses, c.GetId())
		r.startups.Delete(c.GetId())
		delete(r.probeKilled, c.GetId())
		r.mu.Unlock()
	}
	sbs, err := r.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("cri: ListPodSandbox: %w", err))...)
	}
	for _, sb := range sbs.GetItems() {
		if _, err := r.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.GetId()}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("cri: RemovePodSandbox %s: %w", sb.GetId(), err))
			continue
		}
		r.mu.Lock()
		delete(r.sandboxNet, sb.GetId())
		delete(r.sandboxes, sb.GetId())
		r.mu.Unlock()
	}
	if len(errs) == 0 && rp.Name != "" && rp.Namespace != "" {
		if err := os.RemoveAll(podLogDir(r.cfg.LogRoot, rp.Namespace, rp.Name, rp.ID)); err != nil {
			errs = append(errs, fmt.Errorf("cri: pod log directory: %w", err))
		}
	}
	if len(errs) == 0 {
		errs = append(errs, r.cleanupVolumes(rp.ID)) // left by a CleanupPod that did not run
	}
	r.mu.Lock()
	r.backOff.Forget(string(rp.ID))
	r.pullBackOff.Forget(string(rp.ID))
	if len(errs) == 0 {
		delete(r.index.pods, rp.ID)
	}
	r.mu.Unlock()
	return errors.Join(errs...)
}
