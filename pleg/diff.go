package pleg

// change is one container (or sandbox) whose normalized state differs between two
// records of a pod.
type change struct {
	id       string
	old, new ContainerState
}

// mapThreshold is the number of container and sandbox entries of two records above which
// appendChanges indexes them with maps instead of scanning them pairwise.
const mapThreshold = 48

// appendChanges appends to dst one change for every container or sandbox ID in the union
// of old and cur whose state differs, with the kubelet's rules: a container absent from a
// record is non-existent there, states are normalized ("created" and unknown strings are
// unknown), and when an ID occurs more than once in a record the first occurrence counts,
// containers before sandboxes. The order is the union's: old's containers, old's sandboxes,
// then cur's containers and sandboxes that old lacks. Either record may be nil (no
// containers); nil entries are ignored.
//
// It allocates nothing unless the records are large (more than mapThreshold entries) and
// differ in layout.
func appendChanges(dst []change, old, cur *Pod) []change {
	if old == cur {
		return dst
	}
	if sameLayout(old, cur) {
		return appendLayoutChanges(dst, old, cur)
	}
	parts := [4][]*Container{}
	if old != nil {
		parts[0], parts[1] = old.Containers, old.Sandboxes
	}
	if cur != nil {
		parts[2], parts[3] = cur.Containers, cur.Sandboxes
	}
	if len(parts[0])+len(parts[1])+len(parts[2])+len(parts[3]) > mapThreshold {
		return appendChangesIndexed(dst, old, cur)
	}
	for p, part := range parts {
		for i, c := range part {
			if c == nil || seenBefore(&parts, p, i, c.ID) {
				continue
			}
			var o, n ContainerState
			if p < 2 {
				o, n = normalize(c.State), stateOf(cur, c.ID)
			} else {
				o, n = ContainerStateNonExistent, normalize(c.State)
			}
			if o != n {
				dst = append(dst, change{id: c.ID, old: o, new: n})
			}
		}
	}
	return dst
}

// sameLayout reports whether old and cur list the same non-nil container and sandbox IDs
// at the same positions: the common case of a pod that did not change, or only changed
// states, which appendLayoutChanges compares position by position.
func sameLayout(old, cur *Pod) bool {
	if old == nil || cur == nil ||
		len(old.Containers) != len(cur.Containers) || len(old.Sandboxes) != len(cur.Sandboxes) {
		return false
	}
	for i, c := range old.Containers {
		d := cur.Containers[i]
		if c == nil || d == nil || c.ID != d.ID {
			return false
		}
	}
	for i, c := range old.Sandboxes {
		d := cur.Sandboxes[i]
		if c == nil || d == nil || c.ID != d.ID {
			return false
		}
	}
	return true
}

// appendLayoutChanges is appendChanges for two records of the same layout.
func appendLayoutChanges(dst []change, old, cur *Pod) []change {
	parts := [4][]*Container{old.Containers, old.Sandboxes}
	for p, part := range parts[:2] {
		for i, c := range part {
			d := cur.Containers
			if p == 1 {
				d = cur.Sandboxes
			}
			o, n := normalize(c.State), normalize(d[i].State)
			if o == n || seenBefore(&parts, p, i, c.ID) {
				continue
			}
			dst = append(dst, change{id: c.ID, old: o, new: n})
		}
	}
	return dst
}

// seenBefore reports whether id occurs in parts before position i of parts[p].
func seenBefore(parts *[4][]*Container, p, i int, id string) bool {
	for q := 0; q <= p; q++ {
		part := parts[q]
		if q == p {
			part = part[:i]
		}
		for _, c := range part {
			if c != nil && c.ID == id {
				return true
			}
		}
	}
	return false
}

// stateOf returns the normalized state of the first container, else sandbox, with the
// given ID in pod, or non-existent.
func stateOf(pod *Pod, id string) ContainerState {
	if pod == nil {
		return ContainerStateNonExistent
	}
	for _, c := range pod.Containers {
		if c != nil && c.ID == id {
			return normalize(c.State)
		}
	}
	for _, c := range pod.Sandboxes {
		if c != nil && c.ID == id {
			return normalize(c.State)
		}
	}
	return ContainerStateNonExistent
}

// appendChangesIndexed is appendChanges for large records, in linear time.
func appendChangesIndexed(dst []change, old, cur *Pod) []change {
	index := func(pod *Pod) map[string]ContainerState {
		m := make(map[string]ContainerState)
		if pod == nil {
			return m
		}
		for _, part := range [2][]*Container{pod.Containers, pod.Sandboxes} {
			for _, c := range part {
				if c == nil {
					continue
				}
				if _, dup := m[c.ID]; !dup {
					m[c.ID] = normalize(c.State)
				}
			}
		}
		return m
	}
	oldStates, curStates := index(old), index(cur)
	done := make(map[string]struct{}, len(oldStates))
	visit := func(pod *Pod) {
		if pod == nil {
			return
		}
		for _, part := range [2][]*Container{pod.Containers, pod.Sandboxes} {
			for _, c := range part {
				if c == nil {
					continue
				}
				if _, ok := done[c.ID]; ok {
					continue
				}
				done[c.ID] = struct{}{}
				o, ok := oldStates[c.ID]
				if !ok {
					o = ContainerStateNonExistent
				}
				n, ok := curStates[c.ID]
				if !ok {
					n = ContainerStateNonExistent
				}
				if o != n {
					dst = append(dst, change{id: c.ID, old: o, new: n})
				}
			}
		}
	}
	visit(old)
	visit(cur)
	return dst
}
