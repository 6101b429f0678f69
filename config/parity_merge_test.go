package config_test

// Parity of config.Store.Merge and the Mux's delivery with KUBELET-BEHAVIOR.md §5
// (podStorage.merge and Merge), kubelet 1.37, including the legacy incremental ops as
// DESIGN.md restates them. One scenario per stated rule, consequence and example; each name
// cites the rule. The §4 cases (CheckAndUpdatePod) and the shared helpers are in
// parity_test.go.

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

	"github.com/podlife/podlife/config"
)

// parityT0 is the fake clock's start; paritySeen0 is it in SeenTimeLayout.
var parityT0 = time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)

// pp is an API pod of namespace default, without local annotations.
func pp(name string, uid types.UID) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid, ResourceVersion: "1",
			Labels: map[string]string{"app": name}, Annotations: map[string]string{"team": "a"}},
		Spec:   v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}, TerminationGracePeriodSeconds: pI64(30)},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
}

// with returns a deep copy of p changed by f.
func with(p *v1.Pod, f func(*v1.Pod)) *v1.Pod {
	p = p.DeepCopy()
	f(p)
	return p
}

// st is p as a store holds and returns it: stamped with source and first-seen time.
func st(p *v1.Pod, source, seen string) *v1.Pod {
	p = p.DeepCopy()
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[kSource] = source
	p.Annotations[kSeen] = seen
	return p
}

func pods(ps ...*v1.Pod) []*v1.Pod { return ps }

func setOf(source string, ps ...*v1.Pod) config.PodUpdate {
	return config.PodUpdate{Op: config.Set, Source: source, Pods: ps}
}

func opOf(op config.Op, ps ...*v1.Pod) config.PodUpdate {
	return config.PodUpdate{Op: op, Source: "api", Pods: ps}
}

// copyUpdate deep-copies u's pods, so that two stores never share an input.
func copyUpdate(u config.PodUpdate) config.PodUpdate {
	out := u
	out.Pods = nil
	for _, p := range u.Pods {
		out.Pods = append(out.Pods, p.DeepCopy())
	}
	return out
}

type mergeStep struct {
	name      string        // the rule, or what the step does
	advance   time.Duration // the clock moves by this first
	u         config.PodUpdate
	want      config.Changes
	wantDrops []error              // errors.Is targets of Apply's drops, in order
	wantErr   error                // errors.Is target of Apply's error
	wantSeen  map[string]bool      // SeenSource afterwards, per source
	wantPods  map[string][]*v1.Pod // Pods(source) afterwards (sorted by namespace, name, UID)
}

type mergeScenario struct {
	name  string
	start time.Time // the clock's start; zero means parityT0
	steps []mergeStep
}

// runMergeScenario runs the steps on two stores, one through the pinned Merge and one
// through Apply (which also reports drops and errors), and checks both. shared sets
// StoreConfig.SharedPods: the classifications are the same either way.
func runMergeScenario(t *testing.T, sc mergeScenario, shared bool) {
	start := sc.start
	if start.IsZero() {
		start = parityT0
	}
	ck := clocktesting.NewFakePassiveClock(start)
	// The kubelet compares every pod, as the zero StoreConfig does (the fixtures change
	// contents under one resourceVersion).
	merged := config.NewStoreWithConfig(config.StoreConfig{Clock: ck, SharedPods: shared})
	applied := config.NewStoreWithConfig(config.StoreConfig{Clock: ck, SharedPods: shared})
	for i, step := range sc.steps {
		ck.SetTime(ck.Now().Add(step.advance))
		want := step.want
		gotM := merged.Merge(copyUpdate(step.u))
		if diff := cmp.Diff(want, gotM); diff != "" {
			t.Fatalf("step %d (%s): Merge (-want +got):\n%s", i, step.name, diff)
		}
		gotA, drops, err := applied.Apply(copyUpdate(step.u))
		if diff := cmp.Diff(want, gotA); diff != "" {
			t.Fatalf("step %d (%s): Apply (-want +got):\n%s", i, step.name, diff)
		}
		if (step.wantErr == nil) != (err == nil) || (err != nil && !errors.Is(err, step.wantErr)) {
			t.Fatalf("step %d (%s): error %v, want %v", i, step.name, err, step.wantErr)
		}
		if len(drops) != len(step.wantDrops) {
			t.Fatalf("step %d (%s): drops %v, want %v", i, step.name, drops, step.wantDrops)
		}
		for j, d := range drops {
			if !errors.Is(d.Err, step.wantDrops[j]) {
				t.Fatalf("step %d (%s): drop %d is %v, want %v", i, step.name, j, d.Err, step.wantDrops[j])
			}
		}
		for source, seen := range step.wantSeen {
			if got := merged.SeenSource(source); got != seen {
				t.Fatalf("step %d (%s): SeenSource(%q) = %v, want %v", i, step.name, source, got, seen)
			}
		}
		for source, ps := range step.wantPods {
			if diff := cmp.Diff(ps, merged.Pods(source)); diff != "" {
				t.Fatalf("step %d (%s): Pods(%q) (-want +got):\n%s", i, step.name, source, diff)
			}
		}
	}
}

