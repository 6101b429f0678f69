package statusmgrtest

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/apitest"
)

// EventType is the kind of a watch event, as the API server names it.
type EventType = apitest.EventType

// The watch event types.
const (
	Added    = apitest.Added
	Modified = apitest.Modified
	Deleted  = apitest.Deleted
)

// Event is one watch event: the pod after the change (as it was, for Deleted).
type Event = apitest.Event

// Change is one change FakeAPI made, as its observer sees it. Verb is "create", "put",
// "delete" (a user's delete, graceful or not), "patch" (a status patch) or "final-delete"
// (DeletePod); Pod is a copy of the pod after the change (before it, for a removal); Detail
// describes the change in a few words.
type Change = apitest.Change

// SetClock makes FakeAPI stamp creation and deletion times from clk (nil: the real clock).
func (f *FakeAPI) SetClock(clk clock.PassiveClock) { f.srv.SetClock(clk) }

// SetObserver installs obs, called for every change in the order FakeAPI makes them,
// after FakeAPI's lock is released and before any watcher hears of it (nil removes it).
// obs may call FakeAPI, and may block: other calls go on, and their changes reach obs
// once it returns.
func (f *FakeAPI) SetObserver(obs func(Change)) { f.srv.SetObserver(obs) }

// Create stores a new pod as the API server does (apitest.Server.Create): the API
// server's defaults (apitest.DefaultPod), a generated UID if it has none, a creation
// timestamp, generation 1, the status reset to phase Pending with the QoS class. A pod
// with the same namespace and name gives AlreadyExists; a nil pod or one without a name,
// BadRequest. It returns a copy.
func (f *FakeAPI) Create(pod *v1.Pod) (*v1.Pod, error) { return f.srv.Create(pod) }

// Delete deletes a pod the way a user does (kubectl delete, with --grace-period when
// gracePeriodSeconds is set), as the API server does (apitest.Server.Delete): the grace
// period is the given one, else the spec's terminationGracePeriodSeconds, else 30 s; a
// pod that is not bound to a node or is in a terminal phase goes at once. A positive
// grace sets deletionTimestamp (now + grace) and deletionGracePeriodSeconds and keeps the
// object, which the node agent deletes once the pod has stopped; a later delete only
// shortens them. Grace 0 removes the object. A missing pod gives NotFound. Delete is not
// a StatusPatcher call: it is neither counted nor passed to the Reactor.
func (f *FakeAPI) Delete(namespace, name string, gracePeriodSeconds *int64) error {
	_, err := f.srv.Delete(namespace, name, metav1.DeleteOptions{GracePeriodSeconds: gracePeriodSeconds})
	return err
}

// WaitForPods blocks until cond holds for the stored pods (checked now and after every
// change) or ctx ends. cond runs without FakeAPI's lock on a snapshot of the store: it
// must not modify the pods nor keep them.
func (f *FakeAPI) WaitForPods(ctx context.Context, cond func(pods map[types.NamespacedName]*v1.Pod) bool) error {
	return f.srv.WaitForPods(ctx, cond)
}

// Watch returns copies of the pods bound to nodeName now and a channel of every later event
// of pods bound to it, in order; the channel is closed once ctx ends. Events queue without
// bound, so FakeAPI never waits for a slow watcher. One goroutine serves the channel until
// ctx ends.
func (f *FakeAPI) Watch(ctx context.Context, nodeName string) ([]*v1.Pod, <-chan Event) {
	return f.srv.Watch(ctx, nodeName)
}
