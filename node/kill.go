package node

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podworker"
)

// Errors of KillPod (and Shutdown).
var (
	// ErrUnknownPod is wrapped by KillPod's error for a UID no source lists (a mirror
	// pod's UID included: kill its static pod by its own UID).
	ErrUnknownPod = errors.New("node: no such pod")
	// ErrEmptyUID is wrapped by KillPod's error for an empty UID.
	ErrEmptyUID = errors.New("node: empty pod UID")
	// ErrKillPending is wrapped (with the context's error) by KillPod's error when its
	// context ended after the kill was requested and before the pod's containers were
	// stopped: the kill goes on.
	ErrKillPending = errors.New("node: the pod is still being killed")
)

// KillPodOptions are the options of KillPod: the kubelet's killPodNow arguments.
type KillPodOptions struct {
	// GracePeriodOverride, if set, is the grace period in seconds to kill the pod with;
	// it may only shorten the period in force (grace.Effective: a deletion's grace, an
	// earlier kill's override, else spec.terminationGracePeriodSeconds), never lengthen
	// it, and it is at least 1. Negative is invalid.
	GracePeriodOverride *int64
	// Status, if set, changes the pod's status as the kill ends it (the kubelet's
	// PodStatusFunc): SyncTerminatingPod calls it on the status it generates before the
	// containers are stopped and on the one after, and hands the result to the status
	// manager; the final status keeps its terminal phase, reason, message and
	// DisruptionTarget condition, which the API server gets before the pod's final
	// delete. The latest KillPod's Status of a pod wins. See the package documentation
	// for what it may set.
	Status func(*v1.PodStatus)
	// Evict marks the pod as evicted (podworker.KillPodOptions.Evict), as the kubelet's
	// eviction manager and critical-pod preemption do; graceful node shutdown does not.
	Evict bool
}

// killRequest is one KillPod call for the loop.
type killRequest struct {
	uid  types.UID
	opts KillPodOptions
	// done is the kill's completion channel (podworker.KillPodOptions.CompletedCh).
	done chan struct{}
	// reply gets the loop's answer: nil once the pod workers took the kill.
	reply chan error
}

// KillPod kills the pod with the UID now (the kubelet's killPodNow, the one entry point
// of evictions, node shutdown and preemption): the pod's worker stops it with
// opts.GracePeriodOverride (see KillPodOptions) and writes the statuses opts.Status
// changes. The pod is never started again, even while a source still lists it (its UID
// stays known to the pod workers as terminated); its object is deleted from the API
// server only once the API server deletes it gracefully (deletionTimestamp), as the
// kubelet's. The request goes through the loop, in order with config updates and PLEG
// events. KillPod returns nil once the pod's containers are stopped (at once if they
// already are), or an error wrapping
//   - ErrEmptyUID for an empty UID, ErrUnknownPod for a UID no source lists;
//   - podworker.ErrNegativeGracePeriod for a negative GracePeriodOverride;
//   - ErrStopped once Run has returned (or returns while KillPod waits);
//   - ctx's error, when ctx ends before the loop took the request (nothing was asked),
//     and ErrKillPending with it when ctx ends after (the kill goes on).
//
// The kubelet's killPodNow gives up waiting after 1.5 times the grace period (at least
// 10 s); give ctx a deadline to do the same. KillPod may be called from any goroutine,
// also before Run (it then waits for Run), but not from the goroutines it waits for:
// not from OnEvent (the loop calls it), a Runtime method, StatusGenerator or
// a status function (the pod's worker calls them), nor a metrics hook.
//
// An admit handler of Config.Admit (critical-pod preemption: admission.CriticalPodPreemption
// with a KillFunc calling KillPod) calls it with the context the handler got: the kill is
// then handed to the pod workers on the loop's goroutine, and the loop waits until the
// victim's containers are stopped before it admits the next pod, as the kubelet's sync
// loop waits in killPodNow. The node is not known when Config is built: the KillFunc reads
// a variable set to New's result (no pod is admitted before Run).
func (n *Node) KillPod(ctx context.Context, uid types.UID, opts KillPodOptions) error {
	done, err := n.requestKill(ctx, uid, opts)
	if err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-n.ended:
		select {
		case <-done:
			return nil
		default:
		}
		return fmt.Errorf("%w: pod %s may still run", ErrStopped, uid)
	case <-ctx.Done():
		return fmt.Errorf("%w: pod %s: %w", ErrKillPending, uid, ctx.Err())
	}
}

// requestKill has the loop hand the kill to the pod's worker and returns the channel
// closed once the pod's containers are stopped.
func (n *Node) requestKill(ctx context.Context, uid types.UID, opts KillPodOptions) (<-chan struct{}, error) {
	if uid == "" {
		return nil, ErrEmptyUID
	}
	if g := opts.GracePeriodOverride; g != nil && *g < 0 {
		return nil, fmt.Errorf("%w: %d (pod %s)", podworker.ErrNegativeGracePeriod, *g, uid)
	}
	req := &killRequest{uid: uid, opts: opts, done: make(chan struct{}), reply: make(chan error, 1)}
	if ctx.Value(loopKey{}) == n {
		// An admit handler on the loop (critical-pod preemption): the loop cannot take
		// the request, so it is handed to the pod workers here, on the loop goroutine.
		n.handleKill(req)
	} else {
		select {
		case n.kills <- req:
		case <-n.ended:
			return nil, fmt.Errorf("%w: pod %s not killed", ErrStopped, uid)
		case <-ctx.Done():
			return nil, fmt.Errorf("node: kill of pod %s not requested: %w", uid, ctx.Err())
		}
	}
	if err := <-req.reply; err != nil { // the loop answers at once
		return nil, err
	}
	return req.done, nil
}

// handleKill is the loop's part of KillPod: it hands the kill of a desired pod to its
// worker.
func (n *Node) handleKill(req *killRequest) {
	p, ok := n.pods.GetPodByUID(req.uid)
	if !ok {
		req.reply <- fmt.Errorf("%w: %s", ErrUnknownPod, req.uid)
		return
	}
	if n.observed() {
		msg := "KillPod requested"
		if g := req.opts.GracePeriodOverride; g != nil {
			msg = fmt.Sprintf("KillPod requested (grace override %ds)", *g)
		}
		n.emit(Event{Kind: EventWork, Pod: p, Reason: ReasonKilling, Message: msg})
	}
	ko := &podworker.KillPodOptions{CompletedCh: req.done, Evict: req.opts.Evict,
		PodStatusFunc: req.opts.Status, PodTerminationGracePeriodSecondsOverride: req.opts.GracePeriodOverride}
	err := n.workers.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, Pod: p,
		MirrorPod: n.mirrorOf(p), KillPodOptions: ko})
	if err != nil {
		err = fmt.Errorf("node: killing %s/%s: %w", p.Namespace, p.Name, err)
	}
	req.reply <- err
}
