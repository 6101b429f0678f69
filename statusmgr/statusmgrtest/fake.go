// Package statusmgrtest provides an in-memory API server for statusmgr and for node agents
// built on podlife: FakeAPI implements statusmgr.StatusPatcher over a map of pods, applies
// status patches with apimachinery's strategic merge (as the API server does), enforces the
// UID preconditions, counts calls and lets tests inject errors and wait on the counts or on
// the pods without polling. For a whole node agent it also creates pods, deletes them the
// way a user does (graceful delete with deletionTimestamp and deletionGracePeriodSeconds),
// and serves a watch of one node's pods (server.go).
//
// RunFile (harness.go) runs scenario scripts against a statusmgr.Manager over a FakeAPI,
// either stepping each pod's statusmgr.PodSync itself or through Manager.Sync, and prints
// the calls, so users script their own status-manager scenarios the way podlife's tests do.
// Scripts are in the format every podlife harness reads (datadriven style): a command line,
// a line "----", the output the command must print, and a blank line that ends the case;
// lines starting with '#' are comments. An output with blank lines goes between two "----"
// lines and two "----" lines. For example:
//
//	pod a ua
//	----
//
//	sync
//	----
//	GET a -> NotFound
package statusmgrtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"k8s.io/utils/clock"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/podlife/podlife/statusmgr"
)

// Verb names one of the three calls (statusmgr's Verb).
type Verb = statusmgr.Verb

// The verbs of FakeAPI's calls.
const (
	Get    = statusmgr.VerbGet
	Patch  = statusmgr.VerbPatch
	Delete = statusmgr.VerbDelete
)

// Counts are the calls FakeAPI answered (failed ones included) and the patch bytes received.
type Counts struct {
	Gets, Patches, Deletes int
	PatchBytes             int
	// Deleted counts pods actually removed by DeletePod.
	Deleted int
}

// Reactor may fail a call before FakeAPI handles it: a non-nil error is returned as the
// call's result and the store is untouched. It runs under FakeAPI's lock: it must not call
// FakeAPI.
type Reactor func(verb Verb, namespace, name string) error

// FakeAPI is an in-memory pod store that implements statusmgr.StatusPatcher. Safe for
// concurrent use. The zero value is not usable; call NewFakeAPI.
type FakeAPI struct {
	mu      sync.Mutex
	pods    map[types.NamespacedName]*v1.Pod
	counts  Counts
	reactor Reactor
	rv      int
	deleted []*v1.Pod
	// changed is closed (and replaced) on every call, for WaitFor.
	changed chan struct{}

	// clock stamps creation and deletion times (server.go).
	clock clock.PassiveClock
	// uids counts the UIDs Create generated.
	uids int
	// watchers hear of every change of a pod bound to their node.
	watchers map[*watcher]struct{}
	// observer, if set, hears of every change first.
	observer func(Change)
}

var _ statusmgr.StatusPatcher = (*FakeAPI)(nil)

// NewFakeAPI returns a FakeAPI holding deep copies of pods.
func NewFakeAPI(pods ...*v1.Pod) *FakeAPI {
	f := &FakeAPI{pods: make(map[types.NamespacedName]*v1.Pod), changed: make(chan struct{}),
		clock: clock.RealClock{}, watchers: map[*watcher]struct{}{}}
	for _, p := range pods {
		f.Put(p)
	}
	return f
}

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// Put stores a deep copy of pod (creating or replacing it, e.g. with a new UID). A nil pod
// is ignored.
func (f *FakeAPI) Put(pod *v1.Pod) {
	if pod == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := Modified
	if _, ok := f.pods[key(pod.Namespace, pod.Name)]; !ok {
		t = Added
	}
	f.store(t, pod.DeepCopy(), "put", "stored")
	f.notify()
}

// MarkDeleted does what the API server does on a graceful delete of a pod bound to a
// node: the object stays, with deletionTimestamp = at and deletionGracePeriodSeconds =
// grace. It reports whether the pod exists.
func (f *FakeAPI) MarkDeleted(namespace, name string, at metav1.Time, grace int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.pods[key(namespace, name)]
	if !ok {
		return false
	}
	np := &v1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: *p.ObjectMeta.DeepCopy(), Spec: p.Spec, Status: *p.Status.DeepCopy()}
	np.DeletionTimestamp = &at
	np.DeletionGracePeriodSeconds = &grace
	f.store(Modified, np, "delete", fmt.Sprintf("graceful delete: deletionTimestamp set, grace %ds", grace))
	f.notify()
	return true
}

// Pod returns a deep copy of the stored pod.
func (f *FakeAPI) Pod(namespace, name string) (*v1.Pod, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.pods[key(namespace, name)]
	if !ok {
		return nil, false
	}
	return p.DeepCopy(), true
}

// Len returns the number of stored pods.
func (f *FakeAPI) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pods)
}

// DeletedPods returns deep copies of the pods DeletePod removed, as they were when deleted,
// in order.
func (f *FakeAPI) DeletedPods() []*v1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*v1.Pod, len(f.deleted))
	for i, p := range f.deleted {
		out[i] = p.DeepCopy()
	}
	return out
}

// SetReactor installs r (nil removes it).
func (f *FakeAPI) SetReactor(r Reactor) {
	f.mu.Lock()
	f.reactor = r
	f.mu.Unlock()
}

// Counts returns the call counts.
func (f *FakeAPI) Counts() Counts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts
}

