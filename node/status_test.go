package node_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

var (
	hostIPs       = []string{"127.0.0.1", "::1"}
	wantHostIPs   = []v1.HostIP{{IP: "127.0.0.1"}, {IP: "::1"}}
	sandboxReady  = []*pleg.SandboxStatus{{ID: "sb", State: pleg.SandboxReady, IP: "10.0.0.10"}}
	readyToStart  = v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue}
	noSandbox     = v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse, Reason: node.ReasonPodSandboxNotReady, Message: "no pod sandbox exists"}
	initialized   = v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	scheduled     = v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue}
	unreadyAB     = "containers with unready status: [containerA containerB]"
	notReadyAB    = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: node.ReasonContainersNotReady, Message: unreadyAB}, {Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: node.ReasonContainersNotReady, Message: unreadyAB}}
	completedCond = []v1.PodCondition{
		{Type: v1.PodInitialized, Status: v1.ConditionTrue, Reason: node.ReasonPodCompleted},
		{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: node.ReasonPodCompleted},
		{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: node.ReasonPodCompleted},
		scheduled,
	}
)

func conds(cs ...any) []v1.PodCondition {
	var out []v1.PodCondition
	for _, c := range cs {
		switch c := c.(type) {
		case v1.PodCondition:
			out = append(out, c)
		case []v1.PodCondition:
			out = append(out, c...)
		}
	}
	return out
}

