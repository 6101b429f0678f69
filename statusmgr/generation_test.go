package statusmgr_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// TestManagerSetPodStatusObservedGeneration: SetPodStatus sets status.observedGeneration
// to the pod's metadata.generation, as the kubelet does (GA since 1.35), whatever the
// given status says; a higher value already cached is kept.
func TestManagerSetPodStatusObservedGeneration(t *testing.T) {
	withGen := func(gen int64) *v1.Pod {
		p := testPod("p", "u1")
		p.Generation = gen
		return p
	}
	withObserved := func(s v1.PodStatus, gen int64) v1.PodStatus {
		s.ObservedGeneration = gen
		return s
	}
	type set struct {
		pod    *v1.Pod
		status v1.PodStatus
	}
	for _, tc := range []struct {
		name string
		sets []set
		want int64
	}{
		{"generation copied", []set{{withGen(3), runningStatus(true)}}, 3},
		{"no generation", []set{{withGen(0), runningStatus(true)}}, 0},
		{"the status's own value is replaced", []set{{withGen(3), withObserved(runningStatus(true), 9)}}, 3},
		{"a newer generation moves it up", []set{{withGen(3), runningStatus(true)}, {withGen(4), runningStatus(false)}}, 4},
		{"a higher cached value is kept", []set{{withGen(5), runningStatus(true)}, {withGen(4), runningStatus(false)}}, 5},
		{"a higher value on the pod's status is kept", []set{{func() *v1.Pod { p := withGen(2); p.Status.ObservedGeneration = 6; return p }(), runningStatus(true)}}, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := statusmgr.New(statusmgr.Config{Patcher: statusmgrtest.NewFakeAPI()})
			must(t, err)
			for _, s := range tc.sets {
				must(t, m.SetPodStatus(s.pod, s.status))
			}
			got, ok := m.GetPodStatus("u1")
			if !ok {
				t.Fatal("no status")
			}
			if got.ObservedGeneration != tc.want {
				t.Errorf("observedGeneration = %d, want %d", got.ObservedGeneration, tc.want)
			}
		})
	}
}
