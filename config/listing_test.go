package config

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
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
