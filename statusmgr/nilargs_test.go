package statusmgr_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/statusmgr"
)

// TestNilArguments: the package's pure functions take nil pods and statuses without a
// panic and answer what their docs say.
func TestNilArguments(t *testing.T) {
	type result struct {
		Value any
		Err   error
	}
	for _, tc := range []struct {
		name string
		got  func() result
		want result
	}{
		{"Machine.SetPodStatus(nil)", func() result {
			m := newMachine()
			changed, err := m.SetPodStatus(time.Time{}, nil, v1.PodStatus{}, nil)
			return result{[]any{changed, m.Stats().Invalid}, err}
		}, result{[]any{false, 1}, statusmgr.ErrNilPod}},
		{"Machine.TerminatePod of a pod without a UID", func() result {
			m := newMachine()
			changed, err := m.TerminatePod(time.Time{}, &v1.Pod{}, nil)
			return result{[]any{changed, m.Stats().Invalid}, err}
		}, result{[]any{false, 1}, statusmgr.ErrEmptyUID}},
		{"Machine.SetContainerReadiness of an unknown pod", func() result {
			_, err := newMachine().SetContainerReadiness(time.Time{}, "u", "c", true)
			return result{Err: err}
		}, result{Err: statusmgr.ErrUnknownPod}},
		{"Machine.StartWrite of a write not granted", func() result {
			r, err := newMachine().StartWrite(time.Time{}, "u", statusmgr.Facts{})
			return result{Value: r.Done(), Err: err}
		}, result{Value: true, Err: statusmgr.ErrUnknownPod}},
		{"Machine.Answer without a write", func() result {
			r, err := newMachine().Answer(time.Time{}, "u", statusmgr.Answer{})
			return result{Value: r.Done(), Err: err}
		}, result{Value: true, Err: statusmgr.ErrUnknownPod}},
		{"NewMachine with negative bounds", func() result {
			_, err := statusmgr.NewMachine(statusmgr.MachineConfig{MaxConflictRetries: -1, MaxConcurrentWrites: -1})
			return result{Err: err}
		}, result{Err: statusmgr.ErrInvalidConfig}},
		{"IsMirrorPod(nil)", func() result { return result{Value: statusmgr.IsMirrorPod(nil)} }, result{Value: false}},
		{"IsStaticPod(nil)", func() result { return result{Value: statusmgr.IsStaticPod(nil)} }, result{Value: false}},
		{"CanBeDeleted(nil)", func() result { return result{Value: statusmgr.CanBeDeleted(nil, v1.PodStatus{}, true)} }, result{Value: false}},
		{"TerminatedStatus(nil)", func() result { _, err := statusmgr.TerminatedStatus(nil, v1.PodStatus{}); return result{Err: err} }, result{Err: statusmgr.ErrNilPod}},
		{"CheckContainerStateTransition(nil)", func() result {
			return result{Err: statusmgr.CheckContainerStateTransition(nil, nil, nil)}
		}, result{Err: statusmgr.ErrNilPod}},
		{"NormalizeStatus(nil, nil)", func() result { statusmgr.NormalizeStatus(nil, nil); return result{} }, result{}},
		{"PodReadyCondition(nil, nil).Status", func() result {
			return result{Value: statusmgr.PodReadyCondition(nil, nil).Status}
		}, result{Value: v1.ConditionFalse}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.got()
			if diff := cmp.Diff(tc.want.Value, got.Value); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !errors.Is(got.Err, tc.want.Err) || (tc.want.Err == nil) != (got.Err == nil) {
				t.Errorf("err = %v, want one wrapping %v", got.Err, tc.want.Err)
			}
		})
	}
}

func newMachine() *statusmgr.Machine {
	m, err := statusmgr.NewMachine(statusmgr.MachineConfig{})
	if err != nil {
		panic(err)
	}
	return m
}
