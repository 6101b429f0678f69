package config

import (
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestPointerRule runs scripts in which objects are listed again, as an informer lists
// them, and some are changed in place or reused for another pod (which the memory
// contract forbids, to show what the pointer rule still notices). The store trusts
// resourceVersions (StoreConfig.TrustResourceVersions) unless a script says otherwise.
// Every step is checked against the naive model (the resourceVersion shortcut restated
// plainly, or the kubelet's rules without it) and against the counts written down.
func TestPointerRule(t *testing.T) {
	type step struct {
		// u makes the update; it may modify the objects of earlier steps.
		u func() PodUpdate
		// want is the number of changes by category (adds, updates, deletes, removes,
		// reconciles), and drops the errors of the dropped pods in order.
		want  [5]int
		drops []error
	}
	setOf := func(pods ...*v1.Pod) func() PodUpdate { return func() PodUpdate { return set(pods...) } }
	withRV := func(p *v1.Pod, rv string) *v1.Pod { p.ResourceVersion = rv; return p }
	tests := []struct {
		name string
		// exact: run with the zero StoreConfig, which classifies as the kubelet (the
		// rule off); the script's counts are for it.
		exact bool
		steps func() []step
	}{{
		name: "the same objects again are unchanged",
		steps: func() []step {
			a, b := withRV(newPod("a", "uid-a"), "1"), withRV(newPod("b", "uid-b"), "1")
			return []step{{u: setOf(a, b), want: [5]int{2, 0, 0, 0, 0}}, {u: setOf(b, a)}, {u: setOf(a, b)}}
		},
	}, {
		name: "a resourceVersion changed in place is noticed",
		steps: func() []step {
			a := withRV(newPod("a", "uid-a"), "1")
			return []step{{u: setOf(a), want: [5]int{1, 0, 0, 0, 0}}, {u: setOf(a)}, {u: func() PodUpdate {
				a.Status.Phase, a.ResourceVersion = v1.PodFailed, "2"
				return set(a)
			}, want: [5]int{0, 0, 0, 0, 1}}, {u: setOf(a)}}
		},
	}, {
		name: "contents changed in place under the same resourceVersion are trusted, as by the shortcut",
		steps: func() []step {
			a := withRV(newPod("a", "uid-a"), "1")
			return []step{{u: setOf(a), want: [5]int{1, 0, 0, 0, 0}}, {u: setOf(a)}, {u: func() PodUpdate {
				a.Labels = map[string]string{"v": "2"}
				return set(a)
			}}}
		},
	}, {
		name:  "without TrustResourceVersions: contents changed in place are compared",
		exact: true,
		steps: func() []step {
			a := withRV(newPod("a", "uid-a"), "1")
			return []step{{u: setOf(a), want: [5]int{1, 0, 0, 0, 0}}, {u: setOf(a)}, {u: func() PodUpdate {
				a.Labels = map[string]string{"v": "2"}
				return set(a)
			}, want: [5]int{0, 1, 0, 0, 0}}}
		},
	}, {
		name: "other sources: contents changed in place are compared",
		steps: func() []step {
			a := withRV(newPod("a", "uid-a"), "1")
			file := func() PodUpdate { return PodUpdate{Op: Set, Source: "file", Pods: []*v1.Pod{a}} }
			return []step{{u: file, want: [5]int{1, 0, 0, 0, 0}}, {u: file}, {u: func() PodUpdate {
				a.Labels = map[string]string{"v": "2"}
				return file()
			}, want: [5]int{0, 1, 0, 0, 0}}}
		},
	}, {
		name: "a name changed in place under the same resourceVersion is the name claimed",
		steps: func() []step {
			a, b := withRV(newPod("a", "uid-a"), "1"), withRV(newPod("b", "uid-b"), "1")
			return []step{{u: setOf(a, b), want: [5]int{2, 0, 0, 0, 0}}, {u: setOf(a, b)}, {u: func() PodUpdate {
				a.Name = "b"
				return set(a, b)
			}, want: [5]int{0, 0, 0, 1, 0}, drops: []error{ErrDuplicateName}}}
		},
	}, {
		name: "an object listed twice: the second is a duplicate name",
		steps: func() []step {
			a := withRV(newPod("a", "uid-a"), "1")
			return []step{{u: setOf(a, a), want: [5]int{1, 0, 0, 0, 0}, drops: []error{ErrDuplicateName}},
				{u: setOf(a, a), drops: []error{ErrDuplicateName}}, {u: setOf(a)}}
		},
	}, {
		name: "a known object after a new namesake: the namesake wins",
		steps: func() []step {
			a, b := withRV(newPod("a", "uid-a"), "1"), withRV(newPod("b", "uid-b"), "1")
			x := withRV(newPod("a", "uid-x"), "1")
			return []step{{u: setOf(a, b), want: [5]int{2, 0, 0, 0, 0}}, {u: setOf(a, b)},
				{u: setOf(b, x, a), want: [5]int{1, 0, 0, 1, 0}, drops: []error{ErrDuplicateName}}}
		},
	}, {
		name: "a known object before a new namesake: the object wins",
		steps: func() []step {
			a := withRV(newPod("a", "uid-a"), "1")
			x := withRV(newPod("a", "uid-x"), "1")
			return []step{{u: setOf(a), want: [5]int{1, 0, 0, 0, 0}}, {u: setOf(a)},
				{u: setOf(a, x), drops: []error{ErrDuplicateName}}}
		},
	}, {
		name: "a known object after a new version of itself: a duplicate name",
		steps: func() []step {
			a := withRV(newPod("a", "uid-a"), "1")
			a2 := a.DeepCopy()
			a2.Status.Phase, a2.ResourceVersion = v1.PodFailed, "2"
			return []step{{u: setOf(a), want: [5]int{1, 0, 0, 0, 0}}, {u: setOf(a)},
				{u: setOf(a2, a), want: [5]int{0, 0, 0, 0, 1}, drops: []error{ErrDuplicateName}}, {u: setOf(a2)}}
		},
	}, {
		name: "an address reused by another pod after a remove is that pod",
		steps: func() []step {
			a := withRV(newPod("a", "uid-a"), "1")
			return []step{{u: setOf(a), want: [5]int{1, 0, 0, 0, 0}}, {u: setOf(a)}, {u: setOf(), want: [5]int{0, 0, 0, 1, 0}},
				{u: func() PodUpdate { *a = *withRV(newPod("c", "uid-c"), "1"); return set(a) }, want: [5]int{1, 0, 0, 0, 0}},
				{u: setOf(a)}}
		},
	}, {
		name: "an address reused by another known pod is that pod",
		steps: func() []step {
			a, b := withRV(newPod("a", "uid-a"), "1"), withRV(newPod("b", "uid-b"), "1")
			return []step{{u: setOf(a, b), want: [5]int{2, 0, 0, 0, 0}}, {u: setOf(a, b)},
				{u: func() PodUpdate { *a = *b; return set(a) }, want: [5]int{0, 0, 0, 1, 0}}, {u: setOf(a)}}
		},
	}, {
		name: "an address reused by a new pod that shares a known pod's strings is the new pod",
		steps: func() []step {
			a := withRV(newPod("a", "uid-a"), "1")
			return []step{{u: setOf(a), want: [5]int{1, 0, 0, 0, 0}}, {u: setOf(a)}, {u: func() PodUpdate {
				a.UID = "uid-y" // same name and resourceVersion strings, another pod
				return set(a)
			}, want: [5]int{1, 0, 0, 1, 0}}}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bothModes(t, func(t *testing.T, shared bool) {
				clk := clocktesting.NewFakePassiveClock(t0)
				s := NewStoreWithConfig(StoreConfig{Clock: clk, TrustResourceVersions: !tt.exact, SharedPods: shared})
				model := newNaiveStore(!tt.exact)
				for i, st := range tt.steps() {
					u := st.u()
					got, drops, err := s.Apply(u)
					if err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
					want, _ := model.apply(u, clk.Now().Format(SeenTimeLayout))
					if diff := cmp.Diff(want, got); diff != "" {
						t.Fatalf("step %d: changes (-model +store):\n%s", i, diff)
					}
					counts := [5]int{len(got.Adds), len(got.Updates), len(got.Deletes), len(got.Removes), len(got.Reconciles)}
					if counts != st.want {
						t.Fatalf("step %d: %v changes (adds, updates, deletes, removes, reconciles), want %v", i, counts, st.want)
					}
					if len(drops) != len(st.drops) {
						t.Fatalf("step %d: drops %v, want %v", i, drops, st.drops)
					}
					for j, d := range drops {
						if !errors.Is(d.Err, st.drops[j]) {
							t.Fatalf("step %d: drop %d is %v, want %v", i, j, d.Err, st.drops[j])
						}
					}
					for _, src := range []string{"api", "file"} {
						if diff := cmp.Diff(model.list(src), s.Pods(src)); diff != "" {
							t.Fatalf("step %d: source %q stored (-model +store):\n%s", i, src, diff)
						}
					}
				}
			})
		})
	}
}

// TestPointerRuleUsed checks that an informer's objects listed again are found by the
// pointer rule (and only then, with TrustResourceVersions): every slot of the source holds
// the address of its object.
func TestPointerRuleUsed(t *testing.T) {
	a, b := newPod("a", "uid-a"), newPod("b", "uid-b")
	a.ResourceVersion, b.ResourceVersion = "1", "1"
	for _, trust := range []bool{false, true} {
		s := NewStoreWithConfig(StoreConfig{TrustResourceVersions: trust})
		s.Merge(set(a, b))
		s.Merge(set(a, b))
		st := s.sources[APISource]
		if got := len(st.byPtr); got != map[bool]int{false: 0, true: 2}[trust] {
			t.Errorf("TrustResourceVersions=%v: %d addresses kept, want 2 with it, none without it", trust, got)
		}
		for _, p := range []*v1.Pod{a, b} {
			if j, ok := st.unchangedListing(p); ok != trust || (ok && st.slots[j].uid != p.UID) {
				t.Errorf("TrustResourceVersions=%v: %s found by the pointer rule: %v", trust, p.Name, ok)
			}
		}
	}
}

// TestPointerRuleOnlyForSets: an Add or Update (a watch's new object) records no
// address, so a Set that lists its object finds it by UID; a Set that lists again an
// object an Update replaced, at the address a Set recorded for it, is compared with the
// Update's version (here it changes the pod back). Every result is the naive store's.
func TestPointerRuleOnlyForSets(t *testing.T) {
	a := newPod("a", "uid-a")
	a.ResourceVersion = "1"
	a2 := a.DeepCopy()
	a2.ResourceVersion, a2.Status.Phase = "2", v1.PodSucceeded
	clk := clocktesting.NewFakePassiveClock(t0)
	s, model := NewStoreWithConfig(StoreConfig{Clock: clk, TrustResourceVersions: true}), newNaiveStore(true)
	st := func() *sourceState { return s.sources[APISource] }
	for i, u := range []PodUpdate{
		{Op: Add, Source: APISource, Pods: []*v1.Pod{a}},
		set(a),
		{Op: Update, Source: APISource, Pods: []*v1.Pod{a2}},
		set(a2),
		set(a),
	} {
		got, _, err := s.Apply(u)
		if err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		want, _ := model.apply(u, clk.Now().Format(SeenTimeLayout))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("update %d (%v): changes (-model +store):\n%s", i, u.Op, diff)
		}
		if wantPtrs := map[int]int{0: 0, 1: 1, 2: 1}[i]; i <= 2 && len(st().byPtr) != wantPtrs {
			t.Errorf("update %d (%v): %d addresses kept, want %d", i, u.Op, len(st().byPtr), wantPtrs)
		}
		if i == 2 && st().slots[0].ptr != uintptr(unsafe.Pointer(a)) {
			t.Errorf("the Update replaced the address the Set recorded")
		}
	}
}

