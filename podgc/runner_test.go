package podgc

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

func TestNewValidation(t *testing.T) {
	api := newFakeAPI(t, nil, nil)
	tests := []struct {
		name    string
		cfg     Config
		wantErr []string // substrings; nil means valid
	}{
		{"minimal valid", Config{Lister: api, Writer: api}, nil},
		{"negative threshold is valid (disabled)", Config{Lister: api, Writer: api, TerminatedPodThreshold: -1}, nil},
		{"no lister", Config{Writer: api}, []string{"Lister is required"}},
		{"no writer", Config{Lister: api}, []string{"Writer is required"}},
		{"negative durations and concurrency, all reported", Config{Lister: api, Writer: api, CheckPeriod: -1, QuarantinePeriod: -time.Second, MaxConcurrentDeletes: -2},
			[]string{"CheckPeriod -1ns is negative", "QuarantinePeriod -1s is negative", "MaxConcurrentDeletes -2 is negative"}},
		{"empty config", Config{}, []string{"Lister is required", "Writer is required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(tt.cfg)
			if tt.wantErr == nil {
				if err != nil || r == nil {
					t.Fatalf("New = %v, %v; want a runner", r, err)
				}
				return
			}
			if r != nil || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("New = %v, %v; want ErrInvalidConfig", r, err)
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	api := newFakeAPI(t, nil, nil)
	r, err := New(Config{Lister: api, Writer: api})
	if err != nil {
		t.Fatal(err)
	}
	if r.cfg.CheckPeriod != 20*time.Second || r.cfg.QuarantinePeriod != 40*time.Second ||
		r.cfg.MaxConcurrentDeletes != DefaultMaxConcurrentDeletes || r.cfg.Clock == nil || r.log == nil {
		t.Errorf("defaults not applied: %+v", r.cfg)
	}
	if r.cfg.TerminatedPodThreshold != 0 {
		t.Errorf("threshold defaulted to %d; zero must stay zero (disabled)", r.cfg.TerminatedPodThreshold)
	}
}

// newTestRunner returns a runner over api with a fake clock at t0.
func newTestRunner(t *testing.T, api *fakeAPI, mod func(*Config)) (*Runner, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(t0)
	cfg := Config{Lister: api, Writer: api, Clock: clk, TerminatedPodThreshold: 2}
	if mod != nil {
		mod(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, clk
}

func TestRunOnceOrphanQuarantine(t *testing.T) {
	ctx := t.Context()
	running := mkPod("orphan", 0, onNode("dead"), conds(v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}))
	api := newFakeAPI(t, []*v1.Pod{running, mkPod("fine", 0, onNode("n1"))}, []*v1.Node{mkNode("n1", ready(v1.ConditionTrue))})
	r, clk := newTestRunner(t, api, nil)

	for _, step := range []time.Duration{0, 20 * time.Second, 19 * time.Second} {
		clk.Step(step)
		rep, err := r.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Deleted) != 0 || !cmp.Equal(rep.Quarantined, []string{"dead"}) || rep.Gone != nil {
			t.Fatalf("at %v: deleted %d, quarantined %v, gone %v; want nothing deleted, dead quarantined",
				clk.Now().Sub(t0), len(rep.Deleted), rep.Quarantined, rep.Gone)
		}
	}
	if w := api.takeWrites(); len(w) != 0 {
		t.Fatalf("writes during quarantine: %v", w)
	}

	clk.Step(time.Second) // 40 s after the node was first seen missing
	rep, err := r.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"patch default/orphan", "delete default/orphan"}, api.takeWrites()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"dead"}, rep.Gone); diff != "" {
		t.Errorf("gone (-want +got):\n%s", diff)
	}
	wantStatus := v1.PodStatus{Phase: v1.PodFailed, Conditions: []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionTrue},
		{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "DeletionByPodGC", Message: "PodGC: node no longer exists",
			LastTransitionTime: metav1.NewTime(t0.Add(40 * time.Second))},
	}}
	if diff := cmp.Diff(wantStatus, api.patched["default/orphan"]); diff != "" {
		t.Errorf("status written before delete (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"fine"}, api.podNames()); diff != "" {
		t.Errorf("pods left (-want +got):\n%s", diff)
	}
	st := r.Stats()
	if st.Cycles != 4 || st.Deleted[ReasonOrphaned] != 1 || len(st.Failed) != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestRunOnceAllReasons(t *testing.T) {
	pods := []*v1.Pod{
		mkPod("s1", 1, onNode("n1"), phase(v1.PodSucceeded)),
		mkPod("s2", 2, onNode("n1"), phase(v1.PodSucceeded)),
		mkPod("s3", 3, onNode("n1"), phase(v1.PodSucceeded)),
		mkPod("ev", 9, onNode("n1"), evicted()),
		mkPod("oos", 0, onNode("down"), terminating()),
		mkPod("unsched", 0, terminating(), phase(v1.PodPending)),
		mkPod("run", 0, onNode("n1")),
	}
	nodes := []*v1.Node{mkNode("n1", ready(v1.ConditionTrue)), mkNode("down", ready(v1.ConditionFalse), outOfService())}
	api := newFakeAPI(t, pods, nodes)
	r, _ := newTestRunner(t, api, func(c *Config) { c.MaxConcurrentDeletes = 1 })
	rep, err := r.RunOnce(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"delete default/ev", "delete default/s1", // 4 terminated, threshold 2: evicted first, then oldest
		"patch default/oos", "delete default/oos",
		"patch default/unsched", "delete default/unsched",
	}
	if diff := cmp.Diff(want, api.takeWrites()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"run", "s2", "s3"}, api.podNames()); diff != "" {
		t.Errorf("pods left (-want +got):\n%s", diff)
	}
	if got := api.patched["default/oos"]; got.Phase != v1.PodFailed || len(got.Conditions) != 0 {
		t.Errorf("oos status = %+v, want Failed without condition", got)
	}
	if len(rep.Deleted) != 4 {
		t.Errorf("report deleted %d, want 4", len(rep.Deleted))
	}
	st := r.Stats()
	wantDeleted := map[Reason]int{ReasonTerminated: 2, ReasonTerminatingOutOfService: 1, ReasonTerminatingUnscheduled: 1}
	if diff := cmp.Diff(wantDeleted, st.Deleted); diff != "" {
		t.Errorf("stats deleted (-want +got):\n%s", diff)
	}

	// The next cycle finds nothing more to do.
	if rep, err := r.RunOnce(t.Context()); err != nil || len(rep.Plan.Deletions) != 0 {
		t.Errorf("second cycle: %d deletions, err %v; want none", len(rep.Plan.Deletions), err)
	}
}

