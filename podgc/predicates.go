package podgc

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// TaintOutOfService is the taint key an administrator puts on a node that is shut down for
// good; with the node not Ready, its terminating pods are force-deleted.
const TaintOutOfService = v1.TaintNodeOutOfService

// evictedReason is the status reason the kubelet's eviction manager gives a pod it evicted.
const evictedReason = "Evicted"

// IsTerminated reports whether pod counts toward the terminated-pod threshold: its phase is
// neither Pending, Running nor Unknown. As in the controller, an empty phase counts as
// terminated (the API server always sets a phase, so only hand-made pods have none). A nil
// pod is not terminated.
func IsTerminated(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	switch pod.Status.Phase {
	case v1.PodPending, v1.PodRunning, v1.PodUnknown:
		return false
	}
	return true
}

// IsTerminating reports whether pod has a deletionTimestamp. A nil pod is not terminating.
func IsTerminating(pod *v1.Pod) bool {
	return pod != nil && pod.DeletionTimestamp != nil
}

// IsEvicted reports whether pod was evicted by a kubelet: phase Failed with reason "Evicted".
// Evicted pods are deleted before other terminated pods.
func IsEvicted(pod *v1.Pod) bool {
	return pod != nil && pod.Status.Phase == v1.PodFailed && pod.Status.Reason == evictedReason
}

// IsNodeReady reports whether node's first Ready condition has status True. A node without
// conditions, or whose Ready condition is False or Unknown, is not ready; a nil node is not
// ready.
func IsNodeReady(node *v1.Node) bool {
	if node == nil {
		return false
	}
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == v1.NodeReady {
			return node.Status.Conditions[i].Status == v1.ConditionTrue
		}
	}
	return false
}

// IsNodeOutOfService reports whether the terminating pods on node may be force-deleted: the
// node is not Ready (see IsNodeReady) and carries a taint with key TaintOutOfService, whatever
// the taint's value and effect. A nil node is not out of service.
func IsNodeOutOfService(node *v1.Node) bool {
	if node == nil || IsNodeReady(node) {
		return false
	}
	return slices.ContainsFunc(node.Spec.Taints, func(t v1.Taint) bool { return t.Key == TaintOutOfService })
}

// checkPod returns nil when pod can be considered: it is non-nil and has a name and a UID
// (the UID is the precondition of every write). Otherwise it returns an error wrapping
// ErrNilPod or ErrInvalidPod.
func checkPod(pod *v1.Pod) error {
	switch {
	case pod == nil:
		return ErrNilPod
	case pod.Name == "":
		return fmt.Errorf("%w: pod with UID %q has no name", ErrInvalidPod, pod.UID)
	case pod.UID == "":
		return fmt.Errorf("%w: pod %s/%s has no UID", ErrInvalidPod, pod.Namespace, pod.Name)
	}
	return nil
}

// checkNode returns nil when node is non-nil and named, otherwise an error wrapping
// ErrNilNode or ErrInvalidNode.
func checkNode(node *v1.Node) error {
	switch {
	case node == nil:
		return ErrNilNode
	case node.Name == "":
		return fmt.Errorf("%w: node with UID %q has no name", ErrInvalidNode, node.UID)
	}
	return nil
}