// TestGenerateAPIPodStatus ports the kubelet's Test_generateAPIPodStatus (the cases
// not about pod-level resources, which podlife does not report). The kubelet test
// runs with a fake prober that marks every container ready; here the real prober's
// rules apply, so a container that is not running is not ready and ContainersReady
// and Ready say so (marked "prober:" below). Container IDs carry "podlife://".
func TestGenerateAPIPodStatus(t *testing.T) {
	specAB := v1.PodSpec{NodeName: "machine", Containers: []v1.Container{{Name: "containerA"}, {Name: "containerB"}}, RestartPolicy: v1.RestartPolicyAlways}
	now := metav1.Now()
	deleted := metav1.ObjectMeta{Name: "my-pod", DeletionTimestamp: &now}
	disruption := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, LastTransitionTime: now.Rfc3339Copy()}
	bothRunning := sl(runningSt("containerA"), runningSt("containerB"))
	runningAt := func(name, id string, sec int64) v1.ContainerStatus {
		st := probed(withID(runningSt(name), id))
		st.State.Running.StartedAt = metav1.NewTime(time.Unix(sec, 0).UTC())
		return st
	}
	rc := func(name, id string, sec int64) *pleg.ContainerStatus {
		return &pleg.ContainerStatus{ID: id, Name: name, StartedAt: time.Unix(sec, 0).UTC(), State: pleg.ContainerStateRunning}
	}

	cases := []struct {
		name     string
		pod      *v1.Pod
		rs       *pleg.PodStatus
		old      v1.PodStatus
		terminal bool
		want     v1.PodStatus
	}{
		{
			name: "pod disruption condition is copied over and the phase is set to failed when deleted",
			pod: &v1.Pod{ObjectMeta: deleted, Spec: specAB, Status: v1.PodStatus{
				ContainerStatuses: bothRunning, Conditions: []v1.PodCondition{disruption}}},
			rs:       &pleg.PodStatus{SandboxStatuses: sandboxReady},
			old:      v1.PodStatus{ContainerStatuses: bothRunning, Conditions: []v1.PodCondition{disruption}},
			terminal: true,
			want: v1.PodStatus{
				Phase: v1.PodFailed, HostIP: "127.0.0.1", HostIPs: wantHostIPs, QOSClass: v1.PodQOSBestEffort,
				Conditions: conds(disruption, readyToStart, initialized,
					v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: node.ReasonPodFailed},
					v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: node.ReasonPodFailed}, scheduled),
				ContainerStatuses: sl(probed(waitingUnknownLast("containerA", 0)), probed(waitingUnknownLast("containerB", 0))),
			},
		},
		{
			name: "current status ready, with previous statuses and deletion",
			pod:  &v1.Pod{ObjectMeta: deleted, Spec: specAB, Status: v1.PodStatus{ContainerStatuses: bothRunning}},
			rs:   &pleg.PodStatus{SandboxStatuses: sandboxReady},
			old:  v1.PodStatus{ContainerStatuses: bothRunning},
			want: v1.PodStatus{
				Phase: v1.PodRunning, HostIP: "127.0.0.1", HostIPs: wantHostIPs, QOSClass: v1.PodQOSBestEffort,
				Conditions:        conds(readyToStart, initialized, notReadyAB, scheduled), // prober: not ready
				ContainerStatuses: sl(probed(waitingUnknownLast("containerA", 0)), probed(waitingUnknownLast("containerB", 0))),
			},
		},
		{
			name: "current status ready, with previous statuses and no deletion",
			pod:  &v1.Pod{Spec: specAB, Status: v1.PodStatus{ContainerStatuses: bothRunning}},
			rs:   &pleg.PodStatus{SandboxStatuses: sandboxReady},
			old:  v1.PodStatus{ContainerStatuses: bothRunning},
			want: v1.PodStatus{
				Phase: v1.PodRunning, HostIP: "127.0.0.1", HostIPs: wantHostIPs, QOSClass: v1.PodQOSBestEffort,
				Conditions:        conds(readyToStart, initialized, notReadyAB, scheduled), // prober: not ready
				ContainerStatuses: sl(probed(waitingUnknownLast("containerA", 1)), probed(waitingUnknownLast("containerB", 1))),
			},
		},
		{
			name: "terminal phase cannot be changed (apiserver previous is succeeded)",
			pod:  &v1.Pod{Spec: specAB, Status: v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: bothRunning}},
			rs:   &pleg.PodStatus{},
			old:  v1.PodStatus{ContainerStatuses: bothRunning},
			want: v1.PodStatus{
				Phase: v1.PodSucceeded, HostIP: "127.0.0.1", HostIPs: wantHostIPs, QOSClass: v1.PodQOSBestEffort,
				Conditions:        conds(noSandbox, completedCond),
				ContainerStatuses: sl(probed(waitingUnknownLast("containerA", 1)), probed(waitingUnknownLast("containerB", 1))),
			},
		},
		{
			name: "terminal phase from previous status must remain terminal, restartAlways",
			pod:  &v1.Pod{Spec: specAB, Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: bothRunning}},
			rs:   &pleg.PodStatus{},
			old:  v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: bothRunning, Reason: "Test", Message: "test"},
			want: v1.PodStatus{
				Phase: v1.PodSucceeded, HostIP: "127.0.0.1", HostIPs: wantHostIPs, QOSClass: v1.PodQOSBestEffort,
				Conditions:        conds(noSandbox, completedCond),
				ContainerStatuses: sl(probed(waitingUnknownLast("containerA", 1)), probed(waitingUnknownLast("containerB", 1))),
				Reason:            "Test", Message: "test",
			},
		},
		{
			name: "terminal phase from previous status must remain terminal, restartNever",
			pod: &v1.Pod{Spec: v1.PodSpec{NodeName: "machine", Containers: specAB.Containers, RestartPolicy: v1.RestartPolicyNever},
				Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: bothRunning}},
			rs:  &pleg.PodStatus{},
			old: v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: sl(succeededSt("containerA"), succeededSt("containerB")), Reason: "Test", Message: "test"},
			want: v1.PodStatus{
				Phase: v1.PodSucceeded, HostIP: "127.0.0.1", HostIPs: wantHostIPs, QOSClass: v1.PodQOSBestEffort,
				Conditions:        conds(noSandbox, completedCond),
				ContainerStatuses: sl(probed(succeededSt("containerA")), probed(succeededSt("containerB"))), // prober: not ready
				Reason:            "Test", Message: "test",
			},
		},
		{
			name: "running can revert to pending",
			pod:  &v1.Pod{Spec: specAB, Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: bothRunning}},
			rs:   &pleg.PodStatus{SandboxStatuses: sandboxReady},
			old:  v1.PodStatus{ContainerStatuses: sl(waitingSt("containerA"), waitingSt("containerB"))},
			want: v1.PodStatus{
				Phase: v1.PodPending, HostIP: "127.0.0.1", HostIPs: wantHostIPs, QOSClass: v1.PodQOSBestEffort,
				Conditions: conds(readyToStart, initialized, notReadyAB, scheduled), // prober: not ready
				ContainerStatuses: sl(probed(waitingReasonSt("containerA", node.ReasonContainerCreating)),
					probed(waitingReasonSt("containerB", node.ReasonContainerCreating))),
			},
		},
		{
			name: "reason and message are preserved when phase doesn't change",
			pod:  &v1.Pod{Spec: specAB, Status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: sl(waitingSt("containerA"), waitingSt("containerB"))}},
			rs:   &pleg.PodStatus{SandboxStatuses: sandboxReady, ContainerStatuses: []*pleg.ContainerStatus{rc("containerB", "foo", 1)}},
			old:  v1.PodStatus{Phase: v1.PodPending, Reason: "Test", Message: "test", ContainerStatuses: sl(waitingSt("containerA"), runningSt("containerB"))},
			want: v1.PodStatus{
				Phase: v1.PodPending, Reason: "Test", Message: "test", HostIP: "127.0.0.1", HostIPs: wantHostIPs, QOSClass: v1.PodQOSBestEffort,
				Conditions: conds(readyToStart, initialized, // prober: containerA is not ready
					v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: node.ReasonContainersNotReady, Message: "containers with unready status: [containerA]"},
					v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: node.ReasonContainersNotReady, Message: "containers with unready status: [containerA]"},
					scheduled),
				ContainerStatuses: sl(probed(waitingReasonSt("containerA", node.ReasonContainerCreating)), runningAt("containerB", "podlife://foo", 1)),
			},
		},
		{
			name: "reason and message are cleared when phase changes",
			pod:  &v1.Pod{Spec: specAB, Status: v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: sl(waitingSt("containerA"), waitingSt("containerB"))}},
			rs:   &pleg.PodStatus{SandboxStatuses: sandboxReady, ContainerStatuses: []*pleg.ContainerStatus{rc("containerA", "c1", 1), rc("containerB", "c2", 2)}},
			old:  v1.PodStatus{Phase: v1.PodPending, Reason: "Test", Message: "test", ContainerStatuses: bothRunning},
			want: v1.PodStatus{
				Phase: v1.PodRunning, HostIP: "127.0.0.1", HostIPs: wantHostIPs, QOSClass: v1.PodQOSBestEffort,
				Conditions: conds(readyToStart, initialized,
					v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue},
					v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionTrue}, scheduled),
				ContainerStatuses: sl(runningAt("containerA", "podlife://c1", 1), runningAt("containerB", "podlife://c2", 2)),
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod, rs, old := tc.pod.DeepCopy(), deepCopyRuntime(tc.rs), tc.old.DeepCopy()
			got := node.GenerateAPIStatus(tc.pod, tc.rs, node.GenerateOptions{HostIPs: hostIPs, OldStatus: tc.old, PodIsTerminal: tc.terminal})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(pod, tc.pod); diff != "" {
				t.Errorf("the pod was modified (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(rs, tc.rs); diff != "" {
				t.Errorf("the runtime status was modified (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(*old, tc.old); diff != "" {
				t.Errorf("the old status was modified (-before +after):\n%s", diff)
			}
		})
	}
}

