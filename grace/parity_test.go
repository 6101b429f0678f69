package grace_test

// Parity of grace.Effective with KUBELET-BEHAVIOR.md §1 (calculateEffectiveGracePeriod,
// kubelet 1.37) and with DESIGN.md's decision "grace.Effective only ever decreases", plus
// DESIGN.md's container-level rules. One table case per stated rule, consequence, example
// and history note; each case states the kubelet's answer and podlife's, and where they
// differ names the DESIGN.md decision that overrides the kubelet.

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/grace"
)

func parityI64(v int64) *int64 { return &v }

// parityPod builds a pod with an optional deletion grace and spec grace (nil: unset).
func parityPod(deletion, spec *int64) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-1", DeletionGracePeriodSeconds: deletion},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: spec},
	}
	if deletion != nil {
		now := metav1.Unix(100, 0)
		p.DeletionTimestamp = &now
	}
	return p
}

// apiDefault is the spec's terminationGracePeriodSeconds as the API server stores it: nil
// is 30 (the only pods the kubelet sees). Negative values stay, Effective clamps them anyway.
func apiDefault(spec *int64) *int64 {
	if spec == nil {
		return parityI64(30)
	}
	return spec
}

// effectiveResult is the pair Effective returns.
type effectiveResult struct {
	Seconds   int64
	Shortened bool
}

// kubeletModel restates §1 steps 1 to 6 literally (a nil pod has no fields here; the kubelet
// would panic, rule 10). With podlifeDecision, step 3's "g == 0" means "nothing in force
// yet": DESIGN.md's "a deletion grace of 0 counts as a value in force"; and a pod without
// terminationGracePeriodSeconds has the API server's 30 (apiDefault).
func kubeletModel(current int64, pod *v1.Pod, override *int64, podlifeDecision bool) effectiveResult {
	g, overridden := current, false // step 1
	if pod != nil && pod.DeletionGracePeriodSeconds != nil && (g == 0 || *pod.DeletionGracePeriodSeconds < g) {
		g, overridden = *pod.DeletionGracePeriodSeconds, true // step 2
	}
	noneYet := g == 0
	if podlifeDecision {
		noneYet = g == 0 && !overridden
	}
	if override != nil && (noneYet || *override < g) {
		g, overridden = *override, true // step 3
	}
	spec := (*int64)(nil)
	if pod != nil {
		spec = pod.Spec.TerminationGracePeriodSeconds
		if podlifeDecision {
			spec = apiDefault(spec)
		}
	}
	if !overridden && g == 0 && spec != nil {
		g = *spec // step 4
	}
	if g < 1 {
		g = 1 // step 5
	}
	return effectiveResult{g, current != 0 && current != g} // step 6
}

