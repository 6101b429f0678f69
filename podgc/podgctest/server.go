package podgctest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/apitest"
	"github.com/podlife/podlife/podgc"
)

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
	// Options are a delete's options.
	Options metav1.DeleteOptions
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
// podgc.PodWriter and podgc.NodeChecker; its pods live in an apitest.Server, which
// answers as the real API server does: a status patch is a strategic merge patch through
// the status subresource whose metadata.uid is a precondition (Conflict when the pod has
// another UID); a delete follows its options (grace period, UID precondition: Conflict on
// a mismatch), so a delete without grace 0 keeps a bound pod with its deletionTimestamp;
// a missing pod is NotFound. Lists return deep copies, sorted by namespace and name.
//
// A Server is safe for concurrent use. The zero value is not usable; call NewServer.
type Server struct {
	pods *apitest.Server

	mu     sync.Mutex
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
		pods:   apitest.NewServer(),
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

// API returns the API server holding the pods, for its calls that Server does not
// forward. Its calls are neither recorded nor failed by FailNext.
func (s *Server) API() *apitest.Server { return s.pods }

// AddPod stores a copy of pod as it is (with a new resourceVersion), replacing any pod of
// the same namespace and name. A nil pod or one without name or UID is refused with
// ErrBadObject.
func (s *Server) AddPod(pod *v1.Pod) error {
	if pod == nil || pod.Name == "" || pod.UID == "" {
		return fmt.Errorf("%w: pod needs a name and a UID", ErrBadObject)
	}
	s.pods.Put(pod)
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
func (s *Server) Pod(namespace, name string) (*v1.Pod, bool) { return s.pods.Pod(namespace, name) }

// Pods returns copies of the stored pods, sorted by namespace and name.
func (s *Server) Pods() []*v1.Pod { return s.pods.Pods() }

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
	if err := s.injected(OpListPods, ""); err != nil {
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

// PatchPodStatus implements podgc.PodWriter: apitest.Server.PatchStatus, unless FailNext
// queued an error for the pod.
func (s *Server) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) error {
	w := Write{Op: OpPatch, Namespace: namespace, Name: name}
	if w.Err = s.injected(OpPatch, name); w.Err == nil {
		var p *v1.Pod
		if p, w.Err = s.pods.PatchStatus(namespace, name, patch); w.Err == nil {
			w.Status = &p.Status
		}
	}
	s.record(w)
	return w.Err
}

// DeletePod implements podgc.PodWriter: apitest.Server.Delete, unless FailNext queued an
// error for the pod.
func (s *Server) DeletePod(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	w := Write{Op: OpDelete, Namespace: namespace, Name: name, Options: *opts.DeepCopy()}
	if w.Err = s.injected(OpDelete, name); w.Err == nil {
		_, w.Err = s.pods.Delete(namespace, name, opts)
	}
	s.record(w)
	return w.Err
}

// injected pops the error FailNext queued for op on name, if any.
func (s *Server) injected(op Op, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.takeFailure(op, name)
}

func (s *Server) record(w Write) {
	s.mu.Lock()
	s.writes = append(s.writes, w)
	s.mu.Unlock()
}

// NotFound returns the API server's NotFound error for a pod, for FailNext.
func NotFound(name string) error { return apitest.NotFound(name) }
