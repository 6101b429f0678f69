package statusmgr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/statusmgr/internal/statustest"
)

// Parity tests, continued from parity_test.go: KUBELET-BEHAVIOR.md §8 (TerminatePod and the
// updateStatusInternal rules the manager exposes), one named case each.

// TestParityTerminatedStatus: §8 TerminatePod's status rules (the pure part).
func TestParityTerminatedStatus(t *testing.T) {
	sidecar := v1.ContainerRestartPolicyAlways
	inits := func(p *v1.Pod) { p.Spec.InitContainers = []v1.Container{{Name: "i1"}, {Name: "i2"}, {Name: "i3"}} }
	sidecarLast := func(p *v1.Pod) { p.Spec.InitContainers[2].RestartPolicy = &sidecar }
	withStatus := func(s v1.PodStatus) func(*v1.Pod) { return func(p *v1.Pod) { p.Status = s } }
	lastTerm := func(cs v1.ContainerStatus, code int32) v1.ContainerStatus {
		cs.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: code}
		return cs
	}
	started := func(cs v1.ContainerStatus) v1.ContainerStatus { cs.Started = ptr(true); return cs }
	unknownLast := func(cs v1.ContainerStatus) v1.ContainerStatus {
		cs.State = unknownTerminated(cs.Name).State
		return cs
	}
	killed := v1.ContainerStatus{Name: "b", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Error", ExitCode: 2, Message: "boom"}}}
	cs := func(list ...v1.ContainerStatus) []v1.ContainerStatus { return list }
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		in   *v1.PodStatus // nil: pod.Status (nothing cached)
		want v1.PodStatus
	}{
		{name: "§8 TerminatePod: running, waiting and state-less containers become Terminated ContainerStatusUnknown, exit 137, the exact message",
			pod:  parPod(withStatus(v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: cs(running("a"), waiting("b"), v1.ContainerStatus{Name: "c"})})),
			want: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: cs(unknownTerminated("a"), unknownTerminated("b"), unknownTerminated("c"))}},
		{name: "§8 TerminatePod: a terminated container keeps its own state",
			pod:  parPod(withStatus(v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: cs(terminated("a", 0), killed)})),
			want: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: cs(terminated("a", 0), killed)}},
		{name: "§8 hasPodInitialized: a regular container that left Waiting",
			pod:  parPod(inits, withStatus(v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: cs(running("a"), waiting("b"))})),
			want: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: cs(unknownTerminated("a"), unknownTerminated("b"))}},
		{name: "§8 hasPodInitialized: a regular container with a last termination",
			pod:  parPod(inits, withStatus(v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: cs(lastTerm(waiting("a"), 1), waiting("b"))})),
			want: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: cs(unknownLast(lastTerm(waiting("a"), 1)), unknownTerminated("b"))}},
		{name: "§8 hasPodInitialized: the last init container exited 0",
			pod: parPod(inits, withStatus(v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: cs(terminated("i1", 0), terminated("i2", 0), terminated("i3", 0)),
				ContainerStatuses: cs(waiting("a"), waiting("b"))})),
			want: v1.PodStatus{Phase: v1.PodFailed, InitContainerStatuses: cs(terminated("i1", 0), terminated("i2", 0), terminated("i3", 0)),
				ContainerStatuses: cs(unknownTerminated("a"), unknownTerminated("b"))}},
		{name: "§8 hasPodInitialized: the last init container's last termination exited 0",
			pod: parPod(inits, withStatus(v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: cs(terminated("i1", 0), terminated("i2", 0), lastTerm(running("i3"), 0)),
				ContainerStatuses: cs(waiting("a"))})),
			want: v1.PodStatus{Phase: v1.PodFailed, InitContainerStatuses: cs(terminated("i1", 0), terminated("i2", 0), unknownLast(lastTerm(running("i3"), 0))),
				ContainerStatuses: cs(unknownTerminated("a"))}},
		{name: "§8 hasPodInitialized: the last init container exited 1: not initialized, regular containers untouched",
			pod: parPod(inits, withStatus(v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: cs(terminated("i1", 0), terminated("i2", 0), terminated("i3", 1)),
				ContainerStatuses: cs(waiting("a"))})),
			want: v1.PodStatus{Phase: v1.PodFailed, InitContainerStatuses: cs(terminated("i1", 0), terminated("i2", 0), terminated("i3", 1)),
				ContainerStatuses: cs(waiting("a"))}},
		{name: "§8 hasPodInitialized: the last init container is a started sidecar",
			pod: parPod(inits, sidecarLast, withStatus(v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: cs(terminated("i1", 0), terminated("i2", 0), started(running("i3"))),
				ContainerStatuses: cs(waiting("a"))})),
			want: v1.PodStatus{Phase: v1.PodFailed, InitContainerStatuses: cs(terminated("i1", 0), terminated("i2", 0), unknownLast(started(running("i3")))),
				ContainerStatuses: cs(unknownTerminated("a"))}},
		{name: "§8 hasPodInitialized: a sidecar that runs but has not started: not initialized",
			pod: parPod(inits, sidecarLast, withStatus(v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: cs(terminated("i1", 0), terminated("i2", 0), running("i3")),
				ContainerStatuses: cs(waiting("a"))})),
			want: v1.PodStatus{Phase: v1.PodFailed, InitContainerStatuses: cs(terminated("i1", 0), terminated("i2", 0), unknownTerminated("i3")),
				ContainerStatuses: cs(waiting("a"))}},
		{name: "§8 hasPodInitialized: no init container status at all: not initialized",
			pod:  parPod(inits, withStatus(v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: cs(waiting("a"))})),
			want: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: cs(waiting("a"))}},
		{name: "§8 hasPodInitialized: judged on pod.Status, not on the (cached) status being terminated",
			pod:  parPod(inits, withStatus(v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: cs(waiting("a"))})),
			in:   &v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: cs(running("a"))},
			want: v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: cs(running("a"))}},
		{name: "§8 init containers: all but the trailing run of never-started Waiting ones",
			pod:  parPod(inits, withStatus(v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: cs(terminated("i1", 0), running("i2"), waiting("i3"))})),
			want: v1.PodStatus{Phase: v1.PodFailed, InitContainerStatuses: cs(terminated("i1", 0), unknownTerminated("i2"), waiting("i3"))}},
		{name: "§8 init containers: a Waiting one before a started one is not spared",
			pod:  parPod(inits, withStatus(v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: cs(waiting("i1"), running("i2"), waiting("i3"))})),
			want: v1.PodStatus{Phase: v1.PodFailed, InitContainerStatuses: cs(unknownTerminated("i1"), unknownTerminated("i2"), waiting("i3"))}},
		{name: "§8 init containers: all Waiting: at least the first is marked",
			pod:  parPod(inits, withStatus(v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: cs(waiting("i1"), waiting("i2"), waiting("i3"))})),
			want: v1.PodStatus{Phase: v1.PodFailed, InitContainerStatuses: cs(unknownTerminated("i1"), waiting("i2"), waiting("i3"))}},
		{name: "§8 init containers: a Waiting one with a last termination counts as started",
			pod:  parPod(inits, withStatus(v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: cs(terminated("i1", 0), lastTerm(waiting("i2"), 1), waiting("i3"))})),
			want: v1.PodStatus{Phase: v1.PodFailed, InitContainerStatuses: cs(terminated("i1", 0), unknownLast(lastTerm(waiting("i2"), 1)), waiting("i3"))}},
		{name: "§8 TerminatePod: Pending becomes Failed", pod: parPod(parPhase(v1.PodPending)), want: v1.PodStatus{Phase: v1.PodFailed}},
		{name: "§8 TerminatePod: Running becomes Failed", pod: parPod(parPhase(v1.PodRunning)), want: v1.PodStatus{Phase: v1.PodFailed}},
		{name: "§8 TerminatePod: phase \"\" becomes Failed", pod: parPod(), want: v1.PodStatus{Phase: v1.PodFailed}},
		{name: "§8 TerminatePod: phase Unknown becomes Failed", pod: parPod(parPhase(v1.PodUnknown)), want: v1.PodStatus{Phase: v1.PodFailed}},
		{name: "§8 TerminatePod: an undefined phase becomes Failed", pod: parPod(parPhase("Bogus")), want: v1.PodStatus{Phase: v1.PodFailed}},
		{name: "§8 TerminatePod: Succeeded is kept", pod: parPod(parPhase(v1.PodSucceeded)), want: v1.PodStatus{Phase: v1.PodSucceeded}},
		{name: "§8 TerminatePod: Failed is kept", pod: parPod(parPhase(v1.PodFailed)), want: v1.PodStatus{Phase: v1.PodFailed}},
		{name: "§8 TerminatePod: a static pod keeps Running", pod: parPod(parPhase(v1.PodRunning), parAnnotate(ConfigSourceAnnotationKey, "file")),
			want: v1.PodStatus{Phase: v1.PodRunning}},
		{name: "§8 TerminatePod: a static pod keeps Pending (its containers are still marked)",
			pod:  parPod(parAnnotate(ConfigSourceAnnotationKey, "http"), withStatus(v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: cs(waiting("a"))})),
			want: v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: cs(unknownTerminated("a"))}},
		{name: "§8 TerminatePod: a mirror pod (source api) is not static: Failed",
			pod:  parPod(parPhase(v1.PodRunning), parAnnotate(ConfigMirrorAnnotationKey, "h")),
			want: v1.PodStatus{Phase: v1.PodFailed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.pod.Status
			if tc.in != nil {
				in = *tc.in
			}
			before := *in.DeepCopy()
			got, err := TerminatedStatus(tc.pod, in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("TerminatedStatus mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, in); diff != "" {
				t.Errorf("input status modified (-want +got):\n%s", diff)
			}
			if changes, want := needsTermination(tc.pod, &in), !cmp.Equal(got, in); changes != want {
				t.Errorf("terminate without applying = %v, want %v", changes, want)
			}
		})
	}
	t.Run("§8 TerminatePod: the message is exactly the kubelet's", func(t *testing.T) {
		want := struct {
			Reason, Message string
			Code            int32
		}{"ContainerStatusUnknown", "The container could not be located when the pod was terminated", 137}
		got := want
		got.Reason, got.Message, got.Code = ReasonContainerStatusUnknown, MessageContainerNotFound, ExitCodeContainerNotFound
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("§8 TerminatePod (podlife): a nil pod is ErrNilPod", func(t *testing.T) {
		if _, err := TerminatedStatus(nil, v1.PodStatus{}); !errors.Is(err, ErrNilPod) {
			t.Errorf("err = %v, want ErrNilPod", err)
		}
	})
}

// parManager is a Manager that never syncs (no Run): the tests read its cache.
func parManager(t *testing.T, lookup PodLookup) (*Manager, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(parNow)
	m, err := New(Config{Patcher: StatusPatcherFuncs{}, Lookup: lookup, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return m, clk
}

// parEntry is what the manager's cache holds for a pod, for comparison.
type parEntry struct {
	Version  uint64
	Finished bool
	Status   v1.PodStatus
}

func entryOf(t *testing.T, m *Manager, uid types.UID) parEntry {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.mach.c.entries[uid]
	if e == nil {
		t.Fatalf("no cached status for %s", uid)
	}
	return parEntry{e.version, e.podIsFinished, *e.status.DeepCopy()}
}

// TestParityTerminatePodManager: §8 TerminatePod as the Manager runs it.
func TestParityTerminatePodManager(t *testing.T) {
	start := metav1.NewTime(parNow)
	t.Run("§8 TerminatePod: starts from the cached status", func(t *testing.T) {
		m, _ := parManager(t, nil)
		pod := parPod()
		parMust(t, m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("a"), terminated("b", 0)}}))
		parMust(t, m.TerminatePod(pod))
		want := parEntry{2, true, v1.PodStatus{ObservedGeneration: 7, Phase: v1.PodFailed, StartTime: &start, ContainerStatuses: []v1.ContainerStatus{unknownTerminated("a"), terminated("b", 0)}}}
		if diff := cmp.Diff(want, entryOf(t, m, pod.UID)); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("§8 TerminatePod: starts from pod.Status when nothing is cached", func(t *testing.T) {
		m, _ := parManager(t, nil)
		pod := parPod(func(p *v1.Pod) {
			p.Status = v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("b")}}
		})
		parMust(t, m.TerminatePod(pod))
		want := parEntry{1, true, v1.PodStatus{Phase: v1.PodFailed, StartTime: &start, ContainerStatuses: []v1.ContainerStatus{unknownTerminated("b")}}}
		if diff := cmp.Diff(want, entryOf(t, m, pod.UID)); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(v1.PodPhase(v1.PodRunning), pod.Status.Phase); diff != "" {
			t.Errorf("pod.Status modified (-want +got):\n%s", diff)
		}
	})
	t.Run("§8 TerminatePod: forced (a new version even when nothing changed) and finished", func(t *testing.T) {
		m, _ := parManager(t, nil)
		pod := parPod(parPhase(v1.PodFailed))
		parMust(t, m.TerminatePod(pod))
		parMust(t, m.TerminatePod(pod))
		want := parEntry{2, true, v1.PodStatus{Phase: v1.PodFailed, StartTime: &start}}
		if diff := cmp.Diff(want, entryOf(t, m, pod.UID)); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})
}

