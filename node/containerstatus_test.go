package node_test

import (
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

const msgUnknownDeleted = "The container could not be located when the pod was deleted.  The container used to be Running"

// waitingUnknownLast is the kubelet tests' waitingWithLastTerminationUnknown: a
// container that was running and vanished from the runtime.
func waitingUnknownLast(name string, restarts int32) v1.ContainerStatus {
	return v1.ContainerStatus{
		Name:  name,
		State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: node.ReasonContainerCreating}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			Reason: node.ReasonContainerStatusUnknown, Message: msgUnknownDeleted, ExitCode: 137,
		}},
		RestartCount: restarts,
	}
}

func waitingReasonSt(name, reason string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}}
}

// probed sets what the prober sets on a container without probes: started and ready
// once running, not started otherwise.
func probed(st v1.ContainerStatus) v1.ContainerStatus {
	running := st.State.Running != nil
	st.Started = ptr.To(running)
	if running {
		st.Ready = true
	}
	return st
}

func withRestarts(st v1.ContainerStatus, n int32) v1.ContainerStatus {
	st.RestartCount = n
	return st
}

func withLast(st v1.ContainerStatus, last v1.ContainerState) v1.ContainerStatus {
	st.LastTerminationState = last
	return st
}

func withReason(st v1.ContainerStatus, reason string) v1.ContainerStatus {
	st.State.Terminated.Reason = reason
	return st
}

// restartingAll is an old status that makes the pod restart all its containers in
// place (the kubelet tests pass podRestarting directly).
func restartingAll(st ...v1.ContainerStatus) v1.PodStatus {
	return v1.PodStatus{
		ContainerStatuses: st,
		Conditions:        []v1.PodCondition{{Type: v1.AllContainersRestarting, Status: v1.ConditionTrue}},
	}
}

