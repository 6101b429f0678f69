package config

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/internal/seedpod"
)

var t0 = time.Date(2026, 11, 26, 1, 2, 3, 4, time.UTC)

const t0Seen = "2026-11-26T01:02:03.000000004Z"

// newPod is an API pod without local annotations.
func newPod(name string, uid types.UID) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid, Labels: map[string]string{"app": name}},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
		Status:     v1.PodStatus{Phase: v1.PodRunning},
	}
}

// stamped is what the store keeps and returns for p added from source at seen.
func stamped(p *v1.Pod, source, seen string) *v1.Pod {
	p = p.DeepCopy()
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[ConfigSourceAnnotationKey] = source
	p.Annotations[ConfigFirstSeenAnnotationKey] = seen
	return p
}

func set(pods ...*v1.Pod) PodUpdate { return PodUpdate{Op: Set, Source: "api", Pods: pods} }

// bothModes runs f as a subtest for each memory mode: deep copies (shared=false) and
// shared pods (shared=true, StoreConfig.SharedPods).
func bothModes(t *testing.T, f func(t *testing.T, shared bool)) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) { f(t, shared) })
	}
}

// newTestStore returns a store stamping t0, in the given memory mode.
func newTestStore(shared bool) *Store {
	return NewStoreWithConfig(StoreConfig{Clock: clocktesting.NewFakePassiveClock(t0), SharedPods: shared})
}

// TestMergeSeedScenario runs KUBELET-BEHAVIOR.md §5's seed scenario, one Set per step.
func TestMergeSeedScenario(t *testing.T) { bothModes(t, testMergeSeedScenario) }

func testMergeSeedScenario(t *testing.T, shared bool) {
	s := newTestStore(shared)
	base := newPod("web", "uid-1")
	deleting := func(grace int64) *v1.Pod {
		p := base.DeepCopy()
		p.DeletionTimestamp = ts(100)
		p.DeletionGracePeriodSeconds = i64(grace)
		return p
	}
	failed := deleting(0)
	failed.Status.Phase = v1.PodFailed
	withDeletion := func(grace int64, phase v1.PodPhase) *v1.Pod {
		p := stamped(deleting(grace), "api", t0Seen)
		p.Status.Phase = phase
		return p
	}
	steps := []struct {
		name   string
		update PodUpdate
		want   Changes
	}{
		{"add", set(base.DeepCopy()), Changes{Adds: []*v1.Pod{stamped(base, "api", t0Seen)}}},
		{"deletionTimestamp and grace 30: delete", set(deleting(30)), Changes{Deletes: []*v1.Pod{withDeletion(30, v1.PodRunning)}}},
		{"the same again: nothing", set(deleting(30)), Changes{}},
		{"grace 30 to 0: delete", set(deleting(0)), Changes{Deletes: []*v1.Pod{withDeletion(0, v1.PodRunning)}}},
		{"status Failed: reconcile", set(failed.DeepCopy()), Changes{Reconciles: []*v1.Pod{withDeletion(0, v1.PodFailed)}}},
		{"pod missing: remove", set(), Changes{Removes: []*v1.Pod{withDeletion(0, v1.PodFailed)}}},
		{"the same again: nothing", set(), Changes{}},
	}
	for i, step := range steps {
		got, drops, err := s.Apply(step.update)
		if err != nil || drops != nil {
			t.Fatalf("step %d (%s): drops %v, err %v", i, step.name, drops, err)
		}
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Fatalf("step %d (%s): changes (-want +got):\n%s", i, step.name, diff)
		}
	}
	if !s.SeenSource("api") || s.SeenSource("file") {
		t.Errorf("SeenSource: api %v, file %v; want true, false", s.SeenSource("api"), s.SeenSource("file"))
	}
}

func TestMergeOps(t *testing.T) { bothModes(t, testMergeOps) }