// parAbbrev shortens long strings (termination messages) in diffs to their length.
func parAbbrev() cmp.Option {
	return cmp.Transformer("abbrev", func(s string) string {
		if len(s) <= 80 {
			return s
		}
		return fmt.Sprintf("%q... (%d bytes)", s[:8], len(s))
	})
}

func parMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestParityFinishedSticks: §8 updateStatusInternal, podIsFinished once cached.
func TestParityFinishedSticks(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{"§8 podIsFinished sticks once cached (non-static pod)", parPod(), true},
		{"§8 podIsFinished does not stick for a static pod", parPod(parAnnotate(ConfigSourceAnnotationKey, "file")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache()
			if _, err := c.set(tc.pod, v1.PodStatus{Phase: v1.PodFailed}, nil, setFinished, parNow); err != nil {
				t.Fatal(err)
			}
			if _, err := c.set(tc.pod, v1.PodStatus{Phase: v1.PodFailed, Message: "again"}, nil, setForced, parNow); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, c.entries[tc.pod.UID].podIsFinished); diff != "" {
				t.Errorf("podIsFinished mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParityOldStatusSource: §8, the old status is the cache, else the mirror pod's status,
// else pod.Status. StartTime (kept from the old status) shows which one was used.
func TestParityOldStatusSource(t *testing.T) {
	at := func(h int) *metav1.Time { ts := metav1.NewTime(t0.Add(time.Duration(h) * time.Hour)); return &ts }
	static := parAnnotate(ConfigSourceAnnotationKey, "file")
	withStart := func(h int) func(*v1.Pod) { return func(p *v1.Pod) { p.Status.StartTime = at(h) } }
	// mirrorOf's mirror pod has StartTime h the first time it is asked, h+3 afterwards.
	mirrorOf := func(h int) PodLookup {
		calls := 0
		return PodLookupFuncs{GetMirrorPodByPodFunc: func(*v1.Pod) (*v1.Pod, bool) {
			calls++
			if calls > 1 {
				h += 3
			}
			return parPod(parAnnotate(ConfigMirrorAnnotationKey, "h"), withStart(h)), true
		}}
	}
	for _, tc := range []struct {
		name   string
		lookup PodLookup
		pod    *v1.Pod
		cached *v1.PodStatus
		want   *metav1.Time
	}{
		{"§8 old status: the cached status when there is one (the mirror pod changed since)", mirrorOf(2), parPod(static, withStart(1)), &v1.PodStatus{Phase: v1.PodRunning}, at(2)},
		{"§8 old status: the mirror pod's status when nothing is cached", mirrorOf(2), parPod(static, withStart(1)), nil, at(2)},
		{"§8 old status: pod.Status when nothing is cached and there is no mirror pod", PodLookupFuncs{}, parPod(static, withStart(1)), nil, at(1)},
		{"§8 old status: pod.Status without a lookup", nil, parPod(withStart(1)), nil, at(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := parManager(t, tc.lookup)
			if tc.cached != nil {
				parMust(t, m.SetPodStatus(tc.pod, *tc.cached))
			}
			parMust(t, m.SetPodStatus(tc.pod, v1.PodStatus{Phase: v1.PodRunning, StartTime: at(9), Message: "new"}))
			got, _ := m.GetPodStatus(tc.pod.UID)
			if diff := cmp.Diff(tc.want, got.StartTime); diff != "" {
				t.Errorf("StartTime mismatch (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("§8 old status: the transition check uses the mirror pod's status", func(t *testing.T) {
		lookup := PodLookupFuncs{GetMirrorPodByPodFunc: func(*v1.Pod) (*v1.Pod, bool) {
			return parPod(func(p *v1.Pod) { p.Status.ContainerStatuses = []v1.ContainerStatus{terminated("a", 0)} }), true
		}}
		m, _ := parManager(t, lookup)
		pod := parPod(static, func(p *v1.Pod) { p.Spec.RestartPolicy = v1.RestartPolicyNever })
		err := m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("a")}})
		if !errors.Is(err, ErrIllegalTransition) {
			t.Errorf("SetPodStatus = %v, want ErrIllegalTransition", err)
		}
	})
}

// TestParityContainerTransition: §8, checkContainerStateTransition as the manager applies
// it: a terminated container may not become non-terminated unless restarts are allowed.
func TestParityContainerTransition(t *testing.T) {
	sidecar := v1.ContainerRestartPolicyAlways
	policy := func(p v1.RestartPolicy) func(*v1.Pod) { return func(pod *v1.Pod) { pod.Spec.RestartPolicy = p } }
	rule := func(action v1.ContainerRestartRuleAction, op v1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Containers[0].RestartPolicyRules = append(p.Spec.Containers[0].RestartPolicyRules, v1.ContainerRestartRule{
				Action: action, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}})
		}
	}
	inits := func(p *v1.Pod) { p.Spec.InitContainers = []v1.Container{{Name: "i1"}} }
	status := func(ms ...v1.ContainerStatus) v1.PodStatus {
		return v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: ms}
	}
	initStatus := func(ms ...v1.ContainerStatus) v1.PodStatus {
		return v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: ms}
	}
	restarting := status(running("a"))
	restarting.Conditions = []v1.PodCondition{{Type: v1.AllContainersRestarting, Status: v1.ConditionTrue}}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		old, new v1.PodStatus
		refused  bool
	}{
		{"§8 transition: Never, terminated -> running is refused", parPod(policy(v1.RestartPolicyNever)), status(terminated("a", 0)), status(running("a")), true},
		{"§8 transition: Never, terminated -> waiting is refused", parPod(policy(v1.RestartPolicyNever)), status(terminated("a", 1)), status(waiting("a")), true},
		{"§8 transition: OnFailure with exit code 0 is refused", parPod(policy(v1.RestartPolicyOnFailure)), status(terminated("a", 0)), status(running("a")), true},
		{"§8 transition: OnFailure with a non-zero exit code is allowed", parPod(policy(v1.RestartPolicyOnFailure)), status(terminated("a", 2)), status(running("a")), false},
		{"§8 transition: Always is allowed", parPod(policy(v1.RestartPolicyAlways)), status(terminated("a", 0)), status(running("a")), false},
		{"§8 transition: terminated -> terminated is allowed under Never", parPod(policy(v1.RestartPolicyNever)), status(terminated("a", 0)), status(terminated("a", 1)), false},
		{"§8 transition: running -> terminated is allowed under Never", parPod(policy(v1.RestartPolicyNever)), status(running("a")), status(terminated("a", 0)), false},
		{"§8 transition: only the terminated container counts (another one may run)", parPod(policy(v1.RestartPolicyNever)), status(terminated("a", 0), running("b")), status(terminated("a", 0), running("b")), false},
		{"§8 transition: a container's own restartPolicy Always overrides the pod's Never", parPod(policy(v1.RestartPolicyNever), func(p *v1.Pod) { p.Spec.Containers[0].RestartPolicy = &sidecar }),
			status(terminated("a", 0)), status(running("a")), false},
		{"§8 transition: a Restart rule matching the exit code allows it", parPod(policy(v1.RestartPolicyNever), rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 42)),
			status(terminated("a", 42)), status(running("a")), false},
		{"§8 transition: a Restart rule not matching the exit code refuses", parPod(policy(v1.RestartPolicyNever), rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 42)),
			status(terminated("a", 1)), status(running("a")), true},
		{"§8 transition: a NotIn Restart rule matches other exit codes", parPod(policy(v1.RestartPolicyNever), rule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpNotIn, 0)),
			status(terminated("a", 3)), status(running("a")), false},
		{"§8 transition: a matching RestartAllContainers rule exempts every container", parPod(policy(v1.RestartPolicyNever), rule(v1.ContainerRestartRuleActionRestartAllContainers, v1.ContainerRestartRuleOnExitCodesOpIn, 7)),
			status(terminated("a", 7), terminated("b", 0)), status(waiting("a"), running("b")), false},
		{"§8 transition: AllContainersRestarting True in the new status exempts every container", parPod(policy(v1.RestartPolicyNever)),
			status(terminated("a", 0)), restarting, false},
		{"§8 transition: a terminated regular init container may not run again under Never", parPod(policy(v1.RestartPolicyNever), inits),
			initStatus(terminated("i1", 0)), initStatus(running("i1")), true},
		{"§8 transition: a sidecar init container may always restart", parPod(policy(v1.RestartPolicyNever), inits, func(p *v1.Pod) { p.Spec.InitContainers[0].RestartPolicy = &sidecar }),
			initStatus(terminated("i1", 0)), initStatus(running("i1")), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckContainerStateTransition(tc.pod, &tc.old, &tc.new)
			if diff := cmp.Diff(tc.refused, errors.Is(err, ErrIllegalTransition)); diff != "" {
				t.Errorf("CheckContainerStateTransition = %v (-want refused +got):\n%s", err, diff)
			}
			// The same through the manager: the old status is pod.Status (nothing cached).
			m, _ := parManager(t, nil)
			pod := tc.pod.DeepCopy()
			pod.Status = tc.old
			err = m.SetPodStatus(pod, tc.new)
			_, cached := m.GetPodStatus(pod.UID)
			got := struct{ Refused, Cached bool }{errors.Is(err, ErrIllegalTransition), cached}
			if diff := cmp.Diff(struct{ Refused, Cached bool }{tc.refused, !tc.refused}, got); diff != "" {
				t.Errorf("SetPodStatus = %v (-want +got):\n%s", err, diff)
			}
		})
	}
}