func TestParityEffective(t *testing.T) {
	const decision = "DESIGN.md: grace.Effective only ever decreases (a deletion grace of 0 is a value in force)"
	// The kubelet only sees pods the API server defaulted; podlife's callers may pass others.
	const apiDefaultDecision = "issue 34: an empty field reads as the API server's default (terminationGracePeriodSeconds nil is 30)"
	cases := []struct {
		name     string
		current  int64
		pod      *v1.Pod
		override *int64
		kubelet  effectiveResult // the kubelet 1.37's answer per §1
		want     effectiveResult // podlife's answer
		decision string          // why want differs from kubelet ("" if it does not)
	}{
		// Step 1.
		{name: "§1 step 1: g starts as current (value in force, nothing else)", current: 30, pod: parityPod(nil, nil),
			kubelet: effectiveResult{30, false}, want: effectiveResult{30, false}},
		{name: "§1 step 1: current 0 means none yet", current: 0, pod: parityPod(nil, parityI64(30)),
			kubelet: effectiveResult{30, false}, want: effectiveResult{30, false}},
		// Step 2.
		{name: "§1 step 2: deletion grace taken when g == 0", pod: parityPod(parityI64(10), parityI64(30)),
			kubelet: effectiveResult{10, false}, want: effectiveResult{10, false}},
		{name: "§1 step 2: deletion grace taken when smaller than g", current: 30, pod: parityPod(parityI64(10), parityI64(30)),
			kubelet: effectiveResult{10, true}, want: effectiveResult{10, true}},
		{name: "§1 step 2: deletion grace not taken when larger than g", current: 10, pod: parityPod(parityI64(20), parityI64(30)),
			kubelet: effectiveResult{10, false}, want: effectiveResult{10, false}},
		{name: "§1 step 2: deletion grace 0 taken as it is (then clamped)", pod: parityPod(parityI64(0), nil),
			kubelet: effectiveResult{1, false}, want: effectiveResult{1, false}},
		{name: "§1 step 2: negative deletion grace taken as it is (then clamped)", pod: parityPod(parityI64(-5), parityI64(30)),
			kubelet: effectiveResult{1, false}, want: effectiveResult{1, false}},
		{name: "§1 step 2: negative deletion grace shortens a value in force to 1", current: 30, pod: parityPod(parityI64(-5), parityI64(30)),
			kubelet: effectiveResult{1, true}, want: effectiveResult{1, true}},
		{name: "§1 step 2: deletion grace larger than the spec is bedrock", pod: parityPod(parityI64(45), parityI64(30)),
			kubelet: effectiveResult{45, false}, want: effectiveResult{45, false}},
		// Step 3.
		{name: "§1 step 3: override taken when g == 0", pod: parityPod(nil, parityI64(30)), override: parityI64(5),
			kubelet: effectiveResult{5, false}, want: effectiveResult{5, false}},
		{name: "§1 step 3: override larger than the spec taken when g == 0 (spec not consulted)", pod: parityPod(nil, parityI64(30)), override: parityI64(60),
			kubelet: effectiveResult{60, false}, want: effectiveResult{60, false}},
		{name: "§1 step 3: override taken when smaller than the deletion grace", pod: parityPod(parityI64(30), parityI64(30)), override: parityI64(10),
			kubelet: effectiveResult{10, false}, want: effectiveResult{10, false}},
		{name: "§1 step 3: override not taken when larger than the deletion grace", pod: parityPod(parityI64(10), parityI64(30)), override: parityI64(30),
			kubelet: effectiveResult{10, false}, want: effectiveResult{10, false}},
		{name: "§1 step 3: override taken when smaller than current", current: 30, pod: parityPod(nil, parityI64(30)), override: parityI64(10),
			kubelet: effectiveResult{10, true}, want: effectiveResult{10, true}},
		{name: "§1 step 3: override 0 with nothing in force is 1, not the spec", pod: parityPod(nil, parityI64(30)), override: parityI64(0),
			kubelet: effectiveResult{1, false}, want: effectiveResult{1, false}},
		{name: "§1 step 3: negative override shortens to 1", current: 30, pod: parityPod(nil, parityI64(30)), override: parityI64(-2),
			kubelet: effectiveResult{1, true}, want: effectiveResult{1, true}},
		{name: "§1 step 3: g may be 0 after step 2 (deletion grace 0, override smaller still)", pod: parityPod(parityI64(0), nil), override: parityI64(-1),
			kubelet: effectiveResult{1, false}, want: effectiveResult{1, false}},
		// Step 4.
		{name: "§1 step 4: spec fallback when nothing overrode and g is 0", pod: parityPod(nil, parityI64(30)),
			kubelet: effectiveResult{30, false}, want: effectiveResult{30, false}},
		{name: "§1 step 4: spec 0 taken (then clamped)", pod: parityPod(nil, parityI64(0)),
			kubelet: effectiveResult{1, false}, want: effectiveResult{1, false}},
		{name: "§1 step 4: negative spec taken (then clamped)", pod: parityPod(nil, parityI64(-7)),
			kubelet: effectiveResult{1, false}, want: effectiveResult{1, false}},
		{name: "§1 step 4: no spec, nothing else", pod: parityPod(nil, nil),
			kubelet: effectiveResult{1, false}, want: effectiveResult{30, false}, decision: apiDefaultDecision},
		{name: "§1 step 4: spec not used after an override", pod: parityPod(nil, parityI64(30)), override: parityI64(7),
			kubelet: effectiveResult{7, false}, want: effectiveResult{7, false}},
		{name: "§1 step 4: spec not used after a deletion grace", pod: parityPod(parityI64(7), parityI64(30)),
			kubelet: effectiveResult{7, false}, want: effectiveResult{7, false}},
		// Step 5.
		{name: "§1 step 5: the result is never below 1", current: 1, pod: parityPod(parityI64(-100), parityI64(-100)), override: parityI64(-100),
			kubelet: effectiveResult{1, false}, want: effectiveResult{1, false}},
		// Step 6.
		{name: "§1 step 6: shortened is false when nothing was in force", pod: parityPod(parityI64(3), parityI64(30)),
			kubelet: effectiveResult{3, false}, want: effectiveResult{3, false}},
		{name: "§1 step 6: shortened is true when the result differs from current", current: 30, pod: parityPod(parityI64(3), parityI64(30)),
			kubelet: effectiveResult{3, true}, want: effectiveResult{3, true}},
		// Consequences (rule 7).
		{name: "§1 rule 7: value in force ignores a smaller spec", current: 30, pod: parityPod(nil, parityI64(10)),
			kubelet: effectiveResult{30, false}, want: effectiveResult{30, false}},
		{name: "§1 rule 7: value in force ignores a larger spec", current: 10, pod: parityPod(nil, parityI64(30)),
			kubelet: effectiveResult{10, false}, want: effectiveResult{10, false}},
		{name: "§1 rule 7: larger deletion grace never lengthens", current: 10, pod: parityPod(parityI64(30), parityI64(30)),
			kubelet: effectiveResult{10, false}, want: effectiveResult{10, false}},
		{name: "§1 rule 7: larger override never lengthens", current: 10, pod: parityPod(nil, parityI64(30)), override: parityI64(30),
			kubelet: effectiveResult{10, false}, want: effectiveResult{10, false}},
		{name: "§1 rule 7: equal deletion grace is not a shortening", current: 30, pod: parityPod(parityI64(30), parityI64(30)),
			kubelet: effectiveResult{30, false}, want: effectiveResult{30, false}},
		{name: "§1 rule 7: equal override is not a shortening", current: 30, pod: parityPod(nil, parityI64(30)), override: parityI64(30),
			kubelet: effectiveResult{30, false}, want: effectiveResult{30, false}},
		{name: "§1 rule 7: current 1 with deletion grace 0 gives (1, false)", current: 1, pod: parityPod(parityI64(0), parityI64(30)),
			kubelet: effectiveResult{1, false}, want: effectiveResult{1, false}},
		{name: "§1 rule 7: deletion grace 30 then 0 while terminating gives (1, true)", current: 30, pod: parityPod(parityI64(0), parityI64(30)),
			kubelet: effectiveResult{1, true}, want: effectiveResult{1, true}},
		{name: "§1 rule 7: deletion grace 0 with spec 30 and current 0 gives 1", pod: parityPod(parityI64(0), parityI64(30)),
			kubelet: effectiveResult{1, false}, want: effectiveResult{1, false}},
		// Anomaly (rule 8) and DESIGN.md's decision.
		{name: "§1 rule 8 anomaly: current 0, deletion grace 0, override 5", pod: parityPod(parityI64(0), parityI64(30)), override: parityI64(5),
			kubelet: effectiveResult{5, false}, want: effectiveResult{1, false}, decision: decision},
		{name: "§1 rule 8 anomaly: current 30, deletion grace 0, override 100 (an increase)", current: 30, pod: parityPod(parityI64(0), parityI64(30)), override: parityI64(100),
			kubelet: effectiveResult{100, true}, want: effectiveResult{1, true}, decision: decision},
		{name: "DESIGN.md: never exceeds current >= 1 whatever the override (deletion grace 0, override 20)", current: 30, pod: parityPod(parityI64(0), nil), override: parityI64(20),
			kubelet: effectiveResult{20, true}, want: effectiveResult{1, true}, decision: decision},
		{name: "DESIGN.md: deletion grace 0 then override equal to current", current: 30, pod: parityPod(parityI64(0), nil), override: parityI64(30),
			kubelet: effectiveResult{30, false}, want: effectiveResult{1, true}, decision: decision},
		// Rule 9: the result is fed back as current and as the override; it is a fixed point.
		{name: "§1 rule 9: the stored result passed back as current and override changes nothing", current: 10, pod: parityPod(parityI64(10), parityI64(30)), override: parityI64(10),
			kubelet: effectiveResult{10, false}, want: effectiveResult{10, false}},
		{name: "§1 rule 9: a later shorter deletion grace with the stored override shortens", current: 10, pod: parityPod(parityI64(4), parityI64(30)), override: parityI64(10),
			kubelet: effectiveResult{4, true}, want: effectiveResult{4, true}},
		// Rule 10: nil pod (the kubelet panics; podlife treats it as a pod without fields).
		{name: "§1 rule 10: nil pod gives the minimum, no panic", pod: nil,
			kubelet: effectiveResult{1, false}, want: effectiveResult{1, false}},
		{name: "§1 rule 10: nil pod keeps current", current: 12, pod: nil,
			kubelet: effectiveResult{12, false}, want: effectiveResult{12, false}},
		{name: "§1 rule 10: nil pod with an override", pod: nil, override: parityI64(12),
			kubelet: effectiveResult{12, false}, want: effectiveResult{12, false}},
		// History (≤ 1.29.6 differed; the current behaviour is asserted).
		{name: "§1 history: deletion grace 0 with spec 30 gives 1 since 1.32 (30 before)", pod: parityPod(parityI64(0), parityI64(30)),
			kubelet: effectiveResult{1, false}, want: effectiveResult{1, false}},
		{name: "§1 history: 30 then 0 while terminating gives (1, true) since 1.32 ((30, false) before)", current: 30, pod: parityPod(parityI64(0), parityI64(30)),
			kubelet: effectiveResult{1, true}, want: effectiveResult{1, true}},
		{name: "§1 history: override 0 with spec 30 gives 1 since 1.32 (30 before)", pod: parityPod(nil, parityI64(30)), override: parityI64(0),
			kubelet: effectiveResult{1, false}, want: effectiveResult{1, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The table's kubelet column must be what §1's steps give.
			if diff := cmp.Diff(tc.kubelet, kubeletModel(tc.current, tc.pod, tc.override, false)); diff != "" {
				t.Fatalf("table's kubelet answer disagrees with §1's steps (-table +steps):\n%s", diff)
			}
			if (tc.kubelet != tc.want) != (tc.decision != "") {
				t.Fatalf("kubelet %v, podlife %v, decision %q: a difference needs a decision and only a difference", tc.kubelet, tc.want, tc.decision)
			}
			var before *v1.Pod
			if tc.pod != nil {
				before = tc.pod.DeepCopy()
			}
			s, sh := grace.Effective(tc.current, tc.pod, tc.override)
			if diff := cmp.Diff(tc.want, effectiveResult{s, sh}); diff != "" {
				t.Errorf("Effective(%d, pod, override) (-want +got):\n%s", tc.current, diff)
			}
			// §1 rule 10: the pod is never modified.
			if tc.pod != nil {
				if diff := cmp.Diff(before, tc.pod); diff != "" {
					t.Errorf("Effective modified the pod (-before +after):\n%s", diff)
				}
			}
		})
	}
}