func TestParityMerge(t *testing.T) {
	const s0 = paritySeen0
	a, b := pp("a", "uid-a"), pp("b", "uid-b")
	c, d := pp("c", "uid-c"), pp("d", "uid-d")
	labelled := func(p *v1.Pod) *v1.Pod { return with(p, func(p *v1.Pod) { p.Labels["v"] = "2" }) }
	failed := func(p *v1.Pod) *v1.Pod { return with(p, func(p *v1.Pod) { p.Status.Phase = v1.PodFailed }) }
	deleting := func(p *v1.Pod, g int64) *v1.Pod {
		return with(p, func(p *v1.Pod) { p.DeletionTimestamp, p.DeletionGracePeriodSeconds = pTime(100), pI64(g) })
	}
	sameNameAsA := with(b, func(p *v1.Pod) { p.Name = "a" }) // uid-b, full name a_default
	noNS := with(c, func(p *v1.Pod) { p.Namespace = "" })
	otherNS := with(a, func(p *v1.Pod) { p.Namespace = "other"; p.UID = "uid-a2" })

	scenarios := []mergeScenario{
		{name: "§5 rule 1: sources never affect each other; the same UID in two sources is tracked twice", steps: []mergeStep{
			{name: "api adds a", u: setOf("api", a), want: config.Changes{Adds: pods(st(a, "api", s0))}},
			{name: "file adds the same UID", u: setOf("file", a), want: config.Changes{Adds: pods(st(a, "file", s0))}},
			{name: "api removes it; file keeps it", u: setOf("api"), want: config.Changes{Removes: pods(st(a, "api", s0))},
				wantPods: map[string][]*v1.Pod{"api": nil, "file": pods(st(a, "file", s0))}},
			{name: "file unchanged", u: setOf("file", a), want: config.Changes{}},
		}},
		{name: "§5 rule 2: duplicate full name: the first wins even with a different UID", steps: []mergeStep{
			{u: setOf("api", a, sameNameAsA), want: config.Changes{Adds: pods(st(a, "api", s0))},
				wantDrops: []error{config.ErrDuplicateName}, wantPods: map[string][]*v1.Pod{"api": pods(st(a, "api", s0))}},
		}},
		{name: "§5 rule 2: duplicate full name: the first wins even with different content", steps: []mergeStep{
			{u: setOf("api", a, failed(labelled(a))), want: config.Changes{Adds: pods(st(a, "api", s0))},
				wantDrops: []error{config.ErrDuplicateName}},
		}},
		{name: "§5 rule 2: a duplicate of a known pod is filtered before comparing", steps: []mergeStep{
			{u: setOf("api", a), want: config.Changes{Adds: pods(st(a, "api", s0))}},
			{u: setOf("api", a, labelled(a)), want: config.Changes{}, wantDrops: []error{config.ErrDuplicateName}},
		}},
		{name: "§5 rule 2: an empty namespace is accepted", steps: []mergeStep{
			{u: setOf("api", noNS), want: config.Changes{Adds: pods(st(noNS, "api", s0))}},
		}},
		{name: "§5 rule 2: the same name in different namespaces is not a duplicate", steps: []mergeStep{
			{u: setOf("api", a, otherNS), want: config.Changes{Adds: pods(st(a, "api", s0), st(otherNS, "api", s0))}},
		}},
		{name: "§5 rule 3: config.source is set on every listed pod (an input's own value is overwritten)", steps: []mergeStep{
			{u: setOf("api", with(a, func(p *v1.Pod) { p.Annotations[kSource] = "file"; p.Annotations[kSeen] = "bogus" })),
				want: config.Changes{Adds: pods(st(a, "api", s0))}},
			{name: "a different config.source on a known pod is no change", u: setOf("api", with(a, func(p *v1.Pod) { p.Annotations[kSource] = "http" })),
				want: config.Changes{}},
		}},
		{name: "§5 rule 3: nil input annotations are made non-nil", steps: []mergeStep{
			{u: setOf("api", with(a, func(p *v1.Pod) { p.Annotations = nil })),
				want: config.Changes{Adds: pods(st(with(a, func(p *v1.Pod) { p.Annotations = nil }), "api", s0))}},
		}},
		{name: "§5 rule 3: config.seen is the injected clock's now with exactly 9 fractional digits", steps: []mergeStep{
			{u: setOf("api", a), want: config.Changes{Adds: pods(st(a, "api", "2026-11-26T01:00:00.000000000Z"))}},
			{advance: time.Second + 120*time.Nanosecond, u: setOf("api", a, b),
				want: config.Changes{Adds: pods(st(b, "api", "2026-11-26T01:00:01.000000120Z"))}},
			{advance: 5 * time.Millisecond, u: setOf("api", a, b, c),
				want: config.Changes{Adds: pods(st(c, "api", "2026-11-26T01:00:01.005000120Z"))}},
		}},
		{name: "§5 rule 3: config.seen keeps the clock's zone offset (layout ...Z07:00)", start: parityT0.In(time.FixedZone("", 2*3600)), steps: []mergeStep{
			{u: setOf("api", a), want: config.Changes{Adds: pods(st(a, "api", "2026-11-26T03:00:00.000000000+02:00"))}},
		}},
		{name: "§5 rule 3: a known UID keeps the stored object: its first-seen time survives updates", steps: []mergeStep{
			{u: setOf("api", a), want: config.Changes{Adds: pods(st(a, "api", s0))}},
			{advance: time.Hour, u: setOf("api", labelled(a)), want: config.Changes{Updates: pods(st(labelled(a), "api", s0))}},
			{advance: time.Hour, u: setOf("api", failed(labelled(a))), want: config.Changes{Reconciles: pods(st(failed(labelled(a)), "api", s0))}},
		}},
		{name: "§5 rule 3: CheckAndUpdatePod's flags pick the category", steps: []mergeStep{
			{u: setOf("api", a, b, c, d), want: config.Changes{Adds: pods(st(a, "api", s0), st(b, "api", s0), st(c, "api", s0), st(d, "api", s0))}},
			{u: setOf("api", labelled(a), failed(b), deleting(c, 30), d), want: config.Changes{
				Updates: pods(st(labelled(a), "api", s0)), Reconciles: pods(st(failed(b), "api", s0)), Deletes: pods(st(deleting(c, 30), "api", s0))}},
		}},
		{name: "§5 rule 3: only what CheckAndUpdatePod copies reaches the stored object", steps: []mergeStep{
			{u: setOf("api", a), want: config.Changes{Adds: pods(st(a, "api", s0))}},
			{name: "an Update takes Generation (§4 history, 1.34+) but not ResourceVersion or Finalizers",
				u: setOf("api", with(a, func(p *v1.Pod) {
					p.Labels["v"] = "2"
					p.Generation = 5
					p.ResourceVersion = "2"
					p.Finalizers = []string{"f"}
				})),
				want: config.Changes{Updates: pods(st(with(labelled(a), func(p *v1.Pod) { p.Generation = 5 }), "api", s0))}},
			{name: "a Reconcile takes Status only (not Generation)",
				u:    setOf("api", with(a, func(p *v1.Pod) { p.Labels["v"] = "2"; p.Generation = 6; p.Status.Phase = v1.PodSucceeded })),
				want: config.Changes{Reconciles: pods(st(with(labelled(a), func(p *v1.Pod) { p.Generation = 5; p.Status.Phase = v1.PodSucceeded }), "api", s0))}},
		}},
		{name: "§4 through Merge: nil vs empty maps, config.hash, local keys of the stored pod win, a mirror key only ref has survives", steps: []mergeStep{
			{u: setOf("api", with(a, func(p *v1.Pod) { p.Labels = nil; p.Annotations[kHash] = "h1" })),
				want: config.Changes{Adds: pods(st(with(a, func(p *v1.Pod) { p.Labels = nil; p.Annotations[kHash] = "h1" }), "api", s0))}},
			{name: "labels nil -> {} is an Update", u: setOf("api", with(a, func(p *v1.Pod) { p.Labels = map[string]string{}; p.Annotations[kHash] = "h1" })),
				want: config.Changes{Updates: pods(st(with(a, func(p *v1.Pod) { p.Labels = map[string]string{}; p.Annotations[kHash] = "h1" }), "api", s0))}},
			{name: "a config.hash change is an Update", u: setOf("api", with(a, func(p *v1.Pod) { p.Labels = map[string]string{}; p.Annotations[kHash] = "h2" })),
				want: config.Changes{Updates: pods(st(with(a, func(p *v1.Pod) { p.Labels = map[string]string{}; p.Annotations[kHash] = "h2" }), "api", s0))}},
			{name: "ref's config.source and config.seen lose, its config.mirror survives", advance: time.Hour,
				u: setOf("api", with(a, func(p *v1.Pod) {
					p.Annotations = map[string]string{kSource: "http", kSeen: "bogus", kMirror: "m", "x": "y"}
				})),
				want: config.Changes{Updates: pods(with(a, func(p *v1.Pod) {
					p.Annotations = map[string]string{kSource: "api", kSeen: s0, kMirror: "m", "x": "y"}
				}))}},
		}},
		{name: "§5 rule 4: stored UIDs absent from the list are Removes, as the last stored object", steps: []mergeStep{
			{u: setOf("api", a, b), want: config.Changes{Adds: pods(st(a, "api", s0), st(b, "api", s0))}},
			{u: setOf("api", failed(a), b), want: config.Changes{Reconciles: pods(st(failed(a), "api", s0))}},
			{u: setOf("api", b), want: config.Changes{Removes: pods(st(failed(a), "api", s0))}},
		}},
		{name: "§5 rule 4: a stored pod dropped as a duplicate is removed", steps: []mergeStep{
			{u: setOf("api", a), want: config.Changes{Adds: pods(st(a, "api", s0))}},
			{u: setOf("api", sameNameAsA, a), want: config.Changes{Adds: pods(st(sameNameAsA, "api", s0)), Removes: pods(st(a, "api", s0))},
				wantDrops: []error{config.ErrDuplicateName}, wantPods: map[string][]*v1.Pod{"api": pods(st(sameNameAsA, "api", s0))}},
		}},
		{name: "§5 rule 5: the store holds exactly the filtered list and the source is seen", steps: []mergeStep{
			{name: "a legacy add does not make the source seen", u: opOf(config.Add, c), want: config.Changes{Adds: pods(st(c, "api", s0))},
				wantSeen: map[string]bool{"api": false}},
			{u: setOf("api", b, a, sameNameAsA), want: config.Changes{Adds: pods(st(b, "api", s0), st(a, "api", s0)), Removes: pods(st(c, "api", s0))},
				wantDrops: []error{config.ErrDuplicateName}, wantSeen: map[string]bool{"api": true, "file": false},
				wantPods: map[string][]*v1.Pod{"api": pods(st(a, "api", s0), st(b, "api", s0))}},
		}},
		{name: "§5 rule 5: an empty first Set marks the source seen", steps: []mergeStep{
			{u: setOf("file"), want: config.Changes{}, wantSeen: map[string]bool{"file": true, "api": false}},
		}},
		{name: "§5 rule 7: Adds, Updates, Deletes and Reconciles in input order; Removes sorted (for the kubelet's map order)", steps: []mergeStep{
			{u: setOf("api", pp("p1", "u1"), pp("p2", "u2"), pp("p3", "u3"), pp("p4", "u4"), pp("p5", "u5"), pp("p6", "u6"), pp("zz", "u7"), pp("aa", "u8")),
				want: config.Changes{Adds: pods(st(pp("p1", "u1"), "api", s0), st(pp("p2", "u2"), "api", s0), st(pp("p3", "u3"), "api", s0),
					st(pp("p4", "u4"), "api", s0), st(pp("p5", "u5"), "api", s0), st(pp("p6", "u6"), "api", s0), st(pp("zz", "u7"), "api", s0), st(pp("aa", "u8"), "api", s0))}},
			{u: setOf("api", pp("y", "u10"), failed(pp("p6", "u6")), deleting(pp("p5", "u5"), 30), labelled(pp("p4", "u4")),
				failed(pp("p3", "u3")), deleting(pp("p2", "u2"), 30), labelled(pp("p1", "u1")), pp("x", "u9")),
				want: config.Changes{
					Adds:       pods(st(pp("y", "u10"), "api", s0), st(pp("x", "u9"), "api", s0)),
					Updates:    pods(st(labelled(pp("p4", "u4")), "api", s0), st(labelled(pp("p1", "u1")), "api", s0)),
					Deletes:    pods(st(deleting(pp("p5", "u5"), 30), "api", s0), st(deleting(pp("p2", "u2"), 30), "api", s0)),
					Reconciles: pods(st(failed(pp("p6", "u6")), "api", s0), st(failed(pp("p3", "u3")), "api", s0)),
					Removes:    pods(st(pp("aa", "u8"), "api", s0), st(pp("zz", "u7"), "api", s0)),
				}},
		}},
		{name: "§5 rule 8: the seed scenario, one Set per step", steps: []mergeStep{
			{name: "add", u: setOf("api", a), want: config.Changes{Adds: pods(st(a, "api", s0))}},
			{name: "deletionTimestamp plus deletion grace 30: Delete (with DGP 30)", u: setOf("api", deleting(a, 30)),
				want: config.Changes{Deletes: pods(st(deleting(a, 30), "api", s0))}},
			{name: "the same again: nothing", u: setOf("api", deleting(a, 30)), want: config.Changes{}},
			{name: "DGP 30 -> 0: Delete (with DGP 0)", u: setOf("api", deleting(a, 0)),
				want: config.Changes{Deletes: pods(st(deleting(a, 0), "api", s0))}},
			{name: "status Failed: Reconcile", u: setOf("api", failed(deleting(a, 0))),
				want: config.Changes{Reconciles: pods(st(failed(deleting(a, 0)), "api", s0))}},
			{name: "pod missing: Remove (returns DT, DGP 0, Failed)", u: setOf("api"),
				want: config.Changes{Removes: pods(st(failed(deleting(a, 0)), "api", s0))}},
			{name: "the same again: nothing", u: setOf("api"), want: config.Changes{}, wantPods: map[string][]*v1.Pod{"api": nil}},
		}},
		{name: "§5 legacy 2: Remove drops each listed stored UID and returns the stored object, content ignored", steps: []mergeStep{
			{u: setOf("api", a, b), want: config.Changes{Adds: pods(st(a, "api", s0), st(b, "api", s0))}},
			{u: setOf("api", failed(a), b), want: config.Changes{Reconciles: pods(st(failed(a), "api", s0))}},
			{u: opOf(config.Remove, labelled(with(a, func(p *v1.Pod) { p.Name = "renamed" }))), want: config.Changes{Removes: pods(st(failed(a), "api", s0))},
				wantPods: map[string][]*v1.Pod{"api": pods(st(b, "api", s0))}, wantSeen: map[string]bool{"api": true}},
		}},
		{name: "§5 legacy 2: Remove of unknown UIDs does nothing", steps: []mergeStep{
			{u: setOf("api", a), want: config.Changes{Adds: pods(st(a, "api", s0))}},
			{u: opOf(config.Remove, b), want: config.Changes{}, wantPods: map[string][]*v1.Pod{"api": pods(st(a, "api", s0))}},
			{name: "another source's UID is unknown here", u: config.PodUpdate{Op: config.Remove, Source: "file", Pods: pods(a)}, want: config.Changes{},
				wantPods: map[string][]*v1.Pod{"api": pods(st(a, "api", s0))}, wantSeen: map[string]bool{"file": false}},
		}},
		{name: "§5 legacy 2: Remove has no duplicate filtering", steps: []mergeStep{
			{u: setOf("api", a), want: config.Changes{Adds: pods(st(a, "api", s0))}},
			{name: "a legacy add of a namesake under another UID (a separate update)", u: opOf(config.Add, sameNameAsA),
				want: config.Changes{Adds: pods(st(sameNameAsA, "api", s0))}},
			{name: "both namesakes removed, in input order; a UID listed twice removed once", u: opOf(config.Remove, sameNameAsA, a, a),
				want: config.Changes{Removes: pods(st(sameNameAsA, "api", s0), st(a, "api", s0))}, wantPods: map[string][]*v1.Pod{"api": nil}},
		}},
		{name: "§5 legacy 3: Reconcile as input is invalid and changes nothing", steps: []mergeStep{
			{u: setOf("api", a), want: config.Changes{Adds: pods(st(a, "api", s0))}},
			{u: opOf(config.Reconcile, failed(a), b), want: config.Changes{}, wantErr: config.ErrInvalidOp,
				wantPods: map[string][]*v1.Pod{"api": pods(st(a, "api", s0))}},
			{u: config.PodUpdate{Op: config.Reconcile, Source: "file", Pods: pods(a)}, want: config.Changes{}, wantErr: config.ErrInvalidOp,
				wantSeen: map[string]bool{"file": false}, wantPods: map[string][]*v1.Pod{"file": nil}},
			{name: "the store still holds the old a", u: setOf("api", failed(a)), want: config.Changes{Reconciles: pods(st(failed(a), "api", s0))}},
		}},
		{name: "§5 legacy 3: any other op is invalid and changes nothing", steps: []mergeStep{
			{u: setOf("api", a), want: config.Changes{Adds: pods(st(a, "api", s0))}},
			{u: opOf(config.Op(42), b), want: config.Changes{}, wantErr: config.ErrUnknownOp, wantPods: map[string][]*v1.Pod{"api": pods(st(a, "api", s0))}},
			{u: opOf(config.Op(-1)), want: config.Changes{}, wantErr: config.ErrUnknownOp},
		}},
		{name: "DESIGN non-negotiables: a nil pod or an empty UID is a reported drop, never a panic", steps: []mergeStep{
			{u: setOf("api", nil, a, with(b, func(p *v1.Pod) { p.UID = "" })), want: config.Changes{Adds: pods(st(a, "api", s0))},
				wantDrops: []error{config.ErrNilPod, config.ErrEmptyUID}, wantPods: map[string][]*v1.Pod{"api": pods(st(a, "api", s0))}},
			{u: opOf(config.Remove, nil, with(a, func(p *v1.Pod) { p.UID = "" })), want: config.Changes{},
				wantDrops: []error{config.ErrNilPod, config.ErrEmptyUID}, wantPods: map[string][]*v1.Pod{"api": pods(st(a, "api", s0))}},
			{name: "an update without a source is an error and changes nothing", u: setOf("", b), want: config.Changes{}, wantErr: config.ErrEmptySource,
				wantSeen: map[string]bool{"": false}, wantPods: map[string][]*v1.Pod{"": nil}},
		}},
		{name: "DESIGN: Set replaces the source's pods, including those legacy ops upserted", steps: []mergeStep{
			{u: opOf(config.Update, a), want: config.Changes{Adds: pods(st(a, "api", s0))}},
			{u: setOf("api", b), want: config.Changes{Adds: pods(st(b, "api", s0)), Removes: pods(st(a, "api", s0))}},
		}},
	}
	// §5 legacy 1: ADD, UPDATE and DELETE are identical; the same script runs for each.
	for _, op := range []config.Op{config.Add, config.Update, config.Delete} {
		scenarios = append(scenarios, mergeScenario{name: "§5 legacy 1: op " + op.String() + " upserts and classifies by content only", steps: []mergeStep{
			{name: "an op of an unknown pod is an Add; the source is not seen", u: opOf(op, a), want: config.Changes{Adds: pods(st(a, "api", s0))},
				wantSeen: map[string]bool{"api": false}},
			{name: "a status-only change is a Reconcile; a new pod an Add; unlisted pods stay", advance: time.Minute, u: opOf(op, b, failed(a)),
				want: config.Changes{Adds: pods(st(b, "api", "2026-11-26T01:01:00.000000000Z")), Reconciles: pods(st(failed(a), "api", s0))}},
			{name: "a label change is an Update (the stored object kept, first-seen too)", u: opOf(op, labelled(failed(a))),
				want: config.Changes{Updates: pods(st(labelled(failed(a)), "api", s0))}},
			{name: "a deletionTimestamp is a Delete", u: opOf(op, deleting(labelled(failed(a)), 30)),
				want: config.Changes{Deletes: pods(st(deleting(labelled(failed(a)), 30), "api", s0))}},
			{name: "an empty op removes nothing", u: opOf(op), want: config.Changes{}, wantSeen: map[string]bool{"api": false},
				wantPods: map[string][]*v1.Pod{"api": pods(st(deleting(labelled(failed(a)), 30), "api", s0), st(b, "api", "2026-11-26T01:01:00.000000000Z"))}},
			{name: "duplicates are filtered as for Set", u: opOf(op, c, with(d, func(p *v1.Pod) { p.Name = "c" })),
				want: config.Changes{Adds: pods(st(c, "api", "2026-11-26T01:01:00.000000000Z"))}, wantDrops: []error{config.ErrDuplicateName}},
		}})
	}
	for _, sc := range scenarios {
		for _, shared := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/shared=%v", sc.name, shared), func(t *testing.T) { runMergeScenario(t, sc, shared) })
		}
	}
}