// TestConvertToAPIContainerStatuses ports the kubelet's test of that name. The
// kubelet test runs without its prober, so Started and Ready are added here as the
// prober sets them; reasons of exited containers get the Completed/Error default.
func TestConvertToAPIContainerStatuses(t *testing.T) {
	specAB := v1.PodSpec{NodeName: "machine", Containers: []v1.Container{{Name: "containerA"}, {Name: "containerB"}}, RestartPolicy: v1.RestartPolicyAlways}
	specInit := v1.PodSpec{InitContainers: []v1.Container{{Name: "init-1"}}, Containers: []v1.Container{{Name: "containerA"}}, RestartPolicy: v1.RestartPolicyAlways}
	specSidecar := v1.PodSpec{InitContainers: []v1.Container{{Name: "sidecar-1", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}}, Containers: []v1.Container{{Name: "containerA"}}, RestartPolicy: v1.RestartPolicyAlways}
	now := metav1.Now()
	deleted := metav1.ObjectMeta{Name: "my-pod", DeletionTimestamp: &now}
	running := func(name, id string, restarts int) *pleg.ContainerStatus {
		return &pleg.ContainerStatus{ID: id, Name: name, State: pleg.ContainerStateRunning, RestartCount: restarts}
	}
	exited := func(name string, code int) *pleg.ContainerStatus {
		return &pleg.ContainerStatus{Name: name, State: pleg.ContainerStateExited, ExitCode: code}
	}
	rsOf := func(cs ...*pleg.ContainerStatus) *pleg.PodStatus { return &pleg.PodStatus{ContainerStatuses: cs} }
	restartAllLast := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		Reason: node.ReasonRestartingAllContainers, Message: "The container is removed because RestartAllContainers in place", ExitCode: 137,
	}}

	cases := []struct {
		name string
		pod  *v1.Pod
		rs   *pleg.PodStatus
		old  v1.PodStatus
		init bool
		want []v1.ContainerStatus
	}{
		{
			name: "no current status, with previous statuses and deletion",
			pod:  &v1.Pod{ObjectMeta: deleted, Spec: specAB},
			rs:   &pleg.PodStatus{},
			old:  v1.PodStatus{ContainerStatuses: sl(runningSt("containerA"), runningSt("containerB"))},
			want: sl(probed(waitingUnknownLast("containerA", 0)), probed(waitingUnknownLast("containerB", 0))),
		},
		{
			name: "no current status, with previous statuses and no deletion",
			pod:  &v1.Pod{Spec: specAB},
			rs:   &pleg.PodStatus{},
			old:  v1.PodStatus{ContainerStatuses: sl(runningSt("containerA"), runningSt("containerB"))},
			want: sl(probed(waitingUnknownLast("containerA", 1)), probed(waitingUnknownLast("containerB", 1))),
		},
		{
			name: "no current status, keeping previous restartCount",
			pod:  &v1.Pod{Spec: specAB},
			rs:   &pleg.PodStatus{},
			old:  v1.PodStatus{ContainerStatuses: sl(withRestarts(failedSt("containerA"), 5), withRestarts(failedSt("containerB"), 5))},
			want: sl(probed(withRestarts(failedSt("containerA"), 5)), probed(withRestarts(failedSt("containerB"), 5))),
		},
		{
			name: "currently running with lower restartCount; should keeping previous restartCount",
			pod:  &v1.Pod{Spec: specAB},
			rs:   rsOf(running("containerA", "containerA", 0), running("containerB", "containerB", 0)),
			old:  v1.PodStatus{ContainerStatuses: sl(withRestarts(failedSt("containerA"), 5), withRestarts(failedSt("containerB"), 5))},
			want: sl(
				probed(withRestarts(withLast(withID(runningSt("containerA"), "podlife://containerA"), v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: -1}}), 6)),
				probed(withRestarts(withLast(withID(runningSt("containerB"), "podlife://containerB"), v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: -1}}), 6)),
			),
		},
		{
			name: "containerB dies and triggers RestartAllContainers in place",
			pod:  &v1.Pod{Spec: specAB},
			rs:   rsOf(running("containerA", "", 0), exited("containerB", 42)),
			old:  restartingAll(runningSt("containerA"), runningSt("containerB")),
			want: sl(probed(runningSt("containerA")), probed(withReason(exitedSt("containerB", 42), "Error"))),
		},
		{
			name: "containerB dies and triggers RestartAllContainers in place, containerA killed",
			pod:  &v1.Pod{Spec: specAB},
			rs:   rsOf(exited("containerA", 137)),
			old:  restartingAll(runningSt("containerA"), exitedSt("containerB", 42)),
			want: sl(probed(withReason(exitedSt("containerA", 137), "Error")), probed(withRestarts(waitingRestartingAllSt("containerB"), 1))),
		},
		{
			name: "containerB dies and triggers RestartAllContainers in place, containerA killed then removed",
			pod:  &v1.Pod{Spec: specAB},
			rs:   &pleg.PodStatus{},
			old:  restartingAll(exitedSt("containerA", 137), exitedSt("containerB", 42)),
			want: sl(probed(withRestarts(waitingRestartingAllSt("containerA"), 1)), probed(withRestarts(waitingRestartingAllSt("containerB"), 1))),
		},
		{
			name: "containerB dies and triggers RestartAllContainers in place, containerA killed and removed together",
			pod:  &v1.Pod{Spec: specAB},
			rs:   &pleg.PodStatus{},
			old:  restartingAll(runningSt("containerA"), exitedSt("containerB", 42)),
			want: sl(probed(withRestarts(waitingRestartingAllSt("containerA"), 1)), probed(withRestarts(waitingRestartingAllSt("containerB"), 1))),
		},
		{
			name: "containerB dies and triggers RestartAllContainers in place, containerA rerun",
			pod:  &v1.Pod{Spec: specAB},
			rs:   rsOf(running("containerA", "containerA-new", 0)),
			old:  restartingAll(withRestarts(waitingRestartingAllSt("containerA"), 1), exitedSt("containerB", 42)),
			want: sl(
				probed(withRestarts(withLast(withID(runningSt("containerA"), "podlife://containerA-new"), restartAllLast), 1)),
				probed(withRestarts(waitingRestartingAllSt("containerB"), 1)),
			),
		},
		{
			name: "containerB dies and triggers RestartAllContainers in place, containerA succeeded",
			pod:  &v1.Pod{Spec: specAB},
			rs:   rsOf(exited("containerA", 0)),
			old:  restartingAll(withRestarts(runningSt("containerA"), 1), exitedSt("containerB", 42)),
			want: sl(probed(withRestarts(withReason(succeededSt("containerA"), "Completed"), 1)), probed(withRestarts(waitingRestartingAllSt("containerB"), 1))),
		},
		{
			name: "containerB dies and triggers RestartAllContainers in place, containerA failed",
			pod:  &v1.Pod{Spec: specAB},
			rs:   rsOf(exited("containerA", 1)),
			old:  restartingAll(withRestarts(runningSt("containerA"), 1), exitedSt("containerB", 42)),
			want: sl(probed(withRestarts(withReason(exitedSt("containerA", 1), "Error"), 1)), probed(withRestarts(waitingRestartingAllSt("containerB"), 1))),
		},
		{
			name: "Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally",
			pod:  &v1.Pod{Spec: specInit},
			rs:   rsOf(&pleg.ContainerStatus{ID: "foo", Name: "containerA", StartedAt: time.Unix(1, 0).UTC(), State: pleg.ContainerStateRunning}),
			init: true,
			want: sl(v1.ContainerStatus{
				Name: "init-1",
				State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					Reason: "Completed", Message: "Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally",
				}},
				Started: ptr.To(false),
				Ready:   true, // the prober: a regular init container that exited 0
			}),
		},
		{
			name: "Unable to get sidecar container status from container runtime and pod has been initialized, sidecar container should be waiting",
			pod:  &v1.Pod{Spec: specSidecar},
			rs:   rsOf(&pleg.ContainerStatus{ID: "foo", Name: "containerA", StartedAt: time.Unix(1, 0).UTC(), State: pleg.ContainerStateRunning}),
			init: true,
			want: sl(probed(waitingReasonSt("sidecar-1", node.ReasonPodInitializing))),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := node.ContainerStatuses(tc.pod, tc.rs, tc.old, tc.init, node.GenerateOptions{})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("container statuses (-want +got):\n%s", diff)
			}
		})
	}
}