// TestJudgePointers: the decision after a trusted Set whether the next Sets use the
// pointer rule.
func TestJudgePointers(t *testing.T) {
	tests := []struct {
		name string
		// before: ptrsOff, ptrsKept; the Set: used the rule, found hits of known pods.
		off         int
		kept, ptrs  bool
		hits, known int
		// after
		wantOff     int
		wantKept    bool
		wantCleared bool
	}{
		{name: "the first Set keeps addresses", ptrs: true, wantKept: true},
		{name: "an informer's objects: on", kept: true, ptrs: true, hits: 97, known: 100, wantKept: true},
		{name: "half found: on", kept: true, ptrs: true, hits: 50, known: 100, wantKept: true},
		{name: "fewer than half found: off", kept: true, ptrs: true, hits: 49, known: 100, wantOff: pointerBackoff, wantCleared: true},
		{name: "fresh objects: off", kept: true, ptrs: true, hits: 0, known: 100, wantOff: pointerBackoff, wantCleared: true},
		{name: "a Set after one that kept nothing is not judged", ptrs: true, hits: 0, known: 100, wantKept: true},
		{name: "off: one Set less", off: 3, wantOff: 2},
		{name: "the last Set off: the next keeps addresses", off: 1, wantOff: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &sourceState{ptrsOff: tt.off, ptrsKept: tt.kept, byPtr: map[uintptr]int{1: 0}}
			st.judgePointers(tt.ptrs, tt.hits, tt.known)
			if st.ptrsOff != tt.wantOff || st.ptrsKept != tt.wantKept || (len(st.byPtr) == 0) != tt.wantCleared {
				t.Errorf("off %d, kept %v, %d addresses; want off %d, kept %v, cleared %v",
					st.ptrsOff, st.ptrsKept, len(st.byPtr), tt.wantOff, tt.wantKept, tt.wantCleared)
			}
		})
	}
}

