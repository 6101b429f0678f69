package pleg

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/types"
)

// naiveChanges is the kubelet's way, written plainly: the union of IDs in order, each
// compared by the state of its first occurrence in either record.
func naiveChanges(old, cur *Pod) []change {
	all := func(p *Pod) []*Container {
		if p == nil {
			return nil
		}
		return append(append([]*Container{}, p.Containers...), p.Sandboxes...)
	}
	state := func(p *Pod, id string) ContainerState {
		for _, c := range all(p) {
			if c != nil && c.ID == id {
				return normalize(c.State)
			}
		}
		return ContainerStateNonExistent
	}
	seen := map[string]bool{}
	var out []change
	for _, c := range append(all(old), all(cur)...) {
		if c == nil || seen[c.ID] {
			continue
		}
		seen[c.ID] = true
		if o, n := state(old, c.ID), state(cur, c.ID); o != n {
			out = append(out, change{id: c.ID, old: o, new: n})
		}
	}
	return out
}

func TestAppendChanges(t *testing.T) {
	tests := []struct {
		name     string
		old, cur *Pod
		want     []change
	}{
		{name: "both nil"},
		{name: "new pod", cur: mkPod("a", "c:c1:r", "s:s1:r"), want: []change{
			{"c1", nil, ContainerStateNonExistent, ContainerStateRunning},
			{"s1", nil, ContainerStateNonExistent, ContainerStateRunning},
		}},
		{name: "pod gone", old: mkPod("a", "c:c1:e", "s:s1:r"), want: []change{
			{"c1", nil, ContainerStateExited, ContainerStateNonExistent},
			{"s1", nil, ContainerStateRunning, ContainerStateNonExistent},
		}},
		{name: "same layout, one state", old: mkPod("a", "c:c1:r", "c:c2:r"), cur: mkPod("a", "c:c1:r", "c:c2:e"), want: []change{
			{"c2", nil, ContainerStateRunning, ContainerStateExited},
		}},
		{name: "created equals unknown", old: mkPod("a", "c:c1:c"), cur: mkPod("a", "c:c1:u")},
		{name: "reordered, no change", old: mkPod("a", "c:c1:r", "c:c2:e"), cur: mkPod("a", "c:c2:e", "c:c1:r")},
		{name: "duplicate ID: first occurrence counts", old: mkPod("a", "c:c1:r", "c:c1:e"), cur: mkPod("a", "c:c1:r", "c:c1:r")},
		{name: "duplicate ID changed once", old: mkPod("a", "c:c1:r", "s:c1:e"), cur: mkPod("a", "c:c1:e", "s:c1:e"), want: []change{
			{"c1", nil, ContainerStateRunning, ContainerStateExited},
		}},
		{name: "container moves to sandboxes", old: mkPod("a", "c:x:r"), cur: mkPod("a", "s:x:e"), want: []change{
			{"x", nil, ContainerStateRunning, ContainerStateExited},
		}},
		{name: "replaced and added", old: mkPod("a", "c:c1:e", "s:s1:r"), cur: mkPod("a", "c:c2:r", "s:s1:r"), want: []change{
			{"c1", nil, ContainerStateExited, ContainerStateNonExistent},
			{"c2", nil, ContainerStateNonExistent, ContainerStateRunning},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := viewOf(tc.old)
			got, _ := appendChanges(nil, &v, tc.cur)
			got = stripData(t, got)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(change{})); diff != "" {
				t.Errorf("appendChanges mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// podFromBytes decodes a record: each byte picks a part (container or sandbox), one of
// eight IDs (few, so duplicates and shared IDs are common) and one of six states; a zero
// byte leaves a nil entry.
func podFromBytes(data []byte) *Pod {
	if len(data) == 0 {
		return nil
	}
	states := []ContainerState{ContainerStateCreated, ContainerStateRunning, ContainerStateExited,
		ContainerStateUnknown, ContainerStateNonExistent, "weird"}
	p := &Pod{ID: "p"}
	for _, b := range data[1:] {
		if b == 0 {
			p.Containers = append(p.Containers, nil)
			continue
		}
		c := &Container{ID: fmt.Sprintf("id%d", (b>>1)&7), State: states[int(b>>4)%len(states)]}
		if b&1 == 1 {
			p.Sandboxes = append(p.Sandboxes, c)
		} else {
			p.Containers = append(p.Containers, c)
		}
	}
	return p
}

// stripData checks that each change's boxed ID, if any, is its ID, and drops it.
func stripData(t *testing.T, cs []change) []change {
	t.Helper()
	for i := range cs {
		if cs[i].data != nil && cs[i].data != any(cs[i].id) {
			t.Fatalf("change %q carries data %v", cs[i].id, cs[i].data)
		}
		cs[i].data = nil
	}
	return cs
}

func checkAgainstNaive(t *testing.T, old, cur *Pod) {
	t.Helper()
	want := naiveChanges(old, cur)
	v := viewOf(old)
	got, same := appendChanges(nil, &v, cur)
	got = stripData(t, got)
	wantView := viewOf(cur)
	if same {
		v.setStates(cur)
	} else {
		v, _ = v.rebuild(cur, nil)
	}
	if diff := viewDiff(wantView, v); diff != "" {
		t.Fatalf("the updated view differs from the view of cur (same layout %v) (-want +got):\n%s", same, diff)
	}
	for _, e := range v.entries {
		if e.data != nil && e.data != any(e.id) {
			t.Fatalf("view entry %q has data %v", e.id, e.data)
		}
	}
	if diff := changesDiff(want, got); diff != "" {
		t.Fatalf("appendChanges differs from the naive diff (-want +got):\n%s", diff)
	}
}

// TestAppendChangesRandom checks the fast paths against the naive diff on random records,
// small (pairwise scan), large (indexed) and same-layout ones.
func TestAppendChangesRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 10000 {
		n := 1 + rng.IntN(12)
		if i%10 == 0 {
			n = 1 + rng.IntN(80)
		}
		a := make([]byte, n)
		for j := range a {
			a[j] = byte(rng.UintN(256))
		}
		b := append([]byte(nil), a...)
		if i%3 == 0 { // same layout: change states only
			for j := 1; j < len(b); j++ {
				if b[j] != 0 && rng.IntN(4) == 0 {
					b[j] = b[j]&0x0f | byte(rng.UintN(16))<<4
					if b[j] == 0 {
						b[j] = 0x10
					}
				}
			}
		} else {
			b = b[:rng.IntN(len(b)+1)]
			for range rng.IntN(4) {
				b = append(b, byte(rng.UintN(256)))
			}
		}
		checkAgainstNaive(t, podFromBytes(a), podFromBytes(b))
	}
}

func FuzzAppendChanges(f *testing.F) {
	f.Add([]byte{1, 0x12, 0x23}, []byte{1, 0x22, 0x23})
	f.Add([]byte{1, 0x12, 0x12, 0x13}, []byte{})
	f.Add([]byte{}, []byte{1, 0x44, 0x00, 0x51})
	f.Add(make([]byte, 70), []byte{1, 0x12})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		checkAgainstNaive(t, podFromBytes(a), podFromBytes(b))
	})
}

// viewDiff and changesDiff are cmp.Diff behind a cheap equality check: the random and fuzz
// tests call them thousands of times.
func viewDiff(want, got podView) string {
	eq := want.name == got.name && want.namespace == got.namespace &&
		want.containers == got.containers && len(want.entries) == len(got.entries)
	for i := 0; eq && i < len(want.entries); i++ {
		eq = want.entries[i] == got.entries[i]
	}
	if eq {
		return ""
	}
	return cmp.Diff(want, got, cmp.AllowUnexported(podView{}, viewEntry{}), cmpopts.EquateEmpty())
}

func changesDiff(want, got []change) string {
	eq := len(want) == len(got)
	for i := 0; eq && i < len(want); i++ {
		eq = want[i] == got[i]
	}
	if eq {
		return ""
	}
	return cmp.Diff(want, got, cmp.AllowUnexported(change{}))
}

// TestPositionsGuess: a record is guessed by its position in the previous list until
// maxPositionMisses wrong guesses in a row; a right guess resets the count.
func TestPositionsGuess(t *testing.T) {
	a, b, c := &podRecord{uid: "a"}, &podRecord{uid: "b"}, &podRecord{uid: "c"}
	prev := []*podRecord{a, nil, b, c, a, b, c, a, b}
	type call struct {
		i    int
		uid  types.UID
		want *podRecord
	}
	cases := []struct {
		name  string
		calls []call
	}{
		{"same order: every guess right", []call{{0, "a", a}, {2, "b", b}, {3, "c", c}}},
		{"position past the previous list", []call{{9, "a", nil}}},
		{"nil at the position", []call{{1, "a", nil}, {2, "b", b}}},
		{"a right guess resets the misses", []call{{0, "b", nil}, {2, "a", nil}, {3, "a", nil}, {4, "a", a}, {5, "a", nil}, {6, "a", nil}, {7, "b", nil}, {8, "b", b}}},
		{"no guess after maxPositionMisses misses in a row", []call{{0, "b", nil}, {2, "a", nil}, {3, "a", nil}, {4, "b", nil}, {5, "b", nil}, {6, "c", nil}, {7, "a", nil}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps := positions{prev: prev}
			for k, cl := range tc.calls {
				if got := ps.guess(cl.i, cl.uid); got != cl.want {
					t.Fatalf("call %d: guess(%d, %q) = %v, want %v", k, cl.i, cl.uid, got, cl.want)
				}
			}
		})
	}
}
