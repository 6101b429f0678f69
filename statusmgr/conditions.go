package statusmgr

import (
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/podfacts"
)

// IsKubeletOwnedCondition reports whether the kubelet (and so this package) owns the pod
// condition type: PodScheduled, Ready, Initialized, ContainersReady, PodResizeInProgress,
// PodResizePending, PodReadyToStartContainers and AllContainersRestarting, with the feature
// gates at their 1.37 defaults. DisruptionTarget is shared (see MergePodStatusAt); every other
// type (readiness gates and the like) belongs to other clients and is never overwritten.
func IsKubeletOwnedCondition(t v1.PodConditionType) bool {
	switch t {
	case v1.PodScheduled, v1.PodReady, v1.PodInitialized, v1.ContainersReady,
		v1.PodResizeInProgress, v1.PodResizePending, v1.PodReadyToStartContainers,
		v1.AllContainersRestarting:
		return true
	}
	return false
}

// transitionTimeConditions returns the condition types whose LastTransitionTime the
// manager sets when their Status changes (the kubelet's updateStatusInternal).
func transitionTimeConditions() [7]v1.PodConditionType {
	return [...]v1.PodConditionType{
		v1.ContainersReady, v1.PodReady, v1.PodInitialized, v1.PodReadyToStartContainers,
		v1.PodScheduled, v1.DisruptionTarget, v1.AllContainersRestarting,
	}
}

// findCondition returns the index of the condition of type t, or -1.
func findCondition(conds []v1.PodCondition, t v1.PodConditionType) int {
	for i := range conds {
		if conds[i].Type == t {
			return i
		}
	}
	return -1
}

// IsTerminalPhase reports whether the phase is Succeeded or Failed.
func IsTerminalPhase(p v1.PodPhase) bool { return podfacts.IsTerminalPhase(p) }