// TestParityTransitionTimes: §8, LastTransitionTime of Ready, ContainersReady, Initialized,
// PodReadyToStartContainers, PodScheduled, DisruptionTarget and AllContainersRestarting is
// now when the Status changed (or the condition is new) and kept when it did not. Other
// conditions keep the time the caller gave.
func TestParityTransitionTimes(t *testing.T) {
	given := metav1.NewTime(t0.Add(time.Hour))
	for _, tc := range []struct {
		ty      v1.PodConditionType
		stamped bool
	}{
		{v1.PodReady, true}, {v1.ContainersReady, true}, {v1.PodInitialized, true}, {v1.PodReadyToStartContainers, true},
		{v1.PodScheduled, true}, {v1.DisruptionTarget, true}, {v1.AllContainersRestarting, true},
		{v1.PodResizePending, false}, {v1.PodResizeInProgress, false}, {"example.com/gate", false},
	} {
		for _, sc := range []struct {
			what   string
			old    []v1.PodCondition
			status v1.ConditionStatus
			want   metav1.Time // when stamped
		}{
			{"Status changed: now", []v1.PodCondition{{Type: tc.ty, Status: v1.ConditionFalse, LastTransitionTime: parPast}}, v1.ConditionTrue, parTNow},
			{"Status unchanged: kept", []v1.PodCondition{{Type: tc.ty, Status: v1.ConditionFalse, LastTransitionTime: parPast}}, v1.ConditionFalse, parPast},
			{"new condition: now", nil, v1.ConditionTrue, parTNow},
		} {
			name := "§8 LastTransitionTime of " + string(tc.ty) + ", " + sc.what
			if !tc.stamped {
				name = "§8 LastTransitionTime of " + string(tc.ty) + " is not the manager's (the caller's time is kept), " + sc.what
			}
			t.Run(name, func(t *testing.T) {
				m, _ := parManager(t, nil)
				pod := parPod(func(p *v1.Pod) { p.Status.Conditions = sc.old })
				parMust(t, m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning,
					Conditions: []v1.PodCondition{{Type: tc.ty, Status: sc.status, LastTransitionTime: given}}}))
				got, _ := m.GetPodStatus(pod.UID)
				want := given
				if tc.stamped {
					want = sc.want
				}
				if diff := cmp.Diff(want, got.Conditions[0].LastTransitionTime); diff != "" {
					t.Errorf("LastTransitionTime mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestParityUpdateStatusInternal: §8, StartTime, ObservedGeneration, VolumeHealth and the
// skipping of identical statuses.
func TestParityUpdateStatusInternal(t *testing.T) {
	at := func(h int) *metav1.Time { ts := metav1.NewTime(t0.Add(time.Duration(h) * time.Hour)); return &ts }
	vh := func(name string) []v1.PodVolumeHealth { return []v1.PodVolumeHealth{{Name: name}} }
	type out struct {
		StartTime    *metav1.Time
		ObservedGen  int64
		VolumeHealth []v1.PodVolumeHealth
		Version      uint64
	}
	for _, tc := range []struct {
		name    string
		podStat v1.PodStatus   // pod.Status: the old status when nothing is cached
		sets    []v1.PodStatus // SetPodStatus calls, in order
		want    out
	}{
		{name: "§8 StartTime is preserved once set", podStat: v1.PodStatus{StartTime: at(1)},
			sets: []v1.PodStatus{{Phase: v1.PodRunning, StartTime: at(2)}}, want: out{StartTime: at(1), ObservedGen: 7, Version: 1}},
		{name: "§8 StartTime: the new one is taken when the old status has none", podStat: v1.PodStatus{},
			sets: []v1.PodStatus{{Phase: v1.PodRunning, StartTime: at(2)}}, want: out{StartTime: at(2), ObservedGen: 7, Version: 1}},
		{name: "§8 StartTime: a zero old StartTime counts as unset", podStat: v1.PodStatus{StartTime: &metav1.Time{}},
			sets: []v1.PodStatus{{Phase: v1.PodRunning, StartTime: at(2)}}, want: out{StartTime: at(2), ObservedGen: 7, Version: 1}},
		{name: "§8 StartTime: now when neither has one", podStat: v1.PodStatus{},
			sets: []v1.PodStatus{{Phase: v1.PodRunning}}, want: out{StartTime: &parTNow, ObservedGen: 7, Version: 1}},
		{name: "§8 StartTime: kept across cached versions", podStat: v1.PodStatus{},
			sets: []v1.PodStatus{{Phase: v1.PodRunning}, {Phase: v1.PodRunning, Message: "x", StartTime: at(5)}}, want: out{StartTime: &parTNow, ObservedGen: 7, Version: 2}},
		{name: "§8 a higher old ObservedGeneration is kept", podStat: v1.PodStatus{StartTime: at(1), ObservedGeneration: 9},
			sets: []v1.PodStatus{{Phase: v1.PodRunning, ObservedGeneration: 3}}, want: out{StartTime: at(1), ObservedGen: 9, Version: 1}},
		{name: "§8 SetPodStatus: the pod's generation replaces the status's ObservedGeneration", podStat: v1.PodStatus{StartTime: at(1), ObservedGeneration: 5},
			sets: []v1.PodStatus{{Phase: v1.PodRunning, ObservedGeneration: 8}}, want: out{StartTime: at(1), ObservedGen: 7, Version: 1}},
		{name: "§8 VolumeHealth is kept when the new status has none", podStat: v1.PodStatus{StartTime: at(1), VolumeHealth: vh("data")},
			sets: []v1.PodStatus{{Phase: v1.PodRunning}}, want: out{StartTime: at(1), ObservedGen: 7, VolumeHealth: vh("data"), Version: 1}},
		{name: "§8 an identical status is skipped", podStat: v1.PodStatus{StartTime: at(1)},
			sets: []v1.PodStatus{{Phase: v1.PodRunning}, {Phase: v1.PodRunning}}, want: out{StartTime: at(1), ObservedGen: 7, Version: 1}},
		{name: "§8 a status differing only in pod-owned conditions is identical", podStat: v1.PodStatus{StartTime: at(1)},
			sets: []v1.PodStatus{{Phase: v1.PodRunning}, {Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: "example.com/g", Status: v1.ConditionTrue}}}},
			want: out{StartTime: at(1), ObservedGen: 7, Version: 1}},
		{name: "§8 a status differing only in sub-second times is identical (normalized first)", podStat: v1.PodStatus{StartTime: at(1)},
			sets: []v1.PodStatus{
				{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}}}},
				{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(300 * time.Millisecond))}}}}}},
			want: out{StartTime: at(1), ObservedGen: 7, Version: 1}},
		{name: "§8 a changed status is a new version", podStat: v1.PodStatus{StartTime: at(1)},
			sets: []v1.PodStatus{{Phase: v1.PodRunning}, {Phase: v1.PodRunning, PodIP: "10.1.1.1"}}, want: out{StartTime: at(1), ObservedGen: 7, Version: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := parManager(t, nil)
			pod := parPod(func(p *v1.Pod) { p.Status = tc.podStat })
			for _, s := range tc.sets {
				parMust(t, m.SetPodStatus(pod, s))
			}
			e := entryOf(t, m, pod.UID)
			got := out{e.Status.StartTime, e.Status.ObservedGeneration, e.Status.VolumeHealth, e.Version}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("§8 an identical status is a new version when forced (TerminatePod)", func(t *testing.T) {
		m, _ := parManager(t, nil)
		pod := parPod()
		parMust(t, m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodFailed}))
		parMust(t, m.TerminatePod(pod))
		if diff := cmp.Diff(uint64(2), entryOf(t, m, pod.UID).Version); diff != "" {
			t.Errorf("version mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("DESIGN: SetPodStatus of a pod with a deletionTimestamp always makes a new version", func(t *testing.T) {
		m, _ := parManager(t, nil)
		pod := parPod(parDeleting(30))
		parMust(t, m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning}))
		parMust(t, m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning}))
		if diff := cmp.Diff(uint64(2), entryOf(t, m, pod.UID).Version); diff != "" {
			t.Errorf("version mismatch (-want +got):\n%s", diff)
		}
	})
}

