// Package nodetest provides what a test of a node agent built on package node needs: an
// in-memory Runtime (over pleg/plegtest's container runtime) whose containers behave as
// its defaults and each pod's annotations say, and a pod source that feeds an in-memory
// API server's watch (statusmgr/statusmgrtest.FakeAPI) into a Node, as a node agent feeds
// the API server's.
package nodetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/backoff"
	"github.com/podlife/podlife/internal/podfacts"
	"github.com/podlife/podlife/internal/podres"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
)

// Annotations by which a pod tells the in-memory runtime how its containers behave; each
// overrides the Runtime's defaults for that pod. Durations use time.ParseDuration's syntax.
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
	// AnnotationImagePullError: every image pull of the pod fails with this message
	// (ContainerBehaviour.ImagePullError).
	AnnotationImagePullError = "podlife.example/image-pull-error"
	// AnnotationInitRunFor: how long the pod's regular init containers run before they
	// exit (ContainerBehaviour.InitRunFor).
	AnnotationInitRunFor = "podlife.example/init-run-for"
	// AnnotationInitExitCode: the exit code of the pod's regular init containers.
	AnnotationInitExitCode = "podlife.example/init-exit-code"
	// AnnotationCrashLoopBackOff: "true" restarts exited containers with the kubelet's
	// back-off (ContainerBehaviour.CrashLoopBackOff).
	AnnotationCrashLoopBackOff = "podlife.example/crash-loop-back-off"
)

// ContainerBehaviour is how a pod's containers behave in the in-memory runtime.
type ContainerBehaviour struct {
	StopDelay time.Duration // negative: ignore the stop signal
	RunFor    time.Duration // 0: run until stopped
	ExitCode  int
	PreStop   time.Duration // for containers with a preStop hook
	// ImagePullError, if set, makes every image pull fail with this message: SyncPod
	// starts nothing and reports each container as ErrImagePull, then ImagePullBackOff
	// while the kubelet's image-pull back-off (backoff.ImagePull) runs.
	ImagePullError string
	// CrashLoopBackOff restarts exited containers with the kubelet's restart back-off
	// (backoff.Restart): SyncPod reports a container still in its back-off as
	// CrashLoopBackOff with the kubelet's message and leaves it exited. Without it exited
	// containers restart on the next SyncPod.
	CrashLoopBackOff bool
	// InitRunFor is how long a regular init container runs before it exits with
	// InitExitCode; 0 means it exits as soon as the clock moves (1 ns). Restartable init
	// containers (sidecars) behave as the regular containers (RunFor, ExitCode).
	InitRunFor   time.Duration
	InitExitCode int
}

// Runtime is a node.Runtime over an in-memory container runtime. Containers behave as
// Defaults and the pods' annotations say; exited containers are restarted by the pod's
// restartPolicy (Always, or OnFailure after a non-zero exit) on the next SyncPod, or
// after the kubelet's restart back-off with CrashLoopBackOff; ImagePullError scripts
// failing image pulls. Both report the kubelet's waiting reasons as node.ContainerErrors.
// Init containers run in the kubelet's order: each regular one in turn until it exits 0
// (InitRunFor, InitExitCode; a failure under restartPolicy Never fails the pod), a
// restartable one (a sidecar) from its turn on, done once it runs, and the regular
// containers once every init container is done. It is a node.Prober: probes answer as SetProbe says (Success by default), and
// KillContainer stops one container, which the next SyncPod starts again. Make one with
// NewRuntime (its back-offs need it).
//
// Contexts (see node.Runtime): a call's context bounds the call only. The containers
// SyncPod starts live in Mem, the runtime's own lifetime, and run on after SyncPod
// returns and its context ends, until KillPod or KillRuntimePod stops them; a runtime
// of real processes does the same by starting them under a context of its own, never
// with exec.CommandContext and SyncPod's ctx.
type Runtime struct {
	// Mem is the in-memory runtime; tests may inject errors into it (SetListError,
	// SetPodStatusError) or inspect it.
	Mem *plegtest.Runtime
	// Defaults is how containers behave unless a pod's annotations say otherwise.
	Defaults ContainerBehaviour

	// Clock is the time of the back-offs (nil: the real clock, virtual in a synctest
	// bubble).
	Clock clock.PassiveClock

	mu      sync.Mutex
	actions []Action
	// probes and probeRuns: SetProbe's answers and the probes run (probe.go).
	probes    map[probeKey]ProbeAnswer
	probeRuns map[probeKey]int
	// pulls and restarts are the back-offs of ImagePullError and CrashLoopBackOff.
	pulls    backoff.Map
	restarts backoff.Map
}

// Verbs of Actions.
const (
	VerbSyncPod        = "SyncPod"
	VerbKillPod        = "KillPod"
	VerbKillRuntimePod = "KillRuntimePod"
	VerbCleanupPod     = "CleanupPod"
	VerbRemovePod      = "RemovePod"
)

// Action is one action the node asked of the Runtime.
type Action struct {
	Verb string
	UID  types.UID
	// GracePeriod is KillPod's grace period in seconds (1 for KillRuntimePod).
	GracePeriod int64
	// Container is KillContainer's container.
	Container string
}

