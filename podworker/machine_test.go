package podworker

import (
	"context"
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testPod(uid string, mods ...func(*v1.Pod)) *v1.Pod {
	g := int64(30)
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Namespace: "ns",
		Annotations: map[string]string{ConfigSourceAnnotationKey: "api"}}}
	p.Spec.TerminationGracePeriodSeconds = &g
	for _, m := range mods {
		m(p)
	}
	return p
}

func deleted(g int64) func(*v1.Pod) {
	return func(p *v1.Pod) {
		ts := metav1.NewTime(t0)
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &g
	}
}

func phase(ph v1.PodPhase) func(*v1.Pod) { return func(p *v1.Pod) { p.Status.Phase = ph } }

func static(p *v1.Pod) { p.Annotations[ConfigSourceAnnotationKey] = "file" }

func newTestMachine(t *testing.T, cfg MachineConfig) *Machine {
	t.Helper()
	m, err := NewMachine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestWorkTypeString(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   WorkType
		want string
	}{
		{"sync", SyncPod, "sync"},
		{"terminating", TerminatingPod, "terminating"},
		{"terminated", TerminatedPod, "terminated"},
		{"undefined positive", WorkType(7), "WorkType(7)"},
		{"undefined negative", WorkType(-1), "WorkType(-1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.in.String()); diff != "" {
				t.Error(diff)
			}
		})
	}
	if SyncPod != 0 || TerminatingPod != 1 || TerminatedPod != 2 {
		t.Error("pinned WorkType values changed")
	}
}

func TestEnumStrings(t *testing.T) {
	got := []string{SyncPodSync.String(), SyncPodUpdate.String(), SyncPodCreate.String(), SyncPodKill.String(), SyncPodType(9).String(),
		StageNone.String(), StageSyncing.String(), StageTerminating.String(), StageTerminated.String(), StageFinished.String(), Stage(9).String()}
	want := []string{"sync", "update", "create", "kill", "SyncPodType(9)",
		"none", "syncing", "terminating", "terminated", "finished", "Stage(9)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

func TestValidate(t *testing.T) {
	neg, zero := int64(-1), int64(0)
	rp := &pleg.Pod{ID: "r", Name: "r", Namespace: "ns"}
	for _, tc := range []struct {
		name string
		opts UpdatePodOptions
		want error
	}{
		{"create", UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}, nil},
		{"kill with options", UpdatePodOptions{UpdateType: SyncPodKill, Pod: testPod("a"),
			KillPodOptions: &KillPodOptions{PodTerminationGracePeriodSecondsOverride: &zero}}, nil},
		{"runtime-only kill", UpdatePodOptions{UpdateType: SyncPodKill, RunningPod: rp}, nil},
		{"nil pod", UpdatePodOptions{UpdateType: SyncPodUpdate}, ErrNilPod},
		{"empty UID", UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("")}, ErrEmptyUID},
		{"runtime pod empty UID", UpdatePodOptions{UpdateType: SyncPodKill, RunningPod: &pleg.Pod{}}, ErrEmptyUID},
		{"both pods", UpdatePodOptions{UpdateType: SyncPodKill, Pod: testPod("a"), RunningPod: rp}, ErrPodAndRunningPod},
		{"runtime-only update", UpdatePodOptions{UpdateType: SyncPodUpdate, RunningPod: rp}, ErrRuntimePodNotKill},
		{"kill options on update", UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: testPod("a"), KillPodOptions: &KillPodOptions{}}, ErrKillOptionsNotKill},
		{"unknown update type", UpdatePodOptions{UpdateType: SyncPodType(42), Pod: testPod("a")}, ErrInvalidUpdateType},
		{"negative update type", UpdatePodOptions{UpdateType: SyncPodType(-1), Pod: testPod("a")}, ErrInvalidUpdateType},
		{"negative override", UpdatePodOptions{UpdateType: SyncPodKill, Pod: testPod("a"),
			KillPodOptions: &KillPodOptions{PodTerminationGracePeriodSecondsOverride: &neg}}, ErrNegativeGracePeriod},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Validate() = %v, want %v", err, tc.want)
			}
			m := newTestMachine(t, MachineConfig{})
			if _, err := m.UpdatePod(t0, tc.opts, RuntimeUnknown); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("UpdatePod() = %v, want %v", err, tc.want)
			}
			if tc.want != nil && m.Len() != 0 {
				t.Errorf("a rejected update left %d pods", m.Len())
			}
		})
	}
}

func TestNewMachineValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  MachineConfig
		ok   bool
	}{
		{"defaults", MachineConfig{}, true},
		{"negative resync", MachineConfig{ResyncInterval: -1}, false},
		{"negative backoff", MachineConfig{BackoffInitial: -1}, false},
		{"negative backoff max", MachineConfig{BackoffMax: -1}, false},
		{"max below initial", MachineConfig{BackoffInitial: time.Minute, BackoffMax: time.Second}, false},
		{"initial above default max", MachineConfig{BackoffInitial: time.Minute}, true},
		{"negative bound", MachineConfig{MaxConcurrentSyncs: -2}, false},
		{"unbounded", MachineConfig{MaxConcurrentSyncs: Unbounded}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewMachine(tc.cfg)
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidConfig)) {
				t.Fatalf("NewMachine() = %v, want ok=%t", err, tc.ok)
			}
		})
	}
}

func TestBackoffWhen(t *testing.T) {
	b := Backoff{Initial: time.Second, Max: 10 * time.Second}
	for _, tc := range []struct {
		name     string
		failures int
		random   float64
		want     time.Duration
	}{
		{"first", 1, 0, time.Second},
		{"second doubles", 2, 0, 2 * time.Second},
		{"fourth", 4, 0, 8 * time.Second},
		{"capped", 5, 0, 10 * time.Second},
		{"capped far out", 1000, 0, 10 * time.Second},
		{"zero failures clamp", 0, 0, time.Second},
		{"full jitter halves", 1, 1, 500 * time.Millisecond},
		{"jitter above one clamps", 5, 7, 5 * time.Second},
		{"negative random clamps", 2, -3, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, b.When(tc.failures, tc.random)); diff != "" {
				t.Error(diff)
			}
		})
	}
}

type queryResult struct {
	KnownTerminated, TerminationRequested, ContainersTerminating bool
	RuntimeRemovable, ContentRemovable, CouldRun, Finished       bool
}

func queryAll(m *Machine, uid types.UID) queryResult {
	return queryResult{m.IsPodKnownTerminated(uid), m.IsPodTerminationRequested(uid), m.ShouldPodContainersBeTerminating(uid),
		m.ShouldPodRuntimeBeRemoved(uid), m.ShouldPodContentBeRemoved(uid), m.CouldHaveRunningContainers(uid), m.ShouldPodBeFinished(uid)}
}

// step drives a Machine synchronously: every started work completes with res.
func step(t *testing.T, m *Machine, rd Ready, res func(Work) Result) {
	t.Helper()
	work := append([]Work(nil), rd.Start...)
	for len(work) > 0 {
		w := work[0]
		work = work[1:]
		next, err := m.Complete(t0, w.UID, res(w), 0)
		if err != nil {
			t.Fatal(err)
		}
		work = append(work, next.Start...)
	}
}

func ok(Work) Result { return Result{} }