func deepCopyRuntime(rs *pleg.PodStatus) *pleg.PodStatus {
	if rs == nil {
		return nil
	}
	cp := *rs
	cp.IPs = append([]string(nil), rs.IPs...)
	cp.ContainerStatuses = nil
	for _, cs := range rs.ContainerStatuses {
		c := *cs
		cp.ContainerStatuses = append(cp.ContainerStatuses, &c)
	}
	cp.SandboxStatuses = nil
	for _, sb := range rs.SandboxStatuses {
		s := *sb
		cp.SandboxStatuses = append(cp.SandboxStatuses, &s)
	}
	return &cp
}

// TestGenerateAPIPodStatusHostNetworkPodIPs ports the kubelet's test of that name: a
// hostNetwork pod gets the node's addresses (at most one per family) unless the
// runtime reports pod IPs. The kubelet picks the node's addresses from its Node
// object; here the caller passes them in order in HostIPs.
func TestGenerateAPIPodStatusHostNetworkPodIPs(t *testing.T) {
	cases := []struct {
		name   string
		host   []string
		cri    []string
		podIPs []v1.PodIP
	}{
		{"Simple", []string{"10.0.0.1"}, nil, []v1.PodIP{{IP: "10.0.0.1"}}},
		{"InternalIP is preferred over ExternalIP", []string{"10.0.0.1", "192.168.0.1"}, nil, []v1.PodIP{{IP: "10.0.0.1"}}},
		{"Single-stack addresses in dual-stack cluster", []string{"10.0.0.1"}, nil, []v1.PodIP{{IP: "10.0.0.1"}}},
		{"Multiple single-stack addresses in dual-stack cluster", []string{"10.0.0.1", "10.0.0.2", "192.168.0.1"}, nil, []v1.PodIP{{IP: "10.0.0.1"}}},
		{"Dual-stack addresses in dual-stack cluster", []string{"10.0.0.1", "fd01::1234"}, nil, []v1.PodIP{{IP: "10.0.0.1"}, {IP: "fd01::1234"}}},
		{"CRI PodIPs override NodeAddresses", []string{"10.0.0.1", "fd01::1234"}, []string{"192.168.0.1"}, []v1.PodIP{{IP: "192.168.0.1"}, {IP: "fd01::1234"}}},
		{"CRI dual-stack PodIPs override NodeAddresses", []string{"10.0.0.1", "fd01::1234"}, []string{"192.168.0.1", "2001:db8::2"}, []v1.PodIP{{IP: "192.168.0.1"}, {IP: "2001:db8::2"}}},
		{"CRI dual-stack PodIPs override NodeAddresses prefer IPv4", []string{"10.0.0.1", "fd01::1234"}, []string{"2001:db8::2", "192.168.0.1"}, []v1.PodIP{{IP: "192.168.0.1"}, {IP: "2001:db8::2"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: true, Containers: []v1.Container{{Name: "c"}}}}
			got := node.GenerateAPIStatus(pod, &pleg.PodStatus{IPs: tc.cri}, node.GenerateOptions{HostIPs: tc.host})
			if diff := cmp.Diff(tc.podIPs, got.PodIPs); diff != "" {
				t.Errorf("podIPs (-want +got):\n%s", diff)
			}
			if got.PodIP != tc.podIPs[0].IP {
				t.Errorf("podIP %q, want %q", got.PodIP, tc.podIPs[0].IP)
			}
			if tc.cri == nil && got.HostIP != got.PodIPs[0].IP {
				t.Errorf("hostIP %q differs from podIPs[0] %q", got.HostIP, got.PodIPs[0].IP)
			}
		})
	}
}