func TestRunOnceErrors(t *testing.T) {
	boom := errors.New("boom")
	unsched := func() *v1.Pod { return mkPod("u", 0, terminating()) }
	tests := []struct {
		name        string
		setup       func(*fakeAPI)
		wantErr     []error
		wantWrites  []string
		wantLeft    []string
		wantStats   Stats
		wantRetried bool // a second cycle deletes the pod
	}{
		{
			name:       "listing pods fails: cycle abandoned",
			setup:      func(f *fakeAPI) { f.listPodsErr = boom },
			wantErr:    []error{ErrList, boom},
			wantLeft:   []string{"u"},
			wantStats:  Stats{Cycles: 1, ListErrors: 1, Deleted: map[Reason]int{}, Failed: map[Reason]int{}},
			wantWrites: nil,
		},
		{
			name:      "listing nodes fails: cycle abandoned",
			setup:     func(f *fakeAPI) { f.listNodesErr = boom },
			wantErr:   []error{ErrList, boom},
			wantLeft:  []string{"u"},
			wantStats: Stats{Cycles: 1, ListErrors: 1, Deleted: map[Reason]int{}, Failed: map[Reason]int{}},
		},
		{
			name:        "patch fails: no delete, retried next cycle",
			setup:       func(f *fakeAPI) { f.patchErr["u"] = boom },
			wantErr:     []error{ErrPatch, boom},
			wantWrites:  []string{"patch default/u"},
			wantLeft:    []string{"u"},
			wantStats:   Stats{Cycles: 1, Deleted: map[Reason]int{}, Failed: map[Reason]int{ReasonTerminatingUnscheduled: 1}},
			wantRetried: true,
		},
		{
			name:        "delete fails: reported, retried next cycle",
			setup:       func(f *fakeAPI) { f.deleteErr["u"] = apierrors.NewInternalError(boom) },
			wantErr:     []error{ErrDelete},
			wantWrites:  []string{"patch default/u", "delete default/u"},
			wantLeft:    []string{"u"},
			wantStats:   Stats{Cycles: 1, Deleted: map[Reason]int{}, Failed: map[Reason]int{ReasonTerminatingUnscheduled: 1}},
			wantRetried: true,
		},
		{
			name:       "patch NotFound: pod gone, success, no delete",
			setup:      func(f *fakeAPI) { f.patchErr["u"] = apierrors.NewNotFound(podsResource, "u") },
			wantWrites: []string{"patch default/u"},
			wantLeft:   []string{"u"}, // the fake still has it; the runner believed the server
			wantStats:  Stats{Cycles: 1, Deleted: map[Reason]int{ReasonTerminatingUnscheduled: 1}, Failed: map[Reason]int{}},
		},
		{
			name:       "delete NotFound: success",
			setup:      func(f *fakeAPI) { f.deleteErr["u"] = apierrors.NewNotFound(podsResource, "u") },
			wantWrites: []string{"patch default/u", "delete default/u"},
			wantLeft:   []string{"u"},
			wantStats:  Stats{Cycles: 1, Deleted: map[Reason]int{ReasonTerminatingUnscheduled: 1}, Failed: map[Reason]int{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, []*v1.Pod{unsched()}, nil)
			tt.setup(api)
			var logs bytes.Buffer
			r, _ := newTestRunner(t, api, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
			rep, err := r.RunOnce(t.Context())
			for _, want := range tt.wantErr {
				if !errors.Is(err, want) {
					t.Errorf("error %v does not wrap %v", err, want)
				}
			}
			if tt.wantErr == nil && err != nil {
				t.Errorf("error = %v, want nil", err)
			}
			if err != nil && !strings.Contains(logs.String(), "level=ERROR") {
				t.Errorf("error not logged; logs:\n%s", logs.String())
			}
			if !errors.Is(rep.Err, err) && rep.Err != err {
				t.Errorf("report error %v differs from returned %v", rep.Err, err)
			}
			if diff := cmp.Diff(tt.wantWrites, api.takeWrites()); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantLeft, api.podNames()); diff != "" {
				t.Errorf("pods left (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantStats, r.Stats()); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
			if tt.wantRetried {
				if _, err := r.RunOnce(t.Context()); err != nil {
					t.Errorf("retry: %v", err)
				}
				if left := api.podNames(); len(left) != 0 {
					t.Errorf("after retry pods left: %v", left)
				}
			}
		})
	}
}

func TestRunOnceDeleteConflictNeverTouchesNewPod(t *testing.T) {
	api := newFakeAPI(t, []*v1.Pod{mkPod("u", 0, terminating(), phase(v1.PodFailed))}, nil)
	// Between the list and the delete, the pod is replaced by a new one of the same name.
	api.hook = func(op, name string) {
		if op == "delete" {
			api.put(mkPod("u", 5, uid("new-uid")))
			api.hook = nil
		}
	}
	r, _ := newTestRunner(t, api, func(c *Config) { c.MaxConcurrentDeletes = 1 })
	_, err := r.RunOnce(t.Context())
	if !errors.Is(err, ErrDelete) || !apierrors.IsConflict(err) {
		t.Errorf("error = %v, want a delete conflict", err)
	}
	if diff := cmp.Diff([]string{"u"}, api.podNames()); diff != "" {
		t.Errorf("pods left (-want +got):\n%s", diff)
	}
	// The next cycle sees the new pod, which is not terminating: left alone.
	api.takeWrites()
	if _, err := r.RunOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if w := api.takeWrites(); len(w) != 0 {
		t.Errorf("new pod written to: %v", w)
	}
}

func TestRunOnceNodeChecker(t *testing.T) {
	tests := []struct {
		name        string
		exists      bool
		err         error
		wantDeleted bool
		wantErr     error
		wantSince   time.Duration // quarantine start after the cycle, from t0
	}{
		{name: "node confirmed gone", wantDeleted: true},
		{name: "node exists after all: quarantine restarted", exists: true, wantSince: 40 * time.Second},
		{name: "check fails: pods kept, error reported", err: errors.New("apiserver down"), wantErr: ErrNodeCheck},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, []*v1.Pod{mkPod("p", 0, onNode("dead"))}, nil)
			api.nodeExists["dead"] = tt.exists
			api.nodeErr = tt.err
			r, clk := newTestRunner(t, api, func(c *Config) { c.NodeChecker = api })
			if _, err := r.RunOnce(t.Context()); err != nil {
				t.Fatal(err)
			}
			if len(api.nodeChecks) != 0 {
				t.Fatalf("node checked during quarantine: %v", api.nodeChecks)
			}
			clk.Step(40 * time.Second)
			rep, err := r.RunOnce(t.Context())
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("error = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff([]string{"dead"}, api.nodeChecks); diff != "" {
				t.Errorf("node checks (-want +got):\n%s", diff)
			}
			if got := len(api.podNames()) == 0; got != tt.wantDeleted {
				t.Errorf("pod deleted = %v, want %v (report %+v)", got, tt.wantDeleted, rep)
			}
			if !tt.wantDeleted {
				since, ok := r.quarantine.Since("dead")
				if !ok || since.Sub(t0) != tt.wantSince {
					t.Errorf("quarantine since %v (%v), want t0+%v", since.Sub(t0), ok, tt.wantSince)
				}
			}
			wantCheckErrs := 0
			if tt.err != nil {
				wantCheckErrs = 1
			}
			if got := r.Stats().NodeCheckErrors; got != wantCheckErrs {
				t.Errorf("NodeCheckErrors = %d, want %d", got, wantCheckErrs)
			}
		})
	}
}