func TestQueries(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, m *Machine)
		synced bool
		want   queryResult
	}{
		{"unknown before SyncKnownPods", func(*testing.T, *Machine) {}, false,
			queryResult{CouldRun: true}},
		{"unknown after SyncKnownPods", func(*testing.T, *Machine) {}, true,
			queryResult{ContainersTerminating: true, RuntimeRemovable: true, ContentRemovable: true, Finished: true}},
		{"syncing", func(t *testing.T, m *Machine) {
			rd, _ := m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}, RuntimeUnknown)
			step(t, m, rd, ok)
		}, true, queryResult{CouldRun: true}},
		{"termination requested, not yet observed", func(t *testing.T, m *Machine) {
			rd, _ := m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}, RuntimeUnknown)
			if len(rd.Start) != 1 {
				t.Fatal("no SyncPod started")
			}
			if _, err := m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: testPod("a", deleted(30))}, RuntimeUnknown); err != nil {
				t.Fatal(err)
			}
		}, true, queryResult{TerminationRequested: true, CouldRun: true}},
		{"terminating observed", func(t *testing.T, m *Machine) {
			m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a", deleted(30))}, RuntimeUnknown)
		}, true, queryResult{TerminationRequested: true, ContainersTerminating: true, CouldRun: true}},
		{"terminated, deleted", func(t *testing.T, m *Machine) {
			rd, _ := m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a", deleted(30))}, RuntimeUnknown)
			step(t, m, rd, func(w Work) Result {
				if w.WorkType == TerminatedPod {
					return Result{Err: errors.New("not yet")}
				}
				return Result{}
			})
		}, true, queryResult{KnownTerminated: true, TerminationRequested: true, ContainersTerminating: true,
			RuntimeRemovable: true, ContentRemovable: true}},
		{"finished after a terminal phase, not deleted", func(t *testing.T, m *Machine) {
			rd, _ := m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a", phase(v1.PodFailed))}, RuntimeUnknown)
			step(t, m, rd, ok)
		}, true, queryResult{KnownTerminated: true, TerminationRequested: true, ContainersTerminating: true,
			RuntimeRemovable: true, Finished: true}},
		{"evicted while terminating", func(t *testing.T, m *Machine) {
			m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodKill, Pod: testPod("a"), KillPodOptions: &KillPodOptions{Evict: true}}, RuntimeUnknown)
		}, true, queryResult{TerminationRequested: true, ContainersTerminating: true, ContentRemovable: true, CouldRun: true}},
		{"restart: terminal and stopped", func(t *testing.T, m *Machine) {
			m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a", phase(v1.PodSucceeded))}, RuntimeStopped)
		}, false, queryResult{KnownTerminated: true, TerminationRequested: true, ContainersTerminating: true, RuntimeRemovable: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMachine(t, MachineConfig{})
			if tc.synced {
				m.SyncKnownPods(t0, []*v1.Pod{testPod("a")})
			}
			tc.setup(t, m)
			if diff := cmp.Diff(tc.want, queryAll(m, "a")); diff != "" {
				t.Errorf("queries (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWorkTypeOfUpdates(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  UpdatePodOptions
		stop  RuntimeHint
		want  WorkType
		grace int64
	}{
		{"create", UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}, RuntimeUnknown, SyncPod, 0},
		{"update", UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: testPod("a")}, RuntimeUnknown, SyncPod, 0},
		{"deleted", UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: testPod("a", deleted(10))}, RuntimeUnknown, TerminatingPod, 10},
		{"force deleted", UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: testPod("a", deleted(0))}, RuntimeUnknown, TerminatingPod, 1},
		{"succeeded", UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: testPod("a", phase(v1.PodSucceeded))}, RuntimeUnknown, TerminatingPod, 30},
		{"failed and stopped", UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a", phase(v1.PodFailed))}, RuntimeStopped, TerminatedPod, 0},
		{"running phase, stopped", UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a", phase(v1.PodRunning))}, RuntimeStopped, SyncPod, 0},
		{"kill", UpdatePodOptions{UpdateType: SyncPodKill, Pod: testPod("a")}, RuntimeUnknown, TerminatingPod, 30},
		{"kill with override", UpdatePodOptions{UpdateType: SyncPodKill, Pod: testPod("a"),
			KillPodOptions: &KillPodOptions{PodTerminationGracePeriodSecondsOverride: ptr(int64(2))}}, RuntimeUnknown, TerminatingPod, 2},
		{"runtime-only", UpdatePodOptions{UpdateType: SyncPodKill, RunningPod: &pleg.Pod{ID: "a"}}, RuntimeUnknown, TerminatingPod, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMachine(t, MachineConfig{})
			rd, err := m.UpdatePod(t0, tc.opts, tc.stop)
			if err != nil {
				t.Fatal(err)
			}
			if len(rd.Start) != 1 {
				t.Fatalf("started %d works, want 1", len(rd.Start))
			}
			got := []any{rd.Start[0].WorkType, rd.Start[0].GracePeriodSeconds}
			if diff := cmp.Diff([]any{tc.want, tc.grace}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestMaxConcurrentSyncs(t *testing.T) {
	m := newTestMachine(t, MachineConfig{MaxConcurrentSyncs: 2})
	var started []types.UID
	for _, uid := range []string{"a", "b", "c", "d"} {
		rd, err := m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod(uid)}, RuntimeUnknown)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range rd.Start {
			started = append(started, w.UID)
		}
	}
	if diff := cmp.Diff([]types.UID{"a", "b"}, started); diff != "" {
		t.Fatalf("started beyond the bound (-want +got):\n%s", diff)
	}
	// Completing one starts the next in arrival order.
	rd, err := m.Complete(t0, "b", Result{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rd.Start) != 1 || rd.Start[0].UID != "c" {
		t.Fatalf("after completing b, started %+v, want c", rd.Start)
	}
	if _, err := m.Complete(t0, "b", Result{}, 0); !errors.Is(err, ErrNotWorking) {
		t.Fatalf("second Complete = %v, want ErrNotWorking", err)
	}
}

func TestCancelledWorkIsNotBackedOff(t *testing.T) {
	for _, cerr := range []error{context.Canceled, errors.New("runtime call aborted")} {
		t.Run(cerr.Error(), func(t *testing.T) { testCancelledWork(t, cerr) })
	}
	// An error of a work that was not cancelled backs off.
	m := newTestMachine(t, MachineConfig{})
	m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}, RuntimeUnknown)
	rd, _ := m.Complete(t0, "a", Result{Err: context.Canceled}, 0)
	if diff := cmp.Diff([]Requeue{{UID: "a", After: time.Second}}, rd.Requeue); diff != "" {
		t.Errorf("requeue (-want +got):\n%s", diff)
	}
}

func testCancelledWork(t *testing.T, cerr error) {
	m := newTestMachine(t, MachineConfig{})
	m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}, RuntimeUnknown)
	rd, _ := m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: testPod("a", deleted(30))}, RuntimeUnknown)
	if diff := cmp.Diff([]types.UID{"a"}, rd.Cancel); diff != "" {
		t.Fatalf("cancel (-want +got):\n%s", diff)
	}
	rd, err := m.Complete(t0.Add(time.Second), "a", Result{Err: cerr}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rd.Requeue) != 0 || len(rd.Start) != 1 || rd.Start[0].WorkType != TerminatingPod {
		t.Fatalf("after a cancelled SyncPod: %+v", rd)
	}
	if !rd.Start[0].StatusNewerThan.Equal(t0.Add(time.Second)) {
		t.Errorf("StatusNewerThan = %v, want the end of the previous sync", rd.Start[0].StatusNewerThan)
	}
}