// Actions returns the actions asked so far, in order.
func (r *Runtime) Actions() []Action {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.actions)
}

// Count returns how many actions of verb were asked for the UID ("" counts every UID).
func (r *Runtime) Count(verb string, uid types.UID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, a := range r.actions {
		if a.Verb == verb && (uid == "" || a.UID == uid) {
			n++
		}
	}
	return n
}

func (r *Runtime) record(verb string, uid types.UID, grace int64) {
	r.mu.Lock()
	r.actions = append(r.actions, Action{Verb: verb, UID: uid, GracePeriod: grace})
	r.mu.Unlock()
}

var _ node.Runtime = (*Runtime)(nil)

// NewRuntime returns a Runtime over a new in-memory runtime on mem's clock.
func NewRuntime(mem *plegtest.Runtime, defaults ContainerBehaviour) *Runtime {
	return &Runtime{Mem: mem, Defaults: defaults,
		pulls: backoff.Map{Policy: backoff.ImagePull}, restarts: backoff.Map{Policy: backoff.Restart}}
}

// now is the back-offs' time.
func (r *Runtime) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}

// ListPods lists the in-memory runtime's pods.
func (r *Runtime) ListPods(ctx context.Context, all bool) ([]*pleg.Pod, error) {
	return r.Mem.ListPods(ctx, all)
}

// PodStatus inspects one pod.
func (r *Runtime) PodStatus(ctx context.Context, uid types.UID, name, namespace string) (*pleg.PodStatus, error) {
	return r.Mem.PodStatus(ctx, uid, name, namespace)
}

// SyncPod starts the pod, or restarts its exited containers as its restartPolicy says.
func (r *Runtime) SyncPod(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus) error {
	r.record(VerbSyncPod, pod.UID, 0)
	b, err := Behaviour(pod, r.Defaults)
	if err != nil {
		return err
	}
	spec, err := PodSpec(pod, r.Defaults, status)
	if err != nil {
		return err
	}
	now := r.now()
	var errs []error
	if b.ImagePullError != "" {
		for _, c := range pod.Spec.Containers {
			key := string(pod.UID) + "_" + c.Image
			if r.pulls.Policy.InBackOffSinceUpdate(r.pulls.Get(key), now) {
				errs = append(errs, &node.ContainerError{Container: c.Name, Reason: node.ReasonImagePullBackOff,
					Message: backoff.ImagePullBackOffMessage(c.Image, b.ImagePullError)})
				continue
			}
			r.pulls.Next(key, now, now)
			errs = append(errs, &node.ContainerError{Container: c.Name, Reason: node.ReasonErrImagePull, Message: b.ImagePullError})
		}
		return errors.Join(errs...)
	}
	if b.CrashLoopBackOff && spec.RestartExited && status != nil {
		keep := spec.Containers[:0]
		for _, c := range spec.Containers {
			cs := status.FindContainerStatusByName(c.Name)
			if cs == nil || cs.State != pleg.ContainerStateExited {
				keep = append(keep, c)
				continue
			}
			key := string(pod.UID) + "/" + c.Name
			if r.restarts.InBackOffSince(key, cs.FinishedAt, now) {
				errs = append(errs, &node.ContainerError{Container: c.Name, Reason: node.ReasonCrashLoopBackOff,
					Message: backoff.CrashLoopBackOffMessage(r.restarts.Get(key).Backoff, c.Name,
						backoff.FormatPod(pod.Name, pod.Namespace, string(pod.UID)))})
				continue
			}
			r.restarts.Next(key, cs.FinishedAt, now)
			keep = append(keep, c)
		}
		spec.Containers = keep
	}
	if err := r.Mem.StartPod(ctx, spec); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// KillPod stops the pod's containers within gracePeriod seconds, a pod's sidecars after
// its main containers in the kubelet's order (package order).
func (r *Runtime) KillPod(ctx context.Context, pod *v1.Pod, _ *pleg.PodStatus, gracePeriod int64) error {
	r.record(VerbKillPod, pod.UID, gracePeriod)
	// Sidecars after the main containers, in reverse order (order.go).
	if err := r.killInOrder(ctx, pod, gracePeriod); err != nil {
		return err
	}
	// The in-memory runtime returns nil only once nothing of the pod runs: no status
	// read of its own (the node inspects the pod after the kill).
	return r.Mem.KillPod(ctx, pod.UID, time.Duration(gracePeriod)*time.Second)
}

// KillRuntimePod stops a runtime-only pod with grace 1.
func (r *Runtime) KillRuntimePod(ctx context.Context, rp *pleg.Pod) error {
	r.record(VerbKillRuntimePod, rp.ID, 1)
	return r.Mem.KillPod(ctx, rp.ID, time.Second)
}

// CleanupPod has nothing to release.
func (r *Runtime) CleanupPod(_ context.Context, pod *v1.Pod) error {
	r.record(VerbCleanupPod, pod.UID, 0)
	return nil
}

// RemovePod removes the pod's leftovers.
func (r *Runtime) RemovePod(_ context.Context, rp *pleg.Pod) error {
	r.record(VerbRemovePod, rp.ID, 0)
	r.Mem.RemovePod(rp.ID)
	return nil
}

// Behaviour returns def overridden by the pod's annotations.
func Behaviour(pod *v1.Pod, def ContainerBehaviour) (ContainerBehaviour, error) {
	b := def
	for _, f := range []struct {
		key string
		dst *time.Duration
	}{{AnnotationStopDelay, &b.StopDelay}, {AnnotationRunFor, &b.RunFor}, {AnnotationPreStop, &b.PreStop}, {AnnotationInitRunFor, &b.InitRunFor}} {
		v, ok := pod.Annotations[f.key]
		if !ok {
			continue
		}
		if f.key == AnnotationStopDelay && v == "never" {
			*f.dst = -1
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return b, fmt.Errorf("nodetest: annotation %s: %w", f.key, err)
		}
		*f.dst = d
	}
	if v, ok := pod.Annotations[AnnotationImagePullError]; ok {
		b.ImagePullError = v
	}
	if v, ok := pod.Annotations[AnnotationCrashLoopBackOff]; ok {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return b, fmt.Errorf("nodetest: annotation %s: %w", AnnotationCrashLoopBackOff, err)
		}
		b.CrashLoopBackOff = on
	}
	if v, ok := pod.Annotations[AnnotationInitExitCode]; ok {
		code, err := strconv.Atoi(v)
		if err != nil {
			return b, fmt.Errorf("nodetest: annotation %s: %w", AnnotationInitExitCode, err)
		}
		b.InitExitCode = code
	}
	if v, ok := pod.Annotations[AnnotationExitCode]; ok {
		code, err := strconv.Atoi(v)
		if err != nil {
			return b, fmt.Errorf("nodetest: annotation %s: %w", AnnotationExitCode, err)
		}
		b.ExitCode = code
	}
	return b, nil
}

