package cri

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/pleg"
)

// TestComputePodActionsEphemeral: the kubelet's computePodActions starts an ephemeral
// container that has no status (even while the init containers run) and never restarts
// one; a probe-killed container restarts under OnFailure whatever its exit code.
func TestComputePodActionsEphemeral(t *testing.T) {
	ready := []*pleg.SandboxStatus{sb(pleg.SandboxReady, 0)}
	withDebug := func(p *v1.Pod) *v1.Pod {
		p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}}
		return p
	}
	probeKilled := func(id string) bool { return id == "a-id" }
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		status *pleg.PodStatus
		killed func(string) bool
		want   podActions
	}{
		{"added to a running pod: start it", withDebug(actionsPod(v1.RestartPolicyAlways, 0, "a")), podStatus(ready, running("a")), nil,
			podActions{SandboxID: "sb0", NextInit: -1, StartEphemeral: []int{0}}},
		{"while an init container runs: start it", withDebug(actionsPod(v1.RestartPolicyAlways, 1, "a")), podStatus(ready, running("init0")), nil,
			podActions{SandboxID: "sb0", NextInit: -1, StartEphemeral: []int{0}}},
		{"exited: never restarted", withDebug(actionsPod(v1.RestartPolicyAlways, 0, "a")), podStatus(ready, running("a"), exited("debug", 1)), nil,
			podActions{SandboxID: "sb0", NextInit: -1}},
		{"no sandbox yet: not before it", withDebug(actionsPod(v1.RestartPolicyAlways, 0, "a")), nil, nil,
			podActions{CreateSandbox: true, NextInit: -1, Start: []int{0}}},
		{"OnFailure, exited 0 after a probe kill: restart", actionsPod(v1.RestartPolicyOnFailure, 0, "a"), podStatus(ready, exited("a", 0)), probeKilled,
			podActions{SandboxID: "sb0", NextInit: -1, Start: []int{0}}},
		{"Never, a probe kill: done", actionsPod(v1.RestartPolicyNever, 0, "a"), podStatus(ready, exited("a", 0)), probeKilled,
			podActions{SandboxID: "sb0", NextInit: -1, KillPod: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, computePodActions(tc.pod, tc.status, tc.killed)); diff != "" {
				t.Errorf("computePodActions (-want +got):\n%s", diff)
			}
		})
	}
}
