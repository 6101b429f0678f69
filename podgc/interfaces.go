package podgc

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Lister gives the Runner the cluster's pods and nodes, once per cycle. Both lists may come
// from informer caches (the controller's choice); the Runner does not modify the objects.
// A Lister must be safe for use by one goroutine at a time; the Runner never calls it
// concurrently.
type Lister interface {
	// ListPods returns all pods. An error abandons the cycle; it is retried at the next
	// period.
	ListPods(ctx context.Context) ([]*v1.Pod, error)
	// ListNodes returns all nodes. An error abandons the cycle; it is retried at the next
	// period.
	ListNodes(ctx context.Context) ([]*v1.Node, error)
}

// PodWriter makes the Runner's two writes. With Config.MaxConcurrentDeletes > 1 its methods
// are called from several goroutines at once. Return the API server's errors as they are:
// an error for which k8s.io/apimachinery/pkg/api/errors.IsNotFound is true means the pod is
// already gone, which counts as success.
type PodWriter interface {
	// PatchPodStatus applies patch, a strategic merge patch (types.StrategicMergePatchType)
	// of the status subresource of pod namespace/name, built by StatusPatch; it carries the
	// pod's UID as a precondition. With client-go:
	//   c.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) error
	// DeletePod deletes pod namespace/name with opts, built by DeleteOptions: grace period 0
	// and a UID precondition. Pass opts through unchanged. With client-go:
	//   c.CoreV1().Pods(ns).Delete(ctx, name, opts)
	DeletePod(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error
}

// NodeChecker, optional, takes a second look at a node whose quarantine expired before its
// pods are deleted as orphans, in case the node list is stale. The controller does this with
// a GET of the node from the API server. The Runner never calls it concurrently.
type NodeChecker interface {
	// NodeExists reports whether node name exists. An error postpones the decision to the
	// next cycle; the node's pods are not deleted meanwhile.
	NodeExists(ctx context.Context, name string) (bool, error)
}

// ListerFuncs adapts two functions to a Lister. A nil field makes its method return an
// error wrapping ErrNotImplemented.
type ListerFuncs struct {
	// ListPodsFunc implements ListPods.
	ListPodsFunc func(ctx context.Context) ([]*v1.Pod, error)
	// ListNodesFunc implements ListNodes.
	ListNodesFunc func(ctx context.Context) ([]*v1.Node, error)
}

// ListPods calls f.ListPodsFunc.
func (f ListerFuncs) ListPods(ctx context.Context) ([]*v1.Pod, error) {
	if f.ListPodsFunc == nil {
		return nil, notImplemented("ListPods")
	}
	return f.ListPodsFunc(ctx)
}

// ListNodes calls f.ListNodesFunc.
func (f ListerFuncs) ListNodes(ctx context.Context) ([]*v1.Node, error) {
	if f.ListNodesFunc == nil {
		return nil, notImplemented("ListNodes")
	}
	return f.ListNodesFunc(ctx)
}

// PodWriterFuncs adapts two functions to a PodWriter. A nil field makes its method return
// an error wrapping ErrNotImplemented.
type PodWriterFuncs struct {
	// PatchPodStatusFunc implements PatchPodStatus.
	PatchPodStatusFunc func(ctx context.Context, namespace, name string, patch []byte) error
	// DeletePodFunc implements DeletePod.
	DeletePodFunc func(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error
}

// PatchPodStatus calls f.PatchPodStatusFunc.
func (f PodWriterFuncs) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) error {
	if f.PatchPodStatusFunc == nil {
		return notImplemented("PatchPodStatus")
	}
	return f.PatchPodStatusFunc(ctx, namespace, name, patch)
}

// DeletePod calls f.DeletePodFunc.
func (f PodWriterFuncs) DeletePod(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
	if f.DeletePodFunc == nil {
		return notImplemented("DeletePod")
	}
	return f.DeletePodFunc(ctx, namespace, name, opts)
}

// NodeCheckerFuncs adapts a function to a NodeChecker. A nil field makes NodeExists return
// an error wrapping ErrNotImplemented.
type NodeCheckerFuncs struct {
	// NodeExistsFunc implements NodeExists.
	NodeExistsFunc func(ctx context.Context, name string) (bool, error)
}

// NodeExists calls f.NodeExistsFunc.
func (f NodeCheckerFuncs) NodeExists(ctx context.Context, name string) (bool, error) {
	if f.NodeExistsFunc == nil {
		return false, notImplemented("NodeExists")
	}
	return f.NodeExistsFunc(ctx, name)
}

var (
	_ Lister      = ListerFuncs{}
	_ PodWriter   = PodWriterFuncs{}
	_ NodeChecker = NodeCheckerFuncs{}
)

func notImplemented(method string) error {
	return fmt.Errorf("%w: %s", ErrNotImplemented, method)
}