// TestContainerStatusRules covers the conversion rules one by one.
func TestContainerStatusRules(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	mt := func(s int) metav1.Time { return metav1.NewTime(at(s)) }
	specC := v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img:1"}}, RestartPolicy: v1.RestartPolicyAlways}
	exitedC := func(id string, code, created int, reason string) *pleg.ContainerStatus {
		return &pleg.ContainerStatus{ID: id, Name: "c", Image: "img:1", ImageID: "sha256:1", State: pleg.ContainerStateExited, ExitCode: code,
			CreatedAt: at(created), StartedAt: at(created + 1), FinishedAt: at(created + 2), RestartCount: created / 10, Reason: reason, Message: "bye"}
	}
	runningC := func(id string, created int) *pleg.ContainerStatus {
		return &pleg.ContainerStatus{ID: id, Name: "c", Image: "img:1", ImageID: "sha256:1", State: pleg.ContainerStateRunning,
			CreatedAt: at(created), StartedAt: at(created + 1), RestartCount: created / 10}
	}
	terminated := func(id string, code, created int, reason string) *v1.ContainerStateTerminated {
		return &v1.ContainerStateTerminated{ExitCode: int32(code), Reason: reason, Message: "bye", StartedAt: mt(created + 1), FinishedAt: mt(created + 2), ContainerID: id}
	}
	probeSpec := v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img:1",
		StartupProbe: &v1.Probe{}, ReadinessProbe: &v1.Probe{}}}}

	cases := []struct {
		name string
		pod  *v1.Pod
		rs   *pleg.PodStatus
		old  v1.PodStatus
		opts node.GenerateOptions
		init bool
		want []v1.ContainerStatus
	}{
		{
			name: "nothing in the runtime: waiting ContainerCreating with the spec's image and mounts",
			pod: &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img:1", VolumeMounts: []v1.VolumeMount{
				{Name: "data", MountPath: "/data"}, {Name: "cfg", MountPath: "/cfg", ReadOnly: true}}}}}},
			want: sl(v1.ContainerStatus{Name: "c", Image: "img:1", Started: ptr.To(false),
				State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: node.ReasonContainerCreating}},
				VolumeMounts: []v1.VolumeMountStatus{{Name: "data", MountPath: "/data"},
					{Name: "cfg", MountPath: "/cfg", ReadOnly: true, RecursiveReadOnly: ptr.To(v1.RecursiveReadOnlyDisabled)}}}),
		},
		{
			name: "regular containers of a pod with init containers wait PodInitializing, sorted by name",
			pod: &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "i"}},
				Containers: []v1.Container{{Name: "z"}, {Name: "a"}}}},
			rs:   &pleg.PodStatus{ContainerStatuses: []*pleg.ContainerStatus{{Name: "i", State: pleg.ContainerStateRunning}}},
			want: sl(probed(waitingReasonSt("a", node.ReasonPodInitializing)), probed(waitingReasonSt("z", node.ReasonPodInitializing))),
		},
		{
			name: "init containers keep the spec's order",
			pod:  &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "z"}, {Name: "a"}}, Containers: []v1.Container{{Name: "c"}}}},
			init: true,
			want: sl(probed(waitingReasonSt("z", node.ReasonPodInitializing)), probed(waitingReasonSt("a", node.ReasonPodInitializing))),
		},
		{
			name: "running: startedAt, image, imageID, restartCount, and the previous instance as lastState",
			pod:  &v1.Pod{Spec: specC},
			// Out of order on purpose: the newest instance is found by creation time.
			rs: &pleg.PodStatus{ContainerStatuses: []*pleg.ContainerStatus{exitedC("old", 1, 10, "OOMKilled"), runningC("new", 20), exitedC("older", 0, 0, "")}},
			want: sl(v1.ContainerStatus{Name: "c", Image: "img:1", ImageID: "sha256:1", ContainerID: "podlife://new", RestartCount: 2,
				State:                v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: mt(21)}},
				LastTerminationState: v1.ContainerState{Terminated: terminated("podlife://old", 1, 10, "OOMKilled")},
				Started:              ptr.To(true), Ready: true}),
		},
		{
			name: "terminated: the runtime's reason is kept, else Completed or Error; the container ID prefix applies",
			pod:  &v1.Pod{Spec: specC},
			rs:   &pleg.PodStatus{ContainerStatuses: []*pleg.ContainerStatus{exitedC("b", 3, 10, ""), exitedC("containerd://a", 0, 0, "")}},
			opts: node.GenerateOptions{ContainerIDPrefix: "containerd"},
			want: sl(v1.ContainerStatus{Name: "c", Image: "img:1", ImageID: "sha256:1", ContainerID: "containerd://b", RestartCount: 1,
				State:                v1.ContainerState{Terminated: terminated("containerd://b", 3, 10, node.ReasonError)},
				LastTerminationState: v1.ContainerState{Terminated: terminated("containerd://a", 0, 0, node.ReasonCompleted)},
				Started:              ptr.To(false)}),
		},
		{
			name: "created: waiting without a reason",
			pod:  &v1.Pod{Spec: specC},
			rs:   &pleg.PodStatus{ContainerStatuses: []*pleg.ContainerStatus{{ID: "x", Name: "c", State: pleg.ContainerStateCreated}}},
			want: sl(v1.ContainerStatus{Name: "c", ContainerID: "podlife://x", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}, Started: ptr.To(false)}),
		},
		{
			name: "unknown after running: terminated ContainerStatusUnknown, one more restart",
			pod:  &v1.Pod{Spec: specC},
			rs:   &pleg.PodStatus{ContainerStatuses: []*pleg.ContainerStatus{{ID: "x", Name: "c", State: pleg.ContainerStateUnknown, RestartCount: 3}}},
			old:  v1.PodStatus{ContainerStatuses: sl(withRestarts(withID(runningSt("c"), "podlife://x"), 3))},
			want: sl(v1.ContainerStatus{Name: "c", ContainerID: "podlife://x", RestartCount: 4, Started: ptr.To(false),
				State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: node.ReasonContainerStatusUnknown,
					Message: "The container could not be located when the pod was terminated", ExitCode: 137}}}),
		},
		{
			name: "unknown without running before: waiting",
			pod:  &v1.Pod{Spec: specC},
			rs:   &pleg.PodStatus{ContainerStatuses: []*pleg.ContainerStatus{{ID: "x", Name: "c", State: pleg.ContainerStateUnknown}}},
			want: sl(v1.ContainerStatus{Name: "c", ContainerID: "podlife://x", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}, Started: ptr.To(false)}),
		},
		{
			name: "a start failure shows as waiting with its reason, the exit as lastState",
			pod:  &v1.Pod{Spec: specC},
			rs:   &pleg.PodStatus{ContainerStatuses: []*pleg.ContainerStatus{exitedC("a", 2, 0, "")}},
			opts: node.GenerateOptions{StartFailure: func(name string) (string, string, bool) {
				return "CrashLoopBackOff", "back-off 10s restarting failed container=" + name, true
			}},
			want: sl(v1.ContainerStatus{Name: "c", Image: "img:1", ImageID: "sha256:1", ContainerID: "podlife://a", Started: ptr.To(false),
				State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container=c"}},
				LastTerminationState: v1.ContainerState{Terminated: terminated("podlife://a", 2, 0, node.ReasonError)}}),
		},
		{
			name: "no start failure shown for a container that will not restart",
			pod:  &v1.Pod{Spec: v1.PodSpec{Containers: specC.Containers, RestartPolicy: v1.RestartPolicyOnFailure}},
			rs:   &pleg.PodStatus{ContainerStatuses: []*pleg.ContainerStatus{exitedC("a", 0, 0, "")}},
			opts: node.GenerateOptions{StartFailure: func(string) (string, string, bool) { return "CrashLoopBackOff", "", true }},
			want: sl(v1.ContainerStatus{Name: "c", Image: "img:1", ImageID: "sha256:1", ContainerID: "podlife://a", Started: ptr.To(false),
				State: v1.ContainerState{Terminated: terminated("podlife://a", 0, 0, node.ReasonCompleted)}}),
		},
		{
			name: "probes in the spec without results: not started, not ready",
			pod:  &v1.Pod{Spec: probeSpec},
			rs:   &pleg.PodStatus{ContainerStatuses: []*pleg.ContainerStatus{runningC("a", 0)}},
			want: sl(v1.ContainerStatus{Name: "c", Image: "img:1", ImageID: "sha256:1", ContainerID: "podlife://a", Started: ptr.To(false),
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: mt(1)}}}),
		},
		{
			name: "started kept from the old status; readiness from the probe result",
			pod:  &v1.Pod{Spec: probeSpec},
			rs:   &pleg.PodStatus{ContainerStatuses: []*pleg.ContainerStatus{runningC("a", 0)}},
			old:  v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "c", ContainerID: "podlife://a", Started: ptr.To(true), State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}},
			opts: node.GenerateOptions{ProbeResult: func(name, id string, kind node.ProbeKind) (bool, bool) {
				return kind == node.ProbeReadiness && name == "c" && id == "podlife://a", kind == node.ProbeReadiness
			}},
			want: sl(v1.ContainerStatus{Name: "c", Image: "img:1", ImageID: "sha256:1", ContainerID: "podlife://a", Started: ptr.To(true), Ready: true,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: mt(1)}}}),
		},
		{
			name: "a failed startup probe result: not started even if the old status said so",
			pod:  &v1.Pod{Spec: probeSpec},
			rs:   &pleg.PodStatus{ContainerStatuses: []*pleg.ContainerStatus{runningC("a", 0)}},
			old:  v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "c", Started: ptr.To(true), State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}},
			opts: node.GenerateOptions{ProbeResult: func(_, _ string, kind node.ProbeKind) (bool, bool) { return false, kind == node.ProbeStartup }},
			want: sl(v1.ContainerStatus{Name: "c", Image: "img:1", ImageID: "sha256:1", ContainerID: "podlife://a", Started: ptr.To(false),
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: mt(1)}}}),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := node.ContainerStatuses(tc.pod, tc.rs, tc.old, tc.init, tc.opts)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("container statuses (-want +got):\n%s", diff)
			}
		})
	}
}

