package node

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg"
)

// Runtime is what a node's container runtime implements: the view the PLEG relists
// (pleg.RuntimeService: every pod with its containers and sandboxes, and one pod's
// detailed status) and the actions the node's pod workers take. The node calls at most
// one action at a time per pod UID (the pod workers serialize them), never while holding
// a lock. Every method must be safe for concurrent use across pods.
//
// # Contexts
//
// A context the node passes bounds the call, never what the call starts: the context
// of SyncPod, KillPod, KillRuntimePod and CleanupPod ends when the call returns, and
// earlier when the call is superseded or Run ends:
//   - SyncPod's when SyncPod returns, or when the pod must stop while it runs (deleted,
//     removed from its source, killed, or terminal on the API server);
//   - KillPod's when KillPod returns, or when a second delete or an eviction shortens the
//     grace period (KillPod is then called again with the shorter period);
//   - KillRuntimePod's and CleanupPod's when the call returns;
//   - every one of them when Run ends.
//
// RemovePod, and ListPods and PodStatus when the PLEG relists or housekeeping lists, get
// Run's context, which ends when Run ends; PodStatus called to re-inspect one pod within
// its work (before a stage, after a kill) gets that work's context. After a call's
// context ended, its error is not reported (the call was superseded), and the call should
// return soon.
//
// So containers and processes that must outlive SyncPod (all of them) are started under
// the runtime's own lifetime, never under SyncPod's ctx: exec.CommandContext(ctx, ...)
// with SyncPod's ctx, the obvious way, kills every container the moment SyncPod returns.
// Keep a context of the runtime's own (one its constructor got, cancelled when the
// runtime shuts down), and stop containers only in KillPod and KillRuntimePod:
//
//	type procRuntime struct {
//		life context.Context // the runtime's lifetime, not a call's
//		// ...
//	}
//
//	func (r *procRuntime) SyncPod(ctx context.Context, pod *v1.Pod, _ *pleg.PodStatus) error {
//		// ctx bounds this call's own work (pulling an image, say); the process outlives it.
//		cmd := exec.CommandContext(r.life, "/usr/bin/app") // not ctx
//		return cmd.Start()
//	}
//
// context.WithoutCancel(ctx) keeps the call's values without its end. node/nodetest's
// Runtime follows the rule: its containers live in its in-memory runtime, whatever
// happens to the contexts of the calls that started them.
//
// The pods it is given are shared and read-only, as in the kubelet: the same objects are
// held by the node's pod manager, pod workers and status manager and by the config merge,
// and share memory with the pods the sources passed in (see Config). A Runtime that needs
// a modified pod (defaults filled in, an environment resolved) works on a DeepCopy.
type Runtime interface {
	pleg.RuntimeService

	// SyncPod makes the pod run as its spec says: the sandbox, the init containers in
	// order, then the containers (package order has the kubelet's decision, order.Init: a
	// sidecar, a restartable init container, is done once it runs or its startup probe
	// succeeded, and is restarted whenever it exits); containers that exited are restarted as the pod's
	// restartPolicy says (with a back-off), and nothing of a pod whose status the node
	// found terminal is started again. status is the runtime status the node last
	// observed (nil or empty: nothing exists yet). It is called on every sync of a pod
	// that is not terminal, so it must be idempotent. An error is retried after the pod
	// workers' back-off; the node reports it as a FailedSync. ctx ends when SyncPod
	// returns: what it starts runs under the runtime's own lifetime (see Contexts).
	//
	// For a container it did not start (or restart), SyncPod returns a *ContainerError
	// with the kubelet's reason and message (ReasonErrImagePull, ReasonCrashLoopBackOff,
	// ...; package backoff has the kubelet's back-offs and messages), several joined with
	// errors.Join, possibly wrapped or joined with other errors. The node keeps them (the
	// kubelet's reason cache) and shows each such container as Waiting with that reason
	// and message from the next sync on (the pod workers' retry), records the kubelet's
	// event instead of FailedSync (BackOff "Back-off restarting failed container ..." for
	// CrashLoopBackOff, Failed "Error: <reason>" otherwise), and drops them when a later
	// SyncPod no longer reports the container (nil drops all of the pod's; an error
	// without any ContainerError keeps them) or when the pod terminates.
	SyncPod(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus) error

	// KillPod stops every container of the pod and its sandbox, giving the containers
	// gracePeriod seconds (>= 1) as the pod-level budget (apply the container-level
	// rules of package grace: grace.ContainerStopTimeout with gracePeriod as the
	// override, at least 2 s, a preStop hook's time counted against the budget). The
	// main containers stop first, in parallel, the sidecars after them in the reverse
	// order of their declaration: package order has the kubelet's order
	// (order.Termination) and the grace each is left after waiting for its turn
	// (order.TurnBudget, order.StopGrace). It returns nil only once none runs. It is called for every pod that must stop, also
	// one that never started, and again with a shorter period after ctx was cancelled
	// because a second delete or an eviction shortened it. An error is retried.
	KillPod(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus, gracePeriod int64) error

	// KillRuntimePod stops a pod the runtime has and no source knows of (an orphan,
	// for example left by an earlier run of the agent), with a grace period of 1 s.
	// It returns nil only once nothing of it runs. An error is retried.
	KillRuntimePod(ctx context.Context, pod *pleg.Pod) error

	// CleanupPod runs once the pod's containers are stopped for good and its final
	// status is set (the kubelet's SyncTerminatedPod): release what the pod holds
	// besides running containers (volumes, cgroups, its sandbox's network). The pod's
	// stopped containers may be kept for their logs until RemovePod. An error is
	// retried; the pod object is not deleted from the API server before it succeeds.
	CleanupPod(ctx context.Context, pod *v1.Pod) error

	// RemovePod removes the leftovers (stopped containers, sandboxes, logs) of a pod
	// that no pod worker knows any more: its worker finished and was forgotten, or it
	// is a stopped runtime-only pod. Housekeeping calls it; never while anything of the
	// pod may run. An error is logged and retried at the next housekeeping.
	RemovePod(ctx context.Context, pod *pleg.Pod) error
}