func testMergeOps(t *testing.T, shared bool) {
	a, b, c := newPod("a", "uid-a"), newPod("b", "uid-b"), newPod("c", "uid-c")
	relabel := func(p *v1.Pod) *v1.Pod { p = p.DeepCopy(); p.Labels = map[string]string{"new": "1"}; return p }
	restatus := func(p *v1.Pod) *v1.Pod { p = p.DeepCopy(); p.Status.Phase = v1.PodSucceeded; return p }
	del := func(p *v1.Pod) *v1.Pod {
		p = p.DeepCopy()
		p.DeletionTimestamp = ts(5)
		p.DeletionGracePeriodSeconds = i64(30)
		return p
	}
	st := func(p *v1.Pod) *v1.Pod { return stamped(p, "api", t0Seen) }
	cases := []struct {
		name string
		// before is merged first, as a Set of source "api".
		before   []*v1.Pod
		update   PodUpdate
		want     Changes
		wantErr  error
		wantPods []*v1.Pod // the store afterwards
		wantSeen bool
	}{
		{
			name:     "set replaces: adds, updates, deletes, reconciles, removes in one",
			before:   []*v1.Pod{a, b, c},
			update:   set(relabel(a), del(b), newPod("d", "uid-d"), restatus(c)),
			want:     Changes{Adds: []*v1.Pod{st(newPod("d", "uid-d"))}, Updates: []*v1.Pod{st(relabel(a))}, Deletes: []*v1.Pod{st(del(b))}, Reconciles: []*v1.Pod{st(restatus(c))}},
			wantPods: []*v1.Pod{st(relabel(a)), st(del(b)), st(restatus(c)), st(newPod("d", "uid-d"))},
			wantSeen: true,
		},
		{
			name:     "set of nothing removes everything, sorted",
			before:   []*v1.Pod{c, a, b},
			update:   set(),
			want:     Changes{Removes: []*v1.Pod{st(a), st(b), st(c)}},
			wantSeen: true,
		},
		{
			name:     "add upserts and never removes",
			before:   []*v1.Pod{a, b},
			update:   PodUpdate{Op: Add, Source: "api", Pods: []*v1.Pod{relabel(a), c}},
			want:     Changes{Adds: []*v1.Pod{st(c)}, Updates: []*v1.Pod{st(relabel(a))}},
			wantPods: []*v1.Pod{st(relabel(a)), st(b), st(c)},
			wantSeen: true,
		},
		{
			name:     "update of an unknown pod is an add; add of a status change is a reconcile",
			update:   PodUpdate{Op: Update, Source: "api", Pods: []*v1.Pod{a}},
			want:     Changes{Adds: []*v1.Pod{st(a)}},
			wantPods: []*v1.Pod{st(a)},
		},
		{
			name:     "add with only a status change: reconcile",
			before:   []*v1.Pod{a},
			update:   PodUpdate{Op: Add, Source: "api", Pods: []*v1.Pod{restatus(a)}},
			want:     Changes{Reconciles: []*v1.Pod{st(restatus(a))}},
			wantPods: []*v1.Pod{st(restatus(a))},
			wantSeen: true,
		},
		{
			name:     "delete op without deletionTimestamp: classified by content",
			before:   []*v1.Pod{a},
			update:   PodUpdate{Op: Delete, Source: "api", Pods: []*v1.Pod{relabel(a)}},
			want:     Changes{Updates: []*v1.Pod{st(relabel(a))}},
			wantPods: []*v1.Pod{st(relabel(a))},
			wantSeen: true,
		},
		{
			name:     "delete op of a deleting pod: delete",
			before:   []*v1.Pod{a},
			update:   PodUpdate{Op: Delete, Source: "api", Pods: []*v1.Pod{del(a)}},
			want:     Changes{Deletes: []*v1.Pod{st(del(a))}},
			wantPods: []*v1.Pod{st(del(a))},
			wantSeen: true,
		},
		{
			name:     "remove drops listed UIDs in input order, whatever their content; unknown UIDs do nothing",
			before:   []*v1.Pod{a, b, c},
			update:   PodUpdate{Op: Remove, Source: "api", Pods: []*v1.Pod{relabel(c), newPod("x", "uid-x"), b}},
			want:     Changes{Removes: []*v1.Pod{st(c), st(b)}},
			wantPods: []*v1.Pod{st(a)},
			wantSeen: true,
		},
		{
			name:     "reconcile as input is invalid and changes nothing",
			before:   []*v1.Pod{a},
			update:   PodUpdate{Op: Reconcile, Source: "api", Pods: []*v1.Pod{restatus(a)}},
			wantErr:  ErrInvalidOp,
			wantPods: []*v1.Pod{st(a)},
			wantSeen: true,
		},
		{
			name:     "unknown op is invalid and changes nothing",
			before:   []*v1.Pod{a},
			update:   PodUpdate{Op: 42, Source: "api", Pods: []*v1.Pod{b}},
			wantErr:  ErrUnknownOp,
			wantPods: []*v1.Pod{st(a)},
			wantSeen: true,
		},
		{
			name:    "empty source is invalid",
			update:  PodUpdate{Op: Set, Pods: []*v1.Pod{b}},
			wantErr: ErrEmptySource,
		},
		{
			name:     "other sources are untouched",
			before:   []*v1.Pod{a},
			update:   PodUpdate{Op: Set, Source: "file", Pods: []*v1.Pod{b}},
			want:     Changes{Adds: []*v1.Pod{stamped(b, "file", t0Seen)}},
			wantPods: []*v1.Pod{st(a)},
			wantSeen: true,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newTestStore(shared)
			if c.before != nil {
				s.Merge(set(c.before...))
			}
			got, _, err := s.Apply(c.update)
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("error %v, want %v", err, c.wantErr)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.wantPods, s.Pods("api")); diff != "" {
				t.Errorf("store afterwards (-want +got):\n%s", diff)
			}
			if s.SeenSource("api") != c.wantSeen {
				t.Errorf("SeenSource(api) = %v, want %v", s.SeenSource("api"), c.wantSeen)
			}
		})
	}
}

