// Package kubelet holds a verbatim copy of the kubelet's pkg/kubelet/pod_workers.go (made
// by copy-kubelet.sh, never committed) and the two files written here: shim_bench.go,
// which defines the one identifier the copy takes from another file of the kubelet's
// package, and this file, which builds the pod workers as the kubelet does and exports
// what the side-by-side W2 drives.
package kubelet

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/allocation"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
	"k8s.io/kubernetes/pkg/kubelet/util/queue"
	"k8s.io/utils/clock"
)

// The copies are made by ../../copy-kubelet.sh (run.sh runs it); without them, the build
// stops here first.
var _ = runCopyKubeletShFirst

//go:generate ../../copy-kubelet.sh

// SyncFuncs are the kubelet's podSyncer methods.
type SyncFuncs struct {
	SyncPod                   func(ctx context.Context, updateType kubetypes.SyncPodType, pod, mirrorPod *v1.Pod, podStatus *kubecontainer.PodStatus) (bool, func(), error)
	SyncTerminatingPod        func(ctx context.Context, pod *v1.Pod, podStatus *kubecontainer.PodStatus, gracePeriod *int64, podStatusFn func(*v1.PodStatus)) error
	SyncTerminatingRuntimePod func(ctx context.Context, runningPod *kubecontainer.Pod) error
	SyncTerminatedPod         func(ctx context.Context, pod *v1.Pod, podStatus *kubecontainer.PodStatus) error
}

// Workers is the kubelet's podWorkers.
type Workers struct{ p *podWorkers }

// NewWorkers builds the pod workers as kubelet.go's NewMainKubelet does: the resync
// interval of the default KubeletConfiguration (syncFrequency 1m), the kubelet's
// backOffPeriod (10 s), a BasicWorkQueue on the real clock, and the allocation manager the
// kubelet's own pod workers tests use (allocation.NewInMemoryManager). The recorder
// discards events.
func NewWorkers(logger klog.Logger, f SyncFuncs, cache kubecontainer.ROCache) *Workers {
	pw := newPodWorkers(podSyncerFuncs{
		syncPod:                   f.SyncPod,
		syncTerminatingPod:        f.SyncTerminatingPod,
		syncTerminatingRuntimePod: f.SyncTerminatingRuntimePod,
		syncTerminatedPod:         f.SyncTerminatedPod,
	}, &record.FakeRecorder{}, queue.NewBasicWorkQueue(clock.RealClock{}), time.Minute, 10*time.Second, cache,
		allocation.NewInMemoryManager(logger, nil, nil, nil, nil, nil, nil))
	return &Workers{p: pw.(*podWorkers)}
}

// UpdatePod is podWorkers.UpdatePod.
func (w *Workers) UpdatePod(ctx context.Context, o UpdatePodOptions) { w.p.UpdatePod(ctx, o) }

// SyncKnownPods is podWorkers.SyncKnownPods.
func (w *Workers) SyncKnownPods(logger klog.Logger, desired []*v1.Pod) map[types.UID]PodWorkerSync {
	return w.p.SyncKnownPods(logger, desired)
}

// Finished reports whether the pod's worker has finished (podSyncStatus.IsFinished), under
// the pod workers' lock.
func (w *Workers) Finished(uid types.UID) bool {
	w.p.podLock.Lock()
	defer w.p.podLock.Unlock()
	s, ok := w.p.podSyncStatuses[uid]
	return ok && s.IsFinished()
}

// Len is how many pods the pod workers know (podSyncStatuses).
func (w *Workers) Len() int {
	w.p.podLock.Lock()
	defer w.p.podLock.Unlock()
	return len(w.p.podSyncStatuses)
}