// TestParityEffectiveSweep checks every combination of small inputs: podlife equals §1's
// steps, for the pod as the API server stores it (no terminationGracePeriodSeconds is 30),
// except exactly where DESIGN.md's decision applies (a deletion grace of 0 met by an
// override), and there the result is 1 and never exceeds a current value >= 1.
func TestParityEffectiveSweep(t *testing.T) {
	vals := []*int64{nil, parityI64(-3), parityI64(0), parityI64(1), parityI64(2), parityI64(5), parityI64(30), parityI64(100)}
	for _, current := range []int64{0, 1, 2, 5, 30, 100} {
		for _, dgp := range vals {
			for _, spec := range vals {
				for _, ov := range vals {
					name := fmt.Sprintf("current=%d dgp=%s spec=%s override=%s", current, show(dgp), show(spec), show(ov))
					gs, gsh := grace.Effective(current, parityPod(dgp, spec), ov)
					got := effectiveResult{gs, gsh}
					// The kubelet's answer for the pod as the API server stores it.
					kubelet := kubeletModel(current, parityPod(dgp, apiDefault(spec)), ov, false)
					if want := kubeletModel(current, parityPod(dgp, spec), ov, true); got != want {
						t.Errorf("%s: got %v, podlife's rule gives %v", name, got, want)
					}
					decisionApplies := dgp != nil && *dgp == 0 && ov != nil
					if !decisionApplies && got != kubelet {
						t.Errorf("%s: got %v, kubelet %v, and no DESIGN.md decision applies", name, got, kubelet)
					}
					if decisionApplies && got.Seconds != 1 {
						t.Errorf("%s: deletion grace 0 is in force: got %v, want 1", name, got)
					}
					if got.Seconds < 1 {
						t.Errorf("%s: %v is below 1 (§1 step 5)", name, got)
					}
					if current >= 1 && got.Seconds > current {
						t.Errorf("%s: %v exceeds current %d (DESIGN.md: only ever decreases)", name, got, current)
					}
					if got.Shortened != (current >= 1 && got.Seconds < current) {
						t.Errorf("%s: shortened %v with current %d and result %d (§1 step 6)", name, got.Shortened, current, got.Seconds)
					}
				}
			}
		}
	}
}

