package node

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/internal/podfacts"
	"github.com/podlife/podlife/podworker"
)

// Annotation keys of static and mirror pods (the kubelet's).
const (
	// ConfigHashAnnotationKey holds a static pod's hash, set by its source. It equals
	// config.ConfigHashAnnotationKey.
	ConfigHashAnnotationKey = podfacts.HashAnnotationKey
	// ConfigMirrorAnnotationKey marks a mirror pod; its value is the static pod's hash.
	// It equals config.ConfigMirrorAnnotationKey.
	ConfigMirrorAnnotationKey = podfacts.MirrorAnnotationKey
)

// MirrorPodClient is implemented by a Config.Patcher that can create and delete pods: the
// node then keeps a mirror pod (the API server's read-only copy) for every static pod, as
// the kubelet does, and statuses of static pods are written to it.
type MirrorPodClient interface {
	// CreateMirrorPod creates mirror (made by NewMirrorPod). AlreadyExists is not an
	// error.
	CreateMirrorPod(ctx context.Context, mirror *v1.Pod) error
	// DeleteMirrorPod deletes a mirror pod with grace 0 and the UID precondition uid.
	// NotFound is not an error.
	DeleteMirrorPod(ctx context.Context, namespace, name string, uid types.UID) error
}

// NewMirrorPod returns the mirror pod of a static pod: a copy without UID, resource
// version and status, annotated with the static pod's hash (its UID when it has none).
// A nil static pod has no mirror pod: nil.
func NewMirrorPod(static *v1.Pod) *v1.Pod {
	if static == nil {
		return nil
	}
	mp := static.DeepCopy()
	mp.UID, mp.ResourceVersion, mp.Status = "", "", v1.PodStatus{}
	ann := make(map[string]string, len(mp.Annotations)+1)
	for k, v := range mp.Annotations {
		ann[k] = v
	}
	ann[ConfigMirrorAnnotationKey] = staticHash(static)
	mp.Annotations = ann
	return mp
}

func staticHash(p *v1.Pod) string {
	if h, ok := p.Annotations[ConfigHashAnnotationKey]; ok && h != "" {
		return h
	}
	return string(p.UID)
}

// IsMirrorPodOf reports whether mirror is the mirror pod of static (same name and
// namespace, and the static pod's hash).
func IsMirrorPodOf(mirror, static *v1.Pod) bool {
	return mirror != nil && static != nil && mirror.Name == static.Name && mirror.Namespace == static.Namespace &&
		mirror.Annotations[ConfigMirrorAnnotationKey] == staticHash(static)
}

// ensureMirrorPod creates the mirror pod of a running static pod if it has none, and
// replaces one that is being deleted or mirrors another version (the kubelet's SyncPod).
func (n *Node) ensureMirrorPod(ctx context.Context, pod *v1.Pod) error {
	var mirror *v1.Pod
	if n.mirrors == nil || !podfacts.IsStatic(pod) {
		return nil
	}
	// The pod manager's mirror pod is the latest (the worker's copy may be one the API
	// server has deleted since).
	mirror = n.mirrorOf(pod)
	if mirror != nil && (mirror.DeletionTimestamp != nil || !IsMirrorPodOf(mirror, pod)) {
		if err := n.mirrors.DeleteMirrorPod(ctx, mirror.Namespace, mirror.Name, mirror.UID); err != nil {
			return fmt.Errorf("node: deleting the outdated mirror pod of %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		n.emit(Event{Kind: EventWork, Pod: pod, Reason: ReasonMirrorPodDeleted, Message: "outdated mirror pod deleted"})
		mirror = nil
	}
	if mirror != nil {
		return nil
	}
	if err := n.mirrors.CreateMirrorPod(ctx, NewMirrorPod(pod)); err != nil {
		return fmt.Errorf("node: creating the mirror pod of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	n.emit(Event{Kind: EventWork, Pod: pod, Reason: ReasonMirrorPodCreated, Message: "mirror pod created"})
	return nil
}

// removeOrphanedMirrorPods deletes mirror pods whose static pod is gone and no longer
// terminating (housekeeping).
func (n *Node) removeOrphanedMirrorPods(ctx context.Context, mirrors []*v1.Pod, known map[types.UID]podworker.PodWorkerSync) {
	if n.mirrors == nil || len(mirrors) == 0 {
		return
	}
	// Full names of static pods whose containers are still being stopped.
	busy := map[string]bool{}
	for uid, w := range known {
		if w.Static && w.State == podworker.TerminatingPod {
			if fn, ok := n.pods.staticFullName(uid); ok {
				busy[fn] = true
			}
		}
	}
	for _, mp := range mirrors {
		if static, ok := n.pods.staticPodOf(mp); ok && IsMirrorPodOf(mp, static) {
			continue
		}
		if busy[podfacts.PodFullName(mp)] || mp.DeletionTimestamp != nil {
			continue
		}
		if err := n.mirrors.DeleteMirrorPod(ctx, mp.Namespace, mp.Name, mp.UID); err != nil {
			if ctx.Err() == nil {
				n.emit(Event{Kind: EventError, UID: mp.UID, Reason: ReasonHousekeepingError,
					Err: fmt.Errorf("node: deleting orphaned mirror pod %s/%s: %w", mp.Namespace, mp.Name, err)})
			}
			continue
		}
		n.emit(Event{Kind: EventHousekeeping, Pod: mp, Reason: ReasonMirrorPodDeleted, Message: "orphaned mirror pod deleted"})
	}
}