// TestGenerateAPIPodStatusPodIPs ports the kubelet's TestGenerateAPIPodStatusPodIPs
// and TestSortPodIPs: the runtime's IPs, one per family, the node IP's family first
// (IPv4 when unknown), re-formatted. The node IP is given as the primary host IP.
func TestGenerateAPIPodStatusPodIPs(t *testing.T) {
	cases := []struct {
		name, nodeIP string
		cri, want    []string
	}{
		{"Simple", "", []string{"10.0.0.1"}, []string{"10.0.0.1"}},
		{"Dual-stack", "", []string{"10.0.0.1", "fd01::1234"}, []string{"10.0.0.1", "fd01::1234"}},
		{"Dual-stack with explicit node IP", "192.168.1.1", []string{"10.0.0.1", "fd01::1234"}, []string{"10.0.0.1", "fd01::1234"}},
		{"Dual-stack with CRI returning wrong family first", "", []string{"fd01::1234", "10.0.0.1"}, []string{"10.0.0.1", "fd01::1234"}},
		{"Dual-stack with explicit node IP with CRI returning wrong family first", "192.168.1.1", []string{"fd01::1234", "10.0.0.1"}, []string{"10.0.0.1", "fd01::1234"}},
		{"Dual-stack with IPv6 node IP", "fd00::5678", []string{"10.0.0.1", "fd01::1234"}, []string{"fd01::1234", "10.0.0.1"}},
		{"Dual-stack with IPv6 node IP, other CRI order", "fd00::5678", []string{"fd01::1234", "10.0.0.1"}, []string{"fd01::1234", "10.0.0.1"}},
		{"No Pod IP matching Node IP", "fd00::5678", []string{"10.0.0.1"}, []string{"10.0.0.1"}},
		{"No Pod IP matching (unspecified) Node IP", "", []string{"fd01::1234"}, []string{"fd01::1234"}},
		{"Multiple IPv4 IPs", "", []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}, []string{"10.0.0.1"}},
		{"Multiple Dual-Stack IPs", "", []string{"10.0.0.1", "10.0.0.2", "fd01::1234", "10.0.0.3", "fd01::5678"}, []string{"10.0.0.1", "fd01::1234"}},
		{"Badly-formatted IPs from CRI", "", []string{"010.000.000.001", "fd01:0:0:0:0:0:0:1234"}, []string{"10.0.0.1", "fd01::1234"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var opts node.GenerateOptions
			if tc.nodeIP != "" {
				opts.HostIPs = []string{tc.nodeIP}
			}
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
			got := node.GenerateAPIStatus(pod, &pleg.PodStatus{IPs: tc.cri}, opts)
			var want []v1.PodIP
			for _, ip := range tc.want {
				want = append(want, v1.PodIP{IP: ip})
			}
			if diff := cmp.Diff(want, got.PodIPs); diff != "" {
				t.Errorf("podIPs (-want +got):\n%s", diff)
			}
			if got.PodIP != tc.want[0] {
				t.Errorf("podIP %q, want %q", got.PodIP, tc.want[0])
			}
		})
	}
}