// StatusPusher is implemented by a Runtime that reports status changes itself (CRI
// container events, virtual-kubelet's NotifyPods). Run calls PushStatuses once, before
// any pod is synced; the runtime hands every change to push (which caches it in the PLEG
// and sends its events at once) until ctx ends. Relisting goes on as the fallback.
// push is safe for concurrent use and must not be called after ctx ends.
type StatusPusher interface {
	PushStatuses(ctx context.Context, push func(*pleg.PodStatus))
}

// StartReporter is implemented by a Runtime that reports every pod it starts by itself,
// through its PodStatus and ListPods (the relist) or its pushes (StatusPusher), as a
// virtual-kubelet provider does (virtual-kubelet writes a pod's first status from the
// provider's, after CreatePod). When ReportsStart returns true, the node writes no
// status for a pod that has none yet (in the status manager) while its runtime status
// shows nothing of it (no container, no sandbox): the sync calls Runtime.SyncPod without
// writing a status first, unless SyncPod fails (then the status, with the failure's
// reason, is written after it). The first status is written by the sync that follows the
// runtime's report of the pod (a push or the relist that finds it): a pod the runtime
// runs at once gets one status write, Running, instead of a Pending one before the start
// and a Running one after it. Every other sync, and every sync with any other Runtime,
// writes the status first, as the kubelet does (a slow start, an image pull, shows
// Pending meanwhile). New asks ReportsStart once.
type StartReporter interface {
	ReportsStart() bool
}

// StatusGenerator is implemented by a Runtime that knows more of a pod's API status
// than its containers say (a virtual-kubelet provider reports whole statuses). The node
// first generates the status from the runtime status (GenerateAPIStatus) and then hands
// it to APIStatus, whose result is what the status manager gets. It must be
// pure and quick: it is called on every sync.
type StatusGenerator interface {
	APIStatus(pod *v1.Pod, status *pleg.PodStatus, generated v1.PodStatus, podIsTerminal bool) v1.PodStatus
}

// RuntimeFuncs adapts functions to a Runtime. A nil ListPodsFunc lists nothing, a nil
// PodStatusFunc reports an empty status, and a nil action succeeds without doing
// anything.
type RuntimeFuncs struct {
	ListPodsFunc       func(ctx context.Context, all bool) ([]*pleg.Pod, error)
	PodStatusFunc      func(ctx context.Context, uid types.UID, name, namespace string) (*pleg.PodStatus, error)
	SyncPodFunc        func(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus) error
	KillPodFunc        func(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus, gracePeriod int64) error
	KillRuntimePodFunc func(ctx context.Context, pod *pleg.Pod) error
	CleanupPodFunc     func(ctx context.Context, pod *v1.Pod) error
	RemovePodFunc      func(ctx context.Context, pod *pleg.Pod) error
}

var _ Runtime = RuntimeFuncs{}

// ListPods calls ListPodsFunc.
func (f RuntimeFuncs) ListPods(ctx context.Context, all bool) ([]*pleg.Pod, error) {
	if f.ListPodsFunc == nil {
		return nil, nil
	}
	return f.ListPodsFunc(ctx, all)
}

// PodStatus calls PodStatusFunc.
func (f RuntimeFuncs) PodStatus(ctx context.Context, uid types.UID, name, namespace string) (*pleg.PodStatus, error) {
	if f.PodStatusFunc == nil {
		return &pleg.PodStatus{ID: uid, Name: name, Namespace: namespace}, nil
	}
	return f.PodStatusFunc(ctx, uid, name, namespace)
}

// SyncPod calls SyncPodFunc.
func (f RuntimeFuncs) SyncPod(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus) error {
	if f.SyncPodFunc == nil {
		return nil
	}
	return f.SyncPodFunc(ctx, pod, status)
}

// KillPod calls KillPodFunc.
func (f RuntimeFuncs) KillPod(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus, gracePeriod int64) error {
	if f.KillPodFunc == nil {
		return nil
	}
	return f.KillPodFunc(ctx, pod, status, gracePeriod)
}

// KillRuntimePod calls KillRuntimePodFunc.
func (f RuntimeFuncs) KillRuntimePod(ctx context.Context, pod *pleg.Pod) error {
	if f.KillRuntimePodFunc == nil {
		return nil
	}
	return f.KillRuntimePodFunc(ctx, pod)
}

// CleanupPod calls CleanupPodFunc.
func (f RuntimeFuncs) CleanupPod(ctx context.Context, pod *v1.Pod) error {
	if f.CleanupPodFunc == nil {
		return nil
	}
	return f.CleanupPodFunc(ctx, pod)
}

// RemovePod calls RemovePodFunc.
func (f RuntimeFuncs) RemovePod(ctx context.Context, pod *pleg.Pod) error {
	if f.RemovePodFunc == nil {
		return nil
	}
	return f.RemovePodFunc(ctx, pod)
}