// TestParityMergeCopies covers §5 rule 6: returned pods are deep copies, so callers cannot
// change the store through them. (The kubelet stores and annotates the caller's own input
// objects; podlife reads inputs and never writes them, which the last check asserts.)
func TestParityMergeCopies(t *testing.T) {
	a, b, c, d := pp("a", "uid-a"), pp("b", "uid-b"), pp("c", "uid-c"), pp("d", "uid-d")
	scribble := func(p *v1.Pod) {
		p.Annotations[kSeen] = "scribbled"
		p.Annotations["team"] = "scribbled"
		p.Labels["app"] = "scribbled"
		p.Spec.Containers[0].Image = "scribbled"
		p.Status.Phase = v1.PodUnknown
		if p.DeletionGracePeriodSeconds != nil {
			*p.DeletionGracePeriodSeconds = 12345
		}
	}
	s := config.NewStoreWithClock(clocktesting.NewFakePassiveClock(parityT0))
	in1 := pods(a.DeepCopy(), b.DeepCopy(), c.DeepCopy(), d.DeepCopy())
	before1 := copyUpdate(setOf("api", in1...)).Pods
	c1 := s.Merge(setOf("api", in1...))
	for _, p := range c1.Adds {
		scribble(p)
	}
	in2 := pods(with(a, func(p *v1.Pod) { p.Labels["v"] = "2" }), with(b, func(p *v1.Pod) { p.Status.Phase = v1.PodFailed }),
		with(c, func(p *v1.Pod) { p.DeletionTimestamp, p.DeletionGracePeriodSeconds = pTime(100), pI64(30) }))
	before2 := copyUpdate(setOf("api", in2...)).Pods
	c2 := s.Merge(setOf("api", in2...))
	if len(c2.Updates) != 1 || len(c2.Reconciles) != 1 || len(c2.Deletes) != 1 || len(c2.Removes) != 1 {
		t.Fatalf("second Set: %+v", c2)
	}
	for _, p := range [][]*v1.Pod{c2.Updates, c2.Reconciles, c2.Deletes} {
		scribble(p[0])
	}
	want := pods(st(in2[0], "api", paritySeen0), st(in2[1], "api", paritySeen0), st(in2[2], "api", paritySeen0))
	if diff := cmp.Diff(want, s.Pods("api")); diff != "" {
		t.Errorf("the store changed through returned pods (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(config.Changes{}, s.Merge(setOf("api", copyUpdate(setOf("api", in2...)).Pods...))); diff != "" {
		t.Errorf("the same Set again after scribbling on returned pods (-want +got):\n%s", diff)
	}
	for _, p := range s.Pods("api") {
		scribble(p)
	}
	if diff := cmp.Diff(want, s.Pods("api")); diff != "" {
		t.Errorf("the store changed through Pods' result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before1, in1); diff != "" {
		t.Errorf("podlife modified the first Set's input pods (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before2, in2); diff != "" {
		t.Errorf("podlife modified the second Set's input pods (-before +after):\n%s", diff)
	}
}

// TestParityMuxOrder covers §5 rule 7's delivery: Removes, Adds, Updates, Deletes, then
// Reconciles, and the empty ADD on the first Set from a source with no add, update or
// delete (after the deletes and before the reconciles, where the kubelet sends it), plus
// §5 rule 2's warning for dropped duplicates (OnDrop and Dropped for the kubelet's event).
func TestParityMuxOrder(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) { testParityMuxOrder(t, shared) })
	}
}