// TestParityNormalize: §8 normalizeStatus, directly and as SetPodStatus applies it.
func TestParityNormalize(t *testing.T) {
	frac := metav1.NewTime(t0.Add(999 * time.Millisecond))
	whole := metav1.NewTime(t0)
	msg := strings.Repeat("x", MaxTerminationMessageBytes+10)
	term := func(name string, m string, at metav1.Time) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: m, StartedAt: at, FinishedAt: at}}}
	}
	lastTerm := func(name string, m string, at metav1.Time) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Message: m, StartedAt: at, FinishedAt: at}}}
	}
	run := func(name string, at metav1.Time) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: at}}}
	}
	spec := func(containers, inits, ephemeral int) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Containers, p.Spec.InitContainers, p.Spec.EphemeralContainers = nil, nil, nil
			for i := range containers {
				p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: string(rune('a' + i))})
			}
			for i := range inits {
				p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "i" + string(rune('1'+i))})
			}
			for i := range ephemeral {
				p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "e" + string(rune('1'+i))}})
			}
		}
	}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		in, want v1.PodStatus
	}{
		{name: "§8 normalize: every time is truncated to RFC 3339 seconds",
			pod: parPod(spec(1, 1, 1)),
			in: v1.PodStatus{StartTime: &frac,
				Conditions:                 []v1.PodCondition{{Type: "example.com/g", LastProbeTime: frac, LastTransitionTime: frac}},
				ContainerStatuses:          []v1.ContainerStatus{run("a", frac)},
				InitContainerStatuses:      []v1.ContainerStatus{term("i1", "", frac)},
				EphemeralContainerStatuses: []v1.ContainerStatus{lastTerm("e1", "", frac)}},
			want: v1.PodStatus{StartTime: &whole,
				Conditions:                 []v1.PodCondition{{Type: "example.com/g", LastProbeTime: whole, LastTransitionTime: whole}},
				ContainerStatuses:          []v1.ContainerStatus{run("a", whole)},
				InitContainerStatuses:      []v1.ContainerStatus{term("i1", "", whole)},
				EphemeralContainerStatuses: []v1.ContainerStatus{lastTerm("e1", "", whole)}}},
		{name: "§8 normalize: termination messages cut to 12 KiB divided by the pod's container count (spec: 2 + 1 init + 1 ephemeral)",
			pod:  parPod(spec(2, 1, 1)),
			in:   v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{term("a", msg, whole)}},
			want: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{term("a", msg[:MaxTerminationMessageBytes/4], whole)}}},
		{name: "§8 normalize: the last termination's message is cut too",
			pod:  parPod(spec(3, 0, 0)),
			in:   v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{lastTerm("a", msg, whole), term("b", msg[:100], whole)}},
			want: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{lastTerm("a", msg[:MaxTerminationMessageBytes/3], whole), term("b", msg[:100], whole)}}},
		{name: "§8 normalize: a message of exactly the budget is kept",
			pod:  parPod(spec(2, 0, 0)),
			in:   v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{term("a", msg[:MaxTerminationMessageBytes/2], whole)}},
			want: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{term("a", msg[:MaxTerminationMessageBytes/2], whole)}}},
		{name: "§8 normalize: a pod without containers in its spec has the whole 12 KiB",
			pod:  parPod(spec(0, 0, 0)),
			in:   v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{term("a", msg, whole), term("b", msg, whole)}},
			want: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{term("a", msg[:MaxTerminationMessageBytes], whole), term("b", msg[:MaxTerminationMessageBytes], whole)}}},
		{name: "§8 normalize: containers and ephemeral containers sorted by name, init containers in spec order",
			pod: parPod(func(p *v1.Pod) { p.Spec.InitContainers = []v1.Container{{Name: "z"}, {Name: "m"}, {Name: "a"}} }),
			in: v1.PodStatus{
				ContainerStatuses:          []v1.ContainerStatus{{Name: "b"}, {Name: "c"}, {Name: "a"}},
				InitContainerStatuses:      []v1.ContainerStatus{{Name: "a"}, {Name: "z"}, {Name: "m"}},
				EphemeralContainerStatuses: []v1.ContainerStatus{{Name: "y"}, {Name: "x"}}},
			want: v1.PodStatus{
				ContainerStatuses:          []v1.ContainerStatus{{Name: "a"}, {Name: "b"}, {Name: "c"}},
				InitContainerStatuses:      []v1.ContainerStatus{{Name: "z"}, {Name: "m"}, {Name: "a"}},
				EphemeralContainerStatuses: []v1.ContainerStatus{{Name: "x"}, {Name: "y"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := *tc.in.DeepCopy()
			NormalizeStatus(tc.pod, &got)
			if diff := cmp.Diff(tc.want, got, parAbbrev()); diff != "" {
				t.Errorf("NormalizeStatus mismatch (-want +got):\n%s", diff)
			}
			// SetPodStatus normalizes the same way (StartTime aside: the manager sets it).
			m, _ := parManager(t, nil)
			parMust(t, m.SetPodStatus(tc.pod, tc.in))
			cached, _ := m.GetPodStatus(tc.pod.UID)
			cached.StartTime, cached.Conditions = tc.want.StartTime, tc.want.Conditions
			if cached.ObservedGeneration != tc.pod.Generation {
				t.Errorf("ObservedGeneration = %d, want the pod's generation %d", cached.ObservedGeneration, tc.pod.Generation)
			}
			cached.ObservedGeneration = 0
			if diff := cmp.Diff(tc.want, cached, parAbbrev()); diff != "" {
				t.Errorf("SetPodStatus normalized differently (-want +got):\n%s", diff)
			}
		})
	}
}

