package statusmgr

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/podlife/podlife/internal/seedpod"
	"github.com/podlife/podlife/statusmgr/internal/patch"
	"github.com/podlife/podlife/statusmgr/internal/statustest"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestStatusPatch(t *testing.T) {
	t1 := t0.Add(time.Minute)
	running := v1.PodStatus{
		Phase: v1.PodRunning,
		Conditions: []v1.PodCondition{
			statustest.Cond(v1.PodInitialized, v1.ConditionTrue, "", t0),
			statustest.Cond(v1.PodReady, v1.ConditionTrue, "", t0),
			statustest.Cond(v1.ContainersReady, v1.ConditionTrue, "", t0),
			statustest.Cond(v1.PodScheduled, v1.ConditionTrue, "", t0),
		},
		HostIP:  "10.0.0.1",
		HostIPs: []v1.HostIP{{IP: "10.0.0.1"}},
		PodIP:   "10.1.0.1",
		PodIPs:  []v1.PodIP{{IP: "10.1.0.1"}, {IP: "fd00::1"}},
		ContainerStatuses: []v1.ContainerStatus{{
			Name: "c", Ready: true, Image: "busybox",
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}},
		}},
		StartTime: &metav1.Time{Time: t0},
	}
	mod := func(f func(s *v1.PodStatus)) v1.PodStatus {
		s := *running.DeepCopy()
		f(&s)
		return s
	}
	tests := []struct {
		name      string
		old, new  v1.PodStatus
		unchanged bool
		want      string // exact patch; "" = not checked
	}{
		{name: "equal", old: running, new: running, unchanged: true,
			want: `{"metadata":{"uid":"u1"}}`},
		{name: "phase and reason", old: running, new: mod(func(s *v1.PodStatus) { s.Phase = v1.PodFailed; s.Reason = "Evicted" }),
			want: `{"metadata":{"uid":"u1"},"status":{"phase":"Failed","reason":"Evicted"}}`},
		{name: "field cleared is null", old: running, new: mod(func(s *v1.PodStatus) { s.PodIP = ""; s.PodIPs = nil }),
			want: `{"metadata":{"uid":"u1"},"status":{"podIP":null,"podIPs":null}}`},
		{name: "merge-keyed list replaced", old: running, new: mod(func(s *v1.PodStatus) { s.PodIPs = []v1.PodIP{{IP: "fd00::1"}} }),
			want: `{"metadata":{"uid":"u1"},"status":{"podIPs":[{"$patch":"replace"},{"ip":"fd00::1"}]}}`},
		{name: "one condition changed in place", old: running, new: mod(func(s *v1.PodStatus) {
			s.Conditions[1] = statustest.Cond(v1.PodReady, v1.ConditionFalse, "ContainersNotReady", t1)
		}),
			want: `{"metadata":{"uid":"u1"},"status":{"conditions":[{"type":"Ready","status":"False","lastTransitionTime":"2026-01-02T03:05:05Z","reason":"ContainersNotReady"}]}}`},
		{name: "condition message cleared", old: mod(func(s *v1.PodStatus) { s.Conditions[0].Message = "m" }), new: running,
			want: `{"metadata":{"uid":"u1"},"status":{"conditions":[{"type":"Initialized","message":null}]}}`},
		{name: "condition appended", old: running, new: mod(func(s *v1.PodStatus) {
			s.Conditions = append(s.Conditions, statustest.Cond(v1.DisruptionTarget, v1.ConditionTrue, "x", t1))
		})},
		{name: "condition deleted", old: running, new: mod(func(s *v1.PodStatus) { s.Conditions = s.Conditions[1:] }),
			want: `{"metadata":{"uid":"u1"},"status":{"conditions":[{"$patch":"delete","type":"Initialized"}]}}`},
		{name: "conditions reordered", old: running, new: mod(func(s *v1.PodStatus) {
			s.Conditions[0], s.Conditions[3] = s.Conditions[3], s.Conditions[0]
		})},
		{name: "new condition in the middle", old: running, new: mod(func(s *v1.PodStatus) {
			s.Conditions = append([]v1.PodCondition{statustest.Cond("custom", v1.ConditionTrue, "", t1)}, s.Conditions...)
		})},
		{name: "all conditions gone", old: running, new: mod(func(s *v1.PodStatus) { s.Conditions = nil })},
		{name: "from empty", old: v1.PodStatus{}, new: running},
		{name: "to empty", old: running, new: v1.PodStatus{}},
		{name: "container terminated", old: running, new: mod(func(s *v1.PodStatus) {
			s.ContainerStatuses[0].Ready = false
			s.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137, Reason: ReasonContainerStatusUnknown}}
		})},
		{name: "object field replaced", old: mod(func(s *v1.PodStatus) {
			s.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "a", RequestMappings: []v1.ContainerExtendedResourceRequest{{ContainerName: "c", ResourceName: "r", RequestName: "q"}}}
		}), new: mod(func(s *v1.PodStatus) {
			s.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "b"}
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			patch, unchanged, err := statusPatch("u1", &tc.old, &tc.new)
			if err != nil {
				t.Fatal(err)
			}
			if unchanged != tc.unchanged {
				t.Errorf("unchanged = %v, want %v", unchanged, tc.unchanged)
			}
			if tc.want != "" {
				if diff := cmp.Diff(tc.want, string(patch)); diff != "" {
					t.Errorf("patch (-want +got):\n%s", diff)
				}
			}
			got := statustest.ApplyPatch(t, "u1", tc.old, patch)
			if !equality.Semantic.DeepEqual(got.Status, statustest.RoundTrip(t, tc.new)) {
				t.Errorf("patched status differs (-want +got):\n%s\npatch: %s", cmp.Diff(statustest.RoundTrip(t, tc.new), got.Status), patch)
			}
		})
	}
}