func withID(st v1.ContainerStatus, id string) v1.ContainerStatus {
	st.ContainerID = id
	return st
}

// The statuses GenerateAPIStatus takes from the old status (whole, or their last
// termination, started flag and volume mounts) are copies: changing everything in the
// result leaves the old status as it was. a runs as before (same instance), b runs again
// as a new instance, c terminated and is gone, d waits after a termination and is gone,
// e is an ephemeral container that runs as before.
func TestGenerateAPIStatusSharesNothingWithOld(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever,
			Containers:          []v1.Container{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}},
			EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "e"}}}}}
	mode := v1.RecursiveReadOnlyDisabled
	terminated := func(code int32) *v1.ContainerStateTerminated {
		return &v1.ContainerStateTerminated{ExitCode: code, Reason: "Error", Message: "m", ContainerID: "podlife://old", StartedAt: at, FinishedAt: at}
	}
	running := func(name, id string) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, ContainerID: "podlife://" + id, Started: ptr.To(true),
			State:                v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: at}},
			LastTerminationState: v1.ContainerState{Terminated: terminated(1)},
			VolumeMounts:         []v1.VolumeMountStatus{{Name: "v", MountPath: "/v", ReadOnly: true, RecursiveReadOnly: &mode}}}
	}
	old := v1.PodStatus{Phase: v1.PodRunning, StartTime: &at,
		Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: at}},
		ContainerStatuses: []v1.ContainerStatus{
			running("a", "a1"),
			{Name: "b", ContainerID: "podlife://b1", State: v1.ContainerState{Terminated: terminated(2)}},
			{Name: "c", ContainerID: "podlife://c1", State: v1.ContainerState{Terminated: terminated(3)}},
			{Name: "d", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "r"}},
				LastTerminationState: v1.ContainerState{Terminated: terminated(4)}},
		},
		EphemeralContainerStatuses: []v1.ContainerStatus{running("e", "e1")},
	}
	rs := &pleg.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace, IPs: []string{"10.0.0.1"},
		SandboxStatuses: []*pleg.SandboxStatus{{ID: "sb", State: pleg.SandboxReady, IP: "10.0.0.1"}},
		ContainerStatuses: []*pleg.ContainerStatus{
			{ID: "a1", Name: "a", State: pleg.ContainerStateRunning, StartedAt: at.Time},
			{ID: "b2", Name: "b", State: pleg.ContainerStateRunning, StartedAt: at.Time},
			{ID: "e1", Name: "e", State: pleg.ContainerStateRunning, StartedAt: at.Time},
		}}
	want := *old.DeepCopy()
	st := node.GenerateAPIStatus(pod, rs, node.GenerateOptions{OldStatus: old, Now: at.Time, HostIPs: []string{"10.0.0.2"}})

	// What is taken from old is there (so the test compares what it means to).
	byName := map[string]v1.ContainerStatus{}
	for _, cs := range append(st.ContainerStatuses, st.EphemeralContainerStatuses...) {
		byName[cs.Name] = cs
	}
	if a := byName["a"]; len(a.VolumeMounts) != 1 || a.LastTerminationState.Terminated == nil {
		t.Fatalf("a: %+v, want old's volume mounts and last termination", a)
	}
	if b := byName["b"]; b.LastTerminationState.Terminated == nil || b.LastTerminationState.Terminated.ExitCode != 2 {
		t.Fatalf("b: %+v, want the old instance's termination as the last one", b)
	}
	if c := byName["c"]; c.State.Terminated == nil || c.State.Terminated.ExitCode != 3 {
		t.Fatalf("c: %+v, want old's terminated state", c)
	}
	if d := byName["d"]; d.LastTerminationState.Terminated == nil || d.LastTerminationState.Terminated.ExitCode != 4 {
		t.Fatalf("d: %+v, want old's last termination", d)
	}
	if e := byName["e"]; e.Started == nil || !*e.Started || len(e.VolumeMounts) != 1 {
		t.Fatalf("e: %+v, want old's started flag and volume mounts", e)
	}

	scribble(&st)
	if diff := cmp.Diff(want, old); diff != "" {
		t.Errorf("old status changed with the result (-before +after):\n%s", diff)
	}
}

