package statusmgr

import (
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/statusmgr/internal/patch"
)

// Reasons of the Ready and ContainersReady conditions forced to False on a terminal pod.
const (
	// ReasonPodFailed is the condition reason for a pod in phase Failed.
	ReasonPodFailed = "PodFailed"
	// ReasonPodCompleted is the condition reason for a pod in phase Succeeded.
	ReasonPodCompleted = "PodCompleted"
)

// MergePodStatus merges the status the node agent computed (newStatus) into the status the
// API server holds (oldStatus) and returns the status to write. It is MergePodStatusAt with
// the wall clock's current time; see there for the rules.
func MergePodStatus(pod *v1.Pod, oldStatus, newStatus v1.PodStatus, couldHaveRunningContainers bool) v1.PodStatus {
	return MergePodStatusAt(pod, oldStatus, newStatus, couldHaveRunningContainers, clock.RealClock{}.Now())
}

// MergePodStatusAt merges newStatus (the node agent's) into oldStatus (the API server's) with
// the kubelet's rules (mergePodStatus, 1.37 feature-gate defaults); now stamps the
// LastTransitionTime of a condition that changes here. It is pure: oldStatus and newStatus
// (including their backing arrays) are never modified and the result shares no memory with
// them. pod may be nil (its Generation is then taken as 0).
//
// The rules, in order:
//  1. Conditions: every condition of oldStatus the kubelet does not own (see
//     IsKubeletOwnedCondition; DisruptionTarget and custom types included), in old order,
//     then every kubelet-owned condition of newStatus, in new order.
//  2. The pod is "transitioning" when the old phase is not terminal and the new one is.
//  3. A DisruptionTarget of newStatus is taken only when transitioning and no container can
//     still run: it replaces the old one in place (keeping its LastTransitionTime when the
//     Status is the same, else now) or is appended with now.
//  4. ResourceClaimStatuses, ExtendedResourceClaimStatus and
//     NodeAllocatableResourceClaimStatuses come from oldStatus.
//  5. Transitioning while containers could still run: Phase, Reason and Message revert to
//     the old values (the terminal phase is written only once termination has finished).
//  6. podlife's terminal guard: once the old phase is terminal the merged phase is that phase.
//  7. A terminal merged phase with a Ready or ContainersReady condition that is True: both are
//     set to False with reason PodFailed or PodCompleted and ObservedGeneration =
//     pod.Generation (LastTransitionTime = now when the Status changes).
//  8. Everything else comes from newStatus.
func MergePodStatusAt(pod *v1.Pod, oldStatus, newStatus v1.PodStatus, couldHaveRunningContainers bool, now time.Time) v1.PodStatus {
	merged := mergeStatus(pod, &oldStatus, &newStatus, couldHaveRunningContainers, now)
	return *merged.DeepCopy()
}

// mergeStatus is MergePodStatusAt without the copy, for the manager's syncs, which only
// read the result: it shares memory with oldStatus and newStatus (its Conditions slice
// too when the merged conditions are exactly newStatus's, else it is its own) and
// modifies neither.
func mergeStatus(pod *v1.Pod, oldStatus, newStatus *v1.PodStatus, couldHaveRunningContainers bool, now time.Time) v1.PodStatus {
	merged := *newStatus

	transitioning := !IsTerminalPhase(oldStatus.Phase) && IsTerminalPhase(newStatus.Phase)
	takeDisruption := transitioning && !couldHaveRunningContainers
	var shared bool
	merged.Conditions, shared = mergeConditions(oldStatus.Conditions, newStatus.Conditions, takeDisruption, now)

	merged.ResourceClaimStatuses = oldStatus.ResourceClaimStatuses
	merged.ExtendedResourceClaimStatus = oldStatus.ExtendedResourceClaimStatus
	merged.NodeAllocatableResourceClaimStatuses = oldStatus.NodeAllocatableResourceClaimStatuses
	if transitioning && couldHaveRunningContainers {
		merged.Phase = oldStatus.Phase
		merged.Reason = oldStatus.Reason
		merged.Message = oldStatus.Message
	}
	if IsTerminalPhase(oldStatus.Phase) {
		merged.Phase = oldStatus.Phase
	}

	if IsTerminalPhase(merged.Phase) &&
		(conditionIsTrue(merged.Conditions, v1.PodReady) || conditionIsTrue(merged.Conditions, v1.ContainersReady)) {
		reason := ReasonPodCompleted
		if merged.Phase == v1.PodFailed {
			reason = ReasonPodFailed
		}
		var gen int64
		if pod != nil {
			gen = pod.Generation
		}
		if shared {
			merged.Conditions = slices.Clone(merged.Conditions) // putCondition writes in place
		}
		for _, t := range [...]v1.PodConditionType{v1.ContainersReady, v1.PodReady} {
			merged.Conditions = putCondition(merged.Conditions, v1.PodCondition{
				Type:               t,
				Status:             v1.ConditionFalse,
				Reason:             reason,
				ObservedGeneration: gen,
			}, now)
		}
	}
	return merged
}

