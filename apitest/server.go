package apitest

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// EventType is the kind of a watch event, as the API server names it.
type EventType string

// The watch event types.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
)

// Event is one watch event: the pod after the change (as it was, for Deleted).
type Event struct {
	Type EventType
	Pod  *v1.Pod
}

// Change is one change the Server made, as its observer sees it. Verb is "create", "put"
// (Put), "delete" (Delete, graceful or not; MarkDeleted), "patch" (a status patch) or
// "final-delete" (FinalDelete); Pod is a copy of the pod after the change (before it, for
// a removal); Detail describes the change in a few words.
type Change struct {
	Verb   string
	Pod    *v1.Pod
	Detail string
}

// Server is an in-memory API server for pods (see the package doc).
type Server struct {
	mu sync.Mutex
	// pods holds the stored pods; a stored pod is never modified in place.
	pods map[types.NamespacedName]*v1.Pod
	// rv is the last resourceVersion given out.
	rv int64
	// uids counts the UIDs Create generated.
	uids int
	// finalDeleted holds the pods FinalDelete removed, as they were, in order.
	finalDeleted []*v1.Pod
	clock        clock.PassiveClock
	// changed is closed (and replaced) once a change has been delivered, for
	// WaitForPods; dirty is set while a change waits for that.
	changed chan struct{}
	dirty   bool
	// watchers hear of every change of a pod bound to their node.
	watchers map[*watcher]struct{}
	observer func(Change)
	// queue holds the changes not yet delivered to the observer and the watchers, in
	// order; delivering is true while a goroutine delivers them.
	queue      []change
	delivering bool
}

// change is one change made, waiting for delivery.
type change struct {
	rv     int64
	event  Event // its Pod is the stored pod: copy before handing it out
	verb   string
	detail string
}

// NewServer returns a Server holding deep copies of pods (as Put stores them).
func NewServer(pods ...*v1.Pod) *Server {
	s := &Server{pods: map[types.NamespacedName]*v1.Pod{}, clock: clock.RealClock{},
		changed: make(chan struct{}), watchers: map[*watcher]struct{}{}}
	for _, p := range pods {
		s.Put(p)
	}
	return s
}

func key(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}

// SetClock makes the Server stamp creation and deletion times from clk (nil: the real
// clock).
func (s *Server) SetClock(clk clock.PassiveClock) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock = clk
}

// SetObserver installs obs, called with every later change in the order the Server makes
// them, after its lock is released and before any watcher hears of the change (nil
// removes it). obs may call the Server and may block (see the package doc).
func (s *Server) SetObserver(obs func(Change)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.observer = obs
}

// Put stores a deep copy of pod as it is (creating or replacing it, e.g. with a new UID),
// with a new resourceVersion: a fixture, not an API call, so it is not defaulted (call
// DefaultPod on it first for a pod as the API server would store it). A nil pod is
// ignored.
func (s *Server) Put(pod *v1.Pod) {
	if pod == nil {
		return
	}
	s.mu.Lock()
	t := Modified
	if _, ok := s.pods[key(pod.Namespace, pod.Name)]; !ok {
		t = Added
	}
	s.store(t, pod.DeepCopy(), "put", "stored")
	s.mu.Unlock()
	s.deliver()
}

// MarkDeleted does what the API server does on a graceful delete of a pod bound to a node,
// with the times given: the object stays, with deletionTimestamp = at and
// deletionGracePeriodSeconds = grace. It reports whether the pod exists.
func (s *Server) MarkDeleted(namespace, name string, at metav1.Time, grace int64) bool {
	s.mu.Lock()
	p, ok := s.pods[key(namespace, name)]
	if ok {
		np := withMeta(p)
		np.DeletionTimestamp, np.DeletionGracePeriodSeconds = &at, &grace
		s.store(Modified, np, "delete", gracefulDetail(grace))
	}
	s.mu.Unlock()
	s.deliver()
	return ok
}