// TestPointerRuleBacksOff lists fresh copies, then the same objects again: the rule turns
// off after the first Set of copies that follows the one that kept addresses, and back on
// pointerBackoff Sets later (then one Set keeps addresses and the next finds them), and
// every Set's result stays empty (nothing changed).
func TestPointerRuleBacksOff(t *testing.T) {
	var pods []*v1.Pod
	for i := range 10 {
		p := newPod(fmt.Sprint("p", i), types.UID(fmt.Sprint("uid-", i)))
		p.ResourceVersion = "1"
		pods = append(pods, p)
	}
	copies := func() []*v1.Pod {
		out := make([]*v1.Pod, len(pods))
		for i, p := range pods {
			out[i] = p.DeepCopy()
		}
		return out
	}
	s := NewStoreWithConfig(StoreConfig{TrustResourceVersions: true})
	s.Merge(set(copies()...))
	st := s.sources[APISource]
	if c := s.Merge(set(copies()...)); c.Len() != 0 || st.ptrsOff != pointerBackoff {
		t.Fatalf("copies: %d changes, off for %d Sets, want none and %d", c.Len(), st.ptrsOff, pointerBackoff)
	}
	for i := range pointerBackoff + 2 {
		if c := s.Merge(set(pods...)); c.Len() != 0 {
			t.Fatalf("Set %d of the same objects: %d changes", i, c.Len())
		}
	}
	if st.ptrsOff != 0 || !st.ptrsKept || len(st.byPtr) != len(pods) {
		t.Errorf("after the same objects: off for %d Sets, kept %v, %d addresses; want on with %d", st.ptrsOff, st.ptrsKept, len(st.byPtr), len(pods))
	}
}
