package cri

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestPodIndexReplace: a list replaces the pods' IDs, except for the objects the runtime
// created after the list was asked for (the list may not show them yet); a pod neither
// listed nor created since is dropped.
func TestPodIndexReplace(t *testing.T) {
	x := newPodIndex()
	x.addSandbox("old", "sb-old")
	x.addContainer("old", "c-old")
	x.addSandbox("a", "sb-a1")
	start := x.gen // the list is asked for here
	x.addContainer("a", "c-a-new")
	x.addSandbox("b", "sb-b-new")
	x.replace(start, map[types.UID]*podIDs{
		"a": {sandboxes: map[string]uint64{"sb-a1": 0}, containers: map[string]uint64{"c-a1": 0}},
		"l": {sandboxes: map[string]uint64{"sb-l": 0}, containers: map[string]uint64{}},
	})
	for _, tc := range []struct {
		uid                   types.UID
		sandboxes, containers []string
		known                 bool
	}{
		{uid: "a", sandboxes: []string{"sb-a1"}, containers: []string{"c-a-new", "c-a1"}, known: true},
		{uid: "b", sandboxes: []string{"sb-b-new"}, known: true},
		{uid: "l", sandboxes: []string{"sb-l"}, known: true},
		{uid: "old"},
	} {
		sbs, cs, ok := x.ids(tc.uid)
		slices.Sort(sbs)
		slices.Sort(cs)
		if ok != tc.known || !slices.Equal(sbs, tc.sandboxes) || !slices.Equal(cs, tc.containers) {
			t.Errorf("pod %s: sandboxes %v, containers %v, known %v; want %v, %v, %v", tc.uid, sbs, cs, ok, tc.sandboxes, tc.containers, tc.known)
		}
	}
	x.forget("b", "sb-b-new")
	if sbs, cs, ok := x.ids("b"); !ok || len(sbs)+len(cs) != 0 {
		t.Errorf("after forget: %v %v %v", sbs, cs, ok)
	}
}
