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

// StatusCache is the runtime status cache the pod workers read before each sync;
// *pleg.Cache satisfies it. GetNewerThan blocks until the pod's entry (or the cache as a
// whole) was refreshed after minTime, or ctx ends.
type StatusCache interface {
	GetNewerThan(ctx context.Context, uid types.UID, minTime time.Time) (*pleg.PodStatus, error)
}

// StatusCacheFunc adapts a function to a StatusCache.
type StatusCacheFunc func(ctx context.Context, uid types.UID, minTime time.Time) (*pleg.PodStatus, error)

var _ StatusCache = StatusCacheFunc(nil)

// GetNewerThan calls f.
func (f StatusCacheFunc) GetNewerThan(ctx context.Context, uid types.UID, minTime time.Time) (*pleg.PodStatus, error) {
	return f(ctx, uid, minTime)
}

// Refresher asks the runtime observer to re-inspect one pod at once; *pleg.Relister
// satisfies it. RequestRefresh must not block.
type Refresher interface {
	RequestRefresh(uid types.UID)
}

// StatusRefresher is a Refresher that can also re-inspect a pod synchronously and return
// the fresh status; *pleg.Relister satisfies it. When the Runner's Refresher implements it,
// the Runner uses Refresh instead of RequestRefresh followed by GetNewerThan: the status is
// then known to be observed after the previous work without comparing timestamps, which on
// a fake or synctest clock may not have moved since that work ended. If Refresh fails, the
// Runner falls back to GetNewerThan.
type StatusRefresher interface {
	Refresher
	Refresh(ctx context.Context, uid types.UID) (*pleg.PodStatus, error)
}

// RefresherFunc adapts a function to a Refresher.
type RefresherFunc func(uid types.UID)

var _ Refresher = RefresherFunc(nil)

// RequestRefresh calls f.
func (f RefresherFunc) RequestRefresh(uid types.UID) { f(uid) }

// StatusGetter returns the last cached runtime status of a pod without blocking (an
// empty status when none is cached). The runner uses it only when a pod is first seen in
// a terminal phase, to tell an agent restart (nothing runs: go straight to terminated)
// from a pod that still has to be stopped.
type StatusGetter interface {
	Get(uid types.UID) (*pleg.PodStatus, error)
}

// StatusGetterFunc adapts a function to a StatusGetter.
type StatusGetterFunc func(uid types.UID) (*pleg.PodStatus, error)

var _ StatusGetter = StatusGetterFunc(nil)

// Get calls f.
func (f StatusGetterFunc) Get(uid types.UID) (*pleg.PodStatus, error) { return f(uid) }
