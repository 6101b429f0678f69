package podgc

import (
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/podlife/podlife/internal/podfacts"
)

const (
	// ConditionReasonDeletionByPodGC is the reason of the DisruptionTarget condition the
	// garbage collector sets on an orphaned pod before deleting it.
	ConditionReasonDeletionByPodGC = "DeletionByPodGC"
	// OrphanedConditionMessage is the message of that condition.
	OrphanedConditionMessage = "PodGC: node no longer exists"
)

// OrphanedCondition returns the condition the garbage collector adds to an orphaned pod:
// DisruptionTarget, status True, reason DeletionByPodGC. LastTransitionTime is left zero;
// FailedStatus fills it in.
func OrphanedCondition() v1.PodCondition {
	return v1.PodCondition{
		Type:    v1.DisruptionTarget,
		Status:  v1.ConditionTrue,
		Reason:  ConditionReasonDeletionByPodGC,
		Message: OrphanedConditionMessage,
	}
}

// ConditionFor returns the condition the garbage collector adds before deleting a pod for
// reason r, or nil when it adds none. As in the controller, only orphaned pods get one
// (OrphanedCondition): the other reasons delete pods that were already being deleted by
// someone else (whose own DisruptionTarget condition, if any, is kept) or that are
// terminated already.
func ConditionFor(r Reason) *v1.PodCondition {
	if r != ReasonOrphaned {
		return nil
	}
	c := OrphanedCondition()
	return &c
}

// FailedStatus returns the status the garbage collector writes before deleting pod, and
// whether one must be written at all. A pod whose phase is Succeeded or Failed is deleted as
// it is (false). Any other pod would stay in its phase forever once deleted from a node that
// no longer runs a kubelet, so it is marked Failed first: the result is a copy of
// pod.Status with phase Failed and, when cond is non-nil, cond set as that type's condition
// (replacing an existing one). LastTransitionTime is now, unless a condition of that type
// with the same status was already there, whose transition time is kept. pod is not
// modified; a nil pod gives (zero, false).
func FailedStatus(pod *v1.Pod, cond *v1.PodCondition, now time.Time) (v1.PodStatus, bool) {
	if pod == nil || podfacts.IsTerminal(pod) {
		return v1.PodStatus{}, false
	}
	st := *pod.Status.DeepCopy()
	st.Phase = v1.PodFailed
	if cond == nil {
		return st, true
	}
	c := *cond.DeepCopy()
	c.LastTransitionTime = metav1.NewTime(now)
	for i := range st.Conditions {
		if st.Conditions[i].Type != c.Type {
			continue
		}
		if st.Conditions[i].Status == c.Status {
			c.LastTransitionTime = st.Conditions[i].LastTransitionTime
		}
		st.Conditions[i] = c
		return st, true
	}
	st.Conditions = append(st.Conditions, c)
	return st, true
}

// StatusPatch returns a strategic merge patch, for the pod's status subresource, that turns
// pod.Status into status. It also carries metadata.uid = pod.UID, which the API server
// checks as a precondition: the patch fails with a Conflict if the name now belongs to a
// different pod. A nil pod gives an error wrapping ErrNilPod.
func StatusPatch(pod *v1.Pod, status v1.PodStatus) ([]byte, error) {
	if pod == nil {
		return nil, ErrNilPod
	}
	oldJSON, err := json.Marshal(v1.Pod{Status: pod.Status})
	if err != nil {
		return nil, fmt.Errorf("%w: marshal old status of %s/%s: %w", ErrPatch, pod.Namespace, pod.Name, err)
	}
	// The UID appears only in the new object, so the diff always carries it.
	newJSON, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: pod.UID}, Status: status})
	if err != nil {
		return nil, fmt.Errorf("%w: marshal new status of %s/%s: %w", ErrPatch, pod.Namespace, pod.Name, err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("%w: diff status of %s/%s: %w", ErrPatch, pod.Namespace, pod.Name, err)
	}
	return patch, nil
}

// DeleteOptions returns the options of every garbage-collector delete: grace period 0 (the
// pod object goes at once; no kubelet is waited for) and a UID precondition, so a pod
// recreated under the same name is never deleted in its predecessor's place. A nil pod gets
// grace 0 and no precondition.
func DeleteOptions(pod *v1.Pod) metav1.DeleteOptions {
	opts := metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}
	if pod != nil {
		opts.Preconditions = metav1.NewUIDPreconditions(string(pod.UID))
	}
	return opts
}