// TestGenerateAPIStatusKeeps covers what GenerateAPIStatus keeps from the old status
// or stamps with Now.
func TestGenerateAPIStatusKeeps(t *testing.T) {
	t1 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC)
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}, ReadinessGates: []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}}}
	pod.Generation = 3
	pod.Status.Conditions = []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}, {Type: v1.PodReady, Status: v1.ConditionFalse}}
	rs := &pleg.PodStatus{SandboxStatuses: sandboxReady, ContainerStatuses: []*pleg.ContainerStatus{{ID: "1", Name: "c", State: pleg.ContainerStateRunning}}}
	old := v1.PodStatus{
		QOSClass:  v1.PodQOSGuaranteed,
		StartTime: &t1,
		Conditions: []v1.PodCondition{
			{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: t1},
			{Type: v1.PodReady, Status: v1.ConditionFalse, LastTransitionTime: t1},
			{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: "Deferred"},
		},
	}
	got := node.GenerateAPIStatus(pod, rs, node.GenerateOptions{OldStatus: old, Now: now})
	stamped := metav1.NewTime(now)
	want := []v1.PodCondition{
		{Type: "example.com/lb", Status: v1.ConditionTrue},
		{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: "Deferred"},
		{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue, ObservedGeneration: 3, LastTransitionTime: stamped},
		{Type: v1.PodInitialized, Status: v1.ConditionTrue, ObservedGeneration: 3, LastTransitionTime: stamped},
		{Type: v1.PodReady, Status: v1.ConditionTrue, ObservedGeneration: 3, LastTransitionTime: stamped},
		{Type: v1.ContainersReady, Status: v1.ConditionTrue, ObservedGeneration: 3, LastTransitionTime: stamped},
		{Type: v1.PodScheduled, Status: v1.ConditionTrue, ObservedGeneration: 3, LastTransitionTime: t1},
	}
	if diff := cmp.Diff(want, got.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if got.QOSClass != v1.PodQOSGuaranteed {
		t.Errorf("qosClass %q, want the old status's Guaranteed", got.QOSClass)
	}
	if got.StartTime == nil || !got.StartTime.Equal(&t1) {
		t.Errorf("startTime %v, want the old %v", got.StartTime, t1)
	}
	if got.HostIP != "" || got.HostIPs != nil {
		t.Errorf("hostIP %q/%v without host IPs, want none", got.HostIP, got.HostIPs)
	}

	fresh := node.GenerateAPIStatus(pod, rs, node.GenerateOptions{Now: now, PodIsTerminal: true})
	if fresh.StartTime == nil || !fresh.StartTime.Time.Equal(now) {
		t.Errorf("startTime %v without an old one, want Now %v", fresh.StartTime, now)
	}
	if fresh.QOSClass != v1.PodQOSBestEffort {
		t.Errorf("qosClass %q, want BestEffort computed from the spec", fresh.QOSClass)
	}
	for _, c := range fresh.Conditions {
		if c.Type == v1.PodResizePending {
			t.Errorf("resize condition kept on a terminal pod: %+v", c)
		}
	}
	// Without an old status, pod.Status stands in for it.
	apiPod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}, Status: v1.PodStatus{
		Phase: v1.PodRunning, Reason: "R", StartTime: &t1, ContainerStatuses: sl(runningSt("c")),
	}}
	fromAPI := node.GenerateAPIStatus(apiPod, &pleg.PodStatus{SandboxStatuses: sandboxReady}, node.GenerateOptions{Now: now})
	if diff := cmp.Diff(sl(probed(waitingUnknownLast("c", 1))), fromAPI.ContainerStatuses); diff != "" {
		t.Errorf("container statuses from pod.Status as the old status (-want +got):\n%s", diff)
	}
	if fromAPI.Reason != "R" || fromAPI.StartTime == nil || !fromAPI.StartTime.Equal(&t1) {
		t.Errorf("reason %q, startTime %v: want pod.Status's R and %v", fromAPI.Reason, fromAPI.StartTime, t1)
	}
}

