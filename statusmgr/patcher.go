package statusmgr

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// StatusPatcher is the caller's API client: the three calls the manager makes on the API
// server. An adapter over client-go is a few lines (see the package documentation). Errors
// must be k8s.io/apimachinery/pkg/api/errors kinds where they apply: NotFound means the pod
// is gone (its status is forgotten), Conflict means the pod changed or is another
// incarnation (the manager re-reads it and retries); any other error is reported and the
// status stays pending and is retried.
//
// The manager never calls a StatusPatcher while holding its lock. It calls it from several
// goroutines at once (Run's writers and Sync's): at most Config.MaxConcurrentWrites calls
// are in flight together, and at most one per pod (per pod UID: the calls of one pod's
// sync follow each other, and the next sync of the pod starts after the last call of the
// previous one returned). An implementation must be safe for concurrent use; client-go's
// clientset is.
//
// The manager keeps the pods GetPod and PatchPodStatus return, read only (it may hold the
// status of one as the pod's cached status once that is exactly the status it has): once
// returned, they must not be modified. client-go returns a new object for every call.
type StatusPatcher interface {
	// GetPod returns the server's pod by namespace and name.
	GetPod(ctx context.Context, namespace, name string) (*v1.Pod, error)
	// PatchPodStatus applies patch, a strategic merge patch
	// (types.StrategicMergePatchType), to the pod's "status" subresource and returns the
	// patched pod. The patch carries metadata.uid: the server must refuse it (Conflict) when
	// the pod has another UID, as the API server does. The patch is the implementation's
	// to keep: the manager never writes it again (client-go's HTTP transport may still
	// read a request's body after the call returned).
	PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error)
	// DeletePod deletes the pod with grace period 0 and the UID precondition uid
	// (metav1.DeleteOptions{GracePeriodSeconds: 0, Preconditions: {UID: uid}}); a pod
	// with another UID must give Conflict. After any error the manager re-reads the pod
	// (GetPod) before it deletes it again or forgets its status.
	DeletePod(ctx context.Context, namespace, name string, uid types.UID) error
}

// StatusUpdater is the optional call of a StatusPatcher that Config.UpdateStatus uses: the
// pod's "status" subresource's update (client-go's UpdateStatus).
type StatusUpdater interface {
	// UpdatePodStatus replaces the status of the pod pod names (namespace and name) with
	// pod.Status and returns the updated pod. pod is the node agent's copy of the server's
	// pod with the status to write: the server must refuse the update (Conflict) when its
	// pod has another resourceVersion or UID, as the API server does. pod is read only,
	// and the manager's until the call returns.
	UpdatePodStatus(ctx context.Context, pod *v1.Pod) (*v1.Pod, error)
}

// StatusPatcherFuncs adapts plain functions to a StatusPatcher. A nil function makes its
// method return ErrNotImplemented.
type StatusPatcherFuncs struct {
	// GetPodFunc implements GetPod.
	GetPodFunc func(ctx context.Context, namespace, name string) (*v1.Pod, error)
	// PatchPodStatusFunc implements PatchPodStatus.
	PatchPodStatusFunc func(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error)
	// DeletePodFunc implements DeletePod.
	DeletePodFunc func(ctx context.Context, namespace, name string, uid types.UID) error
}

var _ StatusPatcher = StatusPatcherFuncs{}

// GetPod calls GetPodFunc.
func (f StatusPatcherFuncs) GetPod(ctx context.Context, namespace, name string) (*v1.Pod, error) {
	if f.GetPodFunc == nil {
		return nil, ErrNotImplemented
	}
	return f.GetPodFunc(ctx, namespace, name)
}

// PatchPodStatus calls PatchPodStatusFunc.
func (f StatusPatcherFuncs) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
	if f.PatchPodStatusFunc == nil {
		return nil, ErrNotImplemented
	}
	return f.PatchPodStatusFunc(ctx, namespace, name, patch)
}

// DeletePod calls DeletePodFunc.
func (f StatusPatcherFuncs) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	if f.DeletePodFunc == nil {
		return ErrNotImplemented
	}
	return f.DeletePodFunc(ctx, namespace, name, uid)
}

// PodLookup is the node agent's view of its desired pods (the kubelet's pod manager). It is
// optional; the manager calls it without holding its lock, from its sync loop and setters.
type PodLookup interface {
	// GetPodByUID returns the desired pod with the UID (a static pod by its own UID). The
	// manager refreshes its copy of the pod (deletionTimestamp) from it on periodic syncs.
	GetPodByUID(uid types.UID) (*v1.Pod, bool)
	// GetMirrorPodByPod returns the mirror pod (the API server's copy) of a static pod.
	// A static pod's status is written to its mirror pod; without one it is not synced.
	GetMirrorPodByPod(pod *v1.Pod) (*v1.Pod, bool)
}

// PodUIDTranslator is an optional interface of a PodLookup (checked with a type
// assertion): the kubelet pod manager's TranslatePodUID. GetPodStatus uses it to answer
// for a mirror pod's UID with its static pod's status, as the kubelet does. Without it,
// the manager recognizes a mirror pod's UID only once a sync has seen that mirror pod on
// the server.
type PodUIDTranslator interface {
	// TranslatePodUID returns the UID of the static pod whose mirror pod has the UID
	// uid, or uid itself when it is not a known mirror pod's UID.
	TranslatePodUID(uid types.UID) types.UID
}

// PodLookupFuncs adapts plain functions to a PodLookup (and a PodUIDTranslator). A nil
// function reports "not found" (TranslatePodUID: the UID unchanged).
type PodLookupFuncs struct {
	// GetPodByUIDFunc implements GetPodByUID.
	GetPodByUIDFunc func(uid types.UID) (*v1.Pod, bool)
	// GetMirrorPodByPodFunc implements GetMirrorPodByPod.
	GetMirrorPodByPodFunc func(pod *v1.Pod) (*v1.Pod, bool)
	// TranslatePodUIDFunc implements TranslatePodUID.
	TranslatePodUIDFunc func(uid types.UID) types.UID
}

var (
	_ PodLookup        = PodLookupFuncs{}
	_ PodUIDTranslator = PodLookupFuncs{}
)

// TranslatePodUID calls TranslatePodUIDFunc.
func (f PodLookupFuncs) TranslatePodUID(uid types.UID) types.UID {
	if f.TranslatePodUIDFunc == nil {
		return uid
	}
	return f.TranslatePodUIDFunc(uid)
}

// GetPodByUID calls GetPodByUIDFunc.
func (f PodLookupFuncs) GetPodByUID(uid types.UID) (*v1.Pod, bool) {
	if f.GetPodByUIDFunc == nil {
		return nil, false
	}
	return f.GetPodByUIDFunc(uid)
}

// GetMirrorPodByPod calls GetMirrorPodByPodFunc.
func (f PodLookupFuncs) GetMirrorPodByPod(pod *v1.Pod) (*v1.Pod, bool) {
	if f.GetMirrorPodByPodFunc == nil {
		return nil, false
	}
	return f.GetMirrorPodByPodFunc(pod)
}
