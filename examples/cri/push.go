package cri

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

var _ node.StatusPusher = (*Runtime)(nil)

// podRef names a pod to inspect.
type podRef struct {
	uid             types.UID
	name, namespace string
}

// PushStatuses has the runtime report what its own actions changed: once a SyncPod that
// created a sandbox or started a container has returned, the pod is inspected (PodStatus)
// and its status pushed, so the node sees the started containers without waiting for the
// next relist (containerd 1.6 sends no container events; the kubelet waits for its relist
// here). The inspection the relist would have made is made instead, not added: the pushed
// status updates the PLEG's record, and the relist finds nothing new. inspectors goroutines
// inspect the queued pods until ctx ends; a pod that does not fit in the queue is left to
// the relist. Call it once (node.Node.Run does).
func (r *Runtime) PushStatuses(ctx context.Context, push func(*pleg.PodStatus)) {
	ch := make(chan podRef, inspectQueue)
	r.mu.Lock()
	r.inspect = ch
	r.mu.Unlock()
	for range inspectors {
		go r.inspector(ctx, ch, push)
	}
}

// inspector pushes the status of each queued pod until ctx ends.
func (r *Runtime) inspector(ctx context.Context, ch <-chan podRef, push func(*pleg.PodStatus)) {
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-ch:
			st, err := r.PodStatus(ctx, p.uid, p.name, p.namespace)
			if err != nil || ctx.Err() != nil {
				// The relist inspects the pod when it sees the change.
				r.log.Debug("inspecting a synced pod", "pod", p.namespace+"/"+p.name, "podUID", p.uid, "err", err)
				continue
			}
			push(st)
		}
	}
}

// queueInspection queues the pod for an inspection and push, if PushStatuses was called and
// the queue has room.
func (r *Runtime) queueInspection(pod *v1.Pod) {
	r.mu.Lock()
	ch := r.inspect
	r.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case ch <- podRef{uid: pod.UID, name: pod.Name, namespace: pod.Namespace}:
	default:
	}
}
