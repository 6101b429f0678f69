package pleg

// change is one container (or sandbox) whose normalized state differs between two views
// of a pod.
type change struct {
	id string
	// data is id boxed for PodLifecycleEvent.Data, when already at hand (from a view);
	// nil for an ID the view does not have yet.
	data     any
	old, new ContainerState
}

// mapThreshold is the number of entries above which the diff and viewOf index IDs with
// maps instead of scanning pairwise.
const mapThreshold = 48

// appendChanges appends to dst one change for every container or sandbox ID in the union
// of old and cur whose state differs, with the kubelet's rules: an ID absent from a side is
// non-existent there, states are normalized ("created" and unknown strings are unknown),
// and when an ID occurs more than once the first occurrence counts, containers before
// sandboxes. The order is the union's: old's containers and sandboxes, then cur's
// containers and sandboxes that old lacks. cur may be nil (no containers); nil entries are
// ignored.
//
// same reports whether cur lists exactly old's IDs in old's order (so old still describes
// cur once the changes are applied to its states). It allocates nothing unless the pod is
// large (more than mapThreshold entries) and its layout changed.
func appendChanges(dst []change, old *podView, cur *Pod) (_ []change, same bool) {
	if sameLayout(old, cur) {
		for i := range old.entries {
			c := cur.Containers
			j := i
			if i >= old.containers {
				c, j = cur.Sandboxes, i-old.containers
			}
			if n := normalize(c[j].State); n != old.entries[i].state {
				e := &old.entries[i]
				dst = append(dst, change{id: e.id, data: e.data, old: e.state, new: n})
			}
		}
		return dst, true
	}
	var parts [2][]*Container
	if cur != nil {
		parts = [2][]*Container{cur.Containers, cur.Sandboxes}
	}
	if len(old.entries)+len(parts[0])+len(parts[1]) > mapThreshold {
		return appendChangesIndexed(dst, old, parts), false
	}
	for _, e := range old.entries {
		if n := stateOf(parts, e.id); n != e.state {
			dst = append(dst, change{id: e.id, data: e.data, old: e.state, new: n})
		}
	}
	for p, part := range parts {
		for i, c := range part {
			if c == nil || old.index(c.ID) >= 0 || seenBefore(parts, p, i, c.ID) {
				continue
			}
			if n := normalize(c.State); n != ContainerStateNonExistent {
				dst = append(dst, change{id: c.ID, old: ContainerStateNonExistent, new: n})
			}
		}
	}
	return dst, false
}

// sameLayout reports whether cur lists, without nil entries, exactly old's container IDs
// and then old's sandbox IDs, in the same order.
func sameLayout(old *podView, cur *Pod) bool {
	if cur == nil {
		return len(old.entries) == 0
	}
	if len(cur.Containers) != old.containers || len(cur.Sandboxes) != len(old.entries)-old.containers {
		return false
	}
	for i, c := range cur.Containers {
		if c == nil || c.ID != old.entries[i].id {
			return false
		}
	}
	for i, c := range cur.Sandboxes {
		if c == nil || c.ID != old.entries[old.containers+i].id {
			return false
		}
	}
	return true
}

// seenBefore reports whether id occurs in parts before position i of parts[p].
func seenBefore(parts [2][]*Container, p, i int, id string) bool {
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
// given ID, or non-existent.
func stateOf(parts [2][]*Container, id string) ContainerState {
	for _, part := range parts {
		for _, c := range part {
			if c != nil && c.ID == id {
				return normalize(c.State)
			}
		}
	}
	return ContainerStateNonExistent
}

// appendChangesIndexed is appendChanges for large pods, in linear time.
func appendChangesIndexed(dst []change, old *podView, parts [2][]*Container) []change {
	curStates := make(map[string]ContainerState)
	for _, part := range parts {
		for _, c := range part {
			if c == nil {
				continue
			}
			if _, dup := curStates[c.ID]; !dup {
				curStates[c.ID] = normalize(c.State)
			}
		}
	}
	oldIDs := make(map[string]struct{}, len(old.entries))
	for _, e := range old.entries {
		oldIDs[e.id] = struct{}{}
		n, ok := curStates[e.id]
		if !ok {
			n = ContainerStateNonExistent
		}
		if n != e.state {
			dst = append(dst, change{id: e.id, data: e.data, old: e.state, new: n})
		}
	}
	for _, part := range parts {
		for _, c := range part {
			if c == nil {
				continue
			}
			if _, ok := oldIDs[c.ID]; ok {
				continue
			}
			oldIDs[c.ID] = struct{}{} // handled: later duplicates are skipped
			if n := curStates[c.ID]; n != ContainerStateNonExistent {
				dst = append(dst, change{id: c.ID, old: ContainerStateNonExistent, new: n})
			}
		}
	}
	return dst
}