// mergeConditions is rules 1 and 3 of MergePodStatusAt: the merged conditions, nil if
// none. When they are exactly new's (no condition of old is kept, every condition of new
// is the kubelet's), the result is new itself, not a copy, and shared is true.
func mergeConditions(old, new []v1.PodCondition, takeDisruption bool, now time.Time) (conds []v1.PodCondition, shared bool) {
	n := mergedConditionCount(old, new, takeDisruption)
	if n == 0 {
		return nil, false
	}
	if n == len(new) && !slices.ContainsFunc(new, func(c v1.PodCondition) bool { return !IsKubeletOwnedCondition(c.Type) }) {
		return new, true
	}
	conds = make([]v1.PodCondition, 0, n)
	for i := range old {
		if !IsKubeletOwnedCondition(old[i].Type) {
			conds = append(conds, old[i])
		}
	}
	for i := range new {
		c := new[i]
		switch {
		case IsKubeletOwnedCondition(c.Type):
			conds = append(conds, c)
		case c.Type == v1.DisruptionTarget && takeDisruption:
			c.LastTransitionTime = metav1.NewTime(now)
			if j := findCondition(old, c.Type); j >= 0 && old[j].Status == c.Status {
				c.LastTransitionTime = old[j].LastTransitionTime
			}
			if j := findCondition(conds, c.Type); j >= 0 {
				conds[j] = c
			} else {
				conds = append(conds, c)
			}
		}
	}
	return conds, false
}

// mergedStatusPatch is the patch from server's status to the merge of status into it
// (mergeStatus, then StatusPatch with server's UID). With scratch (a buffer of
// patch.GetBuffer) the patch is built in *scratch and not copied: it is the caller's until
// scratch's next use; without, it is a slice of its own. The merged status lives in a
// pooled struct for the call only (StatusPatch keeps no reference to it): passed through
// StatusPatch's table of field patchers, it would otherwise escape, an allocation per sync.
func mergedStatusPatch(server *v1.Pod, status *v1.PodStatus, couldHaveRunningContainers bool, now time.Time, scratch *[]byte) (p []byte, unchanged bool, err error) {
	merged := newStatusStruct()
	*merged = mergeStatus(server, &server.Status, status, couldHaveRunningContainers, now)
	if scratch == nil {
		p, unchanged, err = patch.Status(server.UID, &server.Status, merged)
	} else if p, unchanged, err = patch.Append((*scratch)[:0], server.UID, &server.Status, merged); err == nil {
		*scratch = p
	}
	releaseStatusStruct(merged)
	return p, unchanged, err
}

// mergedStatus is the status a write sends to server (mergeStatus, a status of its own)
// and whether it is server's already (a patch from one to the other would be empty).
func mergedStatus(server *v1.Pod, status *v1.PodStatus, couldHaveRunningContainers bool, now time.Time) (v1.PodStatus, bool) {
	merged := mergeStatus(server, &server.Status, status, couldHaveRunningContainers, now)
	return merged, patch.FieldsEqual(&server.Status, &merged, "")
}

// statusStructs holds status structs between uses that keep none: mergedStatusPatch's
// merged status, and a setter's new version when it is not stored (see Manager.update).
var statusStructs = sync.Pool{New: func() any { return new(v1.PodStatus) }}

// newStatusStruct returns a zero status struct of statusStructs.
func newStatusStruct() *v1.PodStatus { return statusStructs.Get().(*v1.PodStatus) }

// releaseStatusStruct zeroes s, which nothing may refer to any more, and puts it back in
// statusStructs.
func releaseStatusStruct(s *v1.PodStatus) {
	*s = v1.PodStatus{} // keeps nothing alive
	statusStructs.Put(s)
}

// mergedConditionCount is the number of conditions mergeStatus keeps at most: old's not
// owned by the kubelet, new's owned by it, and new's DisruptionTarget when it is taken
// (then one for each, the merge keeping one).
func mergedConditionCount(old, new []v1.PodCondition, takeDisruption bool) int {
	n := 0
	for i := range old {
		if !IsKubeletOwnedCondition(old[i].Type) {
			n++
		}
	}
	for i := range new {
		if IsKubeletOwnedCondition(new[i].Type) || (takeDisruption && new[i].Type == v1.DisruptionTarget) {
			n++
		}
	}
	return n
}

func conditionIsTrue(conds []v1.PodCondition, t v1.PodConditionType) bool {
	i := findCondition(conds, t)
	return i >= 0 && conds[i].Status == v1.ConditionTrue
}

// putCondition replaces the condition of c's type in place (keeping its LastTransitionTime
// when the Status is unchanged, else now) or appends c with now. conds must be owned by the
// caller.
func putCondition(conds []v1.PodCondition, c v1.PodCondition, now time.Time) []v1.PodCondition {
	c.LastTransitionTime = metav1.NewTime(now)
	i := findCondition(conds, c.Type)
	if i < 0 {
		return append(conds, c)
	}
	if conds[i].Status == c.Status {
		c.LastTransitionTime = conds[i].LastTransitionTime
	}
	conds[i] = c
	return conds
}