// parServer is a one-pod API server for the sync scenarios: it applies status patches,
// records every call and fails the calls it is told to.
type parServer struct {
	t     *testing.T
	pod   *v1.Pod
	calls []string
	fail  map[string]error // verb -> error of its next call
}

func (s *parServer) call(verb string) error {
	s.calls = append(s.calls, verb)
	if err := s.fail[verb]; err != nil {
		delete(s.fail, verb)
		return err
	}
	return nil
}

func (s *parServer) patcher() StatusPatcher {
	return StatusPatcherFuncs{
		GetPodFunc: func(_ context.Context, _, _ string) (*v1.Pod, error) {
			if err := s.call("get"); err != nil {
				return nil, err
			}
			return s.pod.DeepCopy(), nil
		},
		PatchPodStatusFunc: func(_ context.Context, _, _ string, patch []byte) (*v1.Pod, error) {
			if err := s.call("patch"); err != nil {
				return nil, err
			}
			patched := statustest.ApplyPatch(s.t, s.pod.UID, s.pod.Status, patch)
			s.pod.Status = patched.Status
			return s.pod.DeepCopy(), nil
		},
		DeletePodFunc: func(_ context.Context, _, _ string, uid types.UID) error {
			if err := s.call("delete " + string(uid)); err != nil {
				return err
			}
			s.pod = nil
			return nil
		},
	}
}

