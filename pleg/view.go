package pleg

// podView is the relister's memory of a runtime pod: its name and the normalized state of
// each distinct container and sandbox ID, and nothing else. Its strings are the runtime's,
// from the list that first had each of them (the kubelet keeps the whole previous list):
// a runtime that lists the same strings again, as a fake or a provider listing its stored
// pods does, gets its IDs compared without reading their bytes. The zero view is a pod
// without containers.
type podView struct {
	name, namespace string
	// entries holds the first occurrence of each ID: containers, then sandboxes.
	entries []viewEntry
	// containers is how many leading entries are containers.
	containers int
}

type viewEntry struct {
	id string
	// data is id boxed once for PodLifecycleEvent.Data, so that the events of a known
	// container allocate no interface value; nil until the first event that is sent
	// (dataOf), as most events of a busy node are not.
	data  any
	state stateCode
}

// viewOf returns the view of p (the zero view for nil). When an ID occurs more than once,
// the first occurrence, containers before sandboxes, is kept, as the kubelet's lookups do.
func viewOf(p *Pod) podView {
	var v podView
	nv, _ := v.rebuild(p, nil)
	return nv
}

// rebuild returns the view of cur (see viewOf), reusing v's memory: its entries array
// when large enough, and the strings and boxed IDs of the containers cur keeps (new IDs
// are boxed by dataOf when needed). v must not be used afterwards. scratch is a reusable buffer,
// returned grown.
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
	containers := 0
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
			e := viewEntry{id: c.ID, state: codeOf(c.State)}
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
			}
			scratch = append(scratch, e)
			if k == 0 {
				containers++
			}
		}
	}
	nv := podView{name: v.name, namespace: v.namespace, containers: containers}
	if cur.Name != v.name || cur.Namespace != v.namespace {
		nv.name, nv.namespace = cur.Name, cur.Namespace
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
		v.entries[i].state = codeOf(c.State)
	}
	for i, c := range cur.Sandboxes {
		v.entries[v.containers+i].state = codeOf(c.State)
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

// dataOf returns the boxed form of id from v, boxing it there the first time, or a new
// box for an ID v lacks.
func (v *podView) dataOf(id string) any {
	i := v.index(id)
	if i < 0 {
		return id
	}
	e := &v.entries[i]
	if e.data == nil {
		e.data = e.id
	}
	return e.data
}
