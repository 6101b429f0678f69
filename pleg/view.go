package pleg

import (
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// podView is the relister's compact memory of a runtime pod: its UID and name and the
// normalized state of each distinct container and sandbox ID, and nothing else. It shares
// no memory with the runtime's objects (its strings live in buffers of its own), so the
// relister retains little and compares against compact memory: a buffer holds the UID
// (the record's map key) next to the IDs it added. The zero view is a pod without
// containers.
type podView struct {
	uid             types.UID
	name, namespace string
	// entries holds the first occurrence of each ID: containers, then sandboxes.
	entries []viewEntry
	// containers is how many leading entries are containers.
	containers int
}

type viewEntry struct {
	id string
	// data is id boxed once for PodLifecycleEvent.Data, so that the events of a known
	// container allocate no interface value.
	data  any
	state ContainerState // normalized
}

// viewOf returns the view of p (the zero view for nil). When an ID occurs more than once,
// the first occurrence, containers before sandboxes, is kept, as the kubelet's lookups do.
func viewOf(p *Pod) podView {
	var v podView
	nv, _ := v.rebuild(p, nil)
	return nv
}

// rebuild returns the view of cur (see viewOf), reusing v's memory: its entries array
// when large enough, and the strings and boxed IDs of the containers cur keeps, so only
// new IDs (and a new UID or name) cost a buffer and a box each. v must not be used afterwards.
// scratch is a reusable buffer, returned grown.
func (v *podView) rebuild(cur *Pod, scratch []viewEntry) (podView, []viewEntry) {
	if cur == nil {
		return podView{}, scratch
	}
	n := 0
	for _, part := range [2][]*Container{cur.Containers, cur.Sandboxes} {
		n += len(part)
	}
	// Large pods index IDs with maps; small ones scan.
	var oldIndex map[string]int
	var seen map[string]struct{}
	if n > mapThreshold || len(v.entries) > mapThreshold {
		oldIndex = make(map[string]int, len(v.entries))
		for i := range v.entries {
			oldIndex[v.entries[i].id] = i
		}
		seen = make(map[string]struct{}, n)
	}
	scratch = scratch[:0]
	containers, missing := 0, 0
	for k, part := range [2][]*Container{cur.Containers, cur.Sandboxes} {
		for _, c := range part {
			if c == nil {
				continue
			}
			if seen != nil {
				if _, dup := seen[c.ID]; dup {
					continue
				}
				seen[c.ID] = struct{}{}
			} else if scratchHas(scratch, c.ID) {
				continue
			}
			e := viewEntry{id: c.ID, state: normalize(c.State)}
			j := -1
			if oldIndex != nil {
				if i, ok := oldIndex[c.ID]; ok {
					j = i
				}
			} else {
				j = v.index(c.ID)
			}
			if j >= 0 {
				e.id, e.data = v.entries[j].id, v.entries[j].data
			} else {
				missing += len(c.ID) // e.id is still the runtime's string: copied below
			}
			scratch = append(scratch, e)
			if k == 0 {
				containers++
			}
		}
	}
	nv := podView{uid: v.uid, name: v.name, namespace: v.namespace, containers: containers}
	if missing > 0 || cur.ID != v.uid || cur.Name != v.name || cur.Namespace != v.namespace {
		// A new buffer always starts with the UID and name, so that a lookup by UID
		// reads the memory of the newest IDs.
		head := len(cur.ID) + len(cur.Name) + len(cur.Namespace)
		var b strings.Builder
		b.Grow(head + missing)
		b.WriteString(string(cur.ID))
		b.WriteString(cur.Name)
		b.WriteString(cur.Namespace)
		for i := range scratch {
			if scratch[i].data == nil {
				b.WriteString(scratch[i].id)
			}
		}
		buf := b.String()
		n := len(cur.ID)
		nv.uid, nv.name, nv.namespace = types.UID(buf[:n]), buf[n:n+len(cur.Name)], buf[n+len(cur.Name):head]
		off := head
		for i := range scratch {
			if e := &scratch[i]; e.data == nil {
				e.id = buf[off : off+len(e.id)]
				e.data = e.id
				off += len(e.id)
			}
		}
	}
	if cap(v.entries) >= len(scratch) {
		nv.entries = v.entries[:len(scratch)]
		clear(v.entries[len(scratch):cap(v.entries)]) // release dropped strings
	} else {
		nv.entries = make([]viewEntry, len(scratch))
	}
	copy(nv.entries, scratch)
	clear(scratch) // the scratch buffer must not keep strings alive
	return nv, scratch
}

func scratchHas(entries []viewEntry, id string) bool {
	for i := range entries {
		if entries[i].id == id {
			return true
		}
	}
	return false
}

// setStates copies the normalized states of cur, whose layout must be the same
// (sameLayout), into v.
func (v *podView) setStates(cur *Pod) {
	if cur == nil {
		return
	}
	for i, c := range cur.Containers {
		v.entries[i].state = normalize(c.State)
	}
	for i, c := range cur.Sandboxes {
		v.entries[v.containers+i].state = normalize(c.State)
	}
}

// index returns the position of id in v's entries, or -1.
func (v *podView) index(id string) int {
	for i := range v.entries {
		if v.entries[i].id == id {
			return i
		}
	}
	return -1
}

// dataOf returns the boxed form of id from v, or a new box.
func (v *podView) dataOf(id string) any {
	if i := v.index(id); i >= 0 {
		return v.entries[i].data
	}
	return id
}
