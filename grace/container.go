package grace

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/podfacts"
)

// MinContainerStopSeconds is the shortest time a container is given to stop after its
// preStop hook, unless an override says otherwise: the kubelet's minimal shutdown window,
// which spares containers needless SIGKILLs.
const MinContainerStopSeconds int64 = 2

// KillReason says why a container is being killed. It matters only for probe failures,
// whose probe may carry its own terminationGracePeriodSeconds.
type KillReason int

const (
	// KillPodTermination: the pod is terminating (deleted, evicted, finished) or the container
	// is stopped for any other reason that is not a probe failure.
	KillPodTermination KillReason = iota
	// KillLivenessProbe: the container failed its liveness probe.
	KillLivenessProbe
	// KillStartupProbe: the container failed its startup probe.
	KillStartupProbe
)

// String returns a short name of the reason.
func (r KillReason) String() string {
	switch r {
	case KillPodTermination:
		return "pod-termination"
	case KillLivenessProbe:
		return "liveness-probe"
	case KillStartupProbe:
		return "startup-probe"
	default:
		return fmt.Sprintf("KillReason(%d)", int(r))
	}
}

// ContainerGracePeriod returns the budget, in seconds, for stopping one container before any
// preStop hook runs: the pod's DeletionGracePeriodSeconds when set; otherwise the failed
// probe's terminationGracePeriodSeconds for a liveness or startup probe kill that sets one,
// else the spec's terminationGracePeriodSeconds as the API server stores it (none is 30, a
// negative one 1); MinContainerStopSeconds for a nil pod or container. Values are taken as they are (a
// deletion grace or probe grace of 0 or below included; the minimum is applied by
// StopTimeout, after the preStop hook), except that none exceeds MaxSeconds.
func ContainerGracePeriod(pod *v1.Pod, container *v1.Container, reason KillReason) int64 {
	return min(containerGracePeriod(pod, container, reason), MaxSeconds)
}

func containerGracePeriod(pod *v1.Pod, container *v1.Container, reason KillReason) int64 {
	if pod == nil {
		return MinContainerStopSeconds
	}
	if pod.DeletionGracePeriodSeconds != nil {
		return *pod.DeletionGracePeriodSeconds
	}
	if container != nil {
		var probe *v1.Probe
		switch reason {
		case KillLivenessProbe:
			probe = container.LivenessProbe
		case KillStartupProbe:
			probe = container.StartupProbe
		}
		if probe != nil && probe.TerminationGracePeriodSeconds != nil {
			return *probe.TerminationGracePeriodSeconds
		}
	}
	return podfacts.TerminationGracePeriodSeconds(&pod.Spec)
}

// StopTimeout returns how long, in seconds, the runtime's stop of a container may take once
// its preStop hook has run for preStopElapsed (0 when there is none), as the kubelet 1.37's
// killContainer computes it: the override, when non-nil, replaces the budget (the
// pod-level grace period of a stopping pod); the hook's time in whole seconds (truncated,
// as the kubelet counts it) is taken out of it; the result is at least
// MinContainerStopSeconds, also for an override of 1, 0 or below (override 30 with a 10 s
// preStop gives 20; override 1 gives 2). The result never exceeds MaxSeconds (a larger
// budget or override counts as MaxSeconds).
func StopTimeout(budget int64, preStopElapsed time.Duration, override *int64) int64 {
	if override != nil {
		budget = *override
	}
	g := min(budget, MaxSeconds)
	if g <= MinContainerStopSeconds {
		return MinContainerStopSeconds // also keeps the subtraction below from wrapping
	}
	if preStopElapsed > 0 {
		g -= int64(min(preStopElapsed/time.Second, time.Duration(g)))
	}
	return max(g, MinContainerStopSeconds)
}

// ContainerStopTimeout combines ContainerGracePeriod and StopTimeout for one container: the
// budget is the override when non-nil, else ContainerGracePeriod; the preStop hook's
// elapsed time is taken out of it only when the container has a preStop hook and that
// budget is positive (otherwise the kubelet does not run the hook).
func ContainerStopTimeout(pod *v1.Pod, container *v1.Container, override *int64, reason KillReason, preStopElapsed time.Duration) int64 {
	budget := ContainerGracePeriod(pod, container, reason)
	if override != nil {
		budget = *override
	}
	if !HasPreStop(container) || budget <= 0 {
		preStopElapsed = 0
	}
	return StopTimeout(budget, preStopElapsed, nil)
}

// HasPreStop reports whether the container has a preStop lifecycle hook (a nil
// container has none).
func HasPreStop(container *v1.Container) bool {
	return container != nil && container.Lifecycle != nil && container.Lifecycle.PreStop != nil
}
