package pleg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

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
			if n := codeOf(c[j].State); n != old.entries[i].state {
				e := &old.entries[i]
				dst = append(dst, change{id: e.id, data: e.data, old: e.state.state(), new: n.state()})
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
		if n, o := stateOf(parts, e.id), e.state.state(); n != o {
			dst = append(dst, change{id: e.id, data: e.data, old: o, new: n})
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
		if o := e.state.state(); n != o {
			dst = append(dst, change{id: e.id, data: e.data, old: o, new: n})
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

// relist is Relist with r.relistMu held. It takes r.mu, except around runtime calls.
func (r *Relister) relist(ctx context.Context, start time.Time) error {
	r.mu.Lock()
	r.epoch++
	r.mu.Unlock()
	pods, err := r.runtime.ListPods(ctx, true)
	if err != nil {
		r.note(slog.LevelError, "pleg: relist: listing pods failed", "err", err)
		return fmt.Errorf("%w: %w", ErrListPods, err)
	}
	r.healthMu.Lock()
	r.relistTime = start
	r.healthMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++

	var errs []error
	seen := 0
	next := r.next[:0]
	byPosition := positions{prev: r.prev}
	for i, p := range pods {
		if err := ctx.Err(); err != nil {
			// Abandon the relist: pods not handled yet keep their records, so the next
			// relist finds their changes again. No cache timestamp is claimed.
			r.prev = nil
			return err
		}
		if i%relistYield == relistYield-1 {
			// Let refreshes and pushes in: nothing here holds across the gap (see
			// handleListed).
			r.mu.Unlock()
			r.mu.Lock()
		}
		rec := r.lookup(ctx, i, p, &byPosition)
		if rec == nil {
			next = append(next, nil)
			continue
		}
		seen++
		next = append(next, rec)
		if err := r.handleListed(ctx, rec, p); err != nil {
			errs = append(errs, err)
		}
	}
	r.prev, r.next = next, r.prev
	clear(r.next)

	if seen < r.recordCount() {
		for i := range r.stripes {
			s := &r.stripes[i]
			for uid, rec := range s.records {
				if rec.gen != r.gen && rec.epoch != r.epoch {
					r.handleVanished(s, uid, rec)
				}
			}
		}
	}
	// Every pod was handled: the whole cache is as fresh as the list.
	r.cache.UpdateTime(start)
	return errors.Join(errs...)
}

// positions matches listed pods to records by their position in the previous list, while
// that works: a runtime that lists in the same order as before costs no map lookup, and
// one that lists in a new order (as a CRI runtime may) is no longer guessed at after
// maxPositionMisses misses in a row, each of which costs reading another pod's UID.
type positions struct {
	prev   []*podRecord // the previous list's records, by position
	misses int          // consecutive wrong guesses
}

const maxPositionMisses = 4

// guess returns the record at position i of the previous list if it is uid's, else nil.
func (ps *positions) guess(i int, uid types.UID) *podRecord {
	if ps.misses >= maxPositionMisses || i >= len(ps.prev) {
		return nil
	}
	if rec := ps.prev[i]; rec != nil && rec.uid == uid {
		ps.misses = 0
		return rec
	}
	ps.misses++
	return nil
}

// lookup returns the record of the i-th listed pod, creating it for a new pod and marking
// it listed; nil for a pod to skip (nil, without UID, or a duplicate UID in this list).
func (r *Relister) lookup(ctx context.Context, i int, p *Pod, byPosition *positions) *podRecord {
	if p == nil || p.ID == "" {
		r.note(slog.LevelWarn, "pleg: relist: ignoring a listed pod without UID", "index", i)
		return nil
	}
	rec := byPosition.guess(i, p.ID)
	if rec == nil {
		s := r.stripe(p.ID)
		if rec = s.record(p.ID); rec == nil {
			rec = s.newRecord(p.ID)
		}
	}
	if rec.gen == r.gen {
		r.note(slog.LevelWarn, "pleg: relist: ignoring a pod listed twice", "pod", podName(p.Namespace, p.Name), "podUID", p.ID, "index", i)
		return nil
	}
	rec.gen = r.gen
	return rec
}

// handleListed diffs a listed pod against its record; a pod with changes or marked for
// re-inspection gets its status fetched (r.mu released meanwhile), cached and its events
// sent. A pod that a refresh or push observed during this relist is left alone.
func (r *Relister) handleListed(ctx context.Context, rec *podRecord, p *Pod) error {
	if rec.epoch == r.epoch {
		return nil
	}
	var same bool
	r.changes, same = appendChanges(r.changes[:0], &rec.view, p)
	if len(r.changes) == 0 && !rec.reinspect {
		if !same { // e.g. reordered containers: remember the new layout
			r.setView(rec, p)
		}
		return nil
	}
	ts := r.clock.Now()
	r.mu.Unlock()
	status, err := r.runtime.PodStatus(ctx, p.ID, p.Name, p.Namespace)
	r.mu.Lock()
	if rec.epoch == r.epoch {
		return nil // a refresh or push applied a newer observation meanwhile
	}
	// rec.view and r.changes are as above: only an apply changes a view (and then the
	// epoch), and only relists, which run one at a time, use r.changes.
	if err != nil {
		// Keep the old record: the same differences come back at the next relist.
		r.cache.Set(p.ID, status, err, ts)
		rec.reinspect = true
		r.note(slog.LevelWarn, "pleg: relist: pod status failed; events dropped until the next relist",
			"pod", podName(p.Namespace, p.Name), "podUID", p.ID, "err", err)
		return fmt.Errorf("%w: pod %s/%s (%s): %w", ErrPodStatus, p.Namespace, p.Name, p.ID, err)
	}
	if r.cache.shard(p.ID).setObserved(p.ID, status, ts) == nil {
		// The cache kept a newer observation that is not in the record (a refresh of the
		// pod failed meanwhile: its error is cached): keep the old record and fetch the pod
		// again at the next relist, so that the error does not stay cached.
		rec.reinspect = true
		return nil
	}
	rec.reinspect = false
	if same {
		rec.view.setStates(p)
	} else {
		r.setView(rec, p)
	}
	if len(r.changes) == 0 {
		if !r.send(p.ID, PodSync, nil) {
			r.relistDrops++
		}
		return nil
	}
	r.relistDrops += r.emit(p.ID, r.changes, &rec.view)
	return nil
}

// handleVanished handles a pod the list no longer has: its cache entry is deleted first
// (as the kubelet's relist updates the cache before it sends a pod's events, so that a
// worker woken by them cannot read the status from before the pod vanished), then the
// events of every container of its record being gone are sent and the record (in stripe
// s) is deleted.
func (r *Relister) handleVanished(s *podStripe, uid types.UID, rec *podRecord) {
	r.cache.Delete(uid)
	r.changes, _ = appendChanges(r.changes[:0], &rec.view, nil)
	r.relistDrops += r.emit(uid, r.changes, &rec.view)
	delete(s.records, uid)
	rec.vanished = true
}
