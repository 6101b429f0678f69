package podworker

import (
	"errors"
	"fmt"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/internal/podfacts"
	"github.com/podlife/podlife/pleg"
)

// Errors returned for bad input. They are wrapped with the pod's identity; test them
// with errors.Is.
var (
	// ErrNilPod: neither Pod nor RunningPod was given.
	ErrNilPod = errors.New("podworker: nil pod")
	// ErrEmptyUID: the pod (or runtime pod) has no UID.
	ErrEmptyUID = errors.New("podworker: empty pod UID")
	// ErrPodAndRunningPod: both Pod and RunningPod were given; give one.
	ErrPodAndRunningPod = errors.New("podworker: both Pod and RunningPod set")
	// ErrRuntimePodNotKill: a runtime-only pod may only be killed.
	ErrRuntimePodNotKill = errors.New("podworker: runtime-only pod with an update type other than kill")
	// ErrKillOptionsNotKill: KillPodOptions were given with an update type other than kill.
	ErrKillOptionsNotKill = errors.New("podworker: kill options on an update type other than kill")
	// ErrInvalidUpdateType: the update type is not one of the SyncPodType constants.
	ErrInvalidUpdateType = errors.New("podworker: invalid update type")
	// ErrNegativeGracePeriod: a negative grace period override.
	ErrNegativeGracePeriod = errors.New("podworker: negative grace period override")
	// ErrNotWorking: Complete was called for a pod that has no work in flight.
	ErrNotWorking = errors.New("podworker: no work in flight for pod")
	// ErrInvalidConfig: a Config or MachineConfig field is out of range.
	ErrInvalidConfig = errors.New("podworker: invalid config")
	// ErrRunning: Run was called twice.
	ErrRunning = errors.New("podworker: runner already started")
	// ErrRuntimeStatus wraps the error of reading a pod's runtime status before a work
	// (the kubelet's "error determining status"); the work is retried.
	ErrRuntimeStatus = errors.New("podworker: reading the runtime status failed")
)

// UpdatePodOptions is one notification to the pod workers. Exactly one of Pod and
// RunningPod is set.
type UpdatePodOptions struct {
	// UpdateType says why the update is sent.
	UpdateType SyncPodType
	// Pod is the pod's configuration. The pod workers keep a reference to it and never
	// modify it; the caller must not modify it afterwards either.
	Pod *v1.Pod
	// MirrorPod is the mirror pod of a static pod, if known. A nil MirrorPod keeps the
	// last one seen.
	MirrorPod *v1.Pod
	// RunningPod is a pod known only from the runtime (no configuration exists): it may
	// only be killed (UpdateType SyncPodKill). If the UID is already known with a
	// configuration, the kill applies to that pod.
	RunningPod *pleg.Pod
	// KillPodOptions may be set only with UpdateType SyncPodKill.
	KillPodOptions *KillPodOptions
}

// KillPodOptions are the options of a kill request.
type KillPodOptions struct {
	// Completion, if set, is closed once the pod is terminated (no container runs), or at
	// once if it already is. It is never closed before UpdatePod returns nil; it is not
	// touched if UpdatePod returns an error. The same Completion may be passed more than
	// once, for one pod or for several: it is closed exactly once, when the last pod it
	// was passed for (and not yet terminated) is terminated; passed again after it was
	// closed, it is left alone.
	Completion *Completion
	// Evict marks the pod as evicted (its content is then removed even if the pod was
	// not deleted).
	Evict bool
	// PodStatusFunc, if set, is passed to SyncTerminatingPod to adjust the final status
	// (the latest one given wins).
	PodStatusFunc func(*v1.PodStatus)
	// PodTerminationGracePeriodSecondsOverride may shorten the grace period (never
	// lengthen it; see grace.Effective). Negative values are rejected.
	PodTerminationGracePeriodSecondsOverride *int64
}

