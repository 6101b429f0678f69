package podgctest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/podlife/podlife/podgc"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// ErrBadObject is returned by AddPod and AddNode for an object the Server cannot store.
var ErrBadObject = errors.New("podgctest: bad object")

// Op names a call the Server answers.
type Op string

// The calls a Server answers, for FailNext and Write.Op.
const (
	OpListPods   Op = "list-pods"
	OpListNodes  Op = "list-nodes"
	OpPatch      Op = "patch"
	OpDelete     Op = "delete"
	OpNodeExists Op = "node-exists"
)

// Write records one PatchPodStatus or DeletePod call, in call order.
type Write struct {
	// Op is OpPatch or OpDelete.
	Op Op
	// Namespace and Name name the pod.
	Namespace, Name string
	// Status is the pod's status after a successful patch; nil otherwise.
	Status *v1.PodStatus
	// Err is what the call returned.
	Err error
}

// NodeCheck records one NodeExists call, in call order.
type NodeCheck struct {
	// Name is the node asked about.
	Name string
	// Exists is the answer; false when Err is set.
	Exists bool
	// Err is the injected error the call returned, if any.
	Err error
}

// Server is an in-memory API server for pods and nodes. It implements podgc.Lister,
// podgc.PodWriter and podgc.NodeChecker as the real API server behaves for them: a status
// patch is a strategic merge patch whose metadata.uid is a precondition (Conflict when the
// pod has another UID) and which may touch nothing but the status; a delete must carry grace
// period 0 and a UID precondition (BadRequest otherwise, Conflict on a UID mismatch); a
// missing pod is NotFound. Lists return deep copies, sorted by namespace and name.
//
// A Server is safe for concurrent use. The zero value is not usable; call NewServer.
type Server struct {
	mu     sync.Mutex
	pods   map[string]*v1.Pod // by namespace/name
	nodes  map[string]*v1.Node
	writes []Write
	checks []NodeCheck
	// fail holds injected errors, consumed in order, by op and object name ("" for lists).
	fail map[failKey][]error
	// hidden nodes exist (NodeExists says so) but are left out of ListNodes, like a stale
	// informer cache.
	hidden map[string]bool
}

type failKey struct {
	op   Op
	name string
}

// NewServer returns an empty Server.
func NewServer() *Server {
	return &Server{
		pods:   map[string]*v1.Pod{},
		nodes:  map[string]*v1.Node{},
		fail:   map[failKey][]error{},
		hidden: map[string]bool{},
	}
}

var (
	_ podgc.Lister      = (*Server)(nil)
	_ podgc.PodWriter   = (*Server)(nil)
	_ podgc.NodeChecker = (*Server)(nil)
)

// AddPod stores a copy of pod, replacing any pod of the same namespace and name. A nil pod
// or one without name or UID is refused with ErrBadObject.
func (s *Server) AddPod(pod *v1.Pod) error {
	if pod == nil || pod.Name == "" || pod.UID == "" {
		return fmt.Errorf("%w: pod needs a name and a UID", ErrBadObject)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods[podKey(pod.Namespace, pod.Name)] = pod.DeepCopy()
	return nil
}

// AddNode stores a copy of node, replacing any node of the same name. A nil node or one
// without a name is refused with ErrBadObject.
func (s *Server) AddNode(node *v1.Node) error {
	if node == nil || node.Name == "" {
		return fmt.Errorf("%w: node needs a name", ErrBadObject)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes[node.Name] = node.DeepCopy()
	return nil
}

// RemoveNode deletes node name, if stored.
func (s *Server) RemoveNode(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.nodes, name)
	delete(s.hidden, name)
}

// HideNode makes ListNodes leave node name out while NodeExists still finds it, as a stale
// node cache would; hidden is false to list it again.
func (s *Server) HideNode(name string, hidden bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if hidden {
		s.hidden[name] = true
	} else {
		delete(s.hidden, name)
	}
}

// FailNext makes the next call of op on object name (the pod's or node's name; "" for the
// lists) return err instead of doing anything. Several errors queue up.
func (s *Server) FailNext(op Op, name string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := failKey{op, name}
	s.fail[k] = append(s.fail[k], err)
}

// takeFailure pops an injected error; s.mu is held.
func (s *Server) takeFailure(op Op, name string) error {
	k := failKey{op, name}
	q := s.fail[k]
	if len(q) == 0 {
		return nil
	}
	err := q[0]
	if len(q) == 1 {
		delete(s.fail, k)
	} else {
		s.fail[k] = q[1:]
	}
	return err
}

// Pod returns a copy of pod namespace/name and whether it is stored.
func (s *Server) Pod(namespace, name string) (*v1.Pod, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pods[podKey(namespace, name)]
	return p.DeepCopy(), ok
}

// Pods returns copies of the stored pods, sorted by namespace and name.
func (s *Server) Pods() []*v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*v1.Pod, 0, len(s.pods))
	for _, k := range slices.Sorted(maps.Keys(s.pods)) {
		out = append(out, s.pods[k].DeepCopy())
	}
	return out
}

