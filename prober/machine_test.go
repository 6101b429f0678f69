package prober

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// step is one period of a machine test: do, then the clock moves one second (every
// probe's period) and every probe due runs (the tested probe answering as do says,
// any startup probe as the last startup-* step said), then the tested probe's result is
// want ("none" for no result) and it ran or not.
//
// do: ok, fail, unknown, error (the tested probe's answer); restart (a new running
// instance, the answer kept); stop (the instance exits); startup-ok, startup-fail (the
// startup probe's answer, the tested probe's kept).
type step struct {
	do   string
	want string
	ran  bool
}

// machineCase is one ported case: a container "c" of pod "p" with the probe of kind
// (spec) and, when startup is set, a startup probe too.
type machineCase struct {
	name    string
	kind    Kind
	spec    v1.Probe
	startup *v1.Probe
	// startedAgo is how long before t0 the first instance started.
	startedAgo time.Duration
	steps      []step
}

func probePod(kind Kind, spec v1.Probe, startup *v1.Probe) *v1.Pod {
	c := v1.Container{Name: "c", StartupProbe: startup}
	s := spec
	if s.PeriodSeconds == 0 {
		s.PeriodSeconds = 1
	}
	switch kind {
	case Startup:
		c.StartupProbe = &s
	case Readiness:
		c.ReadinessProbe = &s
	case Liveness:
		c.LivenessProbe = &s
	}
	if c.StartupProbe != nil && c.StartupProbe.PeriodSeconds == 0 {
		cp := *c.StartupProbe
		cp.PeriodSeconds = 1
		c.StartupProbe = &cp
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "p", Name: "p", Namespace: "ns"}, Spec: v1.PodSpec{Containers: []v1.Container{c}}}
}

func runMachineCase(t *testing.T, tc machineCase) {
	t.Helper()
	pod := probePod(tc.kind, tc.spec, tc.startup)
	m := NewMachine(t0.Add(-time.Hour), nil)
	now := t0
	gen := 1
	inst := Instance{Name: "c", ID: "id1", Running: true, StartedAt: t0.Add(-tc.startedAgo)}
	m.SetPod(pod, []Instance{inst}, now)
	answer := map[Kind]string{tc.kind: "ok", Startup: "ok"}
	if tc.kind != Startup && tc.startup != nil {
		answer[Startup] = "fail"
	}
	key := Key{PodUID: "p", Container: "c", Kind: tc.kind}
	for i, s := range tc.steps {
		switch s.do {
		case "ok", "fail", "unknown", "error":
			answer[tc.kind] = s.do
		case "startup-ok":
			answer[Startup] = "ok"
		case "startup-fail":
			answer[Startup] = "fail"
		case "restart":
			gen++
			inst = Instance{Name: "c", ID: fmt.Sprintf("id%d", gen), Running: true, StartedAt: now}
			m.SetPod(pod, []Instance{inst}, now)
		case "stop":
			inst.Running = false
			m.SetPod(pod, []Instance{inst}, now)
		default:
			t.Fatalf("step %d: unknown do %q", i, s.do)
		}
		now = now.Add(time.Second)
		ran := false
		for _, p := range m.Due(now, nil) {
			a := answer[p.Key.Kind]
			if p.Key == key {
				ran = true
			}
			res := map[string]Result{"ok": Success, "fail": Failure, "unknown": Unknown, "error": Failure}[a]
			m.Report(p, res, a != "error", now)
		}
		got := "none"
		if id, r, ok := m.Result(key); ok {
			got = r.String()
			if id != inst.ID {
				t.Errorf("step %d (%s): result for %s, the instance is %s", i, s.do, id, inst.ID)
			}
		}
		if diff := cmp.Diff(s, step{s.do, got, ran}, cmp.AllowUnexported(step{})); diff != "" {
			t.Errorf("step %d (-want +got):\n%s", i, diff)
		}
	}
}

