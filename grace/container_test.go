package grace

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func metaWithDeletionGrace(d *int64) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1", DeletionGracePeriodSeconds: d}
}

func container(preStop bool, liveness, startup *int64) *v1.Container {
	c := &v1.Container{Name: "c"}
	if preStop {
		c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sleep", "5"}}}}
	}
	if liveness != nil {
		c.LivenessProbe = &v1.Probe{TerminationGracePeriodSeconds: liveness}
	}
	if startup != nil {
		c.StartupProbe = &v1.Probe{TerminationGracePeriodSeconds: startup}
	}
	return c
}

func TestContainerGracePeriod(t *testing.T) {
	cases := []struct {
		name      string
		pod       *v1.Pod
		container *v1.Container
		reason    KillReason
		want      int64
	}{
		{name: "nil pod: minimum", pod: nil, container: container(false, nil, nil), want: 2},
		{name: "no grace anywhere: the API server's default 30", pod: pod(nil, nil), container: container(false, nil, nil), want: 30},
		{name: "negative spec grace: the API server's 1", pod: pod(nil, i64(-7)), container: container(false, nil, nil), want: 1},
		{name: "spec grace", pod: pod(nil, i64(30)), container: container(false, nil, nil), want: 30},
		{name: "deletion grace wins over spec", pod: pod(i64(10), i64(30)), container: container(false, nil, nil), want: 10},
		{name: "deletion grace 0 taken as is", pod: pod(i64(0), i64(30)), container: container(false, nil, nil), want: 0},
		{name: "liveness kill uses the probe's grace", pod: pod(nil, i64(30)), container: container(false, i64(7), nil), reason: KillLivenessProbe, want: 7},
		{name: "startup kill uses the probe's grace", pod: pod(nil, i64(30)), container: container(false, nil, i64(4)), reason: KillStartupProbe, want: 4},
		{name: "liveness kill without probe grace uses spec", pod: pod(nil, i64(30)), container: container(false, nil, i64(4)), reason: KillLivenessProbe, want: 30},
		{name: "startup kill ignores the liveness probe's grace", pod: pod(nil, i64(30)), container: container(false, i64(7), nil), reason: KillStartupProbe, want: 30},
		{name: "pod termination ignores probe grace", pod: pod(nil, i64(30)), container: container(false, i64(7), i64(4)), reason: KillPodTermination, want: 30},
		{name: "deletion grace wins over probe grace", pod: pod(i64(20), i64(30)), container: container(false, i64(7), nil), reason: KillLivenessProbe, want: 20},
		{name: "probe grace without a spec grace (30 by default)", pod: pod(nil, nil), container: container(false, i64(7), nil), reason: KillLivenessProbe, want: 7},
		{name: "nil container with probe reason uses spec", pod: pod(nil, i64(30)), container: nil, reason: KillLivenessProbe, want: 30},
		{name: "unknown reason behaves as termination", pod: pod(nil, i64(30)), container: container(false, i64(7), nil), reason: KillReason(99), want: 30},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ContainerGracePeriod(tc.pod, tc.container, tc.reason); got != tc.want {
				t.Errorf("ContainerGracePeriod = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestStopTimeout(t *testing.T) {
	cases := []struct {
		name     string
		budget   int64
		elapsed  time.Duration
		override *int64
		want     int64
	}{
		{name: "no hook keeps the budget", budget: 30, want: 30},
		{name: "hook time is taken out", budget: 30, elapsed: 10 * time.Second, want: 20},
		{name: "hook time is truncated to whole seconds", budget: 30, elapsed: 10*time.Second + 999*time.Millisecond, want: 20},
		{name: "hook under a second takes nothing", budget: 30, elapsed: 900 * time.Millisecond, want: 30},
		{name: "at least 2 s remain after a long hook", budget: 30, elapsed: 29 * time.Second, want: 2},
		{name: "hook longer than the budget: 2 s", budget: 30, elapsed: time.Minute, want: 2},
		{name: "budget 0: 2 s", budget: 0, want: 2},
		{name: "negative budget: 2 s", budget: -5, want: 2},
		{name: "negative elapsed is ignored", budget: 30, elapsed: -time.Second, want: 30},
		{name: "override replaces the budget, preStop time taken out (kubelet killContainer)", budget: 60, elapsed: 10 * time.Second, override: i64(30), want: 20},
		{name: "override less preStop keeps the minimum", budget: 30, elapsed: 10 * time.Second, override: i64(5), want: MinContainerStopSeconds},
		{name: "override 1 gets the minimum (kubelet minimumGracePeriodInSeconds)", budget: 30, override: i64(1), want: MinContainerStopSeconds},
		{name: "override may lengthen", budget: 2, override: i64(60), want: 60},
		{name: "override 0 gets the minimum", budget: 30, override: i64(0), want: MinContainerStopSeconds},
		{name: "negative override gets the minimum", budget: 30, override: i64(-3), want: MinContainerStopSeconds},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := StopTimeout(tc.budget, tc.elapsed, tc.override); got != tc.want {
				t.Errorf("StopTimeout(%d, %v, %s) = %d, want %d", tc.budget, tc.elapsed, ptr(tc.override), got, tc.want)
			}
		})
	}
}

func TestContainerStopTimeout(t *testing.T) {
	cases := []struct {
		name      string
		pod       *v1.Pod
		container *v1.Container
		override  *int64
		reason    KillReason
		elapsed   time.Duration
		want      int64
	}{
		{name: "preStop time taken from the spec grace", pod: pod(nil, i64(30)), container: container(true, nil, nil), elapsed: 12 * time.Second, want: 18},
		{name: "elapsed ignored without a preStop hook", pod: pod(nil, i64(30)), container: container(false, nil, nil), elapsed: 12 * time.Second, want: 30},
		{name: "no hook runs with a zero budget", pod: pod(i64(0), i64(30)), container: container(true, nil, nil), elapsed: 12 * time.Second, want: 2},
		{name: "probe grace less the hook, at least 2", pod: pod(nil, i64(30)), container: container(true, i64(5), nil), reason: KillLivenessProbe, elapsed: 4 * time.Second, want: 2},
		{name: "probe grace less the hook", pod: pod(nil, i64(30)), container: container(true, i64(10), nil), reason: KillLivenessProbe, elapsed: 4 * time.Second, want: 6},
		{name: "pod-level override during termination wins", pod: pod(i64(30), i64(30)), container: container(true, nil, nil), override: i64(7), elapsed: 12 * time.Second, want: MinContainerStopSeconds},
		{name: "pod-level override less the preStop hook's time", pod: pod(i64(60), i64(60)), container: container(true, nil, nil), override: i64(30), elapsed: 10 * time.Second, want: 20},
		{name: "pod-level override without preStop ignores elapsed", pod: pod(nil, i64(60)), container: container(false, nil, nil), override: i64(30), elapsed: 10 * time.Second, want: 30},
		{name: "override 0 with preStop: hook not run, minimum", pod: pod(nil, i64(60)), container: container(true, nil, nil), override: i64(0), elapsed: 10 * time.Second, want: MinContainerStopSeconds},
		{name: "runtime-only pod grace 1", pod: nil, container: nil, override: i64(1), want: MinContainerStopSeconds},
		{name: "nil everything", want: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ContainerStopTimeout(tc.pod, tc.container, tc.override, tc.reason, tc.elapsed); got != tc.want {
				t.Errorf("ContainerStopTimeout = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestKillReasonString(t *testing.T) {
	for r, want := range map[KillReason]string{
		KillPodTermination: "pod-termination", KillLivenessProbe: "liveness-probe",
		KillStartupProbe: "startup-probe", KillReason(-1): "KillReason(-1)",
	} {
		if got := r.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(r), got, want)
		}
	}
}