func testParityMuxOrder(t *testing.T, shared bool) {
	type delivered struct {
		Op     config.Op
		Source string
		Names  []string
	}
	a, b, c, d, e := pp("a", "uid-a"), pp("b", "uid-b"), pp("c", "uid-c"), pp("d", "uid-d"), pp("e", "uid-e")
	failed := func(p *v1.Pod) *v1.Pod { return with(p, func(p *v1.Pod) { p.Status.Phase = v1.PodFailed }) }
	steps := []struct {
		name string
		u    config.PodUpdate
		want []delivered
	}{
		{name: "§5 rule 7: a first Set with adds sends no extra empty ADD", u: setOf("api", a, b, c, d),
			want: []delivered{{config.Add, "api", []string{"a", "b", "c", "d"}}}},
		{name: "§5 rule 7: Removes, Adds, Updates, Deletes, then Reconciles", u: setOf("api",
			failed(a), with(b, func(p *v1.Pod) { p.DeletionTimestamp = pTime(100) }), with(c, func(p *v1.Pod) { p.Labels["v"] = "2" }), e),
			want: []delivered{
				{config.Remove, "api", []string{"d"}}, {config.Add, "api", []string{"e"}}, {config.Update, "api", []string{"c"}},
				{config.Delete, "api", []string{"b"}}, {config.Reconcile, "api", []string{"a"}}}},
		{name: "§5 rule 7: a later Set with nothing changed sends nothing", u: setOf("api", failed(a),
			with(b, func(p *v1.Pod) { p.DeletionTimestamp = pTime(100) }), with(c, func(p *v1.Pod) { p.Labels["v"] = "2" }), e)},
		{name: "§5 rule 7: a first empty Set sends an empty ADD (source ready)", u: setOf("file"),
			want: []delivered{{config.Add, "file", nil}}},
		{name: "§5 legacy: an incremental op is not a first Set", u: config.PodUpdate{Op: config.Add, Source: "http", Pods: pods(a, b)},
			want: []delivered{{config.Add, "http", []string{"a", "b"}}}},
		{name: "§5 rule 7: the empty ADD of a first Set comes after the removes and before the reconciles", u: setOf("http", failed(a)),
			want: []delivered{{config.Remove, "http", []string{"b"}}, {config.Add, "http", nil}, {config.Reconcile, "http", []string{"a"}}}},
		{name: "§5 rule 2: duplicates dropped before the merge (reported through OnDrop)", u: setOf("dup", a, with(b, func(p *v1.Pod) { p.Name = "a" })),
			want: []delivered{{config.Add, "dup", []string{"a"}}}},
	}
	var drops []config.Drop
	m, err := config.NewMux(config.MuxConfig{Clock: clocktesting.NewFakePassiveClock(parityT0), SharedPods: shared,
		OnDrop: func(d config.Drop) { drops = append(drops, d) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range steps {
		if err := m.Update(context.Background(), step.u); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		var got []delivered
		for len(m.Updates()) > 0 {
			u := <-m.Updates()
			var names []string
			for _, p := range u.Pods {
				names = append(names, p.Name)
			}
			got = append(got, delivered{u.Op, u.Source, names})
		}
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Errorf("%s: delivered (-want +got):\n%s", step.name, diff)
		}
	}
	if len(drops) != 1 || !errors.Is(drops[0].Err, config.ErrDuplicateName) || drops[0].Source != "dup" || drops[0].Index != 1 || m.Dropped() != 1 {
		t.Errorf("drops %+v (counted %d), want one ErrDuplicateName at index 1 of source dup", drops, m.Dropped())
	}
	if !m.SeenAllSources("api", "file", "dup") || m.SeenAllSources("api", "http-never") {
		t.Error("SeenAllSources disagrees with the Sets merged")
	}
}