// Pod returns a deep copy of the stored pod.
func (s *Server) Pod(namespace, name string) (*v1.Pod, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pods[key(namespace, name)]
	if !ok {
		return nil, false
	}
	return p.DeepCopy(), true
}

// Pods returns deep copies of the stored pods, sorted by namespace and name.
func (s *Server) Pods() []*v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*v1.Pod, 0, len(s.pods))
	for _, k := range slices.SortedFunc(maps.Keys(s.pods), func(a, b types.NamespacedName) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	}) {
		out = append(out, s.pods[k].DeepCopy())
	}
	return out
}

// FinalDeleted returns deep copies of the pods FinalDelete removed, as they were when
// removed, in order. A pod is listed as soon as it is gone from the store.
func (s *Server) FinalDeleted() []*v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*v1.Pod, len(s.finalDeleted))
	for i, p := range s.finalDeleted {
		out[i] = p.DeepCopy()
	}
	return out
}

// FinalDeletes returns the number of pods FinalDelete removed.
func (s *Server) FinalDeletes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.finalDeleted)
}

// Len returns the number of stored pods.
func (s *Server) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pods)
}

// WaitForPods blocks until cond holds for the stored pods (checked now and after every
// change) or ctx ends. cond runs without the Server's lock on a snapshot of the store; it
// must not modify the pods nor keep them.
func (s *Server) WaitForPods(ctx context.Context, cond func(pods map[types.NamespacedName]*v1.Pod) bool) error {
	for {
		s.mu.Lock()
		pods, ch := maps.Clone(s.pods), s.changed
		s.mu.Unlock()
		if cond(pods) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// store saves p (removes it, for Deleted) with a new resourceVersion, queues the change
// for the observer and the watchers and wakes WaitForPods. s.mu must be held; the caller
// calls deliver after unlocking.
func (s *Server) store(t EventType, p *v1.Pod, verb, detail string) {
	s.rv++
	p.ResourceVersion = strconv.FormatInt(s.rv, 10)
	if t == Deleted {
		delete(s.pods, key(p.Namespace, p.Name))
	} else {
		s.pods[key(p.Namespace, p.Name)] = p
	}
	if s.observer != nil || len(s.watchers) > 0 {
		s.queue = append(s.queue, change{rv: s.rv, event: Event{Type: t, Pod: p}, verb: verb, detail: detail})
	}
	s.dirty = true
}

// wake wakes WaitForPods after changes were delivered. s.mu must be held.
func (s *Server) wake() {
	s.dirty = false
	close(s.changed)
	s.changed = make(chan struct{})
}

// deliver hands the queued changes to the observer and then to the watchers, in order,
// without holding the lock, and then wakes WaitForPods (so a condition met by a change is
// seen after the observer heard of it). If another goroutine is delivering, it delivers
// them.
func (s *Server) deliver() {
	s.mu.Lock()
	if s.delivering {
		s.mu.Unlock()
		return
	}
	s.delivering = true
	for len(s.queue) > 0 {
		c := s.queue[0]
		s.queue[0] = change{}
		s.queue = s.queue[1:]
		obs := s.observer
		var ws []*watcher
		for w := range s.watchers {
			if c.rv > w.since && c.event.Pod.Spec.NodeName == w.node {
				ws = append(ws, w)
			}
		}
		s.mu.Unlock()
		if obs != nil {
			obs(Change{Verb: c.verb, Pod: c.event.Pod.DeepCopy(), Detail: c.detail})
		}
		for _, w := range ws {
			w.push(Event{Type: c.event.Type, Pod: c.event.Pod.DeepCopy()})
		}
		s.mu.Lock()
		s.wake()
	}
	s.queue = nil
	if s.dirty { // changes no one was to hear of
		s.wake()
	}
	s.delivering = false
	s.mu.Unlock()
}

// withMeta returns a new version of p to store: its own metadata, the status and spec
// shared (stored pods are never modified in place).
func withMeta(p *v1.Pod) *v1.Pod {
	return &v1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: *p.ObjectMeta.DeepCopy(), Spec: p.Spec, Status: p.Status}
}
