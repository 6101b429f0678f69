package node

import (
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/podfacts"
)

// ReasonRestartingAllContainers is the reason of a container status whose container
// exited or was removed because a container's restartPolicyRules asked to restart
// all containers of the pod in place (the kubelet's RestartingAllContainers). A
// container terminated with this reason always counts as restarting.
const ReasonRestartingAllContainers = "RestartingAllContainers"

// PodPhase computes the pod's phase from its API container statuses, as the
// kubelet's getPhase (1.37, ContainerRestartRules and
// RestartAllContainersOnContainerExits on). initStatuses are looked up for the spec's
// init containers, statuses for its regular containers, both by name. Whether the pod
// has been initialized before (so that a restarting sidecar does not put it back in
// Pending) is read from statuses: some regular container is running or terminated.
// Use PodPhaseInitialized to give that fact explicitly, as GenerateAPIStatus does
// from the runtime status. A nil pod is Pending.
func PodPhase(pod *v1.Pod, initStatuses, statuses []v1.ContainerStatus, podIsTerminal bool) v1.PodPhase {
	if pod == nil {
		return v1.PodPending
	}
	return PodPhaseInitialized(pod, initStatuses, statuses, podIsTerminal, hasAnyRegularContainerStarted(&pod.Spec, statuses))
}

// PodPhaseInitialized is PodPhase with podHasInitialized given by the caller (the
// kubelet passes "a regular container of the current sandbox exists in the runtime").
// The rules, in order:
//
//   - Failed when a regular init container exited non-zero (in its current or its
//     last state) and will not be restarted (ContainerShouldRestart).
//   - Pending while a regular init container has not succeeded, or a sidecar
//     (restartable init container) has not started and the pod has not been
//     initialized, or a container (sidecar or regular) waits without having run.
//   - Running when every regular container and sidecar has a status and one runs.
//   - When none runs and some stopped (and all have a status): a terminal pod
//     (podIsTerminal, not a static pod) is Succeeded if every stopped container
//     exited 0, else Failed; otherwise Running while a stopped container will be
//     restarted, else Succeeded if all exited 0, else Failed. Stopped sidecars do
//     not count here.
//   - Pending otherwise (a container has no status).
//
// The kubelet passes one list holding every status; here init containers are looked
// up in initStatuses and regular ones in statuses. Passing the same list as both
// gives the kubelet's lookup exactly. A nil pod is Pending.
func PodPhaseInitialized(pod *v1.Pod, initStatuses, statuses []v1.ContainerStatus, podIsTerminal, podHasInitialized bool) v1.PodPhase {
	if pod == nil {
		return v1.PodPending
	}
	spec := &pod.Spec
	var pendingInit, pendingSidecars, failedInitNotRestartable int
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if isRestartableInitContainer(c) {
			continue
		}
		st, ok := findStatus(initStatuses, c.Name)
		switch {
		case !ok:
			pendingInit++
		case st.State.Running != nil:
			pendingInit++
		case st.State.Terminated != nil:
			if t := st.State.Terminated; t.ExitCode != 0 && !willRestart(c, spec, t) {
				failedInitNotRestartable++
			}
		case st.State.Waiting != nil:
			if t := st.LastTerminationState.Terminated; t != nil {
				if t.ExitCode != 0 && !willRestart(c, spec, t) {
					failedInitNotRestartable++
				}
			} else {
				pendingInit++
			}
		default:
			pendingInit++
		}
	}

	var unknown, running, waiting, stopped, stoppedNotRestartable, succeeded int
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if !isRestartableInitContainer(c) {
			continue
		}
		st, ok := findStatus(initStatuses, c.Name)
		switch {
		case !ok:
			unknown++
		case st.State.Running != nil:
			if st.Started == nil || !*st.Started {
				pendingSidecars++
			}
			running++
		case st.State.Terminated != nil:
			// A stopped sidecar does not count for the phase.
		case st.State.Waiting != nil:
			if st.LastTerminationState.Terminated == nil {
				pendingSidecars++
				waiting++
			}
		default:
			pendingSidecars++
			unknown++
		}
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		st, ok := findStatus(statuses, c.Name)
		switch {
		case !ok:
			unknown++
		case st.State.Running != nil:
			running++
		case st.State.Terminated != nil:
			stopped++
			t := st.State.Terminated
			if !willRestart(c, spec, t) {
				stoppedNotRestartable++
			}
			if t.ExitCode == 0 {
				succeeded++
			}
		case st.State.Waiting != nil:
			if t := st.LastTerminationState.Terminated; t != nil {
				stopped++
				if !willRestart(c, spec, t) {
					stoppedNotRestartable++
				}
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}

	if failedInitNotRestartable > 0 {
		return v1.PodFailed
	}
	switch {
	case pendingInit > 0 || (pendingSidecars > 0 && !podHasInitialized) || waiting > 0:
		return v1.PodPending
	case running > 0 && unknown == 0:
		return v1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if podIsTerminal && !podfacts.IsStatic(pod) {
			if stopped == succeeded {
				return v1.PodSucceeded
			}
			return v1.PodFailed
		}
		if stopped != stoppedNotRestartable {
			return v1.PodRunning
		}
		if stopped == succeeded {
			return v1.PodSucceeded
		}
		return v1.PodFailed
	default:
		return v1.PodPending
	}
}

