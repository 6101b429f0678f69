package podworker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

// Parity tests: every rule of KUBELET-BEHAVIOR.md §2 (PodWorkerState.String and
// podSyncStatus.WorkType) and DESIGN.md's podworker decision, one named case each.

func TestParityWorkTypeValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   WorkType
		want int
	}{
		{"§2 rule 1: SyncPod is 0", SyncPod, 0},
		{"§2 rule 1: TerminatingPod is 1", TerminatingPod, 1},
		{"§2 rule 1: TerminatedPod is 2", TerminatedPod, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, int(tc.in)); diff != "" {
				t.Errorf("value mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParityWorkTypeString(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   WorkType
		want string
	}{
		{"§2 rule 2: SyncPod is \"sync\"", SyncPod, "sync"},
		{"§2 rule 2: TerminatingPod is \"terminating\"", TerminatingPod, "terminating"},
		{"§2 rule 2: TerminatedPod is \"terminated\"", TerminatedPod, "terminated"},
		{"§2 rule 2: a WorkType read from an int is named by its value", WorkType(1), "terminating"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.in.String()); diff != "" {
				t.Errorf("String mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParityWorkTypeUndefined: the kubelet panics with "the state N is not defined";
// podlife (DESIGN.md) returns a descriptive string that names the value and is none of
// the three defined strings.
func TestParityWorkTypeUndefined(t *testing.T) {
	defined := map[string]bool{"sync": true, "terminating": true, "terminated": true}
	for _, tc := range []struct {
		name string
		in   WorkType
	}{
		{"§2 rule 3 / DESIGN: 3 (one past TerminatedPod) gives a descriptive string, no panic", WorkType(3)},
		{"§2 rule 3 / DESIGN: -1 gives a descriptive string, no panic", WorkType(-1)},
		{"§2 rule 3 / DESIGN: a large value gives a descriptive string, no panic", WorkType(1 << 30)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("String panicked: %v", r)
					}
				}()
				got = tc.in.String()
			}()
			type verdict struct{ NonEmpty, Defined, NamesValue bool }
			want := verdict{NonEmpty: true, Defined: false, NamesValue: true}
			gotV := verdict{got != "", defined[got], strings.Contains(got, fmt.Sprint(int(tc.in)))}
			if diff := cmp.Diff(want, gotV); diff != "" {
				t.Errorf("String() = %q (-want +got):\n%s", got, diff)
			}
		})
	}
}

// TestParityWorkTypeOfStatus: §2 rule 4, podSyncStatus.WorkType: TerminatedPod if
// terminatedAt is set, else TerminatingPod if terminatingAt is set, else SyncPod. Nothing
// else of the status matters.
func TestParityWorkTypeOfStatus(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		st   podState
		want WorkType
	}{
		{"§2 rule 4: neither set gives SyncPod", podState{}, SyncPod},
		{"§2 rule 4: started only gives SyncPod", podState{startedAt: at}, SyncPod},
		{"§2 rule 4: terminatingAt set gives TerminatingPod", podState{startedAt: at, terminatingAt: at}, TerminatingPod},
		{"§2 rule 4: termination requested before start gives TerminatingPod", podState{terminatingAt: at}, TerminatingPod},
		{"§2 rule 4: terminatedAt set wins over terminatingAt", podState{startedAt: at, terminatingAt: at, terminatedAt: at.Add(time.Second)}, TerminatedPod},
		{"§2 rule 4: terminatedAt alone gives TerminatedPod", podState{terminatedAt: at}, TerminatedPod},
		{"§2 rule 4: a finished pod is still TerminatedPod", podState{terminatingAt: at, terminatedAt: at, finished: true}, TerminatedPod},
		{"§2 rule 4: flags without timestamps do not count (deleted, terminationStarted)", podState{deleted: true, terminationStarted: true, evicted: true}, SyncPod},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.st.workType()); diff != "" {
				t.Errorf("workType mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParityWorkTypeLifecycle follows one pod through the Machine and checks the WorkType
// that PodState, the started Work and SyncKnownPods report at each step (§2 rule 4 as the
// pod workers expose it).
func TestParityWorkTypeLifecycle(t *testing.T) {
	m := newTestMachine(t, MachineConfig{})
	pod := testPod("a")
	type obs struct {
		State  WorkType
		Stage  Stage
		Start  []WorkType
		Synced WorkType
	}
	observe := func(rd Ready) obs {
		t.Helper()
		o := obs{}
		for _, w := range rd.Start {
			o.Start = append(o.Start, w.WorkType)
		}
		st, ok := m.PodState(pod.UID)
		if !ok {
			t.Fatal("pod unknown")
		}
		o.State, o.Stage = st.WorkType, st.Stage
		known, _ := m.SyncKnownPods(t0, []*v1.Pod{pod})
		o.Synced = known[pod.UID].State
		return o
	}
	complete := func() Ready {
		t.Helper()
		rd, err := m.Complete(t0, pod.UID, Result{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return rd.Clone()
	}
	update := func(opts UpdatePodOptions) Ready {
		t.Helper()
		rd, err := m.UpdatePod(t0, opts, RuntimeUnknown)
		if err != nil {
			t.Fatal(err)
		}
		return rd.Clone()
	}
	for _, s := range []struct {
		name string
		do   func() Ready
		want obs
	}{
		{"§2 rule 4: a created pod is SyncPod", func() Ready { return update(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: pod}) },
			obs{SyncPod, StageSyncing, []WorkType{SyncPod}, SyncPod}},
		{"§2 rule 4: a kill sets terminatingAt at once: TerminatingPod while SyncPod still runs", func() Ready { return update(UpdatePodOptions{UpdateType: SyncPodKill, Pod: pod}) },
			obs{TerminatingPod, StageTerminating, nil, TerminatingPod}},
		{"§2 rule 4: the next work is TerminatingPod", complete,
			obs{TerminatingPod, StageTerminating, []WorkType{TerminatingPod}, TerminatingPod}},
		{"§2 rule 4: terminatedAt set: TerminatedPod", complete,
			obs{TerminatedPod, StageTerminated, []WorkType{TerminatedPod}, TerminatedPod}},
		{"§2 rule 4: finished stays TerminatedPod", complete,
			obs{TerminatedPod, StageFinished, nil, TerminatedPod}},
	} {
		rd := s.do()
		if diff := cmp.Diff(s.want, observe(rd)); diff != "" {
			t.Errorf("%s: mismatch (-want +got):\n%s", s.name, diff)
		}
	}
}

// The pinned API (DESIGN.md): a changed signature fails to compile here.
var _ func(WorkType) string = WorkType.String

// TestParityWorkTypeFirstSeenTerminal: §2 rule 4 for a pod first seen in a terminal phase
// with nothing running (an agent restart): terminatedAt is set at once, so its first work
// is TerminatedPod; while something may run it is TerminatingPod.
func TestParityWorkTypeFirstSeenTerminal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		runtime RuntimeHint
		want    WorkType
	}{
		{"§2 rule 4: a terminal pod first seen with nothing running is TerminatedPod at once", RuntimeStopped, TerminatedPod},
		{"§2 rule 4: a terminal pod first seen that may still run is TerminatingPod", RuntimeUnknown, TerminatingPod},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMachine(t, MachineConfig{})
			rd, err := m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a", phase(v1.PodSucceeded))}, tc.runtime)
			if err != nil {
				t.Fatal(err)
			}
			var got []WorkType
			for _, w := range rd.Start {
				got = append(got, w.WorkType)
			}
			st, _ := m.PodState("a")
			got = append(got, st.WorkType)
			if diff := cmp.Diff([]WorkType{tc.want, tc.want}, got); diff != "" {
				t.Errorf("(-want [work, state] +got):\n%s", diff)
			}
		})
	}
}