func TestMergeDrops(t *testing.T) { bothModes(t, testMergeDrops) }

func testMergeDrops(t *testing.T, shared bool) {
	a, b := newPod("a", "uid-a"), newPod("b", "uid-b")
	twinA := newPod("a", "uid-a2") // same full name as a, another UID
	otherNS := newPod("a", "uid-a3")
	otherNS.Namespace = "other"
	sameUID := newPod("z", "uid-a") // same UID as a, another name
	noUID := newPod("n", "")
	st := func(p *v1.Pod) *v1.Pod { return stamped(p, "api", t0Seen) }
	type drop struct {
		Index int
		Err   error
	}
	cases := []struct {
		name      string
		before    []*v1.Pod
		update    PodUpdate
		want      Changes
		wantDrops []drop
	}{
		{
			name:      "nil pod and empty UID are dropped",
			update:    set(nil, noUID, a),
			want:      Changes{Adds: []*v1.Pod{st(a)}},
			wantDrops: []drop{{0, ErrNilPod}, {1, ErrEmptyUID}},
		},
		{
			name:      "same full name: the first wins even with another UID",
			update:    set(a, twinA, otherNS),
			want:      Changes{Adds: []*v1.Pod{st(a), st(otherNS)}},
			wantDrops: []drop{{1, ErrDuplicateName}},
		},
		{
			name:      "a stored pod dropped as a duplicate is removed",
			before:    []*v1.Pod{twinA},
			update:    set(a, twinA),
			want:      Changes{Adds: []*v1.Pod{st(a)}, Removes: []*v1.Pod{st(twinA)}},
			wantDrops: []drop{{1, ErrDuplicateName}},
		},
		{
			name:      "same UID twice: the first wins",
			update:    set(a, sameUID, b),
			want:      Changes{Adds: []*v1.Pod{st(a), st(b)}},
			wantDrops: []drop{{1, ErrDuplicateUID}},
		},
		{
			name:      "incremental ops filter duplicates too",
			update:    PodUpdate{Op: Add, Source: "api", Pods: []*v1.Pod{a, twinA, nil}},
			want:      Changes{Adds: []*v1.Pod{st(a)}},
			wantDrops: []drop{{1, ErrDuplicateName}, {2, ErrNilPod}},
		},
		{
			name:      "remove drops nil pods and empty UIDs",
			before:    []*v1.Pod{a},
			update:    PodUpdate{Op: Remove, Source: "api", Pods: []*v1.Pod{nil, noUID, a}},
			want:      Changes{Removes: []*v1.Pod{st(a)}},
			wantDrops: []drop{{0, ErrNilPod}, {1, ErrEmptyUID}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newTestStore(shared)
			if c.before != nil {
				s.Merge(set(c.before...))
			}
			got, drops, err := s.Apply(c.update)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			var gotDrops []drop
			for _, d := range drops {
				if d.Source != "api" || d.Pod != c.update.Pods[d.Index] {
					t.Errorf("drop %+v does not name its input", d)
				}
				for _, sentinel := range []error{ErrNilPod, ErrEmptyUID, ErrDuplicateName, ErrDuplicateUID} {
					if errors.Is(d.Err, sentinel) {
						gotDrops = append(gotDrops, drop{d.Index, sentinel})
					}
				}
			}
			if diff := cmp.Diff(c.wantDrops, gotDrops, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
				t.Errorf("drops (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMergeOwnership checks the default memory contract: inputs are never modified, and
// returned pods can be modified without touching the store.
func TestMergeOwnership(t *testing.T) {
	s := NewStoreWithClock(clocktesting.NewFakePassiveClock(t0))
	in := seedpod.New(1)
	pristine := in.DeepCopy()
	c := s.Merge(set(in))
	if diff := cmp.Diff(pristine, in); diff != "" {
		t.Fatalf("Merge modified its input (-before +after):\n%s", diff)
	}
	// Scribble over everything returned.
	out := c.Adds[0]
	out.Labels["app"] = "scribbled"
	out.Annotations[ConfigFirstSeenAnnotationKey] = "scribbled"
	out.Spec.Containers[0].Command[0] = "scribbled"
	out.Status.Conditions[0].Type = "scribbled"
	if diff := cmp.Diff(pristine, in); diff != "" {
		t.Fatalf("modifying a returned pod modified the input (-before +after):\n%s", diff)
	}
	// The same pod again is no change: the store was not touched either.
	if c := s.Merge(set(pristine.DeepCopy())); c.Len() != 0 {
		t.Fatalf("store changed through a returned pod: %+v", c)
	}
	if got := s.Pods("api")[0]; got.Annotations[ConfigFirstSeenAnnotationKey] != t0Seen {
		t.Errorf("stored seen = %q, want %q", got.Annotations[ConfigFirstSeenAnnotationKey], t0Seen)
	}
}

func TestOpString(t *testing.T) {
	want := map[Op]string{Set: "set", Add: "add", Update: "update", Delete: "delete", Remove: "remove", Reconcile: "reconcile", -1: "Op(-1)", 6: "Op(6)"}
	for op, s := range want {
		if op.String() != s {
			t.Errorf("Op(%d).String() = %q, want %q", int(op), op.String(), s)
		}
	}
	if Set != 0 || Reconcile != 5 {
		t.Errorf("Set = %d, Reconcile = %d; want 0 and 5", Set, Reconcile)
	}
}

// TestMergeSameObjectsAgain passes the same input objects round after round, as an
// informer does, and checks that nothing is reported until an object is replaced.
func TestMergeSameObjectsAgain(t *testing.T) { bothModes(t, testMergeSameObjectsAgain) }

func testMergeSameObjectsAgain(t *testing.T, shared bool) {
	s := newTestStore(shared)
	a, b := newPod("a", "uid-a"), newPod("b", "uid-b")
	a.Annotations = map[string]string{"team": "x"}
	s.Merge(set(a, b))
	for round := range 3 {
		if c := s.Merge(set(a, b)); c.Len() != 0 {
			t.Fatalf("round %d: same objects reported as changes: %+v", round, c)
		}
	}
	// Replace a with a new object carrying new annotations: an Update; then the new
	// object again: nothing.
	a2 := a.DeepCopy()
	a2.Annotations = map[string]string{"team": "y"}
	if c := s.Merge(set(a2, b)); len(c.Updates) != 1 || c.Len() != 1 {
		t.Fatalf("replaced annotations: %+v, want one update", c)
	}
	if c := s.Merge(set(a2, b)); c.Len() != 0 {
		t.Fatalf("same replaced object again: %+v", c)
	}
	// A scalar changed in place on a previously passed object (a contract violation
	// that the store still notices, since it keeps its own copy of the pod struct).
	b.Status.Phase = v1.PodFailed
	if c := s.Merge(set(a2, b)); len(c.Reconciles) != 1 || c.Len() != 1 {
		t.Fatalf("status changed in place: %+v, want one reconcile", c)
	}
	if got := s.Pods("api")[0].Annotations["team"]; got != "y" {
		t.Errorf("stored team annotation %q, want y", got)
	}
}

// TestResourceVersionShortcut: with StoreConfig.TrustResourceVersions, a pod of APISource
// listed again with the non-empty resourceVersion of the version of its UID last listed is
// unchanged, whatever its contents (the trade the opt-in makes); every other pod, and
// every pod without the opt-in, is compared field by field.
func TestResourceVersionShortcut(t *testing.T) { bothModes(t, testResourceVersionShortcut) }

func testResourceVersionShortcut(t *testing.T, shared bool) {
	list := func(ps ...*v1.Pod) []*v1.Pod { return ps }
	versioned := func(rv string, edit func(*v1.Pod)) *v1.Pod {
		p := newPod("web", "uid-1")
		p.ResourceVersion = rv
		if edit != nil {
			edit(p)
		}
		return p
	}
	relabel := func(p *v1.Pod) { p.Labels = map[string]string{"app": "other"} }
	restatus := func(p *v1.Pod) { p.Status.Phase = v1.PodFailed }
	deleting := func(p *v1.Pod) { p.DeletionTimestamp, p.DeletionGracePeriodSeconds = ts(100), i64(30) }
	cases := []struct {
		name   string
		source string
		// trust: StoreConfig.TrustResourceVersions.
		trust bool
		// first is merged, then the versions of second, in order; the last one's
		// classification is checked.
		first  *v1.Pod
		second []*v1.Pod
		want   string // the category of the last merge's one change, or "none"
	}{
		{name: "trusted: same version, different spec: unchanged", source: "api", trust: true,
			first: versioned("7", nil), second: list(versioned("7", relabel)), want: "none"},
		{name: "trusted: same version, a deletionTimestamp: unchanged", source: "api", trust: true,
			first: versioned("7", nil), second: list(versioned("7", deleting)), want: "none"},
		{name: "trusted: same version, different status: unchanged", source: "api", trust: true,
			first: versioned("7", nil), second: list(versioned("7", restatus)), want: "none"},
		{name: "trusted: new version, different labels: Update", source: "api", trust: true,
			first: versioned("7", nil), second: list(versioned("8", relabel)), want: "update"},
		{name: "trusted: new version, different status: Reconcile", source: "api", trust: true,
			first: versioned("7", nil), second: list(versioned("8", restatus)), want: "reconcile"},
		{name: "trusted: new version, same contents: unchanged", source: "api", trust: true,
			first: versioned("7", nil), second: list(versioned("8", nil)), want: "none"},
		{name: "trusted: the version last listed counts, not the first", source: "api", trust: true,
			first: versioned("7", nil), second: list(versioned("8", relabel), versioned("7", nil)), want: "update"},
		{name: "trusted: same version as the last listed after a change: unchanged", source: "api", trust: true,
			first: versioned("7", nil), second: list(versioned("8", relabel), versioned("8", restatus)), want: "none"},
		{name: "trusted: empty version: compared", source: "api", trust: true,
			first: versioned("", nil), second: list(versioned("", relabel)), want: "update"},
		{name: "trusted: version emptied: compared", source: "api", trust: true,
			first: versioned("7", nil), second: list(versioned("", restatus)), want: "reconcile"},
		{name: "trusted: other source: compared", source: "file", trust: true,
			first: versioned("7", nil), second: list(versioned("7", relabel)), want: "update"},
		{name: "default: same version, different labels: Update", source: "api",
			first: versioned("7", nil), second: list(versioned("7", relabel)), want: "update"},
		{name: "default: same version, a deletionTimestamp: Delete", source: "api",
			first: versioned("7", nil), second: list(versioned("7", deleting)), want: "delete"},
		{name: "default: same version, different status: Reconcile", source: "api",
			first: versioned("7", nil), second: list(versioned("7", restatus)), want: "reconcile"},
		{name: "default: same version as the last listed after a change: compared (labels changed back)", source: "api",
			first: versioned("7", nil), second: list(versioned("8", relabel), versioned("8", restatus)), want: "update"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStoreWithConfig(StoreConfig{Clock: clocktesting.NewFakePassiveClock(t0), TrustResourceVersions: tc.trust, SharedPods: shared})
			if c := s.Merge(PodUpdate{Op: Set, Source: tc.source, Pods: list(tc.first)}); len(c.Adds) != 1 {
				t.Fatalf("first Set: %+v, want one Add", c)
			}
			var c Changes
			for _, p := range tc.second {
				c = s.Merge(PodUpdate{Op: Set, Source: tc.source, Pods: list(p)})
			}
			if got := category(c); got != tc.want {
				t.Fatalf("last Set: %s (%+v), want %s", got, c, tc.want)
			}
		})
	}
}

// TestResourceVersionShortcutKeepsStoredPod: with StoreConfig.TrustResourceVersions, a pod
// taken as unchanged by its resourceVersion leaves the stored pod as it was.
func TestResourceVersionShortcutKeepsStoredPod(t *testing.T) {
	bothModes(t, testResourceVersionShortcutKeepsStoredPod)
}

func testResourceVersionShortcutKeepsStoredPod(t *testing.T, shared bool) {
	s := NewStoreWithConfig(StoreConfig{Clock: clocktesting.NewFakePassiveClock(t0), TrustResourceVersions: true, SharedPods: shared})
	p := newPod("web", "uid-1")
	p.ResourceVersion = "7"
	s.Merge(set(p))
	q := p.DeepCopy()
	q.Labels = map[string]string{"app": "other"}
	if c := s.Merge(set(q)); c.Len() != 0 {
		t.Fatalf("same version: %+v, want no change", c)
	}
	if diff := cmp.Diff([]*v1.Pod{stamped(p, "api", t0Seen)}, s.Pods("api")); diff != "" {
		t.Fatalf("stored pod (-want +got):\n%s", diff)
	}
}

// category names the one category of c's one pod: "none" if empty, "several" if more.
func category(c Changes) string {
	if c.Len() > 1 {
		return "several"
	}
	for op, ps := range map[Op][]*v1.Pod{Add: c.Adds, Update: c.Updates, Delete: c.Deletes, Remove: c.Removes, Reconcile: c.Reconciles} {
		if len(ps) == 1 {
			return op.String()
		}
	}
	return "none"
}

// TestDefaultComparesAsKubelet: the pinned NewStore, the zero StoreConfig and the zero
// MuxConfig compare every pod field by field, as the kubelet's merge does, so a fixture
// that changes a pod under its UID and resourceVersion (the API server never does, tests
// do) is classified by its contents. With the opt-in TrustResourceVersions the same
// fixtures are nothing: the trade the shortcut makes for the API server's pods.
func TestDefaultComparesAsKubelet(t *testing.T) {
	base := newPod("web", "uid-1")
	base.ResourceVersion = "7"
	edited := func(edit func(*v1.Pod)) *v1.Pod {
		p := base.DeepCopy()
		edit(p)
		return p
	}
	fixtures := []struct {
		name string
		pod  *v1.Pod
		want []summary
	}{
		{name: "a label changed: Update", pod: edited(func(p *v1.Pod) { p.Labels = map[string]string{"app": "other"} }),
			want: []summary{{Update, "api", []string{"web"}}}},
		{name: "a deletionTimestamp: graceful Delete", pod: edited(func(p *v1.Pod) { p.DeletionTimestamp, p.DeletionGracePeriodSeconds = ts(100), i64(30) }),
			want: []summary{{Delete, "api", []string{"web"}}}},
		{name: "the status changed: Reconcile", pod: edited(func(p *v1.Pod) { p.Status.Phase = v1.PodFailed }),
			want: []summary{{Reconcile, "api", []string{"web"}}}},
	}
	// merger is a store or a Mux, merging an update and returning its changes.
	type merger func(t *testing.T, u PodUpdate) []summary
	store := func(s *Store) merger {
		return func(_ *testing.T, u PodUpdate) []summary { return summarizeChanges(u.Source, s.Merge(u)) }
	}
	mux := func(cfg MuxConfig) merger {
		m, err := NewMux(cfg)
		return func(t *testing.T, u PodUpdate) []summary {
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Update(context.Background(), u); err != nil {
				t.Fatal(err)
			}
			return drain(m)
		}
	}
	mergers := []struct {
		name string
		// trust: made with TrustResourceVersions (the fixtures are nothing).
		trust bool
		new   func() merger
	}{
		{name: "NewStore", new: func() merger { return store(NewStore()) }},
		{name: "NewStoreWithClock", new: func() merger { return store(NewStoreWithClock(nil)) }},
		{name: "zero StoreConfig", new: func() merger { return store(NewStoreWithConfig(StoreConfig{})) }},
		{name: "shared pods", new: func() merger { return store(NewStoreWithConfig(StoreConfig{SharedPods: true})) }},
		{name: "zero MuxConfig", new: func() merger { return mux(MuxConfig{}) }},
		{name: "StoreConfig.TrustResourceVersions", trust: true,
			new: func() merger { return store(NewStoreWithConfig(StoreConfig{TrustResourceVersions: true})) }},
		{name: "MuxConfig.TrustResourceVersions", trust: true,
			new: func() merger { return mux(MuxConfig{TrustResourceVersions: true}) }},
	}
	for _, f := range fixtures {
		for _, mg := range mergers {
			t.Run(mg.name+"/"+f.name, func(t *testing.T) {
				merge := mg.new()
				merge(t, set(base.DeepCopy()))
				want := f.want
				if mg.trust {
					want = nil
				}
				if diff := cmp.Diff(want, merge(t, set(f.pod))); diff != "" {
					t.Errorf("second Set (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// summarizeChanges is c as the Mux delivers it from source, reduced to summaries.
func summarizeChanges(source string, c Changes) []summary {
	var out []summary
	for _, u := range []PodUpdate{{Op: Remove, Pods: c.Removes}, {Op: Add, Pods: c.Adds}, {Op: Update, Pods: c.Updates},
		{Op: Delete, Pods: c.Deletes}, {Op: Reconcile, Pods: c.Reconciles}} {
		if len(u.Pods) > 0 {
			u.Source = source
			out = append(out, summarize(u))
		}
	}
	return out
}