// TakeWrites returns the writes recorded since the last call, in call order.
func (s *Server) TakeWrites() []Write {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.writes
	s.writes = nil
	return w
}

// ListPods implements podgc.Lister.
func (s *Server) ListPods(ctx context.Context) ([]*v1.Pod, error) {
	s.mu.Lock()
	err := s.takeFailure(OpListPods, "")
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.Pods(), nil
}

// ListNodes implements podgc.Lister; hidden nodes are left out.
func (s *Server) ListNodes(ctx context.Context) ([]*v1.Node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.takeFailure(OpListNodes, ""); err != nil {
		return nil, err
	}
	out := make([]*v1.Node, 0, len(s.nodes))
	for _, name := range slices.Sorted(maps.Keys(s.nodes)) {
		if !s.hidden[name] {
			out = append(out, s.nodes[name].DeepCopy())
		}
	}
	return out, nil
}

// NodeExists implements podgc.NodeChecker; hidden nodes exist.
func (s *Server) NodeExists(ctx context.Context, name string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := NodeCheck{Name: name, Err: s.takeFailure(OpNodeExists, name)}
	if c.Err == nil {
		_, c.Exists = s.nodes[name]
	}
	s.checks = append(s.checks, c)
	return c.Exists, c.Err
}

// TakeNodeChecks returns the NodeExists calls recorded since the last call, in call order.
func (s *Server) TakeNodeChecks() []NodeCheck {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.checks
	s.checks = nil
	return c
}

// PatchPodStatus implements podgc.PodWriter.
func (s *Server) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := Write{Op: OpPatch, Namespace: namespace, Name: name}
	w.Err = s.patch(namespace, name, patch, &w)
	s.writes = append(s.writes, w)
	return w.Err
}

func (s *Server) patch(namespace, name string, patch []byte, w *Write) error {
	if err := s.takeFailure(OpPatch, name); err != nil {
		return err
	}
	pod, ok := s.pods[podKey(namespace, name)]
	if !ok {
		return apierrors.NewNotFound(podsResource, name)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(patch, &fields); err != nil {
		return apierrors.NewBadRequest("patch is not a JSON object: " + err.Error())
	}
	for k := range fields {
		if k != "metadata" && k != "status" {
			return apierrors.NewBadRequest("status patch touches " + k)
		}
	}
	var meta struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	_ = json.Unmarshal(patch, &meta) // decoded above as an object already
	for k := range meta.Metadata {
		if k != "uid" {
			return apierrors.NewBadRequest("status patch touches metadata." + k)
		}
	}
	var uid string
	if raw, ok := meta.Metadata["uid"]; ok {
		if err := json.Unmarshal(raw, &uid); err != nil {
			return apierrors.NewBadRequest("metadata.uid is not a string")
		}
		if uid != string(pod.UID) {
			return apierrors.NewConflict(podsResource, name,
				fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", uid, pod.UID))
		}
	}
	orig, err := json.Marshal(pod)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	out, err := strategicpatch.StrategicMergePatch(orig, patch, v1.Pod{})
	if err != nil {
		return apierrors.NewBadRequest("cannot apply patch: " + err.Error())
	}
	var res v1.Pod
	if err := json.Unmarshal(out, &res); err != nil {
		return apierrors.NewBadRequest("patched pod does not decode: " + err.Error())
	}
	s.pods[podKey(namespace, name)] = &res
	st := res.Status.DeepCopy()
	w.Status = st
	return nil
}

// DeletePod implements podgc.PodWriter.
func (s *Server) DeletePod(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := Write{Op: OpDelete, Namespace: namespace, Name: name}
	w.Err = s.delete(namespace, name, opts)
	s.writes = append(s.writes, w)
	return w.Err
}

func (s *Server) delete(namespace, name string, opts metav1.DeleteOptions) error {
	if err := s.takeFailure(OpDelete, name); err != nil {
		return err
	}
	if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 {
		return apierrors.NewBadRequest("podgctest: garbage-collector deletes must have grace period 0")
	}
	if opts.Preconditions == nil || opts.Preconditions.UID == nil {
		return apierrors.NewBadRequest("podgctest: garbage-collector deletes must have a UID precondition")
	}
	key := podKey(namespace, name)
	pod, ok := s.pods[key]
	if !ok {
		return apierrors.NewNotFound(podsResource, name)
	}
	if pod.UID != *opts.Preconditions.UID {
		return apierrors.NewConflict(podsResource, name,
			fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", *opts.Preconditions.UID, pod.UID))
	}
	delete(s.pods, key)
	return nil
}

func podKey(namespace, name string) string { return namespace + "/" + name }

// NotFound returns the API server's NotFound error for a pod, for FailNext.
func NotFound(name string) error { return apierrors.NewNotFound(podsResource, name) }