func TestRunOnceSkipsInvalidEntries(t *testing.T) {
	api := newFakeAPI(t, nil, nil)
	lister := ListerFuncs{
		ListPodsFunc: func(context.Context) ([]*v1.Pod, error) {
			return []*v1.Pod{nil, mkPod("nouid", 0, terminating(), noUID()), mkPod("ok", 0, terminating())}, nil
		},
		ListNodesFunc: func(context.Context) ([]*v1.Node, error) { return []*v1.Node{nil}, nil },
	}
	api.put(mkPod("ok", 0, terminating()))
	r, _ := newTestRunner(t, api, func(c *Config) { c.Lister = lister })
	rep, err := r.RunOnce(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Plan.Skipped) != 3 || r.Stats().Skipped != 3 {
		t.Errorf("skipped %v (stats %d), want 3", rep.Plan.Skipped, r.Stats().Skipped)
	}
	if diff := cmp.Diff([]string{"patch default/ok", "delete default/ok"}, api.takeWrites()); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

func TestRunOnceCycleInProgress(t *testing.T) {
	api := newFakeAPI(t, nil, nil)
	var r *Runner
	var inner error
	lister := ListerFuncs{
		ListPodsFunc: func(ctx context.Context) ([]*v1.Pod, error) {
			_, inner = r.RunOnce(ctx)
			return nil, nil
		},
		ListNodesFunc: api.ListNodes,
	}
	r, _ = newTestRunner(t, api, func(c *Config) { c.Lister = lister })
	if _, err := r.RunOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(inner, ErrCycleInProgress) {
		t.Errorf("nested RunOnce error = %v, want ErrCycleInProgress", inner)
	}
	if got := r.Stats().Cycles; got != 1 {
		t.Errorf("cycles = %d, want 1", got)
	}
}

func TestRunOnceCanceledContext(t *testing.T) {
	api := newFakeAPI(t, []*v1.Pod{mkPod("a", 0, terminating()), mkPod("b", 0, terminating())}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	lister := ListerFuncs{
		ListPodsFunc:  func(ctx context.Context) ([]*v1.Pod, error) { cancel(); return api.ListPods(ctx) },
		ListNodesFunc: api.ListNodes,
	}
	r, _ := newTestRunner(t, api, func(c *Config) { c.Lister = lister })
	rep, err := r.RunOnce(ctx)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrDelete) {
		t.Errorf("error = %v, want context.Canceled wrapped in ErrDelete", err)
	}
	if len(rep.Failed) != 2 {
		t.Errorf("failed = %d, want 2", len(rep.Failed))
	}
	if w := api.takeWrites(); len(w) != 0 {
		t.Errorf("writes after cancel: %v", w)
	}
}

func TestRunOnceConcurrencyBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var pods []*v1.Pod
		for i := range 20 {
			pods = append(pods, mkPod("p"+string(rune('a'+i)), i, terminating(), phase(v1.PodFailed)))
		}
		api := newFakeAPI(t, pods, nil)
		gate := make(chan struct{})
		var mu sync.Mutex
		inflight, peak := 0, 0
		api.hook = func(op, name string) {
			mu.Lock()
			inflight++
			peak = max(peak, inflight)
			mu.Unlock()
			<-gate
			mu.Lock()
			inflight--
			mu.Unlock()
		}
		r, _ := newTestRunner(t, api, func(c *Config) { c.MaxConcurrentDeletes = 3 })
		done := make(chan error)
		go func() {
			_, err := r.RunOnce(t.Context())
			done <- err
		}()
		synctest.Wait()
		mu.Lock()
		if inflight != 3 {
			t.Errorf("in flight = %d, want 3", inflight)
		}
		mu.Unlock()
		close(gate)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if peak != 3 {
			t.Errorf("peak concurrency = %d, want 3", peak)
		}
		if left := api.podNames(); len(left) != 0 {
			t.Errorf("pods left: %v", left)
		}
	})
}