// TestRefreshPod: a newer object of a running pod that changed only in its status is held
// without an update (no work, no stage change) and is what the next work gets; one that
// would change a decision of the Machine is refused, and the held pod stays.
func TestRefreshPod(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pod   *v1.Pod
		taken bool
	}{
		{"status only", testPod("a", phase(v1.PodRunning), func(p *v1.Pod) { p.ResourceVersion = "2" }), true},
		{"nil", nil, false},
		{"unknown pod", testPod("b", phase(v1.PodRunning)), false},
		{"terminal phase", testPod("a", phase(v1.PodSucceeded)), false},
		{"deletionTimestamp", testPod("a", phase(v1.PodRunning), deleted(30)), false},
		{"another name", testPod("a", phase(v1.PodRunning), func(p *v1.Pod) { p.Name = "other" }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMachine(t, MachineConfig{})
			held := testPod("a", phase(v1.PodPending))
			rd, _ := m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: held}, RuntimeUnknown)
			step(t, m, rd, ok)
			if got := m.RefreshPod(tc.pod); got != tc.taken {
				t.Fatalf("RefreshPod = %v, want %v", got, tc.taken)
			}
			if st, _ := m.PodState("a"); st.Working || st.Stage != StageSyncing || m.qhead != len(m.queue) {
				t.Fatalf("after RefreshPod: %+v, %d queued; want nothing started or queued", st, len(m.queue)-m.qhead)
			}
			want := held
			if tc.taken {
				want = tc.pod
			}
			rd = m.Tick(t0.Add(DefaultResyncInterval))
			if len(rd.Start) != 1 || rd.Start[0].Pod != want {
				t.Errorf("the resync started %+v, want one work with the held pod (taken: %v)", rd.Start, tc.taken)
			}
		})
	}
	t.Run("finished or runtime-only", func(t *testing.T) {
		m := newTestMachine(t, MachineConfig{})
		rd, _ := m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a", deleted(1))}, RuntimeUnknown)
		step(t, m, rd, ok)
		if _, err := m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodKill, RunningPod: &pleg.Pod{ID: "r"}}, RuntimeUnknown); err != nil {
			t.Fatal(err)
		}
		if st, _ := m.PodState("a"); st.Stage != StageFinished {
			t.Fatalf("a is %v, want finished", st.Stage)
		}
		for _, p := range []*v1.Pod{testPod("a", deleted(1)), testPod("r")} {
			if m.RefreshPod(p) {
				t.Errorf("RefreshPod(%s) taken, want refused", p.UID)
			}
		}
	})
}

// TestForgottenPodLeavesNothing checks that a finished, forgotten pod leaves no trace in
// any of the Machine's structures.
func TestForgottenPodLeavesNothing(t *testing.T) {
	m := newTestMachine(t, MachineConfig{})
	for _, p := range []*v1.Pod{testPod("a", static), testPod("b", static), testPod("c")} {
		p.Name = "same"
		rd, _ := m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: p}, RuntimeUnknown)
		step(t, m, rd, ok)
	}
	for _, uid := range []string{"a", "b", "c"} {
		p := testPod(uid, deleted(1))
		if uid != "c" {
			static(p)
		}
		p.Name = "same"
		rd, _ := m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: p}, RuntimeUnknown)
		step(t, m, rd, ok)
	}
	known, _ := m.SyncKnownPods(t0, nil)
	if len(known) != 0 || m.Len() != 0 || len(m.requeue) != 0 || len(m.nameHolders) != 0 ||
		len(m.nameWaiters) != 0 || m.inFlight != 0 || m.qhead != len(m.queue) {
		t.Fatalf("left behind: known=%d pods=%d heap=%d started=%v waiting=%v inFlight=%d queue=%v",
			len(known), m.Len(), len(m.requeue), m.nameHolders, m.nameWaiters, m.inFlight, m.queue[m.qhead:])
	}
}

