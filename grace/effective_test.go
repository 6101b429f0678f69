package grace

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func i64(v int64) *int64 { return &v }

// pod builds a pod with an optional deletion grace and spec grace.
func pod(deletion, spec *int64) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metaWithDeletionGrace(deletion),
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: spec},
	}
}

func TestEffective(t *testing.T) {
	cases := []struct {
		name      string
		current   int64
		pod       *v1.Pod
		override  *int64
		want      int64
		shortened bool
	}{
		// Falling back to the spec.
		{name: "nothing in force takes the spec", pod: pod(nil, i64(30)), want: 30},
		{name: "no spec, nothing else: the API server's default 30", pod: pod(nil, nil), want: 30},
		{name: "spec 0 is clamped to 1", pod: pod(nil, i64(0)), want: 1},
		{name: "negative spec is clamped to 1", pod: pod(nil, i64(-7)), want: 1},
		{name: "nil pod without override: 1", pod: nil, want: 1},
		{name: "nil pod with override", pod: nil, override: i64(12), want: 12},

		// Deletion grace is bedrock.
		{name: "deletion grace wins over spec", pod: pod(i64(10), i64(30)), want: 10},
		{name: "deletion grace larger than spec still wins", pod: pod(i64(45), i64(30)), want: 45},
		{name: "deletion grace 0 is 1, not the spec", pod: pod(i64(0), i64(30)), want: 1},
		{name: "negative deletion grace is 1", pod: pod(i64(-3), i64(30)), want: 1},
		{name: "deletion grace shortens the current value", current: 30, pod: pod(i64(5), i64(30)), want: 5, shortened: true},
		{name: "deletion grace 30 then 0 while terminating", current: 30, pod: pod(i64(0), i64(30)), want: 1, shortened: true},
		{name: "equal deletion grace is not a shortening", current: 30, pod: pod(i64(30), i64(30)), want: 30},
		{name: "larger deletion grace never lengthens", current: 10, pod: pod(i64(30), i64(30)), want: 10},
		{name: "current 1 with deletion grace 0 stays 1", current: 1, pod: pod(i64(0), nil), want: 1},

		// An override may only shorten.
		{name: "override shortens the deletion grace", pod: pod(i64(30), i64(30)), override: i64(5), want: 5},
		{name: "larger override is ignored", pod: pod(i64(30), i64(30)), override: i64(60), want: 30},
		{name: "override alone wins over spec", pod: pod(nil, i64(30)), override: i64(60), want: 60},
		{name: "override 0 is 1", pod: pod(nil, i64(30)), override: i64(0), want: 1},
		{name: "negative override is 1", pod: pod(nil, i64(30)), override: i64(-1), want: 1},
		{name: "override shortens the current value", current: 30, pod: pod(i64(30), i64(30)), override: i64(10), want: 10, shortened: true},
		{name: "override cannot lengthen the current value", current: 10, pod: pod(nil, i64(30)), override: i64(20), want: 10},
		{name: "equal override is not a shortening", current: 10, pod: pod(nil, nil), override: i64(10), want: 10},

		// podlife's decision: a deletion grace of 0 is a value in force.
		{name: "deletion grace 0 with override 5 gives 1 (kubelet: 5)", pod: pod(i64(0), i64(30)), override: i64(5), want: 1},
		{name: "deletion grace 0 with larger override never increases (kubelet: 100)", current: 30, pod: pod(i64(0), nil), override: i64(100), want: 1, shortened: true},

		// Once in force, the spec is ignored.
		{name: "current ignores a smaller spec", current: 20, pod: pod(nil, i64(5)), want: 20},
		{name: "current ignores a larger spec", current: 20, pod: pod(nil, i64(60)), want: 20},
		{name: "current 1 stays 1", current: 1, pod: pod(nil, i64(30)), want: 1},
		{name: "negative current counts as none", current: -4, pod: pod(nil, i64(30)), want: 30},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, shortened := Effective(tc.current, tc.pod, tc.override)
			if got != tc.want || shortened != tc.shortened {
				t.Errorf("Effective(%d, pod, %v) = (%d, %t), want (%d, %t)", tc.current, ptr(tc.override), got, shortened, tc.want, tc.shortened)
			}
		})
	}
}

// TestEffectiveNeverIncreases checks the decrease-only invariant over a grid of inputs.
func TestEffectiveNeverIncreases(t *testing.T) {
	vals := []*int64{nil, i64(-5), i64(0), i64(1), i64(2), i64(5), i64(30), i64(100)}
	for _, current := range []int64{-1, 0, 1, 2, 5, 30, 100} {
		for _, dgp := range vals {
			for _, spec := range vals {
				for _, ov := range vals {
					p := pod(dgp, spec)
					got, shortened := Effective(current, p, ov)
					if got < 1 {
						t.Fatalf("Effective(%d, dgp=%v spec=%v, %v) = %d < 1", current, ptr(dgp), ptr(spec), ptr(ov), got)
					}
					if current >= 1 && got > current {
						t.Fatalf("Effective(%d, dgp=%v spec=%v, %v) = %d grew", current, ptr(dgp), ptr(spec), ptr(ov), got)
					}
					if shortened != (current >= 1 && got < current) {
						t.Fatalf("Effective(%d, dgp=%v spec=%v, %v) shortened=%t for %d", current, ptr(dgp), ptr(spec), ptr(ov), shortened, got)
					}
					// Applying the result again is stable: nothing new, nothing shortened.
					if again, s := Effective(got, p, ov); again != got || s {
						t.Fatalf("not idempotent: Effective(%d, dgp=%v spec=%v, %v) = (%d, %t)", got, ptr(dgp), ptr(spec), ptr(ov), again, s)
					}
				}
			}
		}
	}
}

func ptr(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}
