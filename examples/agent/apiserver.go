package agent

// This file is the in-memory API server; it moves to statusmgr/statusmgrtest once that
// package is free to change.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/statusmgr"
)

// EventType is the kind of a watch event.
type EventType string

// The watch event types, as the API server names them.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
)

// Event is one watch event: the pod as it is after the change (as it was, for Deleted).
type Event struct {
	Type EventType
	Pod  *v1.Pod
}

// APICalls counts the calls a node agent made (the StatusPatcher methods).
type APICalls struct {
	Gets, Patches, Deletes int
	PatchBytes             int
}

// Server is an in-memory API server for pods with the semantics a node agent relies on:
// resourceVersion bumped on every change; a graceful delete that sets deletionTimestamp and
// deletionGracePeriodSeconds and keeps the object (a later delete may only shorten the
// grace); immediate removal for grace 0, for unscheduled pods and for pods in a terminal
// phase; status patches (strategic merge) on the status subresource with metadata.uid as a
// precondition; delete with a UID precondition; and a watch. It implements
// statusmgr.StatusPatcher. Safe for concurrent use.
type Server struct {
	clock clock.PassiveClock

	mu       sync.Mutex
	pods     map[types.NamespacedName]*v1.Pod
	rv       int
	uids     int
	calls    APICalls
	watchers map[*watcher]struct{}
	// failNext, when set, is called before each StatusPatcher call; an error fails it.
	reactor  func(verb string, pod types.NamespacedName) error
	observer func(Change)
	changed  chan struct{}
}

// Change is one change the server made, as its observer sees it: Verb is "create",
// "delete" (a user's delete, graceful or not), "patch" (a status patch) or "final-delete"
// (a node agent's DeletePod); Pod is the pod after the change (before it, for a removal).
type Change struct {
	Verb   string
	Pod    *v1.Pod
	Detail string
}

var _ statusmgr.StatusPatcher = (*Server)(nil)

// NewServer returns an empty server whose timestamps come from clk (nil: the real clock).
func NewServer(clk clock.PassiveClock) *Server {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Server{clock: clk, pods: map[types.NamespacedName]*v1.Pod{}, watchers: map[*watcher]struct{}{}, changed: make(chan struct{})}
}

func nn(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}

// SetObserver installs f, called for every change in the order the server makes them,
// before any watcher hears of it (nil removes it). f runs with the server's lock held: it
// must be quick and must not call the server.
func (s *Server) SetObserver(f func(Change)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.observer = f
}

