package agent

import (
	"context"
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/podworker"
)

// Annotations by which a pod tells the in-memory runtime how its containers behave; each
// overrides Config.Containers for that pod. Durations use time.ParseDuration's syntax.
const (
	// AnnotationStopDelay: how long containers take to exit after the stop signal;
	// "never" makes them ignore it (they are killed when the grace period runs out).
	AnnotationStopDelay = "podlife.example/stop-delay"
	// AnnotationRunFor: containers exit on their own after running this long.
	AnnotationRunFor = "podlife.example/run-for"
	// AnnotationExitCode: the exit code of containers that exit (on their own or stopped).
	AnnotationExitCode = "podlife.example/exit-code"
	// AnnotationPreStop: how long the preStop hook of containers that have one takes.
	AnnotationPreStop = "podlife.example/prestop"
)

// ContainerBehaviour is how a pod's containers behave in the in-memory runtime.
type ContainerBehaviour struct {
	StopDelay time.Duration // negative: ignore the stop signal
	RunFor    time.Duration // 0: run until stopped
	ExitCode  int
	PreStop   time.Duration // for containers with a preStop hook
}

// behaviour returns def overridden by the pod's annotations.
func behaviour(pod *v1.Pod, def ContainerBehaviour) (ContainerBehaviour, error) {
	b := def
	dur := func(key string, dst *time.Duration) error {
		v, ok := pod.Annotations[key]
		if !ok {
			return nil
		}
		if key == AnnotationStopDelay && v == "never" {
			*dst = -1
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("agent: annotation %s: %w", key, err)
		}
		*dst = d
		return nil
	}
	for _, f := range []struct {
		key string
		dst *time.Duration
	}{{AnnotationStopDelay, &b.StopDelay}, {AnnotationRunFor, &b.RunFor}, {AnnotationPreStop, &b.PreStop}} {
		if err := dur(f.key, f.dst); err != nil {
			return b, err
		}
	}
	if v, ok := pod.Annotations[AnnotationExitCode]; ok {
		code, err := strconv.Atoi(v)
		if err != nil {
			return b, fmt.Errorf("agent: annotation %s: %w", AnnotationExitCode, err)
		}
		b.ExitCode = code
	}
	return b, nil
}

// runtimeSpec is the in-memory runtime's spec of the pod.
func runtimeSpec(pod *v1.Pod, def ContainerBehaviour) (plegtest.PodSpec, error) {
	b, err := behaviour(pod, def)
	if err != nil {
		return plegtest.PodSpec{}, err
	}
	spec := plegtest.PodSpec{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace,
		RestartExited: pod.Spec.RestartPolicy == v1.RestartPolicyAlways || pod.Spec.RestartPolicy == ""}
	for _, c := range pod.Spec.Containers {
		cs := plegtest.ContainerSpec{Name: c.Name, Image: c.Image, RunFor: b.RunFor, ExitCode: b.ExitCode, StopDelay: b.StopDelay}
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
			cs.PreStop = b.PreStop
		}
		spec.Containers = append(spec.Containers, cs)
	}
	return spec, nil
}

// SyncPod writes the pod's status from its runtime status and, unless the pod is terminal,
// has the backend start or update it (the kubelet's SyncPod: status first, then the runtime).
func (a *Agent) SyncPod(ctx context.Context, ut podworker.SyncPodType, pod, _ *v1.Pod, rs *pleg.PodStatus) (bool, error) {
	a.observe(KindWork, pod, "SyncPod (%s), %d running container(s)", ut, rs.RunningContainers())
	st := a.backend.APIStatus(pod, rs, a.clock.Now(), false)
	if err := a.status.SetPodStatus(pod, st); err != nil {
		return false, err
	}
	if st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed {
		a.observe(KindWork, pod, "SyncPod: pod is terminal (%s)", st.Phase)
		return true, nil
	}
	return false, a.backend.StartPod(ctx, pod)
}

// SyncTerminatingPod has the backend stop the pod's containers within the grace period and
// writes the stopped status.
func (a *Agent) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, rs *pleg.PodStatus, gracePeriod int64, fn func(*v1.PodStatus)) error {
	a.observe(KindWork, pod, "SyncTerminatingPod (grace %ds), %d running container(s)", gracePeriod, rs.RunningContainers())
	st := a.backend.APIStatus(pod, rs, a.clock.Now(), false)
	if fn != nil {
		fn(&st)
	}
	if err := a.status.SetPodStatus(pod, st); err != nil {
		return err
	}
	if err := a.backend.StopPod(ctx, pod, time.Duration(gracePeriod)*time.Second); err != nil {
		a.observe(KindWork, pod, "SyncTerminatingPod interrupted: %v", err)
		return err
	}
	stopped, err := a.backend.PodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return err
	}
	st = a.backend.APIStatus(pod, stopped, a.clock.Now(), true)
	if fn != nil {
		fn(&st)
	}
	if err := a.status.SetPodStatus(pod, st); err != nil {
		return err
	}
	a.observe(KindWork, pod, "SyncTerminatingPod done: every container stopped")
	return nil
}

// SyncTerminatingRuntimePod stops a pod the runtime has and no config knows of.
func (a *Agent) SyncTerminatingRuntimePod(ctx context.Context, rp *pleg.Pod) error {
	a.observeUID(KindWork, rp.ID, "SyncTerminatingRuntimePod %s/%s (grace 1s)", rp.Namespace, rp.Name)
	return a.backend.StopRuntimePod(ctx, rp)
}

// SyncTerminatedPod writes the final status, has the backend clean up and hands the pod to
// the status manager's TerminatePod, after which the status manager may delete the pod
// object.
func (a *Agent) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, rs *pleg.PodStatus) error {
	a.observe(KindWork, pod, "SyncTerminatedPod")
	st := a.backend.APIStatus(pod, rs, a.clock.Now(), true)
	if err := a.status.SetPodStatus(pod, st); err != nil {
		return err
	}
	if err := a.backend.CleanupPod(ctx, pod); err != nil {
		return err
	}
	return a.status.TerminatePod(pod)
}

var _ podworker.PodSyncer = (*Agent)(nil)
