package statusmgr

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/statusmgr/internal/statustest"
)

// Parity tests: every rule of KUBELET-BEHAVIOR.md §6 (canBeDeleted), §7 (mergePodStatus)
// and §8 needsUpdate plus DESIGN.md's statusmgr decisions, one named case each; the rest
// of §8 is in parity_manager_test.go. Names start with the section and rule they check.

var (
	parNow  = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC) // "now" of every merge and set
	parPast = metav1.NewTime(t0)                          // an earlier LastTransitionTime
	parTNow = metav1.NewTime(parNow)
)

// parPod is an API pod (source "api") with two containers, generation 7.
func parPod(mods ...func(*v1.Pod)) *v1.Pod {
	p := podWith(func(p *v1.Pod) { p.Generation = 7 })
	for _, m := range mods {
		m(p)
	}
	return p
}

func parDeleting(grace int64) func(*v1.Pod) {
	return func(p *v1.Pod) {
		ts := metav1.NewTime(t0)
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &grace
	}
}

func parPhase(ph v1.PodPhase) func(*v1.Pod) { return func(p *v1.Pod) { p.Status.Phase = ph } }

func parAnnotate(k, v string) func(*v1.Pod) { return func(p *v1.Pod) { p.Annotations[k] = v } }

func TestParityCanBeDeleted(t *testing.T) {
	failed := v1.PodStatus{Phase: v1.PodFailed}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		status   v1.PodStatus
		finished bool
		want     bool
	}{
		{"§6 rule 1: no deletionTimestamp gives false", parPod(parPhase(v1.PodFailed)), failed, true, false},
		{"§6 rule 2: mirror pod (annotation with a value) gives false", parPod(parDeleting(0), parPhase(v1.PodFailed), parAnnotate(ConfigMirrorAnnotationKey, "hash")), failed, true, false},
		{"§6 rule 2: mirror annotation with an empty value gives false", parPod(parDeleting(0), parPhase(v1.PodSucceeded), parAnnotate(ConfigMirrorAnnotationKey, "")), failed, true, false},
		{"§6 rule 3: phase Pending gives false", parPod(parDeleting(0), parPhase(v1.PodPending)), failed, true, false},
		{"§6 rule 3: phase Running gives false", parPod(parDeleting(0), parPhase(v1.PodRunning)), failed, true, false},
		{"§6 rule 3: phase Unknown gives false", parPod(parDeleting(0), parPhase(v1.PodUnknown)), failed, true, false},
		{"§6 rule 3: phase \"\" gives false", parPod(parDeleting(0)), failed, true, false},
		{"§6 rule 3: the pod's (API) phase counts, not the status argument", parPod(parDeleting(0), parPhase(v1.PodRunning)), v1.PodStatus{Phase: v1.PodSucceeded}, true, false},
		{"§6 rule 4: Failed and finished gives true", parPod(parDeleting(0), parPhase(v1.PodFailed)), failed, true, true},
		{"§6 rule 4: Succeeded and finished gives true", parPod(parDeleting(0), parPhase(v1.PodSucceeded)), failed, true, true},
		{"§6 rule 4: terminal but not finished gives false", parPod(parDeleting(0), parPhase(v1.PodFailed)), failed, false, false},
		{"§6 rule 5: status argument ignored (local Running)", parPod(parDeleting(0), parPhase(v1.PodFailed)), v1.PodStatus{Phase: v1.PodRunning}, true, true},
		{"§6 rule 5: status argument ignored (empty status)", parPod(parDeleting(0), parPhase(v1.PodSucceeded)), v1.PodStatus{}, true, true},
		{"§6 rule 6: static pod is not special", parPod(parDeleting(0), parPhase(v1.PodFailed), parAnnotate(ConfigSourceAnnotationKey, "file")), failed, true, true},
		{"§6 rule 7: grace irrelevant (deletion grace 30, spec 3600)", parPod(parDeleting(30), parPhase(v1.PodFailed), func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(3600)) }), failed, true, true},
		{"§6 rule 7: grace irrelevant (no deletion grace)", parPod(parDeleting(0), parPhase(v1.PodFailed), func(p *v1.Pod) { p.DeletionGracePeriodSeconds = nil }), failed, true, true},
		{"§6 rule 2: no annotations at all is not a mirror pod", parPod(parDeleting(0), parPhase(v1.PodFailed), func(p *v1.Pod) { p.Annotations = nil }), failed, true, true},
		{"§6 (podlife): nil pod gives false, no panic", nil, failed, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, CanBeDeleted(tc.pod, tc.status, tc.finished)); diff != "" {
				t.Errorf("CanBeDeleted mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParityNeedsUpdate: §8 needsUpdate and §6 rule 8. server is the API server's copy
// of the pod, which is what the kubelet's pod manager holds.
func TestParityNeedsUpdate(t *testing.T) {
	deleting := parPod(parDeleting(0))
	for _, tc := range []struct {
		name string
		e    entry
		want bool
	}{
		{"§8 needsUpdate: no version sent yet", entry{pod: parPod(), version: 1}, true},
		{"§8 needsUpdate: an older version sent", entry{pod: parPod(), version: 4, sentVersion: 3, server: keepServer(parPod())}, true},
		{"§8 needsUpdate: latest sent, nothing to delete", entry{pod: parPod(), version: 2, sentVersion: 2, server: keepServer(parPod(parPhase(v1.PodRunning))),
			status: &v1.PodStatus{Phase: v1.PodRunning}}, false},
		{"§6 rule 8: latest sent but CanBeDeleted holds: true without another status change", entry{pod: deleting, version: 2, sentVersion: 2, podIsFinished: true,
			status: &v1.PodStatus{Phase: v1.PodFailed}, server: keepServer(parPod(parDeleting(0), parPhase(v1.PodFailed)))}, true},
		{"§8 needsUpdate: latest sent, deleting and terminal but not finished", entry{pod: deleting, version: 2, sentVersion: 2,
			status: &v1.PodStatus{Phase: v1.PodFailed}, server: keepServer(parPod(parDeleting(0), parPhase(v1.PodFailed)))}, false},
		{"§8 needsUpdate: latest sent, finished and terminal but no deletionTimestamp", entry{pod: parPod(), version: 2, sentVersion: 2, podIsFinished: true,
			status: &v1.PodStatus{Phase: v1.PodSucceeded}, server: keepServer(parPod(parPhase(v1.PodSucceeded)))}, false},
		{"§8 needsUpdate: latest sent, finished mirror pod is never deletable", entry{pod: deleting, version: 2, sentVersion: 2, podIsFinished: true,
			status: &v1.PodStatus{Phase: v1.PodFailed}, server: keepServer(parPod(parDeleting(0), parPhase(v1.PodFailed), parAnnotate(ConfigMirrorAnnotationKey, "")))}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.e.status == nil {
				tc.e.status = &v1.PodStatus{} // a stored entry always has one
			}
			if diff := cmp.Diff(tc.want, tc.e.needsUpdate()); diff != "" {
				t.Errorf("needsUpdate mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParityConditionOwnership: §7, which conditions the kubelet owns in 1.37. An owned type
// comes from the new status (old dropped); any other type from the old one (new dropped).
func TestParityConditionOwnership(t *testing.T) {
	oldC := func(ty v1.PodConditionType) v1.PodCondition { return statustest.Cond(ty, v1.ConditionTrue, "old", t0) }
	newC := func(ty v1.PodConditionType) v1.PodCondition { return statustest.Cond(ty, v1.ConditionTrue, "new", t0) }
	for _, tc := range []struct {
		name  string
		ty    v1.PodConditionType
		owned bool
	}{
		{"§7 ownership: PodScheduled is kubelet-owned", v1.PodScheduled, true},
		{"§7 ownership: Ready is kubelet-owned", v1.PodReady, true},
		{"§7 ownership: Initialized is kubelet-owned", v1.PodInitialized, true},
		{"§7 ownership: ContainersReady is kubelet-owned", v1.ContainersReady, true},
		{"§7 ownership: PodResizeInProgress is kubelet-owned", v1.PodResizeInProgress, true},
		{"§7 ownership: PodResizePending is kubelet-owned", v1.PodResizePending, true},
		{"§7 ownership: PodReadyToStartContainers is kubelet-owned (GA)", v1.PodReadyToStartContainers, true},
		{"§7 ownership: AllContainersRestarting is kubelet-owned (beta, on)", v1.AllContainersRestarting, true},
		{"§7 ownership: DisruptionTarget is shared, kept from old outside a terminal transition", v1.DisruptionTarget, false},
		{"§7 ownership: a readiness gate is pod-owned", "example.com/gate", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{oldC(tc.ty)}}
			nw := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{newC(tc.ty)}}
			want := []v1.PodCondition{oldC(tc.ty)}
			if tc.owned {
				want = []v1.PodCondition{newC(tc.ty)}
			}
			got := MergePodStatusAt(parPod(), old, nw, false, parNow)
			if diff := cmp.Diff(want, got.Conditions); diff != "" {
				t.Errorf("conditions mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.owned, IsKubeletOwnedCondition(tc.ty)); diff != "" {
				t.Errorf("IsKubeletOwnedCondition mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParityMergePodStatus(t *testing.T) {
	gateA, gateB := statustest.Cond("example.com/a", v1.ConditionTrue, "", t0), statustest.Cond("example.com/b", v1.ConditionFalse, "", t0)
	ready, notReady := statustest.Cond(v1.PodReady, v1.ConditionTrue, "", t0), statustest.Cond(v1.PodReady, v1.ConditionFalse, "ContainersNotReady", t0)
	cReady := statustest.Cond(v1.ContainersReady, v1.ConditionTrue, "", t0)
	sched, initd := statustest.Cond(v1.PodScheduled, v1.ConditionTrue, "", t0), statustest.Cond(v1.PodInitialized, v1.ConditionTrue, "", t0)
	dtOld := statustest.Cond(v1.DisruptionTarget, v1.ConditionTrue, "EvictionByEvictionAPI", t0)
	dtNew := statustest.Cond(v1.DisruptionTarget, v1.ConditionTrue, "TerminationByKubelet", t0.Add(time.Minute))
	dtNewFalse := statustest.Cond(v1.DisruptionTarget, v1.ConditionFalse, "TerminationByKubelet", t0.Add(time.Minute))
	withLTT := func(c v1.PodCondition, ltt metav1.Time) v1.PodCondition { c.LastTransitionTime = ltt; return c }
	forced := func(ty v1.PodConditionType, reason string, ltt metav1.Time) v1.PodCondition {
		return v1.PodCondition{Type: ty, Status: v1.ConditionFalse, Reason: reason, ObservedGeneration: 7, LastTransitionTime: ltt}
	}
	claimsOld := []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr("gpu-old")}}
	claimsNew := []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr("gpu-new")}}
	extOld := &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "ext-old"}
	extNew := &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "ext-new"}
	nodeNew := []v1.NodeAllocatableResourceClaimStatus{{ResourceClaimName: "node-new"}}
	nodeOld := []v1.NodeAllocatableResourceClaimStatus{{ResourceClaimName: "node-old"}}
	st := func(ph v1.PodPhase, conds ...v1.PodCondition) v1.PodStatus {
		return v1.PodStatus{Phase: ph, Conditions: conds}
	}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		old, new v1.PodStatus
		couldRun bool
		want     v1.PodStatus
	}{
		// Rule 1: conditions.
		{name: "§7 rule 1: old pod-owned conditions in old order, then new kubelet-owned in new order",
			old:  st(v1.PodRunning, gateB, ready, gateA, dtOld, sched),
			new:  st(v1.PodRunning, initd, statustest.Cond("example.com/c", v1.ConditionTrue, "", t0), notReady, sched),
			want: st(v1.PodRunning, gateB, gateA, dtOld, initd, notReady, sched)},
		{name: "§7 rule 1: old kubelet-owned conditions are dropped entirely",
			old: st(v1.PodRunning, ready, cReady, sched), new: st(v1.PodRunning, initd), want: st(v1.PodRunning, initd)},
		{name: "§7 rule 1: pod-owned conditions only in the new status are dropped",
			old: st(v1.PodRunning), new: st(v1.PodRunning, gateA, sched), want: st(v1.PodRunning, sched)},
		{name: "§7 rule 1: a pod-owned condition in both keeps the old one",
			old: st(v1.PodRunning, gateA), new: st(v1.PodRunning, withLTT(statustest.Cond("example.com/a", v1.ConditionFalse, "x", t0), parTNow)), want: st(v1.PodRunning, gateA)},

		// Rules 2 and 3: transitioning, DisruptionTarget.
		{name: "§7 rule 3: new DisruptionTarget taken when transitioning and nothing runs: appended with now",
			old: st(v1.PodRunning, gateA), new: st(v1.PodFailed, dtNew), want: st(v1.PodFailed, gateA, withLTT(dtNew, parTNow))},
		{name: "§7 rule 3: replaces the old DisruptionTarget in place, keeping its LastTransitionTime when Status is the same",
			old: st(v1.PodRunning, dtOld, gateA), new: st(v1.PodFailed, dtNew), want: st(v1.PodFailed, withLTT(dtNew, parPast), gateA)},
		{name: "§7 rule 3: a DisruptionTarget whose Status changed gets now",
			old: st(v1.PodRunning, dtOld, gateA), new: st(v1.PodFailed, dtNewFalse), want: st(v1.PodFailed, withLTT(dtNewFalse, parTNow), gateA)},
		{name: "§7 rule 3: appended at its place among the new kubelet-owned conditions",
			old: st(v1.PodPending, gateA), new: st(v1.PodSucceeded, sched, dtNew, initd),
			want: st(v1.PodSucceeded, gateA, sched, withLTT(dtNew, parTNow), initd)},
		{name: "§7 rule 3: ignored while containers could still run (old one kept unchanged)",
			old: st(v1.PodRunning, dtOld), new: st(v1.PodFailed, dtNew), couldRun: true, want: st(v1.PodRunning, dtOld)},
		{name: "§7 rule 3: ignored while containers could still run (none before, none after)",
			old: st(v1.PodRunning), new: st(v1.PodFailed, dtNew), couldRun: true, want: st(v1.PodRunning)},
		{name: "§7 rule 2/3: ignored when already terminal (not transitioning)",
			old: st(v1.PodFailed, dtOld), new: st(v1.PodFailed, dtNew), want: st(v1.PodFailed, dtOld)},
		{name: "§7 rule 2/3: ignored when the new phase is not terminal",
			old: st(v1.PodRunning, dtOld), new: st(v1.PodRunning, dtNewFalse), want: st(v1.PodRunning, dtOld)},
		{name: "§7 rule 2: phase \"\" counts as not terminal (transitioning to Succeeded)",
			old: st(""), new: st(v1.PodSucceeded, dtNew), want: st(v1.PodSucceeded, withLTT(dtNew, parTNow))},

		// Rule 4: claim statuses.
		{name: "§7 rule 4: claim statuses come from old even when old has none and new has some",
			old:  v1.PodStatus{Phase: v1.PodRunning},
			new:  v1.PodStatus{Phase: v1.PodRunning, ResourceClaimStatuses: claimsNew, ExtendedResourceClaimStatus: extNew, NodeAllocatableResourceClaimStatuses: nodeNew},
			want: v1.PodStatus{Phase: v1.PodRunning}},
		{name: "§7 rule 4: claim statuses come from old when new has none",
			old:  v1.PodStatus{Phase: v1.PodRunning, ResourceClaimStatuses: claimsOld, ExtendedResourceClaimStatus: extOld, NodeAllocatableResourceClaimStatuses: nodeOld},
			new:  v1.PodStatus{Phase: v1.PodRunning},
			want: v1.PodStatus{Phase: v1.PodRunning, ResourceClaimStatuses: claimsOld, ExtendedResourceClaimStatus: extOld, NodeAllocatableResourceClaimStatuses: nodeOld}},
		{name: "§7 rule 4: claim statuses come from old when both have some",
			old:  v1.PodStatus{Phase: v1.PodRunning, ResourceClaimStatuses: claimsOld, ExtendedResourceClaimStatus: extOld, NodeAllocatableResourceClaimStatuses: nodeOld},
			new:  v1.PodStatus{Phase: v1.PodRunning, ResourceClaimStatuses: claimsNew, ExtendedResourceClaimStatus: extNew, NodeAllocatableResourceClaimStatuses: nodeNew},
			want: v1.PodStatus{Phase: v1.PodRunning, ResourceClaimStatuses: claimsOld, ExtendedResourceClaimStatus: extOld, NodeAllocatableResourceClaimStatuses: nodeOld}},

		// Rule 5: terminal guard.
		{name: "§7 rule 5: transitioning while containers could run reverts Phase, Reason and Message",
			old:      v1.PodStatus{Phase: v1.PodRunning, Reason: "", Message: "old message"},
			new:      v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "The node was low on memory", HostIP: "10.0.0.2"},
			couldRun: true,
			want:     v1.PodStatus{Phase: v1.PodRunning, Reason: "", Message: "old message", HostIP: "10.0.0.2"}},
		{name: "§7 rule 5: Pending reverts to Pending",
			old: v1.PodStatus{Phase: v1.PodPending, Reason: "r"}, new: v1.PodStatus{Phase: v1.PodSucceeded}, couldRun: true,
			want: v1.PodStatus{Phase: v1.PodPending, Reason: "r"}},
		{name: "§7 rule 5: nothing can run: the terminal Phase, Reason and Message are written",
			old:  v1.PodStatus{Phase: v1.PodRunning, Message: "old"},
			new:  v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "new"},
			want: v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "new"}},
		{name: "§7 rule 5: not transitioning: Reason and Message come from new even if containers could run",
			old: v1.PodStatus{Phase: v1.PodRunning, Reason: "a", Message: "a"},
			new: v1.PodStatus{Phase: v1.PodRunning, Reason: "b", Message: "b"}, couldRun: true,
			want: v1.PodStatus{Phase: v1.PodRunning, Reason: "b", Message: "b"}},

		// Rule 6: Ready and ContainersReady on a terminal pod.
		{name: "§7 rule 6: Failed with Ready and ContainersReady True: both False PodFailed, ObservedGeneration = pod.Generation, LTT now, in place",
			old: st(v1.PodRunning, ready, cReady), new: st(v1.PodFailed, ready, sched, cReady),
			want: st(v1.PodFailed, forced(v1.PodReady, ReasonPodFailed, parTNow), sched, forced(v1.ContainersReady, ReasonPodFailed, parTNow))},
		{name: "§7 rule 6: Succeeded gives PodCompleted",
			old: st(v1.PodRunning), new: st(v1.PodSucceeded, cReady, ready),
			want: st(v1.PodSucceeded, forced(v1.ContainersReady, ReasonPodCompleted, parTNow), forced(v1.PodReady, ReasonPodCompleted, parTNow))},
		{name: "§7 rule 6: only ContainersReady True: Ready (already False) keeps its LTT, loses its message, gets the reason",
			old:  st(v1.PodRunning),
			new:  st(v1.PodFailed, func() v1.PodCondition { c := notReady; c.Message = "containers with unready status: [a]"; return c }(), cReady),
			want: st(v1.PodFailed, forced(v1.PodReady, ReasonPodFailed, parPast), forced(v1.ContainersReady, ReasonPodFailed, parTNow))},
		{name: "§7 rule 6: Ready is replaced in place, a missing ContainersReady is appended",
			old: st(v1.PodRunning), new: st(v1.PodFailed, ready),
			want: st(v1.PodFailed, forced(v1.PodReady, ReasonPodFailed, parTNow), forced(v1.ContainersReady, ReasonPodFailed, parTNow))},
		{name: "§7 rule 6: ContainersReady is replaced in place, a missing Ready is appended after it",
			old: st(v1.PodRunning), new: st(v1.PodSucceeded, cReady),
			want: st(v1.PodSucceeded, forced(v1.ContainersReady, ReasonPodCompleted, parTNow), forced(v1.PodReady, ReasonPodCompleted, parTNow))},
		{name: "§7 rule 6: neither True: no condition touched (nothing appended, reasons kept)",
			old: st(v1.PodRunning), new: st(v1.PodFailed, notReady),
			want: st(v1.PodFailed, notReady)},
		{name: "§7 rule 6: applies when already terminal",
			old: st(v1.PodSucceeded), new: st(v1.PodSucceeded, ready, cReady),
			want: st(v1.PodSucceeded, forced(v1.PodReady, ReasonPodCompleted, parTNow), forced(v1.ContainersReady, ReasonPodCompleted, parTNow))},
		{name: "§7 rule 6: applies when already terminal even if containers could run",
			old: st(v1.PodFailed), new: st(v1.PodFailed, ready, cReady), couldRun: true,
			want: st(v1.PodFailed, forced(v1.PodReady, ReasonPodFailed, parTNow), forced(v1.ContainersReady, ReasonPodFailed, parTNow))},
		{name: "§7 rule 6: not applied when rule 5 reverted the phase (the resulting phase is not terminal)",
			old: st(v1.PodRunning), new: st(v1.PodFailed, ready, cReady), couldRun: true,
			want: st(v1.PodRunning, ready, cReady)},
		{name: "§7 rule 6: ObservedGeneration is the pod's Generation, whatever the condition had",
			pod: parPod(func(p *v1.Pod) { p.Generation = 42 }),
			old: st(v1.PodRunning), new: st(v1.PodFailed, func() v1.PodCondition { c := ready; c.ObservedGeneration = 3; return c }()),
			want: st(v1.PodFailed,
				v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReasonPodFailed, ObservedGeneration: 42, LastTransitionTime: parTNow},
				v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ReasonPodFailed, ObservedGeneration: 42, LastTransitionTime: parTNow})},

		// DESIGN.md: the terminal phase is kept (podlife's guard; rule 8 has none).
		{name: "DESIGN terminal-phase-kept: old Succeeded, new Running stays Succeeded",
			old: st(v1.PodSucceeded), new: st(v1.PodRunning), want: st(v1.PodSucceeded)},
		{name: "DESIGN terminal-phase-kept: old Succeeded, new Failed stays Succeeded",
			old: st(v1.PodSucceeded), new: st(v1.PodFailed), want: st(v1.PodSucceeded)},
		{name: "DESIGN terminal-phase-kept: old Failed, new Pending stays Failed, even if containers could run",
			old: st(v1.PodFailed), new: st(v1.PodPending), couldRun: true, want: st(v1.PodFailed)},
		{name: "DESIGN terminal-phase-kept: only the phase is kept (Reason and Message come from new)",
			old:  v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "old"},
			new:  v1.PodStatus{Phase: v1.PodRunning, Reason: "", Message: "new"},
			want: v1.PodStatus{Phase: v1.PodFailed, Reason: "", Message: "new"}},
		{name: "DESIGN terminal-phase-kept + §7 rule 6: the kept phase decides the forced Ready (new Running with Ready True)",
			old: st(v1.PodFailed), new: st(v1.PodRunning, ready),
			want: st(v1.PodFailed, forced(v1.PodReady, ReasonPodFailed, parTNow), forced(v1.ContainersReady, ReasonPodFailed, parTNow))},
		{name: "DESIGN terminal-phase-kept + §7 rule 6: the kept phase names the reason (old Succeeded, new Failed: PodCompleted)",
			old: st(v1.PodSucceeded), new: st(v1.PodFailed, ready, cReady),
			want: st(v1.PodSucceeded, forced(v1.PodReady, ReasonPodCompleted, parTNow), forced(v1.ContainersReady, ReasonPodCompleted, parTNow))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod
			if pod == nil {
				pod = parPod()
			}
			got := MergePodStatusAt(pod, tc.old, tc.new, tc.couldRun, parNow)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("MergePodStatusAt mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParityMergeEverythingElseFromNew: §7 rule 7, every other field comes from new.
func TestParityMergeEverythingElseFromNew(t *testing.T) {
	mk := func(tag string, gen int64) v1.PodStatus {
		ts := metav1.NewTime(t0.Add(time.Duration(gen) * time.Hour))
		return v1.PodStatus{
			Phase: v1.PodRunning, Message: "m-" + tag, Reason: "r-" + tag, NominatedNodeName: "n-" + tag,
			HostIP: "h-" + tag, HostIPs: []v1.HostIP{{IP: "h-" + tag}}, PodIP: "p-" + tag, PodIPs: []v1.PodIP{{IP: "p-" + tag}},
			StartTime: &ts, QOSClass: v1.PodQOSClass("q-" + tag), ObservedGeneration: gen, Resize: v1.PodResizeStatus("z-" + tag),
			ContainerStatuses:          []v1.ContainerStatus{{Name: "c-" + tag}},
			InitContainerStatuses:      []v1.ContainerStatus{{Name: "i-" + tag}},
			EphemeralContainerStatuses: []v1.ContainerStatus{{Name: "e-" + tag}},
		}
	}
	t.Run("§7 rule 7: HostIP(s), PodIP(s), StartTime, QOSClass, container statuses, ObservedGeneration, Resize... come from new", func(t *testing.T) {
		got := MergePodStatusAt(parPod(), mk("old", 1), mk("new", 2), false, parNow)
		if diff := cmp.Diff(mk("new", 2), got); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("§7 rule 7: a field the new status leaves empty stays empty", func(t *testing.T) {
		got := MergePodStatusAt(parPod(), mk("old", 1), v1.PodStatus{Phase: v1.PodRunning}, false, parNow)
		if diff := cmp.Diff(v1.PodStatus{Phase: v1.PodRunning}, got); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})
}

// TestParityMergeInputs: §7, the inputs are not modified (podlife goes further than the
// kubelet, which rewrites the new DisruptionTarget's time in the caller's array) and the
// result shares no memory with them; MergePodStatus uses the current time; a nil pod does
// not panic.
func TestParityMergeInputs(t *testing.T) {
	mkOld := func() v1.PodStatus {
		return v1.PodStatus{Phase: v1.PodRunning, ResourceClaimStatuses: []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr("x")}},
			Conditions: []v1.PodCondition{statustest.Cond(v1.DisruptionTarget, v1.ConditionTrue, "a", t0), statustest.Cond("example.com/g", v1.ConditionTrue, "", t0)}}
	}
	mkNew := func() v1.PodStatus {
		return v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{running("a")},
			Conditions: []v1.PodCondition{statustest.Cond(v1.PodReady, v1.ConditionTrue, "", t0), statustest.Cond(v1.DisruptionTarget, v1.ConditionFalse, "b", t0)}}
	}
	t.Run("§7: old, new and pod are not modified; the result shares no memory with them", func(t *testing.T) {
		pod, old, nw := parPod(), mkOld(), mkNew()
		got := MergePodStatusAt(pod, old, nw, false, parNow)
		if diff := cmp.Diff(mkOld(), old); diff != "" {
			t.Errorf("old modified (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(mkNew(), nw); diff != "" {
			t.Errorf("new modified (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(parPod(), pod); diff != "" {
			t.Errorf("pod modified (-want +got):\n%s", diff)
		}
		for i := range got.Conditions {
			got.Conditions[i].Reason = "scribbled"
		}
		got.ContainerStatuses[0].Name = "scribbled"
		*got.ResourceClaimStatuses[0].ResourceClaimName = "scribbled"
		if diff := cmp.Diff(mkOld(), old); diff != "" {
			t.Errorf("old shares memory with the result (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(mkNew(), nw); diff != "" {
			t.Errorf("new shares memory with the result (-want +got):\n%s", diff)
		}
	})
	t.Run("§7: MergePodStatus stamps changed conditions with the current time", func(t *testing.T) {
		wall := clock.RealClock{}
		before := wall.Now().Truncate(time.Second)
		got := MergePodStatus(parPod(), v1.PodStatus{Phase: v1.PodRunning}, mkNew(), false)
		after := wall.Now().Add(time.Second)
		i := findCondition(got.Conditions, v1.DisruptionTarget)
		if i < 0 {
			t.Fatalf("no DisruptionTarget in %v", got.Conditions)
		}
		if at := got.Conditions[i].LastTransitionTime.Time; at.Before(before) || at.After(after) {
			t.Errorf("LastTransitionTime = %v, want between %v and %v", at, before, after)
		}
	})
	t.Run("§7 (podlife): a nil pod does not panic; ObservedGeneration is then 0", func(t *testing.T) {
		got := MergePodStatusAt(nil, v1.PodStatus{}, v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{statustest.Cond(v1.PodReady, v1.ConditionTrue, "", t0)}}, false, parNow)
		want := []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReasonPodFailed, LastTransitionTime: parTNow},
			{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: ReasonPodFailed, LastTransitionTime: parTNow},
		}
		if diff := cmp.Diff(want, got.Conditions); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})
}

// The pinned API (DESIGN.md): a changed signature fails to compile here.
var (
	_ func(*v1.Pod, v1.PodStatus, bool) bool                       = CanBeDeleted
	_ func(*v1.Pod, v1.PodStatus, v1.PodStatus, bool) v1.PodStatus = MergePodStatus
)

// docMerge is KUBELET-BEHAVIOR.md §7 plus DESIGN.md's terminal-phase decision, written out
// step by step from the text as a reference for FuzzParityMergePodStatus. It is deliberately
// naive (copies everything, searches linearly).
func docMerge(pod *v1.Pod, old, nw v1.PodStatus, couldRun bool, now time.Time) v1.PodStatus {
	owned := map[v1.PodConditionType]bool{
		v1.PodScheduled: true, v1.PodReady: true, v1.PodInitialized: true, v1.ContainersReady: true,
		v1.PodResizeInProgress: true, v1.PodResizePending: true, v1.PodReadyToStartContainers: true,
		v1.AllContainersRestarting: true,
	}
	terminal := func(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }
	find := func(cs []v1.PodCondition, t v1.PodConditionType) int {
		for i := range cs {
			if cs[i].Type == t {
				return i
			}
		}
		return -1
	}
	out := *nw.DeepCopy()
	old = *old.DeepCopy()
	// Rules 1-3.
	transitioning := !terminal(old.Phase) && terminal(nw.Phase)
	var conds []v1.PodCondition
	for _, c := range old.Conditions {
		if !owned[c.Type] {
			conds = append(conds, c)
		}
	}
	for _, c := range out.Conditions {
		switch {
		case owned[c.Type]:
			conds = append(conds, c)
		case c.Type == v1.DisruptionTarget && transitioning && !couldRun:
			c.LastTransitionTime = metav1.NewTime(now)
			if j := find(old.Conditions, c.Type); j >= 0 && old.Conditions[j].Status == c.Status {
				c.LastTransitionTime = old.Conditions[j].LastTransitionTime
			}
			if j := find(conds, c.Type); j >= 0 {
				conds[j] = c
			} else {
				conds = append(conds, c)
			}
		}
	}
	out.Conditions = conds
	// Rule 4.
	out.ResourceClaimStatuses = old.ResourceClaimStatuses
	out.ExtendedResourceClaimStatus = old.ExtendedResourceClaimStatus
	out.NodeAllocatableResourceClaimStatuses = old.NodeAllocatableResourceClaimStatuses
	// Rule 5, then DESIGN.md's terminal phase.
	if transitioning && couldRun {
		out.Phase, out.Reason, out.Message = old.Phase, old.Reason, old.Message
	}
	if terminal(old.Phase) {
		out.Phase = old.Phase
	}
	// Rule 6.
	isTrue := func(t v1.PodConditionType) bool {
		i := find(out.Conditions, t)
		return i >= 0 && out.Conditions[i].Status == v1.ConditionTrue
	}
	if terminal(out.Phase) && (isTrue(v1.PodReady) || isTrue(v1.ContainersReady)) {
		reason := "PodCompleted"
		if out.Phase == v1.PodFailed {
			reason = "PodFailed"
		}
		var gen int64
		if pod != nil {
			gen = pod.Generation
		}
		for _, t := range []v1.PodConditionType{v1.ContainersReady, v1.PodReady} {
			c := v1.PodCondition{Type: t, Status: v1.ConditionFalse, Reason: reason, ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(now)}
			if i := find(out.Conditions, t); i >= 0 {
				if out.Conditions[i].Status == c.Status {
					c.LastTransitionTime = out.Conditions[i].LastTransitionTime
				}
				out.Conditions[i] = c
			} else {
				out.Conditions = append(out.Conditions, c)
			}
		}
	}
	return out
}

// FuzzParityMergePodStatus checks MergePodStatusAt against docMerge on random statuses.
func FuzzParityMergePodStatus(f *testing.F) {
	f.Add(uint64(1), uint64(2), false, int64(0))
	f.Add(uint64(7), uint64(99), true, int64(3))
	f.Add(uint64(0xdead), uint64(0xbeef), false, int64(12))
	f.Fuzz(func(t *testing.T, oldSeed, newSeed uint64, couldRun bool, gen int64) {
		old, nw := statustest.RandomStatus(oldSeed), statustest.RandomStatus(newSeed)
		if newSeed%5 == 0 { // make terminal transitions frequent
			nw.Phase = v1.PodFailed
		}
		pod := parPod(func(p *v1.Pod) { p.Generation = gen })
		if oldSeed%7 == 0 {
			pod = nil
		}
		want := docMerge(pod, old, nw, couldRun, parNow)
		got := MergePodStatusAt(pod, old, nw, couldRun, parNow)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("MergePodStatusAt differs from §7 (-doc +got):\n%s", diff)
		}
	})
}