// TestMachine ports the kubelet's worker_test.go (pkg/kubelet/prober, v1.37.2); each
// case names the kubelet test it comes from.
func TestMachine(t *testing.T) {
	k := func(name string, kind Kind) string { return name + "/" + kind.String() }
	var cases []machineCase
	for _, kind := range []Kind{Liveness, Readiness, Startup} {
		cases = append(cases,
			// TestDoProbe: "Probe successful".
			machineCase{name: k("TestDoProbe/successful", kind), kind: kind, steps: []step{{"ok", "success", true}}},
			// TestDoProbe: "Container waiting" / "Container terminated": Failure, no run.
			machineCase{name: k("TestDoProbe/not running", kind), kind: kind, steps: []step{{"stop", "failure", false}}},
			// TestDoProbe: "Initial delay passed" (a negative initial delay).
			machineCase{name: k("TestDoProbe/initial delay passed", kind), kind: kind, spec: v1.Probe{InitialDelaySeconds: -100},
				steps: []step{{"ok", "success", true}}},
			// TestInitialDelay: the initial result during the delay, then the probe's.
			machineCase{name: k("TestInitialDelay", kind), kind: kind, spec: v1.Probe{InitialDelaySeconds: 10}, steps: []step{
				{"ok", initial(kind).String(), false},
				{"restart", initial(kind).String(), false},
			}},
			machineCase{name: k("TestInitialDelay/100s later", kind), kind: kind, spec: v1.Probe{InitialDelaySeconds: 10}, startedAgo: 100 * time.Second,
				steps: []step{{"ok", "success", true}}},
		)
	}
	cases = append(cases,
		machineCase{name: "TestFailureThreshold", kind: Readiness, spec: v1.Probe{SuccessThreshold: 1, FailureThreshold: 3}, steps: []step{
			{"ok", "success", true}, {"ok", "success", true}, {"ok", "success", true},
			{"fail", "success", true}, {"fail", "success", true},
			{"fail", "failure", true}, {"fail", "failure", true}, {"fail", "failure", true},
			{"ok", "success", true},
		}},
		machineCase{name: "TestSuccessThreshold", kind: Readiness, spec: v1.Probe{SuccessThreshold: 3, FailureThreshold: 1}, steps: []step{
			{"ok", "failure", true}, {"ok", "failure", true},
			{"ok", "success", true}, {"ok", "success", true}, {"ok", "success", true},
			{"fail", "failure", true},
			{"ok", "failure", true}, {"ok", "failure", true}, {"ok", "success", true},
		}},
		machineCase{name: "TestStartupProbeSuccessThreshold", kind: Startup, spec: v1.Probe{SuccessThreshold: 1, FailureThreshold: 3}, steps: []step{
			{"ok", "success", true}, {"ok", "success", false}, // on hold: started
		}},
		machineCase{name: "TestStartupProbeFailureThreshold", kind: Startup, spec: v1.Probe{SuccessThreshold: 1, FailureThreshold: 3}, steps: []step{
			{"fail", "unknown", true}, {"fail", "unknown", true}, {"fail", "failure", true},
			{"ok", "failure", false}, // on hold
		}},
		machineCase{name: "TestOnHoldOnLivenessOrStartupCheckFailure/liveness", kind: Liveness, spec: v1.Probe{SuccessThreshold: 1, FailureThreshold: 1}, steps: []step{
			{"fail", "failure", true}, {"ok", "failure", false}, {"restart", "success", true},
		}},
		machineCase{name: "TestOnHoldOnLivenessOrStartupCheckFailure/startup", kind: Startup, spec: v1.Probe{SuccessThreshold: 1, FailureThreshold: 1}, steps: []step{
			{"fail", "failure", true}, {"ok", "failure", false}, {"restart", "success", true},
			{"fail", "success", false}, // on hold again: started
		}},
		machineCase{name: "TestResultRunOnLivenessCheckFailure", kind: Liveness, spec: v1.Probe{SuccessThreshold: 1, FailureThreshold: 3}, steps: []step{
			{"ok", "success", true}, {"fail", "success", true}, {"fail", "success", true}, {"fail", "failure", true},
			// resultRun reset: the restarted container gets failureThreshold attempts again.
			{"restart", "success", true}, {"fail", "success", true}, {"fail", "failure", true},
		}},
		machineCase{name: "TestResultRunOnStartupCheckFailure", kind: Startup, spec: v1.Probe{SuccessThreshold: 1, FailureThreshold: 3}, steps: []step{
			{"fail", "unknown", true}, {"fail", "unknown", true}, {"fail", "failure", true},
			{"restart", "unknown", true}, {"fail", "unknown", true}, {"fail", "failure", true},
		}},
		machineCase{name: "TestDoProbe_TerminatedContainerWithRestartPolicyNever", kind: Startup, steps: []step{
			{"stop", "failure", false}, {"ok", "failure", false},
		}},
		machineCase{name: "TestLivenessProbeDisabledByStarted", kind: Liveness, spec: v1.Probe{SuccessThreshold: 1, FailureThreshold: 1},
			startup: &v1.Probe{SuccessThreshold: 1, FailureThreshold: 5}, steps: []step{
				{"fail", "success", false},
				{"startup-ok", "success", false}, // the startup probe succeeds on this tick
				{"fail", "failure", true},
			}},
		machineCase{name: "TestStartupProbeDisabledByStarted", kind: Startup, spec: v1.Probe{SuccessThreshold: 1, FailureThreshold: 2}, steps: []step{
			{"fail", "unknown", true}, {"ok", "success", true}, {"fail", "success", false},
		}},
		// Not in the kubelet's tests: an error is thrown away (worker.go: "if err != nil
		// return true"), and unknown counts as a failure (prober.go).
		machineCase{name: "error thrown away", kind: Readiness, spec: v1.Probe{SuccessThreshold: 1, FailureThreshold: 1}, steps: []step{
			{"ok", "success", true}, {"error", "success", true}, {"unknown", "failure", true},
		}},
		machineCase{name: "readiness reset on restart", kind: Readiness, spec: v1.Probe{SuccessThreshold: 1, FailureThreshold: 1}, steps: []step{
			{"ok", "success", true}, {"restart", "success", true}, {"stop", "failure", false}, {"restart", "success", true},
		}},
		machineCase{name: "readiness waits for startup", kind: Readiness, spec: v1.Probe{SuccessThreshold: 1, FailureThreshold: 1},
			startup: &v1.Probe{SuccessThreshold: 1, FailureThreshold: 5}, steps: []step{
				{"ok", "failure", false}, {"ok", "failure", false},
				{"startup-ok", "failure", false}, {"ok", "success", true},
			}},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runMachineCase(t, tc) })
	}
}

