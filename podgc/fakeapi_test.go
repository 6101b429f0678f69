package podgc

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// fakeAPI is an in-memory API server for pods and nodes. It implements Lister, PodWriter and
// NodeChecker, checks every write's preconditions as the API server does, and records the
// writes it accepted.
type fakeAPI struct {
	t testing.TB

	mu    sync.Mutex
	pods  map[string]*v1.Pod // by namespace/name
	nodes []*v1.Node
	// writes lists accepted and refused writes, "patch ns/name" or "delete ns/name".
	writes []string
	// patched holds the last status written to each pod before its deletion.
	patched map[string]v1.PodStatus

	listPodsErr, listNodesErr error
	patchErr, deleteErr       map[string]error // by pod name; consumed on use
	// nodeExists answers NodeExists; nodeErr, when set, fails it.
	nodeExists map[string]bool
	nodeErr    error
	nodeChecks []string
	// hook, when set, runs at the start of every write (outside the lock).
	hook func(op, name string)
}

func newFakeAPI(t testing.TB, pods []*v1.Pod, nodes []*v1.Node) *fakeAPI {
	f := &fakeAPI{
		t: t, pods: map[string]*v1.Pod{}, nodes: nodes, patched: map[string]v1.PodStatus{},
		patchErr: map[string]error{}, deleteErr: map[string]error{}, nodeExists: map[string]bool{},
	}
	for _, p := range pods {
		f.pods[p.Namespace+"/"+p.Name] = p.DeepCopy()
	}
	return f
}

func (f *fakeAPI) ListPods(context.Context) ([]*v1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listPodsErr != nil {
		return nil, f.listPodsErr
	}
	var out []*v1.Pod
	for _, k := range slices.Sorted(maps.Keys(f.pods)) {
		out = append(out, f.pods[k].DeepCopy())
	}
	return out, nil
}

func (f *fakeAPI) ListNodes(context.Context) ([]*v1.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listNodesErr != nil {
		return nil, f.listNodesErr
	}
	return slices.Clone(f.nodes), nil
}

func (f *fakeAPI) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) error {
	if f.hook != nil {
		f.hook("patch", name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := namespace + "/" + name
	f.writes = append(f.writes, "patch "+key)
	if err := f.patchErr[name]; err != nil {
		delete(f.patchErr, name)
		return err
	}
	pod, ok := f.pods[key]
	if !ok {
		return apierrors.NewNotFound(podsResource, name)
	}
	res, err := applyStatusPatch(f.t, pod, patch)
	if err != nil {
		return apierrors.NewConflict(podsResource, name, err)
	}
	f.pods[key] = res
	f.patched[key] = res.Status
	return nil
}

func (f *fakeAPI) DeletePod(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	if f.hook != nil {
		f.hook("delete", name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := namespace + "/" + name
	f.writes = append(f.writes, "delete "+key)
	if err := f.deleteErr[name]; err != nil {
		delete(f.deleteErr, name)
		return err
	}
	if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 {
		f.t.Errorf("delete %s: grace period %v, want 0", key, opts.GracePeriodSeconds)
	}
	if opts.Preconditions == nil || opts.Preconditions.UID == nil {
		f.t.Errorf("delete %s: no UID precondition", key)
		return apierrors.NewBadRequest("no precondition")
	}
	pod, ok := f.pods[key]
	if !ok {
		return apierrors.NewNotFound(podsResource, name)
	}
	if pod.UID != *opts.Preconditions.UID {
		return apierrors.NewConflict(podsResource, name, fmt.Errorf("precondition failed: UID %s, object has %s", *opts.Preconditions.UID, pod.UID))
	}
	delete(f.pods, key)
	return nil
}

func (f *fakeAPI) NodeExists(ctx context.Context, name string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodeChecks = append(f.nodeChecks, name)
	if f.nodeErr != nil {
		return false, f.nodeErr
	}
	return f.nodeExists[name], nil
}

// podNames returns the names of the pods stored, sorted.
func (f *fakeAPI) podNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, p := range f.pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// takeWrites returns and clears the recorded writes.
func (f *fakeAPI) takeWrites() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.writes
	f.writes = nil
	return w
}

func (f *fakeAPI) put(p *v1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods[p.Namespace+"/"+p.Name] = p.DeepCopy()
}

var (
	_ Lister      = (*fakeAPI)(nil)
	_ PodWriter   = (*fakeAPI)(nil)
	_ NodeChecker = (*fakeAPI)(nil)
)