// TestPodConditions covers PodReadyToStartContainers, Initialized and the
// readiness gates.
func TestPodConditions(t *testing.T) {
	cond := func(cs []v1.PodCondition, ty v1.PodConditionType) v1.PodCondition {
		for _, c := range cs {
			if c.Type == ty {
				return c
			}
		}
		return v1.PodCondition{}
	}
	base := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "init"}}, Containers: []v1.Container{{Name: "c"}}}}
	sandboxCases := []struct {
		name        string
		hostNetwork bool
		sandboxes   []*pleg.SandboxStatus
		want        v1.PodCondition
	}{
		{"no sandbox", false, nil, noSandbox},
		{"newest sandbox not ready", false, []*pleg.SandboxStatus{{State: pleg.SandboxNotReady, IP: "10.0.0.1"}, {State: pleg.SandboxReady, IP: "10.0.0.2"}},
			v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse, Reason: node.ReasonPodSandboxNotReady, Message: "pod sandbox is not ready"}},
		{"two ready sandboxes", false, []*pleg.SandboxStatus{{State: pleg.SandboxReady, IP: "10.0.0.1"}, {State: pleg.SandboxReady, IP: "10.0.0.2"}},
			v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse, Reason: node.ReasonPodSandboxNotReady, Message: "multiple pod sandboxes are ready and need to be reconciled"}},
		{"ready sandbox without IP", false, []*pleg.SandboxStatus{{State: pleg.SandboxReady}},
			v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse, Reason: node.ReasonPodSandboxNotReady, Message: "pod sandbox has no IP address"}},
		{"ready host-network sandbox without IP", true, []*pleg.SandboxStatus{{State: pleg.SandboxReady}}, readyToStart},
	}
	for _, tc := range sandboxCases {
		t.Run(tc.name, func(t *testing.T) {
			pod := base.DeepCopy()
			pod.Spec.HostNetwork = tc.hostNetwork
			rs := &pleg.PodStatus{SandboxStatuses: tc.sandboxes}
			st := node.GenerateAPIStatus(pod, rs, node.GenerateOptions{})
			if diff := cmp.Diff(tc.want, cond(st.Conditions, v1.PodReadyToStartContainers)); diff != "" {
				t.Errorf("PodReadyToStartContainers (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("init container running: not initialized, regular containers PodInitializing", func(t *testing.T) {
		rs := &pleg.PodStatus{SandboxStatuses: sandboxReady, ContainerStatuses: []*pleg.ContainerStatus{{Name: "init", State: pleg.ContainerStateRunning}}}
		st := node.GenerateAPIStatus(base, rs, node.GenerateOptions{})
		want := v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionFalse, Reason: node.ReasonContainersNotInitialized, Message: "containers with incomplete status: [init]"}
		if diff := cmp.Diff(want, cond(st.Conditions, v1.PodInitialized)); diff != "" {
			t.Errorf("Initialized (-want +got):\n%s", diff)
		}
		if st.Phase != v1.PodPending {
			t.Errorf("phase %s, want Pending", st.Phase)
		}
		if w := st.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != node.ReasonPodInitializing {
			t.Errorf("regular container state %+v, want waiting PodInitializing", st.ContainerStatuses[0].State)
		}
	})
	t.Run("initialized once stays initialized", func(t *testing.T) {
		rs := &pleg.PodStatus{SandboxStatuses: sandboxReady, ContainerStatuses: []*pleg.ContainerStatus{{Name: "init", State: pleg.ContainerStateRunning}}}
		old := v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodInitialized, Status: v1.ConditionTrue}}}
		st := node.GenerateAPIStatus(base, rs, node.GenerateOptions{OldStatus: old})
		if c := cond(st.Conditions, v1.PodInitialized); c.Status != v1.ConditionTrue {
			t.Errorf("Initialized %+v, want True kept from the old status", c)
		}
	})
	t.Run("readiness gate not satisfied", func(t *testing.T) {
		pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}, ReadinessGates: []v1.PodReadinessGate{{ConditionType: "a"}, {ConditionType: "b"}}}}
		pod.Status.Conditions = []v1.PodCondition{{Type: "b", Status: v1.ConditionFalse}}
		rs := &pleg.PodStatus{SandboxStatuses: sandboxReady, ContainerStatuses: []*pleg.ContainerStatus{{Name: "c", State: pleg.ContainerStateRunning}}}
		st := node.GenerateAPIStatus(pod, rs, node.GenerateOptions{})
		want := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: node.ReasonReadinessGatesNotReady,
			Message: `corresponding condition of pod readiness gate "a" does not exist., the status of pod readiness gate "b" is not "True", but False`}
		if diff := cmp.Diff(want, cond(st.Conditions, v1.PodReady)); diff != "" {
			t.Errorf("Ready (-want +got):\n%s", diff)
		}
		if c := cond(st.Conditions, v1.ContainersReady); c.Status != v1.ConditionTrue {
			t.Errorf("ContainersReady %+v, want True", c)
		}
	})
	t.Run("a terminal pod's exited containers give a terminal phase whatever the policy", func(t *testing.T) {
		pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}, RestartPolicy: v1.RestartPolicyAlways}}
		rs := &pleg.PodStatus{ContainerStatuses: []*pleg.ContainerStatus{{Name: "c", State: pleg.ContainerStateExited}}}
		if st := node.GenerateAPIStatus(pod, rs, node.GenerateOptions{}); st.Phase != v1.PodRunning {
			t.Errorf("phase %s while the workers may restart it, want Running", st.Phase)
		}
		if st := node.GenerateAPIStatus(pod, rs, node.GenerateOptions{PodIsTerminal: true}); st.Phase != v1.PodSucceeded {
			t.Errorf("phase %s of a terminal pod, want Succeeded", st.Phase)
		}
	})
	t.Run("restart of all containers in progress", func(t *testing.T) {
		rule := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
			ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
		pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, Containers: []v1.Container{
			{Name: "a", RestartPolicy: ptr.To(v1.ContainerRestartPolicyNever), RestartPolicyRules: rule}, {Name: "b"}}}}
		rs := &pleg.PodStatus{SandboxStatuses: sandboxReady, ContainerStatuses: []*pleg.ContainerStatus{
			{Name: "a", State: pleg.ContainerStateExited, ExitCode: 42}, {Name: "b", State: pleg.ContainerStateRunning}}}
		st := node.GenerateAPIStatus(pod, rs, node.GenerateOptions{})
		want := v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionTrue, Reason: node.ReasonRestartAllContainersStarted, Message: "container exited with restart policy rule"}
		if diff := cmp.Diff(want, cond(st.Conditions, v1.AllContainersRestarting)); diff != "" {
			t.Errorf("AllContainersRestarting (-want +got):\n%s", diff)
		}
		if st.Phase != v1.PodRunning {
			t.Errorf("phase %s, want Running", st.Phase)
		}
	})
}

