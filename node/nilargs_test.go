package node_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/node"
)

// TestNilArguments: every exported pure function of the package takes nil pointers (and
// nil entries) without a panic and answers what its doc says.
func TestNilArguments(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  func() any
		want any
	}{
		{"NewMirrorPod(nil)", func() any { return node.NewMirrorPod(nil) }, (*v1.Pod)(nil)},
		{"IsMirrorPodOf(nil, nil)", func() any { return node.IsMirrorPodOf(nil, nil) }, false},
		{"IsMirrorPodOf(pod, nil)", func() any { return node.IsMirrorPodOf(&v1.Pod{}, nil) }, false},
		{"ContainerShouldRestart(nil, nil, 1)", func() any { return node.ContainerShouldRestart(nil, nil, 1) }, false},
		{"ContainerShouldRestart(nil, spec, 1)", func() any {
			return node.ContainerShouldRestart(nil, &v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways}, 1)
		}, false},
		{"ContainerShouldRestart(c, nil, 1): no pod policy is Always", func() any {
			return node.ContainerShouldRestart(&v1.Container{Name: "c"}, nil, 1)
		}, true},
		{"PodPhase(nil)", func() any { return node.PodPhase(nil, nil, nil, false) }, v1.PodPending},
		{"PodPhaseInitialized(nil)", func() any { return node.PodPhaseInitialized(nil, nil, nil, false, false) }, v1.PodPending},
		{"PodQOSClass(nil)", func() any { return node.PodQOSClass(nil) }, v1.PodQOSBestEffort},
		{"PodConditions(nil)", func() any { return node.PodConditions(nil, nil, nil, node.GenerateOptions{}) }, []v1.PodCondition(nil)},
		{"PodConditions(pod, nil status)", func() any { return node.PodConditions(&v1.Pod{}, nil, nil, node.GenerateOptions{}) }, []v1.PodCondition(nil)},
		{"ContainerStatuses(nil)", func() any {
			return node.ContainerStatuses(nil, nil, v1.PodStatus{}, false, node.GenerateOptions{})
		}, []v1.ContainerStatus(nil)},
		{"GenerateAPIStatus(nil)", func() any { return node.GenerateAPIStatus(nil, nil, node.GenerateOptions{}) }, v1.PodStatus{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
