package podworker

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg"
)

// PodSyncer is implemented by the caller: the actions the pod workers take on a pod. The
// pod workers call at most one method at a time per pod UID, never while holding a lock,
// and always with a context that is cancelled when the call is superseded.
//
//   - SyncPod makes the pod run as configured. It returns isTerminal = true when the pod
//     reached a terminal phase on its own (all containers exited under restartPolicy
//     Never/OnFailure); the pod then becomes terminating. Its context is cancelled when
//     the pod must terminate. An error is retried after a backoff.
//   - SyncTerminatingPod stops every container of the pod within gracePeriod seconds
//     (>= 1) and returns nil only when none runs. It is retried until it returns nil; its
//     context is cancelled when the grace period is shortened, and it is then called again
//     with the shorter period. podStatusFn, when not nil, is the latest status function of
//     a kill request and should be applied to the pod's final status.
//   - SyncTerminatingRuntimePod stops a pod known only from the runtime (no config), with
//     a grace period of 1 s. It is retried until it returns nil.
//   - SyncTerminatedPod cleans up (volumes, cgroups, the final status) once nothing runs.
//     It is retried until it returns nil; then the pod is finished.
type PodSyncer interface {
	SyncPod(ctx context.Context, updateType SyncPodType, pod, mirrorPod *v1.Pod, status *pleg.PodStatus) (isTerminal bool, err error)
	SyncTerminatingPod(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus, gracePeriod int64, podStatusFn func(*v1.PodStatus)) error
	SyncTerminatingRuntimePod(ctx context.Context, runningPod *pleg.Pod) error
	SyncTerminatedPod(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus) error
}

// PodSyncerFuncs adapts functions to a PodSyncer. A nil function succeeds at once (and
// SyncPod then reports the pod not terminal).
type PodSyncerFuncs struct {
	SyncPodFunc                   func(ctx context.Context, updateType SyncPodType, pod, mirrorPod *v1.Pod, status *pleg.PodStatus) (bool, error)
	SyncTerminatingPodFunc        func(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus, gracePeriod int64, podStatusFn func(*v1.PodStatus)) error
	SyncTerminatingRuntimePodFunc func(ctx context.Context, runningPod *pleg.Pod) error
	SyncTerminatedPodFunc         func(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus) error
}

var _ PodSyncer = PodSyncerFuncs{}

// SyncPod calls SyncPodFunc.
func (f PodSyncerFuncs) SyncPod(ctx context.Context, updateType SyncPodType, pod, mirrorPod *v1.Pod, status *pleg.PodStatus) (bool, error) {
	if f.SyncPodFunc == nil {
		return false, nil
	}
	return f.SyncPodFunc(ctx, updateType, pod, mirrorPod, status)
}

// SyncTerminatingPod calls SyncTerminatingPodFunc.
func (f PodSyncerFuncs) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus, gracePeriod int64, podStatusFn func(*v1.PodStatus)) error {
	if f.SyncTerminatingPodFunc == nil {
		return nil
	}
	return f.SyncTerminatingPodFunc(ctx, pod, status, gracePeriod, podStatusFn)
}

// SyncTerminatingRuntimePod calls SyncTerminatingRuntimePodFunc.
func (f PodSyncerFuncs) SyncTerminatingRuntimePod(ctx context.Context, runningPod *pleg.Pod) error {
	if f.SyncTerminatingRuntimePodFunc == nil {
		return nil
	}
	return f.SyncTerminatingRuntimePodFunc(ctx, runningPod)
}

// SyncTerminatedPod calls SyncTerminatedPodFunc.
func (f PodSyncerFuncs) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus) error {
	if f.SyncTerminatedPodFunc == nil {
		return nil
	}
	return f.SyncTerminatedPodFunc(ctx, pod, status)
}

// RuntimeView is how the pod workers read a pod's runtime status; *pleg.Relister
// implements it, RuntimeViewFuncs adapts functions.
//
//   - StatusAfter returns the pod's status observed after minTime. When it holds nothing
//     newer than minTime it inspects the pod now, never waiting for a periodic
//     observation (a terminating or terminated work follows one that changed the
//     runtime, and must not wait for a relist to see it); it waits only when the
//     inspection fails, until there is a status or ctx ends. *pleg.Relister does
//     exactly this, so a status observed after minTime costs no runtime call.
//   - LastStatus returns the last status observed, without waiting (an empty status when
//     none is). The runner reads it only for a pod first seen in a terminal phase, to tell
//     an agent restart (nothing runs: straight to terminated) from a pod still to stop.
type RuntimeView interface {
	StatusAfter(ctx context.Context, uid types.UID, minTime time.Time) (*pleg.PodStatus, error)
	LastStatus(uid types.UID) (*pleg.PodStatus, error)
}

// RuntimeViewFuncs adapts functions to a RuntimeView. Both are required (New rejects a
// nil one): a view that silently answered nothing would change what the pod workers do.
type RuntimeViewFuncs struct {
	StatusAfterFunc func(ctx context.Context, uid types.UID, minTime time.Time) (*pleg.PodStatus, error)
	LastStatusFunc  func(uid types.UID) (*pleg.PodStatus, error)
}

var _ RuntimeView = RuntimeViewFuncs{}

// StatusAfter calls StatusAfterFunc.
func (f RuntimeViewFuncs) StatusAfter(ctx context.Context, uid types.UID, minTime time.Time) (*pleg.PodStatus, error) {
	return f.StatusAfterFunc(ctx, uid, minTime)
}

// LastStatus calls LastStatusFunc.
func (f RuntimeViewFuncs) LastStatus(uid types.UID) (*pleg.PodStatus, error) {
	return f.LastStatusFunc(uid)
}
