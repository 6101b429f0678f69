package statusmgrtest

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// Change is one change FakeAPI made, as its observer sees it. Verb is "create", "put",
// "delete" (a user's delete, graceful or not), "patch" (a status patch) or "final-delete"
// (DeletePod); Pod is a copy of the pod after the change (before it, for a removal); Detail
// describes the change in a few words.
type Change struct {
	Verb   string
	Pod    *v1.Pod
	Detail string
}

// SetClock makes FakeAPI stamp creation and deletion times from clk (nil: the real clock).
func (f *FakeAPI) SetClock(clk clock.PassiveClock) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clock = clk
}

// SetObserver installs obs, called for every change in the order FakeAPI makes them and
// before any watcher hears of it (nil removes it). It runs with FakeAPI's lock held: it must
// be quick and must not call FakeAPI.
func (f *FakeAPI) SetObserver(obs func(Change)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observer = obs
}

// Create stores a new pod as the API server does: a generated UID if it has none, a
// creation timestamp, phase Pending. A pod with the same namespace and name gives
// AlreadyExists; a nil pod or one without a name, BadRequest. It returns a copy.
func (f *FakeAPI) Create(pod *v1.Pod) (*v1.Pod, error) {
	if pod == nil || pod.Name == "" {
		return nil, apierrors.NewBadRequest("statusmgrtest: a pod needs a name")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.pods[key(pod.Namespace, pod.Name)]; ok {
		return nil, apierrors.NewAlreadyExists(v1.Resource("pods"), pod.Name)
	}
	p := pod.DeepCopy()
	if p.UID == "" {
		f.uids++
		p.UID = types.UID(fmt.Sprintf("uid-%04d", f.uids))
	}
	p.CreationTimestamp = metav1.NewTime(f.clock.Now())
	if p.Status.Phase == "" {
		p.Status.Phase = v1.PodPending
	}
	f.store(Added, p, "create", "created")
	f.notify()
	return p.DeepCopy(), nil
}

// Delete deletes a pod the way a user does (kubectl delete, with --grace-period when
// gracePeriodSeconds is set). The grace period is the given one, else the spec's
// terminationGracePeriodSeconds, else 30 s; a pod that is not bound to a node or is in a
// terminal phase goes at once, as the API server decides. A positive grace sets
// deletionTimestamp (now + grace) and deletionGracePeriodSeconds and keeps the object, which
// the node agent deletes once the pod has stopped; a later delete only shortens them.
// Grace 0 removes the object. A missing pod gives NotFound. Delete is not a
// StatusPatcher call: it is neither counted nor passed to the Reactor.
func (f *FakeAPI) Delete(namespace, name string, gracePeriodSeconds *int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.pods[key(namespace, name)]
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
	defer f.notify()
	if grace == 0 {
		f.store(Deleted, cur, "delete", "deleted at once (grace 0)")
		return nil
	}
	if cur.DeletionGracePeriodSeconds != nil && *cur.DeletionGracePeriodSeconds <= grace {
		return nil // already deleting at least as fast
	}
	p := cur.DeepCopy()
	ts := metav1.NewTime(f.clock.Now().Add(time.Duration(grace) * time.Second))
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &grace
	f.store(Modified, p, "delete", fmt.Sprintf("graceful delete: deletionTimestamp set, grace %ds", grace))
	return nil
}

// WaitForPods blocks until cond holds for the stored pods (checked now and after every
// change) or ctx ends. cond runs with FakeAPI's lock held: it must not call FakeAPI nor
// keep or modify the pods.
func (f *FakeAPI) WaitForPods(ctx context.Context, cond func(pods map[types.NamespacedName]*v1.Pod) bool) error {
	return f.wait(ctx, func() bool { return cond(f.pods) })
}

// Watch returns copies of the pods bound to nodeName now and a channel of every later event
// of pods bound to it, in order; the channel is closed once ctx ends. Events queue without
// bound, so FakeAPI never waits for a slow watcher. One goroutine serves the channel until
// ctx ends.
func (f *FakeAPI) Watch(ctx context.Context, nodeName string) ([]*v1.Pod, <-chan Event) {
	w := &watcher{node: nodeName, wake: make(chan struct{}, 1)}
	out := make(chan Event)
	f.mu.Lock()
	var initial []*v1.Pod
	for _, p := range f.pods {
		if p.Spec.NodeName == nodeName {
			initial = append(initial, p.DeepCopy())
		}
	}
	f.watchers[w] = struct{}{}
	f.mu.Unlock()
	go func() {
		defer close(out)
		defer func() {
			f.mu.Lock()
			delete(f.watchers, w)
			f.mu.Unlock()
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

// watcher is one Watch's queue of events.
type watcher struct {
	node  string
	mu    sync.Mutex
	queue []Event
	// wake holds a signal when the queue may have grown.
	wake chan struct{}
}

// push queues a copy of ev if its pod is bound to the watcher's node.
func (w *watcher) push(ev Event) {
	if ev.Pod.Spec.NodeName != w.node {
		return
	}
	ev.Pod = ev.Pod.DeepCopy()
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