// TestMachineSchedule checks when probes run: every period on its ticks, skipped
// ticks not made up, the jitter of probes added in the agent's first period.
func TestMachineSchedule(t *testing.T) {
	spec := v1.Probe{PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 1}
	for _, tc := range []struct {
		name    string
		start   time.Time // the agent's
		rand    func() float64
		reports []time.Duration // when each run is reported, after t0
		want    []time.Duration // when runs are due, after t0
	}{
		{name: "at once, then every period", start: t0.Add(-time.Hour), rand: func() float64 { return 0.5 },
			reports: []time.Duration{0, 10 * time.Second, 20 * time.Second},
			want:    []time.Duration{0, 10 * time.Second, 20 * time.Second, 30 * time.Second}},
		{name: "jitter in the agent's first period", start: t0, rand: func() float64 { return 0.5 },
			reports: []time.Duration{5 * time.Second},
			want:    []time.Duration{5 * time.Second, 15 * time.Second}},
		{name: "a slow run skips ticks", start: t0.Add(-time.Hour),
			reports: []time.Duration{25 * time.Second, 26 * time.Second},
			want:    []time.Duration{0, 25 * time.Second, 30 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(tc.start, tc.rand)
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", ReadinessProbe: &spec}}}}
			m.SetPod(pod, []Instance{{Name: "c", ID: "id", Running: true, StartedAt: t0}}, t0)
			var got []time.Duration
			for _, r := range tc.reports {
				next, _ := m.NextDue()
				got = append(got, next.Sub(t0))
				runs := m.Due(next, nil)
				if len(runs) != 1 {
					t.Fatalf("%d runs due at %v, want 1", len(runs), next.Sub(t0))
				}
				m.Report(runs[0], Success, true, t0.Add(r))
			}
			next, _ := m.NextDue()
			got = append(got, next.Sub(t0))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("due times (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMachinePods ports prober_manager_test.go's worker bookkeeping: TestAddRemovePods,
// TestAddRemovePodsWithRestartableInitContainer, TestCleanupPods, TestCleanupRepeated,
// and the kubelet's StopLivenessAndStartup.
func TestMachinePods(t *testing.T) {
	probe := &v1.Probe{PeriodSeconds: 1}
	always := v1.ContainerRestartPolicyAlways
	noProbes := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "none"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}, {Name: "b"}}}}
	probed := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "probed"}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init", ReadinessProbe: probe}, {Name: "sidecar", RestartPolicy: &always, StartupProbe: probe, LivenessProbe: probe}},
		Containers:     []v1.Container{{Name: "r", ReadinessProbe: probe}, {Name: "l", LivenessProbe: probe}, {Name: "all", StartupProbe: probe, ReadinessProbe: probe, LivenessProbe: probe}},
	}}
	m := NewMachine(t0, nil)
	m.SetPod(noProbes, nil, t0)
	m.SetPod(probed, nil, t0)
	m.SetPod(probed, nil, t0) // adding again adds nothing
	if got, want := m.Len(), 7; got != want {
		t.Fatalf("TestAddRemovePods(WithRestartableInitContainer): %d probes, want %d", got, want)
	}
	m.StopLivenessAndStartup("probed")
	if got, want := m.Len(), 2; got != want {
		t.Errorf("StopLivenessAndStartup: %d probes, want %d", got, want)
	}
	m.RemovePod("none")
	m.RemovePod("nonexistent")
	m.CleanupPods(func(uid types.UID) bool { return uid != "probed" })
	m.CleanupPods(func(types.UID) bool { return false }) // TestCleanupRepeated
	if got := m.Len(); got != 0 {
		t.Errorf("TestCleanupPods: %d probes left", got)
	}
	if _, ok := m.NextDue(); ok {
		t.Errorf("a removed probe is still due")
	}
}