func TestStatusPatchKeepsConditionsOfOtherClients(t *testing.T) {
	old := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
		statustest.Cond(v1.PodScheduled, v1.ConditionTrue, "", t0),
		statustest.Cond(v1.PodReady, v1.ConditionFalse, "ContainersNotReady", t0),
	}}
	nw := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
		statustest.Cond(v1.PodScheduled, v1.ConditionTrue, "", t0),
		statustest.Cond(v1.PodReady, v1.ConditionTrue, "", t0.Add(time.Minute)),
		statustest.Cond(v1.ContainersReady, v1.ConditionTrue, "", t0.Add(time.Minute)),
	}}
	patch, _, err := statusPatch("u1", &old, &nw)
	if err != nil {
		t.Fatal(err)
	}
	// Since old was read, another client added its own condition on the server.
	gate := statustest.Cond("example.com/gate", v1.ConditionTrue, "", t0)
	server := *old.DeepCopy()
	server.Conditions = append(server.Conditions, gate)
	got := statustest.ApplyPatch(t, "u1", server, patch)
	if i := findCondition(got.Status.Conditions, gate.Type); i < 0 {
		t.Fatalf("other client's condition lost; patch %s", patch)
	}
	want := statustest.RoundTrip(t, nw)
	want.Conditions = append(want.Conditions, statustest.RoundTrip(t, v1.PodStatus{Conditions: []v1.PodCondition{gate}}).Conditions...)
	for _, c := range want.Conditions {
		i := findCondition(got.Status.Conditions, c.Type)
		if i < 0 || !equality.Semantic.DeepEqual(got.Status.Conditions[i], c) {
			t.Errorf("condition %s: got %+v", c.Type, got.Status.Conditions)
		}
	}
}

func TestStatusPatchNil(t *testing.T) {
	if _, _, err := statusPatch("u", nil, &v1.PodStatus{}); err == nil {
		t.Error("nil old status accepted")
	}
}

// FuzzStatusPatch checks the hand-built patch against apimachinery's strategic merge: applied
// to the server's status it must give the new status exactly, and keep a condition another
// client added meanwhile. The statuses are random (source even) or two of W4's realistic
// statuses of one pod (the seed pod's, a step's or the terminal one; source odd).
func FuzzStatusPatch(f *testing.F) {
	f.Add(uint64(0), uint64(1), false, uint8(0))
	f.Add(uint64(7), uint64(7), true, uint8(0))
	f.Add(uint64(0xdead), uint64(0xbeef), true, uint8(0))
	f.Add(uint64(3), uint64(0x0114), false, uint8(1))
	f.Add(uint64(5), uint64(0x1300), true, uint8(1))
	f.Fuzz(func(t *testing.T, oldSeed, newSeed uint64, otherClient bool, source uint8) {
		old, nw := statustest.RoundTrip(t, statustest.RandomStatus(oldSeed)), statustest.RoundTrip(t, statustest.RandomStatus(newSeed))
		if source%2 == 1 {
			n := int(oldSeed % 1000)
			steps := append([]v1.PodStatus{statustest.RoundTrip(t, seedpod.Realistic(1, n, t0).Pod.Status)}, realisticSteps(t, n)...)
			old, nw = steps[newSeed%uint64(len(steps))], steps[newSeed>>8%uint64(len(steps))]
		}
		patch, unchanged, err := statusPatch("uid-1", &old, &nw)
		if err != nil {
			t.Fatal(err)
		}
		if unchanged != equality.Semantic.DeepEqual(old, nw) {
			t.Fatalf("unchanged = %v for\nold %+v\nnew %+v", unchanged, old, nw)
		}
		server := *old.DeepCopy()
		extra := statustest.Cond("example.com/other-client", v1.ConditionTrue, "", t0)
		if otherClient {
			server.Conditions = append(server.Conditions, extra)
		}
		got := statustest.ApplyPatch(t, "uid-1", server, patch).Status
		if otherClient {
			i := findCondition(got.Conditions, extra.Type)
			if i < 0 {
				t.Fatalf("other client's condition lost; patch %s", patch)
			}
			got.Conditions = append(got.Conditions[:i:i], got.Conditions[i+1:]...)
			if len(got.Conditions) == 0 {
				got.Conditions = nil
			}
		}
		if !equality.Semantic.DeepEqual(got, nw) {
			t.Fatalf("patched status differs (-want +got):\n%s\npatch: %s", cmp.Diff(nw, got), patch)
		}
	})
}

