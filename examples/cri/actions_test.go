package cri

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/pleg"
)

func actionsPod(policy v1.RestartPolicy, inits int, containers ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}, Spec: v1.PodSpec{RestartPolicy: policy}}
	for i := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "init" + string(rune('0'+i))})
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c})
	}
	return p
}

func sb(state pleg.SandboxState, attempt uint32) *pleg.SandboxStatus {
	return &pleg.SandboxStatus{ID: "sb" + string(rune('0'+attempt)), State: state, Attempt: attempt}
}

func running(name string) *pleg.ContainerStatus {
	return &pleg.ContainerStatus{ID: name + "-id", Name: name, State: pleg.ContainerStateRunning}
}

func exited(name string, code int) *pleg.ContainerStatus {
	return &pleg.ContainerStatus{ID: name + "-id", Name: name, State: pleg.ContainerStateExited, ExitCode: code, FinishedAt: time.Unix(100, 0)}
}

func podStatus(sbs []*pleg.SandboxStatus, cs ...*pleg.ContainerStatus) *pleg.PodStatus {
	return &pleg.PodStatus{ID: "u1", SandboxStatuses: sbs, ContainerStatuses: cs}
}

func TestComputePodActions(t *testing.T) {
	ready := []*pleg.SandboxStatus{sb(pleg.SandboxReady, 0)}
	dead := []*pleg.SandboxStatus{sb(pleg.SandboxNotReady, 0)}
	terminal := actionsPod(v1.RestartPolicyAlways, 0, "a")
	terminal.Status.Phase = v1.PodFailed
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		status *pleg.PodStatus
		want   podActions
	}{
		{"nothing yet: a sandbox and every container", actionsPod(v1.RestartPolicyAlways, 0, "a", "b"), nil,
			podActions{CreateSandbox: true, NextInit: -1, Start: []int{0, 1}}},
		{"nothing yet, init containers: the first init container only", actionsPod(v1.RestartPolicyAlways, 2, "a"), podStatus(nil),
			podActions{CreateSandbox: true, NextInit: 0}},
		{"running: nothing to do", actionsPod(v1.RestartPolicyAlways, 0, "a"), podStatus(ready, running("a")),
			podActions{SandboxID: "sb0", NextInit: -1}},
		{"one running, one never created: start it", actionsPod(v1.RestartPolicyAlways, 0, "a", "b"), podStatus(ready, running("a")),
			podActions{SandboxID: "sb0", NextInit: -1, Start: []int{1}}},
		{"Always, exited 0: restart", actionsPod(v1.RestartPolicyAlways, 0, "a"), podStatus(ready, exited("a", 0)),
			podActions{SandboxID: "sb0", NextInit: -1, Start: []int{0}}},
		{"unset policy is Always", actionsPod("", 0, "a"), podStatus(ready, exited("a", 0)),
			podActions{SandboxID: "sb0", NextInit: -1, Start: []int{0}}},
		{"OnFailure, exited 1: restart", actionsPod(v1.RestartPolicyOnFailure, 0, "a"), podStatus(ready, exited("a", 1)),
			podActions{SandboxID: "sb0", NextInit: -1, Start: []int{0}}},
		{"OnFailure, exited 0: done, stop the sandbox", actionsPod(v1.RestartPolicyOnFailure, 0, "a"), podStatus(ready, exited("a", 0)),
			podActions{SandboxID: "sb0", NextInit: -1, KillPod: true}},
		{"Never, exited 1: done, stop the sandbox", actionsPod(v1.RestartPolicyNever, 0, "a"), podStatus(ready, exited("a", 1)),
			podActions{SandboxID: "sb0", NextInit: -1, KillPod: true}},
		{"Never, one exited, one running: wait", actionsPod(v1.RestartPolicyNever, 0, "a", "b"), podStatus(ready, exited("a", 1), running("b")),
			podActions{SandboxID: "sb0", NextInit: -1}},
		{"created but not started: start again", actionsPod(v1.RestartPolicyNever, 0, "a"),
			podStatus(ready, &pleg.ContainerStatus{Name: "a", State: pleg.ContainerStateCreated}),
			podActions{SandboxID: "sb0", NextInit: -1, Start: []int{0}}},
		{"sandbox died, Always: a new sandbox (attempt 1) and the containers", actionsPod(v1.RestartPolicyAlways, 0, "a"), podStatus(dead, exited("a", 137)),
			podActions{CreateSandbox: true, Attempt: 1, NextInit: -1, Start: []int{0}}},
		{"sandbox died with a container running: kill it first", actionsPod(v1.RestartPolicyAlways, 0, "a"), podStatus(dead, running("a")),
			podActions{KillPod: true, CreateSandbox: true, Attempt: 1, NextInit: -1, Start: []int{0}}},
		{"sandbox died, Never, after it ran: no new sandbox", actionsPod(v1.RestartPolicyNever, 0, "a"), podStatus(dead, exited("a", 0)),
			podActions{Attempt: 1, NextInit: -1}},
		{"sandbox died, OnFailure, all succeeded: no new sandbox", actionsPod(v1.RestartPolicyOnFailure, 0, "a"), podStatus(dead, exited("a", 0)),
			podActions{Attempt: 1, NextInit: -1}},
		{"sandbox died, init containers: run them again", actionsPod(v1.RestartPolicyAlways, 1, "a"), podStatus(dead, exited("init0", 0), exited("a", 1)),
			podActions{CreateSandbox: true, Attempt: 1, NextInit: 0}},
		{"init 0 done, init 1 not yet: start init 1", actionsPod(v1.RestartPolicyAlways, 2, "a"), podStatus(ready, exited("init0", 0)),
			podActions{SandboxID: "sb0", NextInit: 1}},
		{"init running: wait", actionsPod(v1.RestartPolicyAlways, 2, "a"), podStatus(ready, running("init0")),
			podActions{SandboxID: "sb0", NextInit: -1}},
		{"init failed, Always: restart it", actionsPod(v1.RestartPolicyAlways, 2, "a"), podStatus(ready, exited("init0", 1)),
			podActions{SandboxID: "sb0", NextInit: 0}},
		{"init failed, Never: the pod failed", actionsPod(v1.RestartPolicyNever, 2, "a"), podStatus(ready, exited("init0", 1)),
			podActions{SandboxID: "sb0", NextInit: -1, InitFailed: true, KillPod: true}},
		{"inits done: the containers", actionsPod(v1.RestartPolicyAlways, 1, "a", "b"), podStatus(ready, exited("init0", 0)),
			podActions{SandboxID: "sb0", NextInit: -1, Start: []int{0, 1}}},
		{"terminal phase: never start anything, stop what runs", terminal, podStatus(ready, exited("a", 1)),
			podActions{NextInit: -1, KillPod: true}},
		{"terminal phase, nothing runs: nothing", terminal, podStatus(dead, exited("a", 1)),
			podActions{NextInit: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := computePodActions(tc.pod, tc.status, nil)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("computePodActions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPullPolicy(t *testing.T) {
	for img, want := range map[string]v1.PullPolicy{
		"busybox":                          v1.PullAlways,
		"busybox:latest":                   v1.PullAlways,
		"busybox:1.36":                     v1.PullIfNotPresent,
		"localhost:5000/busybox":           v1.PullAlways,
		"localhost:5000/busybox:1":         v1.PullIfNotPresent,
		"busybox@sha256:0123456789abcdef0": v1.PullIfNotPresent,
	} {
		if got := pullPolicy(&v1.Container{Image: img}); got != want {
			t.Errorf("pullPolicy(%s) = %s, want %s", img, got, want)
		}
	}
	if got := pullPolicy(&v1.Container{Image: "busybox", ImagePullPolicy: v1.PullNever}); got != v1.PullNever {
		t.Errorf("an explicit policy is kept; got %s", got)
	}
}