// A terminal phase of the old status is never left, not even for another terminal phase
// (podlife; the status manager refuses the change): an evicted pod (Failed, reason and
// message of its status function) whose stopped containers all exited 0 stays Failed,
// with its reason and message.
func TestGenerateAPIStatusKeepsTerminalPhase(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}, RestartPolicy: v1.RestartPolicyAlways},
		Status: v1.PodStatus{Phase: v1.PodRunning}}
	exited0 := &pleg.PodStatus{ContainerStatuses: []*pleg.ContainerStatus{{ID: "1", Name: "c", State: pleg.ContainerStateExited, ExitCode: 0}}}
	for _, tc := range []struct {
		name      string
		old       v1.PodStatus
		wantPhase v1.PodPhase
		wantWhy   string
	}{
		{name: "old Failed by a status function", old: v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "low on memory"},
			wantPhase: v1.PodFailed, wantWhy: "Evicted: low on memory"},
		{name: "old Running: the generated Succeeded", old: v1.PodStatus{Phase: v1.PodRunning, Reason: "R", Message: "m"},
			wantPhase: v1.PodSucceeded, wantWhy: ": "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := node.GenerateAPIStatus(pod, exited0, node.GenerateOptions{OldStatus: tc.old, PodIsTerminal: true, Now: time.Now()})
			if got.Phase != tc.wantPhase || got.Reason+": "+got.Message != tc.wantWhy {
				t.Errorf("phase %s, reason and message %q, want %s, %q", got.Phase, got.Reason+": "+got.Message, tc.wantPhase, tc.wantWhy)
			}
		})
	}
}