// TestPodStateSize: the record kept per known pod fits the 256-byte allocation size
// class (the next one is 288 bytes): a field added must not cost every pod 32 bytes
// unnoticed.
func TestPodStateSize(t *testing.T) {
	if got := unsafe.Sizeof(podState{}); got > 256 {
		t.Errorf("podState takes %d bytes, want <= 256", got)
	}
}

// TestReadyTransitionsAlwaysReported: the Machine reports every stage change in
// Ready.Transitions, whoever drives it: what a Ready holds depends only on the inputs.
func TestReadyTransitionsAlwaysReported(t *testing.T) {
	m, err := NewMachine(MachineConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rd, err := m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}, RuntimeUnknown)
	if err != nil {
		t.Fatal(err)
	}
	want := []Transition{{UID: "a", From: StageNone, To: StageSyncing, Namespace: "ns", Name: "a"}}
	if diff := cmp.Diff(want, rd.Transitions); diff != "" {
		t.Errorf("Transitions (-want +got):\n%s", diff)
	}
}

// TestCompleteJitterIsAnInput: the jitter of the resync or retry a completion schedules
// comes from the random number passed with it, so equal inputs give equal Readies.
func TestCompleteJitterIsAnInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		random float64
		want   time.Duration
	}{
		{"resync, no jitter", nil, 0, time.Minute},
		{"resync, half", nil, 0.5, 45 * time.Second},
		{"retry, no jitter", errors.New("boom"), 0, time.Second},
		{"retry, almost all", errors.New("boom"), 0.999, 500500 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 {
				m := newTestMachine(t, MachineConfig{})
				if _, err := m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}, RuntimeUnknown); err != nil {
					t.Fatal(err)
				}
				rd, err := m.Complete(t0, "a", Result{Err: tc.err}, tc.random)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff([]Requeue{{UID: "a", After: tc.want}}, rd.Requeue); diff != "" {
					t.Errorf("Requeue (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestReadyValidUntilNextCall: the slices of a Ready stay as handed out while the driver
// applies it, whatever it asks the Machine meanwhile (the queries, RefreshPod); only the
// next call that returns a Ready reuses them, and a Clone outlives that call.
func TestReadyValidUntilNextCall(t *testing.T) {
	m := newTestMachine(t, MachineConfig{})
	ch := NewCompletion()
	if _, err := m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}, RuntimeUnknown); err != nil {
		t.Fatal(err)
	}
	rd, err := m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodKill, Pod: testPod("a"),
		KillPodOptions: &KillPodOptions{Completion: ch}}, RuntimeUnknown)
	if err != nil {
		t.Fatal(err)
	}
	if len(rd.Cancel) != 1 || len(rd.Transitions) != 1 {
		t.Fatalf("Ready %+v: want the SyncPod cancelled and a transition", rd)
	}
	want := rd.Clone()
	m.Len()
	m.PodState("a")
	m.NextRequeue()
	for _, q := range []func(types.UID) bool{m.IsPodKnownTerminated, m.CouldHaveRunningContainers, m.ShouldPodBeFinished,
		m.IsPodTerminationRequested, m.ShouldPodContainersBeTerminating, m.ShouldPodRuntimeBeRemoved, m.ShouldPodContentBeRemoved} {
		q("a")
	}
	m.RefreshPod(testPod("a"))
	if diff := cmp.Diff(want, rd, cmp.Comparer(func(a, b *Completion) bool { return a == b }),
		cmp.Comparer(func(a, b func(*v1.PodStatus)) bool { return a == nil && b == nil }), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Ready changed before the next call (-handed out +now):\n%s", diff)
	}
	kept := rd.Clone()
	next, err := m.Complete(t0, "a", Result{Err: context.Canceled}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Start) != 1 {
		t.Fatalf("Start %v, want the terminating work", next.Start)
	}
	if diff := cmp.Diff(want, kept, cmp.Comparer(func(a, b *Completion) bool { return a == b }),
		cmp.Comparer(func(a, b func(*v1.PodStatus)) bool { return a == nil && b == nil }), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("a Clone changed with the next call (-handed out +clone):\n%s", diff)
	}
}