// TestParityDeleteAfterSync: §6 rule 8, the callers of CanBeDeleted. syncPod checks it on
// the pod just patched and then deletes with the pod's UID as precondition; needsUpdate
// keeps a finished, deletable pod due for a sync without another status change.
func TestParityDeleteAfterSync(t *testing.T) {
	type step struct {
		Calls  []string
		Cached bool
	}
	run := func(t *testing.T, failDelete bool) []step {
		srv := &parServer{t: t, pod: parPod(parDeleting(30), parPhase(v1.PodRunning)), fail: map[string]error{}}
		if failDelete {
			srv.fail["delete u1"] = errors.New("connection reset")
		}
		m, err := New(Config{Patcher: srv.patcher(), Clock: testingclock.NewFakeClock(parNow)})
		if err != nil {
			t.Fatal(err)
		}
		pod := srv.pod.DeepCopy()
		var steps []step
		sync := func() {
			srv.calls = nil
			_ = m.Sync(context.Background())
			_, cached := m.GetPodStatus(pod.UID)
			steps = append(steps, step{srv.calls, cached})
		}
		parMust(t, m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("a")}}))
		sync()
		parMust(t, m.TerminatePod(pod))
		sync()
		sync()
		return steps
	}
	for _, tc := range []struct {
		name       string
		failDelete bool
		want       []step
	}{
		{"§6 rule 8: the pod is deleted (grace 0, UID precondition) right after the terminal status is patched", false, []step{
			{Calls: []string{"get", "patch"}, Cached: true},        // running: not deletable
			{Calls: []string{"patch", "delete u1"}, Cached: false}, // finished: patched Failed, then deleted
			{Cached: false},
		}},
		{"§6 rule 8: a failed delete is retried by the next sync without a new status (needsUpdate via CanBeDeleted)", true, []step{
			{Calls: []string{"get", "patch"}, Cached: true},
			{Calls: []string{"patch", "delete u1"}, Cached: true},
			{Calls: []string{"get", "delete u1"}, Cached: false}, // nothing left to patch
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, run(t, tc.failDelete)); diff != "" {
				t.Errorf("calls mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