// PodSpec is the in-memory runtime's spec of the pod. status (may be nil) is the pod's
// runtime status, which decides whether an OnFailure pod's exited containers restart.
func PodSpec(pod *v1.Pod, def ContainerBehaviour, status *pleg.PodStatus) (plegtest.PodSpec, error) {
	b, err := Behaviour(pod, def)
	if err != nil {
		return plegtest.PodSpec{}, err
	}
	policy := podfacts.RestartPolicy(&pod.Spec)
	restart := policy == v1.RestartPolicyAlways
	if policy == v1.RestartPolicyOnFailure && status != nil {
		for _, c := range pod.Spec.Containers {
			if cs := status.FindContainerStatusByName(c.Name); cs != nil && cs.State == pleg.ContainerStateExited && cs.ExitCode != 0 {
				restart = true
			}
		}
	}
	spec := plegtest.PodSpec{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace, RestartExited: restart}
	inits, done, failed := initSpecs(pod, b, status)
	switch {
	case failed && policy == v1.RestartPolicyNever:
		// A regular init container failed for good: nothing more starts (the pod is
		// Failed).
		return spec, nil
	case failed:
		spec.RestartExited = true // the failed init container is run again
	}
	spec.Containers = inits
	if !done {
		return spec, nil
	}
	for i := range pod.Spec.Containers {
		spec.Containers = append(spec.Containers, containerSpec(&pod.Spec.Containers[i], b))
	}
	return spec, nil
}

// containerSpec is the in-memory runtime's spec of a regular container or a sidecar.
func containerSpec(c *v1.Container, b ContainerBehaviour) plegtest.ContainerSpec {
	cs := plegtest.ContainerSpec{Name: c.Name, Image: c.Image, RunFor: b.RunFor, ExitCode: b.ExitCode, StopDelay: b.StopDelay}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		cs.PreStop = b.PreStop
	}
	return cs
}

// initSpecs is what runs of the pod's init containers, in the kubelet's order: each
// regular init container in turn until it exits 0, each restartable one (a sidecar) from
// its turn on, counted as done once it runs. done: every init container is done, the
// regular containers may start; failed: the current regular init container exited
// non-zero (restarted unless the restartPolicy is Never).
func initSpecs(pod *v1.Pod, b ContainerBehaviour, status *pleg.PodStatus) (specs []plegtest.ContainerSpec, done, failed bool) {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		var cs *pleg.ContainerStatus
		if status != nil {
			cs = status.FindContainerStatusByName(c.Name)
		}
		if podres.IsRestartableInitContainer(c) {
			specs = append(specs, containerSpec(c, b))
			if cs == nil || cs.State != pleg.ContainerStateRunning {
				return specs, false, false // the next one waits until it runs
			}
			continue
		}
		if cs != nil && cs.State == pleg.ContainerStateExited && cs.ExitCode == 0 {
			continue
		}
		spec := containerSpec(c, b)
		spec.RunFor, spec.ExitCode = max(b.InitRunFor, time.Nanosecond), b.InitExitCode
		specs = append(specs, spec)
		return specs, false, cs != nil && cs.State == pleg.ContainerStateExited
	}
	return specs, true, false
}
