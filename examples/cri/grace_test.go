package cri

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestStopTimeout(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](30)}}
	plain := &v1.Container{Name: "c"}
	hooked := &v1.Container{Name: "h", Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}}
	for _, tc := range []struct {
		name    string
		c       *v1.Container
		grace   int64
		elapsed time.Duration
		want    int64
	}{
		{"the pod's grace period", plain, 30, 0, 30},
		{"a shortened grace period wins over the spec", plain, 5, 0, 5},
		{"a runtime pod's 1 s gets the 2 s minimum", plain, 1, 0, 2},
		{"unknown container (runtime pod)", nil, 1, 0, 2},
		{"preStop time comes out of the budget", hooked, 30, 5 * time.Second, 25},
		{"preStop time truncated to whole seconds", hooked, 30, 5900 * time.Millisecond, 25},
		{"preStop used it all: the minimum", hooked, 30, 30 * time.Second, 2},
		{"preStop over budget: the minimum", hooked, 3, 10 * time.Second, 2},
		{"no hook: elapsed time is ignored", plain, 30, 10 * time.Second, 30},
	} {
		if got := StopTimeout(pod, tc.c, tc.grace, tc.elapsed); got != tc.want {
			t.Errorf("%s: StopTimeout = %d, want %d", tc.name, got, tc.want)
		}
	}
}
