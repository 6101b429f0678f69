package podgc

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// DefaultQuarantinePeriod is how long a node must be missing before its pods count as
// orphaned, as in the controller.
const DefaultQuarantinePeriod = 40 * time.Second

// Quarantine remembers since when each missing node has been missing. A node list may lag
// behind reality (an informer cache, a node registered a moment ago): a pod bound to a node
// that is not listed yet must not be deleted at once. Only a node missing for at least the
// quarantine period is handed out as expired; a node that shows up again, or that no pod
// references any more, is forgotten, and its clock restarts if it goes missing again.
//
// Quarantine is pure: it never reads a clock (every method takes now) and is not safe for
// concurrent use. The zero value is a quarantine with period 0.
type Quarantine struct {
	period time.Duration
	// since maps each node name that was missing at the last Observe to the time it was
	// first seen missing without interruption. Invariant: it holds exactly the names of the
	// last Observe's missing list.
	since map[string]time.Time
}

// NewQuarantine returns an empty quarantine with the given period. A period of 0 expires a
// node as soon as it is seen missing; a negative period is an error wrapping
// ErrInvalidConfig.
func NewQuarantine(period time.Duration) (*Quarantine, error) {
	if period < 0 {
		return nil, fmt.Errorf("%w: quarantine period %v is negative", ErrInvalidConfig, period)
	}
	return &Quarantine{period: period, since: make(map[string]time.Time)}, nil
}

// Period returns the quarantine period.
func (q *Quarantine) Period() time.Duration { return q.period }

// Observe records the node names missing at now (typically MissingNodes of this cycle's
// lists) and returns, sorted, those missing for at least the period: first seen missing at or
// before now minus the period. Names not in missing are forgotten; empty names are ignored.
// A clock that goes backwards never expires a node early.
func (q *Quarantine) Observe(missing []string, now time.Time) []string {
	if q.since == nil {
		q.since = make(map[string]time.Time)
	}
	current := make(map[string]bool, len(missing))
	for _, name := range missing {
		if name == "" {
			continue
		}
		current[name] = true
		if _, ok := q.since[name]; !ok {
			q.since[name] = now
		}
	}
	for name := range q.since {
		if !current[name] {
			delete(q.since, name)
		}
	}
	var expired []string
	for name, t := range q.since {
		if now.Sub(t) >= q.period {
			expired = append(expired, name)
		}
	}
	slices.Sort(expired)
	return expired
}

// Restart starts the quarantine of name again at now, as if it had just gone missing: for a
// node a second look found present after all (a stale list). It does nothing for a name
// that is not in quarantine.
func (q *Quarantine) Restart(name string, now time.Time) {
	if _, ok := q.since[name]; ok {
		q.since[name] = now
	}
}

// Since returns when name was first seen missing, and whether it is in quarantine.
func (q *Quarantine) Since(name string) (time.Time, bool) {
	t, ok := q.since[name]
	return t, ok
}

// Names returns the names in quarantine, sorted.
func (q *Quarantine) Names() []string {
	return slices.Sorted(maps.Keys(q.since))
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}
