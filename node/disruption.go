package node

import (
	v1 "k8s.io/api/core/v1"
)

// Reasons of the DisruptionTarget condition, as k8s.io/api names them: the kubelet sets
// TerminationByKubelet on every pod it ends itself (eviction, node shutdown, critical-pod
// preemption); PreemptionByScheduler is the scheduler's.
const (
	DisruptionReasonTerminationByKubelet  = v1.PodReasonTerminationByKubelet
	DisruptionReasonPreemptionByScheduler = v1.PodReasonPreemptionByScheduler
)

// SetDisruptionTarget sets the DisruptionTarget condition of status (status True, the
// reason and message, ObservedGeneration generation, the pod's metadata.generation), as
// the kubelet's eviction and shutdown managers do in their status functions
// (podutil.UpdatePodCondition): it replaces a DisruptionTarget condition status has,
// keeping its LastTransitionTime when that one is True too, and is appended otherwise.
// A new or changed LastTransitionTime is left zero: the status manager stamps it with
// the node's clock. A nil status is left alone.
func SetDisruptionTarget(status *v1.PodStatus, reason, message string, generation int64) {
	if status == nil {
		return
	}
	c := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: reason, Message: message,
		ObservedGeneration: generation}
	for i := range status.Conditions {
		if status.Conditions[i].Type != v1.DisruptionTarget {
			continue
		}
		if status.Conditions[i].Status == c.Status {
			c.LastTransitionTime = status.Conditions[i].LastTransitionTime
		}
		// A copy of the slice: the status the function gets may share it.
		conds := make([]v1.PodCondition, len(status.Conditions))
		copy(conds, status.Conditions)
		conds[i] = c
		status.Conditions = conds
		return
	}
	status.Conditions = append(status.Conditions[:len(status.Conditions):len(status.Conditions)], c)
}