// willRestart reports whether a container that terminated as t will be restarted:
// its restart policy (rules, container-level policy, pod policy) says so, or it was
// stopped to restart all containers in place.
func willRestart(c *v1.Container, spec *v1.PodSpec, t *v1.ContainerStateTerminated) bool {
	return ContainerShouldRestart(c, spec, t.ExitCode) || t.Reason == ReasonRestartingAllContainers
}

// ContainerShouldRestart reports whether a container that exited with exitCode is to
// be restarted (the kubelet's podutil.ContainerShouldRestart with the
// RestartAllContainersOnContainerExits gate on): the first of the container's
// restartPolicyRules whose exit codes match decides (Restart and
// RestartAllContainers restart; any other action falls through), then the
// container-level restartPolicy (Always; OnFailure when exitCode != 0; Never), then
// the pod's restartPolicy the same way (an empty one counts as Always, as the API
// server defaults it: podfacts.RestartPolicy). Rules and the container-level policy
// are only read when the container has a restartPolicy. A nil container is not
// restarted (false: there is nothing to restart); a nil spec counts as a spec without
// a restartPolicy.
func ContainerShouldRestart(c *v1.Container, spec *v1.PodSpec, exitCode int32) bool {
	if c == nil {
		return false
	}
	if c.RestartPolicy != nil {
		if rule, ok := matchingRestartRule(c, exitCode); ok {
			switch rule.Action {
			case v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleActionRestartAllContainers:
				return true
			}
		}
		switch *c.RestartPolicy {
		case v1.ContainerRestartPolicyAlways:
			return true
		case v1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case v1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch podfacts.RestartPolicy(spec) {
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	case v1.RestartPolicyNever:
		return false
	default:
		return true
	}
}

// matchingRestartRule returns the first restart rule of c whose exit codes match.
func matchingRestartRule(c *v1.Container, exitCode int32) (v1.ContainerRestartRule, bool) {
	for _, rule := range c.RestartPolicyRules {
		if rule.ExitCodes == nil {
			continue
		}
		in := slices.Contains(rule.ExitCodes.Values, exitCode)
		switch rule.ExitCodes.Operator {
		case v1.ContainerRestartRuleOnExitCodesOpIn:
			if in {
				return rule, true
			}
		case v1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !in {
				return rule, true
			}
		}
	}
	return v1.ContainerRestartRule{}, false
}

// isRestartableInitContainer reports whether an init container is a sidecar
// (restartPolicy Always).
func isRestartableInitContainer(c *v1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// hasAnyRegularContainerStarted reports whether a regular container of spec has a
// running or terminated status in statuses.
func hasAnyRegularContainerStarted(spec *v1.PodSpec, statuses []v1.ContainerStatus) bool {
	for i := range statuses {
		if podfacts.ContainerByName(spec.Containers, statuses[i].Name) == nil {
			continue
		}
		if statuses[i].State.Running != nil || statuses[i].State.Terminated != nil {
			return true
		}
	}
	return false
}

// lastStatus returns the last status named name (the one a map keyed by name would keep),
// nil if none.
func lastStatus(statuses []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := len(statuses) - 1; i >= 0; i-- {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

// findStatus returns the first status named name.
func findStatus(statuses []v1.ContainerStatus, name string) (*v1.ContainerStatus, bool) {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i], true
		}
	}
	return nil, false
}
