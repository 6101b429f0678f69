package podgc

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

func TestFailedStatus(t *testing.T) {
	orphan := OrphanedCondition()
	earlier := metav1.NewTime(t0.Add(-time.Hour))
	now := t0
	tests := []struct {
		name   string
		pod    *v1.Pod
		cond   *v1.PodCondition
		want   v1.PodStatus
		wantOK bool
	}{
		{"nil pod", nil, &orphan, v1.PodStatus{}, false},
		{"succeeded: no write", mkPod("a", 0, phase(v1.PodSucceeded)), &orphan, v1.PodStatus{}, false},
		{"failed: no write", mkPod("a", 0, phase(v1.PodFailed)), nil, v1.PodStatus{}, false},
		{"running, no condition", mkPod("a", 0), nil, v1.PodStatus{Phase: v1.PodFailed}, true},
		{"pending, no condition", mkPod("a", 0, phase(v1.PodPending)), nil, v1.PodStatus{Phase: v1.PodFailed}, true},
		{"empty phase", mkPod("a", 0, phase("")), nil, v1.PodStatus{Phase: v1.PodFailed}, true},
		{"running, condition added with now", mkPod("a", 0), &orphan, v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{{
			Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "DeletionByPodGC",
			Message: "PodGC: node no longer exists", LastTransitionTime: metav1.NewTime(now),
		}}}, true},
		{"existing condition same status: replaced, transition time kept", mkPod("a", 0, conds(
			v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse},
			v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "DeletionByTaintManager", LastTransitionTime: earlier},
		)), &orphan, v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionFalse},
			{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "DeletionByPodGC", Message: "PodGC: node no longer exists", LastTransitionTime: earlier},
		}}, true},
		{"existing condition other status: replaced with now", mkPod("a", 0, conds(
			v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionFalse, LastTransitionTime: earlier},
		)), &orphan, v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{
			{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "DeletionByPodGC", Message: "PodGC: node no longer exists", LastTransitionTime: metav1.NewTime(now)},
		}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before *v1.Pod
			if tt.pod != nil {
				before = tt.pod.DeepCopy()
			}
			got, ok := FailedStatus(tt.pod, tt.cond, now)
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v", ok, tt.wantOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.pod); diff != "" {
				t.Errorf("pod modified (-before +after):\n%s", diff)
			}
		})
	}
}

func TestConditionFor(t *testing.T) {
	for _, r := range []Reason{ReasonTerminated, ReasonTerminatingOutOfService, ReasonTerminatingUnscheduled, Reason(9)} {
		if c := ConditionFor(r); c != nil {
			t.Errorf("ConditionFor(%v) = %+v, want nil", r, c)
		}
	}
	want := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "DeletionByPodGC", Message: "PodGC: node no longer exists"}
	if diff := cmp.Diff(&want, ConditionFor(ReasonOrphaned)); diff != "" {
		t.Errorf("ConditionFor(orphaned) (-want +got):\n%s", diff)
	}
}

// applyStatusPatch applies patch to pod the way the API server does for the status
// subresource, checking the UID precondition; it returns the resulting pod.
func applyStatusPatch(t testing.TB, pod *v1.Pod, patch []byte) (*v1.Pod, error) {
	t.Helper()
	orig, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Metadata struct {
			UID string `json:"uid"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &meta); err != nil {
		return nil, err
	}
	if meta.Metadata.UID != string(pod.UID) {
		return nil, errors.New("uid precondition failed")
	}
	out, err := strategicpatch.StrategicMergePatch(orig, patch, v1.Pod{})
	if err != nil {
		return nil, err
	}
	var res v1.Pod
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func TestStatusPatch(t *testing.T) {
	pod := mkPod("a", 0, onNode("dead"), conds(
		v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue},
		v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue},
	))
	pod.Status.PodIP = "10.0.0.1"
	pod.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c", Ready: true}}
	st, ok := FailedStatus(pod, ConditionFor(ReasonOrphaned), t0)
	if !ok {
		t.Fatal("FailedStatus: no write for a running pod")
	}
	patch, err := StatusPatch(pod, st)
	if err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(patch, &generic); err != nil {
		t.Fatalf("patch is not JSON: %v", err)
	}
	if _, ok := generic["spec"]; ok {
		t.Errorf("patch touches spec: %s", patch)
	}
	got, err := applyStatusPatch(t, pod, patch)
	if err != nil {
		t.Fatalf("apply: %v (patch %s)", err, patch)
	}
	if diff := cmp.Diff(st, got.Status); diff != "" {
		t.Errorf("patched status (-want +got):\n%s\npatch: %s", diff, patch)
	}

	other := pod.DeepCopy()
	other.UID = "someone-else"
	if _, err := applyStatusPatch(t, other, patch); err == nil {
		t.Error("patch applied to a pod with another UID")
	}

	if _, err := StatusPatch(nil, st); !errors.Is(err, ErrNilPod) {
		t.Errorf("StatusPatch(nil) error = %v, want ErrNilPod", err)
	}
}

func TestDeleteOptions(t *testing.T) {
	got := DeleteOptions(mkPod("a", 0))
	uid := "uid-a"
	if got.GracePeriodSeconds == nil || *got.GracePeriodSeconds != 0 {
		t.Errorf("GracePeriodSeconds = %v, want 0", got.GracePeriodSeconds)
	}
	if got.Preconditions == nil || got.Preconditions.UID == nil || string(*got.Preconditions.UID) != uid {
		t.Errorf("Preconditions = %+v, want UID %q", got.Preconditions, uid)
	}
	if n := DeleteOptions(nil); n.GracePeriodSeconds == nil || *n.GracePeriodSeconds != 0 || n.Preconditions != nil {
		t.Errorf("DeleteOptions(nil) = %+v", n)
	}
}