// Completion is the end of one or more kill requests (KillPodOptions.Completion):
// Done's channel is closed once every pod it was passed for is terminated. A Machine lists
// it in Ready.Close at most once in its life, whatever the caller passes (the same one
// twice, for several pods, again after it was closed, to another Machine), so its driver
// closes it at most once. Make one with NewCompletion; the zero value is not usable.
type Completion struct {
	ch chan struct{}
	// listed is set by the Machine that lists the Completion in Ready.Close.
	listed atomic.Bool
}

// NewCompletion returns an open Completion.
func NewCompletion() *Completion { return &Completion{ch: make(chan struct{})} }

// Done returns a channel that is closed when the Completion is.
func (c *Completion) Done() <-chan struct{} { return c.ch }

// Close closes the Completion's channel. It is for the driver of a Machine, which calls
// it for every Completion in Ready.Close (Runner does): a Completion is listed once, so
// it is called once.
func (c *Completion) Close() { close(c.ch) }

// Validate checks o and returns a wrapped sentinel error for bad input.
func (o *UpdatePodOptions) Validate() error {
	uid := o.uid()
	if o.UpdateType.valid() && uid != "" && (o.Pod != nil) != (o.RunningPod != nil) &&
		(o.Pod != nil || o.UpdateType == SyncPodKill) &&
		(o.KillPodOptions == nil || (o.UpdateType == SyncPodKill &&
			(o.KillPodOptions.PodTerminationGracePeriodSecondsOverride == nil ||
				*o.KillPodOptions.PodTerminationGracePeriodSecondsOverride >= 0))) {
		return nil
	}
	ref := o.ref()
	switch {
	case !o.UpdateType.valid():
		return fmt.Errorf("%w: %d (pod %s)", ErrInvalidUpdateType, int(o.UpdateType), ref)
	case o.Pod == nil && o.RunningPod == nil:
		return ErrNilPod
	case o.Pod != nil && o.RunningPod != nil:
		return fmt.Errorf("%w (pod %s)", ErrPodAndRunningPod, ref)
	case uid == "":
		return fmt.Errorf("%w (pod %s)", ErrEmptyUID, ref)
	case o.Pod == nil && o.UpdateType != SyncPodKill:
		return fmt.Errorf("%w: %s (pod %s)", ErrRuntimePodNotKill, o.UpdateType, ref)
	case o.KillPodOptions != nil && o.UpdateType != SyncPodKill:
		return fmt.Errorf("%w: %s (pod %s)", ErrKillOptionsNotKill, o.UpdateType, ref)
	case o.KillPodOptions != nil && o.KillPodOptions.PodTerminationGracePeriodSecondsOverride != nil &&
		*o.KillPodOptions.PodTerminationGracePeriodSecondsOverride < 0:
		return fmt.Errorf("%w: %d (pod %s)", ErrNegativeGracePeriod,
			*o.KillPodOptions.PodTerminationGracePeriodSecondsOverride, ref)
	}
	return nil
}

// uid returns the UID of the update's pod.
func (o *UpdatePodOptions) uid() types.UID {
	switch {
	case o.Pod != nil:
		return o.Pod.UID
	case o.RunningPod != nil:
		return o.RunningPod.ID
	}
	return ""
}

// ref returns a namespace/name reference of the update's pod, for errors.
func (o *UpdatePodOptions) ref() string {
	switch {
	case o.Pod != nil:
		return o.Pod.Namespace + "/" + o.Pod.Name
	case o.RunningPod != nil:
		return o.RunningPod.Namespace + "/" + o.RunningPod.Name
	}
	return "<nil>"
}

// ConfigSourceAnnotationKey is the annotation naming a pod's config source; a pod whose
// source is set and is not "api" is a static pod. It equals config.ConfigSourceAnnotationKey.
const ConfigSourceAnnotationKey = podfacts.SourceAnnotationKey

// IsStaticPod reports whether pod came from a source other than the API server.
func IsStaticPod(pod *v1.Pod) bool { return podfacts.IsStatic(pod) }
