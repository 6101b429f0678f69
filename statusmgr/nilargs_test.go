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
		{"NewPodSync without a pod: its first Step ends it", func() result {
			st := statusmgr.NewPodSyncForTest(nil).Step(statusmgr.Answer{}, time.Time{})
			o := st.OutcomeForTest()
			return result{[]any{st.Done(), o.Result, o.Reason, o.Stats.Invalid}, o.Err}
		}, result{[]any{true, statusmgr.ResultKeptForTest, statusmgr.ReasonFailedForTest, 1}, statusmgr.ErrNilPod}},
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
		{"TargetOf(nil)", func() result { tg, _ := statusmgr.TargetOfForTest(nil, nil, false); return result{Value: tg} }, result{Value: statusmgr.TargetPodForTest}},
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
