package statusmgr

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/statusmgr/internal/statustest"
)

func TestMergePodStatusAt(t *testing.T) {
	now := t0.Add(time.Hour)
	tNow := metav1.NewTime(now)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Generation: 7}}
	custom := statustest.Cond("example.com/gate", v1.ConditionTrue, "", t0)
	ready := statustest.Cond(v1.PodReady, v1.ConditionTrue, "", t0)
	cready := statustest.Cond(v1.ContainersReady, v1.ConditionTrue, "", t0)
	sched := statustest.Cond(v1.PodScheduled, v1.ConditionTrue, "", t0)
	dtOld := statustest.Cond(v1.DisruptionTarget, v1.ConditionTrue, "EvictionByEvictionAPI", t0)
	dtNew := statustest.Cond(v1.DisruptionTarget, v1.ConditionTrue, "TerminationByKubelet", t0.Add(time.Minute))
	dtNewFalse := statustest.Cond(v1.DisruptionTarget, v1.ConditionFalse, "TerminationByKubelet", t0.Add(time.Minute))
	claims := []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr("gpu-abc")}}
	terminalFalse := func(typ v1.PodConditionType, reason string, ltt metav1.Time) v1.PodCondition {
		return v1.PodCondition{Type: typ, Status: v1.ConditionFalse, Reason: reason, ObservedGeneration: 7, LastTransitionTime: ltt}
	}

	tests := []struct {
		name     string
		pod      *v1.Pod
		old, new v1.PodStatus
		couldRun bool
		want     v1.PodStatus
	}{
		{
			name: "pod-owned conditions from old first, kubelet-owned from new",
			old:  v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{ready, custom, sched}},
			new: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
				statustest.Cond(v1.PodReady, v1.ConditionFalse, "x", t0), statustest.Cond("example.com/gate", v1.ConditionFalse, "", t0), sched}},
			want: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
				custom, statustest.Cond(v1.PodReady, v1.ConditionFalse, "x", t0), sched}},
		},
		{
			name: "old kubelet-owned conditions missing from new are dropped",
			old:  v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{ready, cready}},
			new:  v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{sched}},
			want: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{sched}},
		},
		{
			name: "no conditions anywhere stays nil",
			old:  v1.PodStatus{Phase: v1.PodPending},
			new:  v1.PodStatus{Phase: v1.PodRunning},
			want: v1.PodStatus{Phase: v1.PodRunning},
		},
		{
			name: "DisruptionTarget taken when transitioning and stopped: appended with now",
			old:  v1.PodStatus{Phase: v1.PodRunning},
			new:  v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{dtNew}},
			want: v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{
				{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "TerminationByKubelet", LastTransitionTime: tNow}}},
		},
		{
			name: "DisruptionTarget keeps its place among the new kubelet conditions",
			old:  v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{custom, ready}},
			new:  v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{sched, dtNew, statustest.Cond(v1.PodReady, v1.ConditionFalse, "", t0)}},
			want: v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{custom, sched,
				{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "TerminationByKubelet", LastTransitionTime: tNow},
				statustest.Cond(v1.PodReady, v1.ConditionFalse, "", t0)}},
		},
		{
			name: "DisruptionTarget replaces old in place, same status keeps old time",
			old:  v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{dtOld, custom}},
			new:  v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{dtNew}},
			want: v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{
				{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "TerminationByKubelet", LastTransitionTime: dtOld.LastTransitionTime}, custom}},
		},
		{
			name: "DisruptionTarget with another status gets now",
			old:  v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{dtOld}},
			new:  v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{dtNewFalse}},
			want: v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{
				{Type: v1.DisruptionTarget, Status: v1.ConditionFalse, Reason: "TerminationByKubelet", LastTransitionTime: tNow}}},
		},
		{
			name:     "DisruptionTarget ignored while containers could run; old kept",
			old:      v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{dtOld}},
			new:      v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{dtNew}},
			couldRun: true,
			want:     v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{dtOld}},
		},
		{
			name: "DisruptionTarget ignored when not transitioning (still running)",
			old:  v1.PodStatus{Phase: v1.PodRunning},
			new:  v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{dtNew}},
			want: v1.PodStatus{Phase: v1.PodRunning},
		},
		{
			name: "DisruptionTarget ignored when already terminal",
			old:  v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{dtOld}},
			new:  v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{dtNew}},
			want: v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{dtOld}},
		},
		{
			name: "claim statuses come from old, even when old has none",
			old:  v1.PodStatus{Phase: v1.PodRunning, ResourceClaimStatuses: claims},
			new: v1.PodStatus{Phase: v1.PodRunning,
				ResourceClaimStatuses:                []v1.PodResourceClaimStatus{{Name: "other"}},
				ExtendedResourceClaimStatus:          &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "x"},
				NodeAllocatableResourceClaimStatuses: []v1.NodeAllocatableResourceClaimStatus{{ResourceClaimName: "y"}}},
			want: v1.PodStatus{Phase: v1.PodRunning, ResourceClaimStatuses: claims},
		},
		{
			name:     "terminal guard: transitioning while containers could run reverts phase, reason, message",
			old:      v1.PodStatus{Phase: v1.PodRunning, Reason: "r0", Message: "m0", PodIP: "1.1.1.1"},
			new:      v1.PodStatus{Phase: v1.PodSucceeded, Reason: "r1", Message: "m1", PodIP: "2.2.2.2"},
			couldRun: true,
			want:     v1.PodStatus{Phase: v1.PodRunning, Reason: "r0", Message: "m0", PodIP: "2.2.2.2"},
		},
		{
			name: "transitioning once stopped takes the terminal phase, reason, message",
			old:  v1.PodStatus{Phase: v1.PodRunning, Reason: "r0", Message: "m0"},
			new:  v1.PodStatus{Phase: v1.PodSucceeded, Reason: "r1", Message: "m1"},
			want: v1.PodStatus{Phase: v1.PodSucceeded, Reason: "r1", Message: "m1"},
		},
		{
			name: "terminal phase kept: Succeeded never goes back to Running",
			old:  v1.PodStatus{Phase: v1.PodSucceeded},
			new:  v1.PodStatus{Phase: v1.PodRunning, Message: "m"},
			want: v1.PodStatus{Phase: v1.PodSucceeded, Message: "m"},
		},
		{
			name: "terminal phase kept: Failed never becomes Succeeded",
			old:  v1.PodStatus{Phase: v1.PodFailed},
			new:  v1.PodStatus{Phase: v1.PodSucceeded},
			want: v1.PodStatus{Phase: v1.PodFailed},
		},
		{
			name:     "terminal phase kept even while containers could run",
			old:      v1.PodStatus{Phase: v1.PodFailed},
			new:      v1.PodStatus{Phase: v1.PodPending},
			couldRun: true,
			want:     v1.PodStatus{Phase: v1.PodFailed},
		},
		{
			name: "Ready and ContainersReady forced False on Failed",
			pod:  pod,
			old:  v1.PodStatus{Phase: v1.PodRunning},
			new:  v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{ready, cready, sched}},
			want: v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{
				terminalFalse(v1.PodReady, ReasonPodFailed, tNow), terminalFalse(v1.ContainersReady, ReasonPodFailed, tNow), sched}},
		},
		{
			name: "Ready forced False on Succeeded, ContainersReady already False keeps its time",
			pod:  pod,
			old:  v1.PodStatus{Phase: v1.PodRunning},
			new: v1.PodStatus{Phase: v1.PodSucceeded, Conditions: []v1.PodCondition{ready,
				statustest.Cond(v1.ContainersReady, v1.ConditionFalse, "ContainersNotReady", t0)}},
			want: v1.PodStatus{Phase: v1.PodSucceeded, Conditions: []v1.PodCondition{
				terminalFalse(v1.PodReady, ReasonPodCompleted, tNow), terminalFalse(v1.ContainersReady, ReasonPodCompleted, metav1.NewTime(t0))}},
		},
		{
			name: "readiness forced False when the terminal phase was kept from old",
			pod:  pod,
			old:  v1.PodStatus{Phase: v1.PodSucceeded},
			new:  v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{ready}},
			want: v1.PodStatus{Phase: v1.PodSucceeded, Conditions: []v1.PodCondition{
				terminalFalse(v1.PodReady, ReasonPodCompleted, tNow), terminalFalse(v1.ContainersReady, ReasonPodCompleted, tNow)}},
		},
		{
			name:     "readiness not forced when the terminal phase was held back",
			pod:      pod,
			old:      v1.PodStatus{Phase: v1.PodRunning},
			new:      v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{ready}},
			couldRun: true,
			want:     v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{ready}},
		},
		{
			name: "no readiness True on a terminal pod: conditions untouched",
			pod:  pod,
			old:  v1.PodStatus{Phase: v1.PodRunning},
			new:  v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{sched}},
			want: v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{sched}},
		},
		{
			name: "nil pod: generation 0",
			old:  v1.PodStatus{Phase: v1.PodRunning},
			new:  v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{ready}},
			want: v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{
				{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReasonPodFailed, LastTransitionTime: tNow},
				{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ReasonPodFailed, LastTransitionTime: tNow}}},
		},
		{
			name: "everything else from new",
			old:  v1.PodStatus{Phase: v1.PodRunning, HostIP: "a", PodIP: "b", QOSClass: v1.PodQOSBurstable, ObservedGeneration: 3},
			new: v1.PodStatus{Phase: v1.PodRunning, HostIP: "c", PodIP: "d", QOSClass: v1.PodQOSGuaranteed, ObservedGeneration: 4,
				StartTime: &metav1.Time{Time: t0}, ContainerStatuses: []v1.ContainerStatus{{Name: "c"}}},
			want: v1.PodStatus{Phase: v1.PodRunning, HostIP: "c", PodIP: "d", QOSClass: v1.PodQOSGuaranteed, ObservedGeneration: 4,
				StartTime: &metav1.Time{Time: t0}, ContainerStatuses: []v1.ContainerStatus{{Name: "c"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			oldCopy, newCopy := tc.old.DeepCopy(), tc.new.DeepCopy()
			got := MergePodStatusAt(tc.pod, tc.old, tc.new, tc.couldRun, now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("merged (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(*oldCopy, tc.old); diff != "" {
				t.Errorf("old status modified:\n%s", diff)
			}
			if diff := cmp.Diff(*newCopy, tc.new); diff != "" {
				t.Errorf("new status modified:\n%s", diff)
			}
			// mergeStatus, the manager's, merges the same without the copy, and modifies
			// neither input either (its conditions may be new's own).
			if diff := cmp.Diff(tc.want, mergeStatus(tc.pod, &tc.old, &tc.new, tc.couldRun, now)); diff != "" {
				t.Errorf("mergeStatus (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(*oldCopy, tc.old); diff != "" {
				t.Errorf("old status modified by mergeStatus:\n%s", diff)
			}
			if diff := cmp.Diff(*newCopy, tc.new); diff != "" {
				t.Errorf("new status modified by mergeStatus:\n%s", diff)
			}
			// The result shares no memory with the inputs.
			for i := range got.Conditions {
				got.Conditions[i].Reason = "mutated"
			}
			for i := range got.ResourceClaimStatuses {
				got.ResourceClaimStatuses[i].Name = "mutated"
			}
			if diff := cmp.Diff(*oldCopy, tc.old); diff != "" {
				t.Errorf("result aliases old status:\n%s", diff)
			}
			if diff := cmp.Diff(*newCopy, tc.new); diff != "" {
				t.Errorf("result aliases new status:\n%s", diff)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// mergeConditions hands back new itself when the merged conditions are exactly new's, and
// a list of its own otherwise.
func TestMergeConditionsShares(t *testing.T) {
	ready := statustest.Cond(v1.PodReady, v1.ConditionTrue, "", t0)
	sched := statustest.Cond(v1.PodScheduled, v1.ConditionTrue, "", t0)
	custom := statustest.Cond("example.com/gate", v1.ConditionTrue, "", t0)
	dt := statustest.Cond(v1.DisruptionTarget, v1.ConditionTrue, "EvictionByEvictionAPI", t0)
	tests := []struct {
		name     string
		old, new []v1.PodCondition
		take     bool
		want     []v1.PodCondition
		shared   bool
	}{
		{name: "none", want: nil},
		{name: "kubelet's only, old's replaced", old: []v1.PodCondition{sched}, new: []v1.PodCondition{ready, sched},
			want: []v1.PodCondition{ready, sched}, shared: true},
		{name: "old's custom kept", old: []v1.PodCondition{custom}, new: []v1.PodCondition{ready},
			want: []v1.PodCondition{custom, ready}},
		{name: "new's custom dropped", new: []v1.PodCondition{ready, custom}, want: []v1.PodCondition{ready}},
		{name: "new's DisruptionTarget taken", new: []v1.PodCondition{ready, dt}, take: true,
			want: []v1.PodCondition{ready, statustest.Cond(v1.DisruptionTarget, v1.ConditionTrue, "EvictionByEvictionAPI", t0.Add(time.Hour))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, shared := mergeConditions(tc.old, tc.new, tc.take, t0.Add(time.Hour))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if isNew := len(got) > 0 && &got[0] == &tc.new[0]; shared != tc.shared || isNew != tc.shared {
				t.Errorf("shared %v (new's own list: %v), want %v", shared, isNew, tc.shared)
			}
		})
	}
}

func TestMergePodStatusUsesWallClock(t *testing.T) {
	before := time.Now().Add(-time.Second)
	got := MergePodStatus(nil, v1.PodStatus{Phase: v1.PodRunning},
		v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}, false)
	if ltt := got.Conditions[0].LastTransitionTime; ltt.Time.Before(before) {
		t.Errorf("LastTransitionTime %v is not now", ltt)
	}
}

func FuzzMergePodStatus(f *testing.F) {
	f.Add(uint64(0), uint64(1), true)
	f.Add(uint64(0x1234), uint64(0x8888), false)
	f.Add(uint64(0xfffff), uint64(0x3), false)
	f.Fuzz(func(t *testing.T, oldSeed, newSeed uint64, couldRun bool) {
		old, nw := statustest.RandomStatus(oldSeed), statustest.RandomStatus(newSeed)
		oldCopy, newCopy := old.DeepCopy(), nw.DeepCopy()
		var pod *v1.Pod
		if oldSeed%3 == 0 {
			pod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Generation: int64(newSeed % 5)}}
		}
		got := MergePodStatusAt(pod, old, nw, couldRun, t0)
		if IsTerminalPhase(old.Phase) && got.Phase != old.Phase {
			t.Fatalf("left terminal phase %s for %s", old.Phase, got.Phase)
		}
		if !IsTerminalPhase(old.Phase) && IsTerminalPhase(nw.Phase) && couldRun && got.Phase != old.Phase {
			t.Fatalf("terminal phase %s written while containers could run", got.Phase)
		}
		if IsTerminalPhase(got.Phase) && (conditionIsTrue(got.Conditions, v1.PodReady) || conditionIsTrue(got.Conditions, v1.ContainersReady)) {
			t.Fatalf("terminal pod left ready: %+v", got.Conditions)
		}
		for _, c := range old.Conditions {
			if !IsKubeletOwnedCondition(c.Type) && findCondition(got.Conditions, c.Type) < 0 {
				t.Fatalf("pod-owned condition %s lost", c.Type)
			}
		}
		if diff := cmp.Diff(*oldCopy, old); diff != "" {
			t.Fatalf("old modified: %s", diff)
		}
		if diff := cmp.Diff(*newCopy, nw); diff != "" {
			t.Fatalf("new modified: %s", diff)
		}
	})
}