// The patch of the terminal status of BENCHMARKS.md's seed pod, built by StatusPatch and,
// for comparison, the way the kubelet builds it (two JSON encodings of the pod and
// apimachinery's two-way strategic merge).
func benchStatuses() (old, nw v1.PodStatus) {
	old = v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
		statustest.Cond(v1.PodInitialized, v1.ConditionTrue, "", t0), statustest.Cond(v1.PodReady, v1.ConditionTrue, "", t0),
		statustest.Cond(v1.ContainersReady, v1.ConditionTrue, "", t0), statustest.Cond(v1.PodScheduled, v1.ConditionTrue, "", t0)},
		HostIP: "10.0.0.1", PodIP: "10.244.0.2", StartTime: &metav1.Time{Time: t0},
		ContainerStatuses: []v1.ContainerStatus{{Name: "busybox", Ready: true, Image: "busybox",
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}}}}
	nw = *old.DeepCopy()
	nw.Phase = v1.PodFailed
	nw.Conditions[1] = statustest.Cond(v1.PodReady, v1.ConditionFalse, ReasonPodFailed, t0.Add(time.Hour))
	nw.Conditions[2] = statustest.Cond(v1.ContainersReady, v1.ConditionFalse, ReasonPodFailed, t0.Add(time.Hour))
	nw.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		ExitCode: 137, Reason: ReasonContainerStatusUnknown, Message: MessageContainerNotFound}}
	return old, nw
}

func BenchmarkStatusPatch(b *testing.B) {
	old, nw := benchStatuses()
	b.ReportAllocs()
	var n int
	for range b.N {
		p, _, err := statusPatch("uid-1", &old, &nw)
		if err != nil {
			b.Fatal(err)
		}
		n = len(p)
	}
	b.ReportMetric(float64(n), "patch-bytes")
}

func BenchmarkPatchTheKubeletsWay(b *testing.B) {
	old, nw := benchStatuses()
	b.ReportAllocs()
	var n int
	for range b.N {
		o, err := json.Marshal(v1.Pod{Status: old})
		if err != nil {
			b.Fatal(err)
		}
		m, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}, Status: nw})
		if err != nil {
			b.Fatal(err)
		}
		p, err := strategicpatch.CreateTwoWayMergePatch(o, m, v1.Pod{})
		if err != nil {
			b.Fatal(err)
		}
		n = len(p)
	}
	b.ReportMetric(float64(n), "patch-bytes")
}

// A patch is the caller's: building the next one (in the reused scratch buffer) does not
// change it.
func TestStatusPatchResultIsNotReused(t *testing.T) {
	old, nw := benchStatuses()
	first, _, err := statusPatch("uid-1", &old, &nw)
	if err != nil {
		t.Fatal(err)
	}
	want := string(first)
	for range 10 {
		if _, _, err := statusPatch("uid-2", &nw, &old); err != nil {
			t.Fatal(err)
		}
	}
	if string(first) != want {
		t.Errorf("patch changed after later patches:\n got %s\nwant %s", first, want)
	}
}

// BenchmarkStatusPatchReference is BenchmarkStatusPatch on the reflective reference, for
// comparison in one run.
func BenchmarkStatusPatchReference(b *testing.B) {
	old, nw := benchStatuses()
	b.ReportAllocs()
	var n int
	for range b.N {
		p, _, err := patch.Reference("uid-1", &old, &nw)
		if err != nil {
			b.Fatal(err)
		}
		n = len(p)
	}
	b.ReportMetric(float64(n), "patch-bytes")
}
