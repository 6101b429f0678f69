package statusmgr

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/podfacts"
)

// CheckContainerStateTransition returns an error wrapping ErrIllegalTransition when
// newStatus would move a container that is terminated in oldStatus back to a
// non-terminated state and nothing allows it to restart (the kubelet's
// checkContainerStateTransition). A container may leave the terminated state when:
//   - its effective restart policy is Always (the pod's restartPolicy, an empty one
//     counting as Always as the API server defaults it, or the container's own
//     restartPolicy when set);
//   - its effective restart policy is OnFailure and it exited with a non-zero code;
//   - one of its restartPolicyRules with action Restart matches its exit code;
//   - it is a restartable init container (a sidecar: restartPolicy Always);
//   - the whole pod restarts in place: the new status has AllContainersRestarting True, or
//     a terminated container's exit code matches one of its rules with action
//     RestartAllContainers.
//
// An init container status whose name is not in the spec is an error as well (the kubelet
// reports a mismatch between spec and status). pod nil gives ErrNilPod.
func CheckContainerStateTransition(pod *v1.Pod, oldStatus, newStatus *v1.PodStatus) error {
	if pod == nil {
		return ErrNilPod
	}
	if oldStatus == nil || newStatus == nil {
		return nil
	}
	if conditionIsTrue(newStatus.Conditions, v1.AllContainersRestarting) || restartsAll(pod, oldStatus) {
		return nil
	}
	spec := &pod.Spec
	for i := range oldStatus.ContainerStatuses {
		old := &oldStatus.ContainerStatuses[i]
		c := podfacts.ContainerByName(spec.Containers, old.Name)
		if mayLeaveTerminated(spec, c, old) {
			continue
		}
		if leavesTerminated(newStatus.ContainerStatuses, old.Name) {
			return fmt.Errorf("%w: terminated container %q would become non-terminated", ErrIllegalTransition, old.Name)
		}
	}
	for i := range oldStatus.InitContainerStatuses {
		old := &oldStatus.InitContainerStatuses[i]
		c := podfacts.ContainerByName(spec.InitContainers, old.Name)
		if c == nil {
			return fmt.Errorf("%w: init container %q of the status is not in the pod spec", ErrIllegalTransition, old.Name)
		}
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			continue
		}
		if mayLeaveTerminated(spec, c, old) {
			continue
		}
		if leavesTerminated(newStatus.InitContainerStatuses, old.Name) {
			return fmt.Errorf("%w: terminated init container %q would become non-terminated", ErrIllegalTransition, old.Name)
		}
	}
	return nil
}

// mayLeaveTerminated reports whether the container (old status; c its spec or nil) is not
// terminated or is allowed to restart.
func mayLeaveTerminated(spec *v1.PodSpec, c *v1.Container, old *v1.ContainerStatus) bool {
	term := old.State.Terminated
	if term == nil {
		return true
	}
	policy := podfacts.RestartPolicy(spec)
	if c != nil && c.RestartPolicy != nil {
		policy = v1.RestartPolicy(*c.RestartPolicy)
	}
	switch {
	case policy == v1.RestartPolicyAlways:
		return true
	case policy == v1.RestartPolicyOnFailure && term.ExitCode != 0:
		return true
	}
	if c != nil {
		for _, r := range c.RestartPolicyRules {
			if r.Action == v1.ContainerRestartRuleActionRestart && r.ExitCodes != nil && exitCodeMatches(r.ExitCodes, term.ExitCode) {
				return true
			}
		}
	}
	return false
}

// restartsAll reports whether a terminated container of oldStatus triggers a restart of
// all containers (a matching RestartAllContainers rule).
func restartsAll(pod *v1.Pod, oldStatus *v1.PodStatus) bool {
	check := func(specs []v1.Container, statuses []v1.ContainerStatus) bool {
		for i := range statuses {
			term := statuses[i].State.Terminated
			c := podfacts.ContainerByName(specs, statuses[i].Name)
			if term == nil || c == nil {
				continue
			}
			for _, r := range c.RestartPolicyRules {
				if r.Action == v1.ContainerRestartRuleActionRestartAllContainers && r.ExitCodes != nil && exitCodeMatches(r.ExitCodes, term.ExitCode) {
					return true
				}
			}
		}
		return false
	}
	return check(pod.Spec.Containers, oldStatus.ContainerStatuses) || check(pod.Spec.InitContainers, oldStatus.InitContainerStatuses)
}

func exitCodeMatches(req *v1.ContainerRestartRuleOnExitCodes, code int32) bool {
	in := false
	for _, v := range req.Values {
		if v == code {
			in = true
			break
		}
	}
	switch req.Operator {
	case v1.ContainerRestartRuleOnExitCodesOpIn:
		return in
	case v1.ContainerRestartRuleOnExitCodesOpNotIn:
		return !in
	}
	return false
}

func leavesTerminated(statuses []v1.ContainerStatus, name string) bool {
	for i := range statuses {
		if statuses[i].Name == name && statuses[i].State.Terminated == nil {
			return true
		}
	}
	return false
}