func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newFakeAPI(t, []*v1.Pod{mkPod("orphan", 0, onNode("dead"))}, nil)
		cycles := make(chan Report, 10)
		r, clk := newTestRunner(t, api, func(c *Config) { c.OnCycle = func(rep Report) { cycles <- rep } })
		ctx, cancel := context.WithCancel(t.Context())
		stopped := make(chan struct{})
		go func() {
			r.Run(ctx)
			close(stopped)
		}()

		expect := func(wantCycles int) {
			t.Helper()
			synctest.Wait()
			if got := r.Stats().Cycles; got != wantCycles {
				t.Fatalf("at %v: %d cycles, want %d", clk.Since(t0), got, wantCycles)
			}
		}
		expect(1) // a cycle at once
		clk.Step(19 * time.Second)
		expect(1)
		clk.Step(time.Second)
		expect(2) // t0+20 s
		if names := api.podNames(); len(names) != 1 {
			t.Fatalf("orphan deleted during quarantine")
		}
		clk.Step(20 * time.Second)
		expect(3) // t0+40 s: quarantine over
		if names := api.podNames(); len(names) != 0 {
			t.Fatalf("orphan not deleted after quarantine: %v", names)
		}
		var last Report
		for range 3 {
			last = <-cycles
		}
		if len(last.Deleted) != 1 || last.Deleted[0].Reason != ReasonOrphaned || !last.Start.Equal(t0.Add(40*time.Second)) {
			t.Errorf("last report = %+v", last)
		}

		// A failing list is retried at the next period and does not stop Run.
		api.mu.Lock()
		api.listPodsErr = errors.New("boom")
		api.mu.Unlock()
		clk.Step(20 * time.Second)
		expect(4)
		if st := r.Stats(); st.ListErrors != 1 {
			t.Errorf("ListErrors = %d, want 1", st.ListErrors)
		}
		api.mu.Lock()
		api.listPodsErr = nil
		api.mu.Unlock()
		clk.Step(20 * time.Second)
		expect(5)

		cancel()
		synctest.Wait()
		select {
		case <-stopped:
		default:
			t.Fatal("Run did not return after cancel")
		}
	})
}

func TestRunStopsDuringCycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newFakeAPI(t, []*v1.Pod{mkPod("a", 0, terminating()), mkPod("b", 0, terminating())}, nil)
		ctx, cancel := context.WithCancel(t.Context())
		api.hook = func(op, name string) {
			cancel() // the context ends while the first write is under way
		}
		r, _ := newTestRunner(t, api, func(c *Config) { c.MaxConcurrentDeletes = 1 })
		stopped := make(chan struct{})
		go func() {
			r.Run(ctx)
			close(stopped)
		}()
		<-stopped
		if w := api.takeWrites(); len(w) > 2 {
			t.Errorf("writes after cancel: %v", w)
		}
	})
}

func TestFuncsAdaptersNil(t *testing.T) {
	ctx := t.Context()
	if _, err := (ListerFuncs{}).ListPods(ctx); !errors.Is(err, ErrNotImplemented) {
		t.Errorf("ListPods: %v", err)
	}
	if _, err := (ListerFuncs{}).ListNodes(ctx); !errors.Is(err, ErrNotImplemented) {
		t.Errorf("ListNodes: %v", err)
	}
	if err := (PodWriterFuncs{}).PatchPodStatus(ctx, "ns", "n", nil); !errors.Is(err, ErrNotImplemented) {
		t.Errorf("PatchPodStatus: %v", err)
	}
	if err := (PodWriterFuncs{}).DeletePod(ctx, "ns", "n", metav1.DeleteOptions{}); !errors.Is(err, ErrNotImplemented) {
		t.Errorf("DeletePod: %v", err)
	}
	if _, err := (NodeCheckerFuncs{}).NodeExists(ctx, "n"); !errors.Is(err, ErrNotImplemented) {
		t.Errorf("NodeExists: %v", err)
	}
	// A runner over empty adapters reports, never panics.
	r, err := New(Config{Lister: ListerFuncs{}, Writer: PodWriterFuncs{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RunOnce(ctx); !errors.Is(err, ErrList) || !errors.Is(err, ErrNotImplemented) {
		t.Errorf("RunOnce = %v, want ErrList wrapping ErrNotImplemented", err)
	}
}

func TestReasonString(t *testing.T) {
	tests := []struct {
		r     Reason
		want  string
		valid bool
	}{
		{ReasonTerminated, "terminated", true},
		{ReasonTerminatingOutOfService, "out-of-service", true},
		{ReasonOrphaned, "orphaned", true},
		{ReasonTerminatingUnscheduled, "unscheduled", true},
		{Reason(4), "Reason(4)", false},
		{Reason(-1), "Reason(-1)", false},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.r.String(); got != tt.want {
				t.Errorf("String = %q, want %q", got, tt.want)
			}
			if got := tt.r.Valid(); got != tt.valid {
				t.Errorf("Valid = %v, want %v", got, tt.valid)
			}
		})
	}
}
