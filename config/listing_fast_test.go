//go:build !podlife_simple

package config

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// The tests of the pointer rule's own state (byPtr, ptrsOff); the simple twin (build tag
// podlife_simple) never uses the rule. TestPointerRule checks the merge's results and runs
// against both.

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