// WaitFor blocks until cond holds for the counts (checked after every call) or ctx ends.
func (f *FakeAPI) WaitFor(ctx context.Context, cond func(Counts) bool) error {
	return f.wait(ctx, func() bool { return cond(f.counts) })
}

// wait blocks until check, run with f.mu held, is true (checked now and after every call or
// change) or ctx ends.
func (f *FakeAPI) wait(ctx context.Context, check func() bool) error {
	for {
		f.mu.Lock()
		ok, ch := check(), f.changed
		f.mu.Unlock()
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

// store saves p (removes it, for Deleted) with a new resourceVersion, and tells the observer
// and then the watchers. f.mu must be held; the caller notifies WaitFor.
func (f *FakeAPI) store(t EventType, p *v1.Pod, verb, detail string) {
	f.rv++
	p.ResourceVersion = strconv.Itoa(f.rv)
	if t == Deleted {
		delete(f.pods, key(p.Namespace, p.Name))
	} else {
		f.pods[key(p.Namespace, p.Name)] = p
	}
	if f.observer != nil {
		f.observer(Change{Verb: verb, Pod: p.DeepCopy(), Detail: detail})
	}
	for w := range f.watchers {
		w.push(Event{Type: t, Pod: p})
	}
}

func (f *FakeAPI) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *FakeAPI) react(verb Verb, ns, name string) error {
	if f.reactor == nil {
		return nil
	}
	return f.reactor(verb, ns, name)
}

// GetPod returns a deep copy of the stored pod, or NotFound.
func (f *FakeAPI) GetPod(_ context.Context, namespace, name string) (*v1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts.Gets++
	defer f.notify()
	if err := f.react(Get, namespace, name); err != nil {
		return nil, err
	}
	p, ok := f.pods[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(v1.Resource("pods"), name)
	}
	return p.DeepCopy(), nil
}

// PatchPodStatus applies a strategic merge patch to the stored pod's status, as the status
// subresource does: only the status changes. A metadata.uid in the patch that differs from
// the pod's UID gives Conflict; a missing pod NotFound; a malformed patch BadRequest. The
// patch is applied outside FakeAPI's lock, so calls for different pods run in parallel, as
// on an API server; the result is stored only if the pod did not change meanwhile (else
// it is applied again to the new copy).
func (f *FakeAPI) PatchPodStatus(_ context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
	f.mu.Lock()
	f.counts.Patches++
	f.counts.PatchBytes += len(patch)
	err := f.react(Patch, namespace, name)
	p := f.pods[key(namespace, name)]
	f.mu.Unlock()
	if err != nil {
		f.done()
		return nil, err
	}
	for {
		if p == nil {
			f.done()
			return nil, apierrors.NewNotFound(v1.Resource("pods"), name)
		}
		status, err := applyStatusPatch(p, name, patch)
		if err != nil {
			f.done()
			return nil, err
		}
		f.mu.Lock()
		if cur := f.pods[key(namespace, name)]; cur != p {
			p = cur // changed meanwhile: apply the patch to the new copy
			f.mu.Unlock()
			continue
		}
		// Stored pods are never modified in place, so the new version may share the spec.
		np := &v1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: *p.ObjectMeta.DeepCopy(), Spec: p.Spec, Status: *status}
		f.store(Modified, np, "patch", fmt.Sprintf("patched status: phase %s (%d bytes)", np.Status.Phase, len(patch)))
		f.notify()
		out := np.DeepCopy() // under the lock: a later removal stamps np's resourceVersion
		f.mu.Unlock()
		return out, nil
	}
}

// done wakes WaitFor after a call that changed nothing but the counts.
func (f *FakeAPI) done() {
	f.mu.Lock()
	f.notify()
	f.mu.Unlock()
}

// applyStatusPatch returns p's status with the status patch applied (p is not modified).
// FakeAPI's lock need not be held: a stored pod's UID and status are never modified in
// place.
func applyStatusPatch(p *v1.Pod, name string, patch []byte) (*v1.PodStatus, error) {
	var meta struct {
		Metadata struct {
			UID types.UID `json:"uid"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &meta); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid patch: %v", err))
	}
	if meta.Metadata.UID != "" && meta.Metadata.UID != p.UID {
		return nil, apierrors.NewConflict(v1.Resource("pods"), name,
			fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", meta.Metadata.UID, p.UID))
	}
	// Only the status (and the UID the patch carries) matters: the rest of the object is
	// kept as it is.
	orig, err := json.Marshal(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: p.UID}, Status: p.Status})
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
	return &patched.Status, nil
}

// DeletePod removes the pod if its UID is uid (else Conflict; a missing pod NotFound).
func (f *FakeAPI) DeletePod(_ context.Context, namespace, name string, uid types.UID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts.Deletes++
	defer f.notify()
	if err := f.react(Delete, namespace, name); err != nil {
		return err
	}
	p, ok := f.pods[key(namespace, name)]
	if !ok {
		return apierrors.NewNotFound(v1.Resource("pods"), name)
	}
	if p.UID != uid {
		return apierrors.NewConflict(v1.Resource("pods"), name,
			fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", uid, p.UID))
	}
	f.store(Deleted, p, "final-delete", fmt.Sprintf("deleted from the API (grace 0, UID precondition %s)", uid))
	f.deleted = append(f.deleted, p)
	f.counts.Deleted++
	return nil
}