func show(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// TestParityContainerGrace covers DESIGN.md's container-level rules: a minimum of 2 s, a
// preStop hook's time taken out of the budget, an override wins, and probe-triggered kills
// use the probe's terminationGracePeriodSeconds.
func TestParityContainerGrace(t *testing.T) {
	probeGrace := func(g int64) *v1.Probe { return &v1.Probe{TerminationGracePeriodSeconds: parityI64(g)} }
	ctr := &v1.Container{
		Name:           "c",
		LivenessProbe:  probeGrace(7),
		StartupProbe:   probeGrace(9),
		ReadinessProbe: probeGrace(11),
		Lifecycle:      &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}},
	}
	noHook := ctr.DeepCopy()
	noHook.Lifecycle = nil
	cases := []struct {
		name     string
		pod      *v1.Pod
		ctr      *v1.Container
		reason   grace.KillReason
		override *int64
		preStop  time.Duration
		want     int64
	}{
		{name: "DESIGN container: budget is the spec's grace", pod: parityPod(nil, parityI64(30)), ctr: noHook, want: 30},
		{name: "DESIGN container: deletion grace replaces the spec", pod: parityPod(parityI64(20), parityI64(30)), ctr: noHook, want: 20},
		{name: "DESIGN container: minimum of 2 s", pod: parityPod(nil, parityI64(1)), ctr: noHook, want: 2},
		{name: "DESIGN container: minimum of 2 s after a deletion grace of 0", pod: parityPod(parityI64(0), parityI64(30)), ctr: noHook, want: 2},
		{name: "DESIGN container: preStop time taken out of the budget", pod: parityPod(nil, parityI64(30)), ctr: ctr, preStop: 10 * time.Second, want: 20},
		{name: "DESIGN container: preStop time counted in whole seconds", pod: parityPod(nil, parityI64(30)), ctr: ctr, preStop: 10900 * time.Millisecond, want: 20},
		{name: "DESIGN container: preStop longer than the budget leaves the minimum", pod: parityPod(nil, parityI64(30)), ctr: ctr, preStop: 40 * time.Second, want: 2},
		{name: "DESIGN container: no hook, no deduction", pod: parityPod(nil, parityI64(30)), ctr: noHook, preStop: 10 * time.Second, want: 30},
		// An override replaces the budget; the hook's time and the minimum apply after it
		// (kubelet 1.37 killContainer, issue 29).
		{name: "DESIGN container: an override replaces the budget", pod: parityPod(nil, parityI64(60)), ctr: ctr, override: parityI64(30), preStop: 10 * time.Second, want: 20},
		{name: "DESIGN container: an override less the hook keeps the minimum", pod: parityPod(nil, parityI64(30)), ctr: ctr, override: parityI64(5), preStop: 10 * time.Second, want: 2},
		{name: "DESIGN container: an override of 1 gets the minimum", pod: parityPod(nil, parityI64(30)), ctr: noHook, override: parityI64(1), want: 2},
		{name: "DESIGN container: liveness kill uses the liveness probe's grace", pod: parityPod(nil, parityI64(30)), ctr: noHook, reason: grace.KillLivenessProbe, want: 7},
		{name: "DESIGN container: startup kill uses the startup probe's grace", pod: parityPod(nil, parityI64(30)), ctr: noHook, reason: grace.KillStartupProbe, want: 9},
		{name: "DESIGN container: pod termination ignores the probes' grace", pod: parityPod(nil, parityI64(30)), ctr: noHook, reason: grace.KillPodTermination, want: 30},
		{name: "DESIGN container: deletion grace wins over a probe's grace", pod: parityPod(parityI64(20), parityI64(30)), ctr: noHook, reason: grace.KillLivenessProbe, want: 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := grace.ContainerStopTimeout(tc.pod, tc.ctr, tc.override, tc.reason, tc.preStop)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ContainerStopTimeout (-want +got):\n%s", diff)
			}
		})
	}
}