// Containers sharing a name (an invalid pod) get one status per name, as the kubelet's
// map of statuses by name gives them: the last container of the name gives the default, the runtime's newest instance of the name the state and
// the one before it the last termination; an init container's status is listed once per
// container, in spec order, and a regular container's once per name.
func TestContainerStatusesOfSharedNames(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u", Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "i", Image: "a"}, {Name: "i", Image: "b"}},
		Containers:     []v1.Container{{Name: "c", Image: "a"}, {Name: "b", Image: "x"}, {Name: "c", Image: "b"}},
	}}
	rs := &pleg.PodStatus{ID: "u", ContainerStatuses: []*pleg.ContainerStatus{
		{ID: "c2", Name: "c", Image: "b", State: pleg.ContainerStateRunning, CreatedAt: at.Add(2 * time.Second), StartedAt: at},
		{ID: "c1", Name: "c", Image: "b", State: pleg.ContainerStateExited, ExitCode: 1, CreatedAt: at.Add(time.Second)},
		{ID: "c0", Name: "c", Image: "b", State: pleg.ContainerStateExited, CreatedAt: at},
	}}
	st := node.GenerateAPIStatus(pod, rs, node.GenerateOptions{Now: at})
	// A regular container exists: the init container the runtime lacks counts as done.
	init := v1.ContainerStatus{Name: "i", Image: "b", Started: ptr.To(false), Ready: true,
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: node.ReasonCompleted,
			Message: "Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally"}}}
	c := v1.ContainerStatus{Name: "c", Image: "b", ContainerID: "podlife://c2", Started: ptr.To(true), Ready: true,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			ExitCode: 1, Reason: node.ReasonError, ContainerID: "podlife://c1"}}}
	b := waitingReasonSt("b", node.ReasonPodInitializing)
	b.Image, b.Started = "x", ptr.To(false)
	if diff := cmp.Diff([]v1.ContainerStatus{init, init}, st.InitContainerStatuses); diff != "" {
		t.Errorf("init container statuses (-want +got):\n%s", diff)
	}
	if is := st.InitContainerStatuses; len(is) == 2 && is[0].Started == is[1].Started {
		t.Error("the init containers sharing a name share their Started: a write to one changes the other")
	}
	if diff := cmp.Diff([]v1.ContainerStatus{b, c}, st.ContainerStatuses); diff != "" {
		t.Errorf("container statuses (-want +got):\n%s", diff)
	}
}

