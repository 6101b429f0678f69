package grace

import (
	"math"
	"testing"
	"time"
)

// fitsDuration reports whether s seconds can be turned into a time.Duration without
// overflow.
func fitsDuration(s int64) bool {
	return s >= 0 && time.Duration(s)*time.Second/time.Second == time.Duration(s)
}

func TestMaxSeconds(t *testing.T) {
	if !fitsDuration(MaxSeconds) || fitsDuration(MaxSeconds+1) {
		t.Errorf("MaxSeconds = %d is not the largest whole second a time.Duration holds", MaxSeconds)
	}
}

// TestBoundedSeconds: every function returning seconds stays within [.., MaxSeconds], so
// that a caller may multiply the result by time.Second.
func TestBoundedSeconds(t *testing.T) {
	const huge, tiny = int64(math.MaxInt64), int64(math.MinInt64)
	for _, tc := range []struct {
		name      string
		got       func() int64
		want      int64
		shortened func() bool // optional: checked against wantShort
		wantShort bool
	}{
		{name: "Effective: huge spec", got: func() int64 { g, _ := Effective(0, pod(nil, i64(huge)), nil); return g }, want: MaxSeconds},
		{name: "Effective: huge deletion grace", got: func() int64 { g, _ := Effective(0, pod(i64(huge), i64(30)), nil); return g }, want: MaxSeconds},
		{name: "Effective: huge override", got: func() int64 { g, _ := Effective(0, pod(nil, i64(30)), i64(huge)); return g }, want: MaxSeconds},
		{name: "Effective: huge current", got: func() int64 { g, _ := Effective(huge, pod(nil, nil), nil); return g }, want: MaxSeconds,
			shortened: func() bool { _, s := Effective(huge, pod(nil, nil), nil); return s }},
		{name: "Effective: huge current, huge deletion grace", got: func() int64 { g, _ := Effective(huge, pod(i64(huge), nil), i64(huge)); return g }, want: MaxSeconds,
			shortened: func() bool { _, s := Effective(huge, pod(i64(huge), nil), i64(huge)); return s }},
		{name: "Effective: MaxSeconds is kept", got: func() int64 { g, _ := Effective(MaxSeconds, pod(nil, nil), nil); return g }, want: MaxSeconds,
			shortened: func() bool { _, s := Effective(MaxSeconds, pod(nil, nil), nil); return s }},
		{name: "Effective: huge current shortened by a deletion grace", got: func() int64 { g, _ := Effective(huge, pod(i64(30), nil), nil); return g }, want: 30,
			shortened: func() bool { _, s := Effective(huge, pod(i64(30), nil), nil); return s }, wantShort: true},
		{name: "Effective: tiny values", got: func() int64 { g, _ := Effective(tiny, pod(i64(tiny), i64(tiny)), i64(tiny)); return g }, want: 1},
		{name: "ContainerGracePeriod: huge deletion grace", got: func() int64 { return ContainerGracePeriod(pod(i64(huge), nil), nil, KillPodTermination) }, want: MaxSeconds},
		{name: "ContainerGracePeriod: huge spec", got: func() int64 { return ContainerGracePeriod(pod(nil, i64(huge)), nil, KillPodTermination) }, want: MaxSeconds},
		{name: "ContainerGracePeriod: huge probe grace", got: func() int64 {
			return ContainerGracePeriod(pod(nil, i64(30)), container(false, i64(huge), nil), KillLivenessProbe)
		}, want: MaxSeconds},
		{name: "StopTimeout: huge budget", got: func() int64 { return StopTimeout(huge, 0, nil) }, want: MaxSeconds},
		{name: "StopTimeout: huge budget, preStop took 10s", got: func() int64 { return StopTimeout(huge, 10*time.Second, nil) }, want: MaxSeconds - 10},
		{name: "StopTimeout: huge override", got: func() int64 { return StopTimeout(30, 0, i64(huge)) }, want: MaxSeconds},
		{name: "StopTimeout: tiny budget, preStop took 10s", got: func() int64 { return StopTimeout(tiny, 10*time.Second, nil) }, want: MinContainerStopSeconds},
		{name: "StopTimeout: tiny budget, huge preStop", got: func() int64 { return StopTimeout(tiny, time.Duration(math.MaxInt64), nil) }, want: MinContainerStopSeconds},
		// The kubelet 1.37 applies its 2 s minimum after an override too (killContainer).
		{name: "StopTimeout: tiny override", got: func() int64 { return StopTimeout(30, 0, i64(tiny)) }, want: MinContainerStopSeconds},
		{name: "StopTimeout: huge override, huge preStop", got: func() int64 { return StopTimeout(30, time.Duration(math.MaxInt64), i64(huge)) }, want: MinContainerStopSeconds},
		{name: "ContainerStopTimeout: huge spec with preStop", got: func() int64 {
			return ContainerStopTimeout(pod(nil, i64(huge)), container(true, nil, nil), nil, KillPodTermination, 3*time.Second)
		}, want: MaxSeconds - 3},
		{name: "ContainerStopTimeout: huge override", got: func() int64 {
			return ContainerStopTimeout(pod(nil, i64(30)), container(true, nil, nil), i64(huge), KillPodTermination, 0)
		}, want: MaxSeconds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.got()
			if got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
			if got > 0 && !fitsDuration(got) {
				t.Errorf("%d seconds overflow a time.Duration", got)
			}
			if tc.shortened != nil {
				if s := tc.shortened(); s != tc.wantShort {
					t.Errorf("shortened = %v, want %v (a value only cut to MaxSeconds is not shortened)", s, tc.wantShort)
				}
			}
		})
	}
}