// store saves p with a new resourceVersion, tells the observer and then the watchers.
// Callers hold s.mu.
func (s *Server) store(t EventType, p *v1.Pod, verb, detail string) {
	if s.observer != nil {
		s.observer(Change{Verb: verb, Pod: p.DeepCopy(), Detail: detail})
	}
	s.rv++
	p.ResourceVersion = strconv.Itoa(s.rv)
	if t == Deleted {
		delete(s.pods, nn(p.Namespace, p.Name))
	} else {
		s.pods[nn(p.Namespace, p.Name)] = p
	}
	for w := range s.watchers {
		w.push(Event{Type: t, Pod: p.DeepCopy()})
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// Create stores a new pod, with a generated UID if it has none, and returns it.
func (s *Server) Create(pod *v1.Pod) (*v1.Pod, error) {
	if pod == nil || pod.Name == "" {
		return nil, apierrors.NewBadRequest("pod without a name")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := nn(pod.Namespace, pod.Name)
	if _, ok := s.pods[key]; ok {
		return nil, apierrors.NewAlreadyExists(v1.Resource("pods"), pod.Name)
	}
	p := pod.DeepCopy()
	if p.UID == "" {
		s.uids++
		p.UID = types.UID(fmt.Sprintf("uid-%04d", s.uids))
	}
	p.CreationTimestamp = metav1.NewTime(s.clock.Now())
	if p.Status.Phase == "" {
		p.Status.Phase = v1.PodPending
	}
	s.store(Added, p, "create", "created")
	return p.DeepCopy(), nil
}

// Delete deletes a pod as a user does (kubectl delete, with --grace-period when
// gracePeriodSeconds is set): the grace is the given one, else the spec's (30 s when unset);
// a pod that is not scheduled or is in a terminal phase goes at once. A positive grace
// sets deletionTimestamp (now + grace) and deletionGracePeriodSeconds and keeps the object;
// a second delete only shortens them. Grace 0 removes the object.
func (s *Server) Delete(namespace, name string, gracePeriodSeconds *int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.pods[nn(namespace, name)]
	if !ok {
		return apierrors.NewNotFound(v1.Resource("pods"), name)
	}
	grace := int64(30)
	switch {
	case gracePeriodSeconds != nil:
		grace = max(*gracePeriodSeconds, 0)
	case cur.Spec.TerminationGracePeriodSeconds != nil:
		grace = max(*cur.Spec.TerminationGracePeriodSeconds, 0)
	}
	if cur.Spec.NodeName == "" || cur.Status.Phase == v1.PodSucceeded || cur.Status.Phase == v1.PodFailed {
		grace = 0
	}
	if grace == 0 {
		s.store(Deleted, cur, "delete", "deleted at once (grace 0)")
		return nil
	}
	if cur.DeletionGracePeriodSeconds != nil && *cur.DeletionGracePeriodSeconds <= grace {
		return nil // already deleting at least as fast
	}
	p := cur.DeepCopy()
	ts := metav1.NewTime(s.clock.Now().Add(secondsDuration(grace)))
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &grace
	s.store(Modified, p, "delete", fmt.Sprintf("graceful delete: deletionTimestamp set, grace %ds", grace))
	return nil
}

// Pod returns a copy of the stored pod.
func (s *Server) Pod(namespace, name string) (*v1.Pod, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pods[nn(namespace, name)]
	if !ok {
		return nil, false
	}
	return p.DeepCopy(), true
}

// Len returns how many pods the server holds.
func (s *Server) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pods)
}

// Calls returns the StatusPatcher calls answered so far (failed ones included).
func (s *Server) Calls() APICalls {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// SetReactor installs r, called before every StatusPatcher call (verb "get", "patch" or
// "delete"); a non-nil error fails the call. nil removes it. r runs with the server's lock
// held and must not call the server.
func (s *Server) SetReactor(r func(verb string, pod types.NamespacedName) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reactor = r
}

// WaitFor blocks until cond holds for the server's pods (checked after every change) or ctx
// ends. cond runs with the server's lock held and must not call the server.
func (s *Server) WaitFor(ctx context.Context, cond func(pods map[types.NamespacedName]*v1.Pod) bool) error {
	for {
		s.mu.Lock()
		ok, ch := cond(s.pods), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Server) react(verb string, key types.NamespacedName) error {
	if s.reactor == nil {
		return nil
	}
	return s.reactor(verb, key)
}

// GetPod returns a copy of the pod, or NotFound.
func (s *Server) GetPod(_ context.Context, namespace, name string) (*v1.Pod, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls.Gets++
	if err := s.react("get", nn(namespace, name)); err != nil {
		return nil, err
	}
	p, ok := s.pods[nn(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(v1.Resource("pods"), name)
	}
	return p.DeepCopy(), nil
}

// PatchPodStatus applies a strategic merge patch to the pod's status subresource: only the
// status changes. A metadata.uid in the patch that is not the pod's gives Conflict.
func (s *Server) PatchPodStatus(_ context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls.Patches++
	s.calls.PatchBytes += len(patch)
	if err := s.react("patch", nn(namespace, name)); err != nil {
		return nil, err
	}
	cur, ok := s.pods[nn(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(v1.Resource("pods"), name)
	}
	var meta struct {
		Metadata struct {
			UID types.UID `json:"uid"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &meta); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid patch: %v", err))
	}
	if meta.Metadata.UID != "" && meta.Metadata.UID != cur.UID {
		return nil, apierrors.NewConflict(v1.Resource("pods"), name,
			fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", meta.Metadata.UID, cur.UID))
	}
	orig, err := json.Marshal(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: cur.UID}, Status: cur.Status})
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out, err := strategicpatch.StrategicMergePatch(orig, patch, v1.Pod{})
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot apply patch: %v", err))
	}
	var patched v1.Pod
	if err := json.Unmarshal(out, &patched); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("patched pod: %v", err))
	}
	p := cur.DeepCopy()
	p.Status = patched.Status
	s.store(Modified, p, "patch", fmt.Sprintf("patched status: phase %s (%d bytes)", p.Status.Phase, len(patch)))
	return p.DeepCopy(), nil
}

// DeletePod removes the pod at once (grace 0) if its UID is uid: Conflict otherwise,
// NotFound when it is gone.
func (s *Server) DeletePod(_ context.Context, namespace, name string, uid types.UID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls.Deletes++
	if err := s.react("delete", nn(namespace, name)); err != nil {
		return err
	}
	cur, ok := s.pods[nn(namespace, name)]
	if !ok {
		return apierrors.NewNotFound(v1.Resource("pods"), name)
	}
	if cur.UID != uid {
		return apierrors.NewConflict(v1.Resource("pods"), name,
			fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", uid, cur.UID))
	}
	s.store(Deleted, cur, "final-delete", fmt.Sprintf("deleted from the API (grace 0, UID precondition %s)", uid))
	return nil
}

// Watch returns the pods bound to nodeName now and a channel of the later events of those
// pods, in order. The channel is closed when ctx ends. Events are buffered without bound, so
// the server never waits for a slow watcher.
func (s *Server) Watch(ctx context.Context, nodeName string) ([]*v1.Pod, <-chan Event) {
	w := &watcher{node: nodeName, wake: make(chan struct{}, 1)}
	out := make(chan Event)
	s.mu.Lock()
	var initial []*v1.Pod
	for _, p := range s.pods {
		if p.Spec.NodeName == nodeName {
			initial = append(initial, p.DeepCopy())
		}
	}
	s.watchers[w] = struct{}{}
	s.mu.Unlock()
	go func() {
		defer close(out)
		defer func() {
			s.mu.Lock()
			delete(s.watchers, w)
			s.mu.Unlock()
		}()
		for {
			ev, ok := w.pop()
			if !ok {
				select {
				case <-w.wake:
					continue
				case <-ctx.Done():
					return
				}
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return initial, out
}

type watcher struct {
	node  string
	mu    sync.Mutex
	queue []Event
	wake  chan struct{}
}

func (w *watcher) push(ev Event) {
	if ev.Pod.Spec.NodeName != w.node {
		return
	}
	w.mu.Lock()
	w.queue = append(w.queue, ev)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher) pop() (Event, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		return Event{}, false
	}
	ev := w.queue[0]
	w.queue[0] = Event{}
	w.queue = w.queue[1:]
	return ev, true
}
