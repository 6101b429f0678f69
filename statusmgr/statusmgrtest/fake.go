// Package statusmgrtest provides an in-memory API server for statusmgr and for node agents
// built on podlife: FakeAPI implements statusmgr.StatusPatcher over an apitest.Server,
// which behaves like the API server (strategic-merge status patches through the status
// subresource, UID preconditions, graceful deletes that keep the object with its
// deletionTimestamp, resourceVersion bumps, NotFound and Conflict as the server answers
// them). FakeAPI counts the status manager's calls and lets tests inject errors and wait on
// the counts or on the pods without polling. For a whole node agent it also creates pods,
// deletes them the way a user does and serves a watch of one node's pods (server.go).
//
// RunFile (harness.go) runs scenario scripts over a FakeAPI, against a statusmgr.Machine
// it drives itself or a statusmgr.Manager (Manager.Sync), and prints the calls, so users script their own status-manager scenarios the way podlife's tests do.
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
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/apitest"
	"github.com/podlife/podlife/statusmgr"
)

// Verb names one of the calls (statusmgr's Verb).
type Verb = statusmgr.Verb

// The verbs of FakeAPI's calls.
const (
	Get    = statusmgr.VerbGet
	Patch  = statusmgr.VerbPatch
	Delete = statusmgr.VerbDelete
	Update = statusmgr.VerbUpdate
)

// Counts are the calls FakeAPI answered (failed ones included) and the patch bytes received.
type Counts struct {
	Gets, Patches, Deletes, Updates int
	PatchBytes                      int
	// Deleted counts pods actually removed by DeletePod.
	Deleted int
}

// Reactor may fail a call before FakeAPI handles it: a non-nil error is returned as the
// call's result and the store is untouched. It runs on the calling goroutine, before the
// call, with no lock held: it may call FakeAPI.
type Reactor func(verb Verb, namespace, name string) error

// FakeAPI is the status manager's view of an in-memory API server: it implements
// statusmgr.StatusPatcher over an apitest.Server. Safe for concurrent use. The zero value
// is not usable; call NewFakeAPI.
type FakeAPI struct {
	srv *apitest.Server

	mu      sync.Mutex
	counts  Counts // but Deleted: the server counts the pods DeletePod removed
	reactor Reactor
	// changed is closed (and replaced) after every call, for WaitFor.
	changed chan struct{}
}

var _ statusmgr.StatusPatcher = (*FakeAPI)(nil)

// NewFakeAPI returns a FakeAPI holding deep copies of pods.
func NewFakeAPI(pods ...*v1.Pod) *FakeAPI {
	return &FakeAPI{srv: apitest.NewServer(pods...), changed: make(chan struct{})}
}

// Server returns the API server behind f, for its calls that FakeAPI does not forward.
// Its calls are neither counted nor passed to the Reactor.
func (f *FakeAPI) Server() *apitest.Server { return f.srv }

// Put stores a deep copy of pod (creating or replacing it, e.g. with a new UID). A nil pod
// is ignored.
func (f *FakeAPI) Put(pod *v1.Pod) { f.srv.Put(pod) }

// MarkDeleted does what the API server does on a graceful delete of a pod bound to a
// node: the object stays, with deletionTimestamp = at and deletionGracePeriodSeconds =
// grace. It reports whether the pod exists.
func (f *FakeAPI) MarkDeleted(namespace, name string, at metav1.Time, grace int64) bool {
	return f.srv.MarkDeleted(namespace, name, at, grace)
}

// Pod returns a deep copy of the stored pod.
func (f *FakeAPI) Pod(namespace, name string) (*v1.Pod, bool) { return f.srv.Pod(namespace, name) }

// Len returns the number of stored pods.
func (f *FakeAPI) Len() int { return f.srv.Len() }

// DeletedPods returns deep copies of the pods DeletePod removed, as they were when deleted,
// in order. A pod is listed as soon as it is gone from the store.
func (f *FakeAPI) DeletedPods() []*v1.Pod { return f.srv.FinalDeleted() }

// SetReactor installs r (nil removes it).
func (f *FakeAPI) SetReactor(r Reactor) {
	f.mu.Lock()
	f.reactor = r
	f.mu.Unlock()
}

// Counts returns the call counts.
func (f *FakeAPI) Counts() Counts {
	c, _ := f.snapshot()
	return c
}

// snapshot returns the counts and the channel closed after the next call.
func (f *FakeAPI) snapshot() (Counts, <-chan struct{}) {
	f.mu.Lock()
	c, ch := f.counts, f.changed
	f.mu.Unlock()
	c.Deleted = f.srv.FinalDeletes()
	return c, ch
}

// WaitFor blocks until cond holds for the counts (checked now and after every call) or ctx
// ends. cond runs without FakeAPI's lock.
func (f *FakeAPI) WaitFor(ctx context.Context, cond func(Counts) bool) error {
	for {
		c, ch := f.snapshot()
		if cond(c) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// begin counts a call of verb and returns the Reactor's verdict on it.
func (f *FakeAPI) begin(verb Verb, namespace, name string, count func(*Counts)) error {
	f.mu.Lock()
	count(&f.counts)
	r := f.reactor
	f.mu.Unlock()
	if r == nil {
		return nil
	}
	return r(verb, namespace, name)
}

// end wakes WaitFor after a call.
func (f *FakeAPI) end() {
	f.mu.Lock()
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// GetPod returns a deep copy of the stored pod, or NotFound.
func (f *FakeAPI) GetPod(_ context.Context, namespace, name string) (*v1.Pod, error) {
	defer f.end()
	if err := f.begin(Get, namespace, name, func(c *Counts) { c.Gets++ }); err != nil {
		return nil, err
	}
	return f.srv.Get(namespace, name)
}

// PatchPodStatus applies a strategic merge patch to the stored pod through the status
// subresource, as the API server does (apitest.Server.PatchStatus): a metadata.uid in the
// patch that differs from the pod's UID gives Conflict; a missing pod NotFound; a
// malformed patch BadRequest. Patches of different pods run in parallel.
func (f *FakeAPI) PatchPodStatus(_ context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
	defer f.end()
	if err := f.begin(Patch, namespace, name, func(c *Counts) { c.Patches++; c.PatchBytes += len(patch) }); err != nil {
		return nil, err
	}
	return f.srv.PatchStatus(namespace, name, patch)
}

// UpdatePodStatus replaces the stored pod's status with pod.Status through the status
// subresource's update (apitest.Server.UpdateStatus): another UID or resourceVersion gives
// Conflict, a missing pod NotFound. Counted as Updates. It makes FakeAPI a
// statusmgr.StatusUpdater (statusmgr.Config.UpdateStatus).
func (f *FakeAPI) UpdatePodStatus(_ context.Context, pod *v1.Pod) (*v1.Pod, error) {
	if pod == nil {
		return f.srv.UpdateStatus(nil) // BadRequest
	}
	defer f.end()
	if err := f.begin(Update, pod.Namespace, pod.Name, func(c *Counts) { c.Updates++ }); err != nil {
		return nil, err
	}
	return f.srv.UpdateStatus(pod)
}

// DeletePod removes the pod if its UID is uid (else Conflict; a missing pod NotFound): the
// final delete, grace 0 with the UID precondition (apitest.Server.FinalDelete).
func (f *FakeAPI) DeletePod(_ context.Context, namespace, name string, uid types.UID) error {
	defer f.end()
	if err := f.begin(Delete, namespace, name, func(c *Counts) { c.Deletes++ }); err != nil {
		return err
	}
	_, err := f.srv.FinalDelete(namespace, name, uid)
	return err
}