// A container keeps its ID string from one generated status to the next: the old status's
// when it is the runtime ID with the type prefix, a new one otherwise.
func TestGenerateAPIStatusKeepsContainerIDs(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u", Name: "p", Namespace: "ns"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	for _, tc := range []struct {
		prefix, runtimeID, oldID, want string
		kept                           bool
	}{
		{"", "id1", "podlife://id1", "podlife://id1", true},
		{"containerd", "id1", "containerd://id1", "containerd://id1", true},
		{"containerd://", "id1", "containerd://id1", "containerd://id1", true},
		{"containerd", "id1", "containerd:/id1", "containerd://id1", false},
		{"containerd", "id1", "cri-o://id1", "containerd://id1", false},
		{"containerd", "id1", "containerd://xid1", "containerd://id1", false},
		{"containerd", "id1", "id1", "containerd://id1", false},
		{"", "id1", "://id1", "podlife://id1", false},
		{"containerd", "id2", "containerd://id1", "containerd://id2", false},
		{"containerd", "x://id1", "x://id1", "x://id1", true},
	} {
		rs := &pleg.PodStatus{ID: "u", ContainerStatuses: []*pleg.ContainerStatus{
			{ID: tc.runtimeID, Name: "c", State: pleg.ContainerStateRunning, CreatedAt: at, StartedAt: at}}}
		old := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "c", ContainerID: tc.oldID,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}}}}
		st := node.GenerateAPIStatus(pod, rs, node.GenerateOptions{Now: at, ContainerIDPrefix: tc.prefix, OldStatus: old})
		got := st.ContainerStatuses[0].ContainerID
		if got != tc.want {
			t.Errorf("prefix %q, runtime ID %q, old %q: containerID %q, want %q", tc.prefix, tc.runtimeID, tc.oldID, got, tc.want)
		}
		if kept := unsafe.StringData(got) == unsafe.StringData(tc.oldID); kept != tc.kept {
			t.Errorf("prefix %q, runtime ID %q, old %q: the old string kept %v, want %v", tc.prefix, tc.runtimeID, tc.oldID, kept, tc.kept)
		}
	}
}
