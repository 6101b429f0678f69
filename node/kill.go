package node

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/admission"
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
	// ErrNotAdmitting is Preempt's error when its context is not an admit handler's of
	// a node's loop (or the handler returned).
	ErrNotAdmitting = errors.New("node: Preempt called outside a node's admit handler")
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
	// done is the kill's completion (podworker.KillPodOptions.Completion).
	done *podworker.Completion
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
// a status function (the pod's worker calls them), nor a metrics hook. From an admit
// handler of Config.Admit, pass the handler's ctx: the kill then skips the loop (which
// waits for the handler) and KillPod blocks the loop until the containers are stopped,
// as the kubelet's preemption does (see Preempt).
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
	req := &killRequest{uid: uid, opts: opts, done: podworker.NewCompletion(), reply: make(chan error, 1)}
	if n.inLoopCall(ctx) {
		// Called from code the loop waits for (an admit handler): the loop cannot take
		// the request, and need not, as nothing else runs on it meanwhile. The kill goes
		// to the pod workers at once, as the kubelet's killPodNow from its sync loop.
		n.handleKill(req)
		if err := <-req.reply; err != nil {
			return nil, err
		}
		return req.done.Done(), nil
	}
	select {
	case n.kills <- req:
	case <-n.ended:
		return nil, fmt.Errorf("%w: pod %s not killed", ErrStopped, uid)
	case <-ctx.Done():
		return nil, fmt.Errorf("node: kill of pod %s not requested: %w", uid, ctx.Err())
	}
	if err := <-req.reply; err != nil { // the loop answers at once
		return nil, err
	}
	return req.done.Done(), nil
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
	ko := &podworker.KillPodOptions{Completion: req.done, Evict: req.opts.Evict,
		PodStatusFunc: req.opts.Status, PodTerminationGracePeriodSecondsOverride: req.opts.GracePeriodOverride}
	err := n.workers.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, Pod: p,
		MirrorPod: n.mirrorOf(p), KillPodOptions: ko})
	if err != nil {
		err = fmt.Errorf("node: killing %s/%s: %w", p.Namespace, p.Name, err)
	}
	req.reply <- err
}

// loopCall marks the context the loop passes to the code it calls and waits for (the
// admit handlers) for as long as it waits: KillPod given it hands the kill to the pod
// workers itself instead of through the loop.
type loopCall struct {
	n      *Node
	active atomic.Bool
}

type loopCallKey struct{}

// withLoopCall returns ctx marked as the loop's call, and the func that ends the mark
// (call it before the loop goes on).
func (n *Node) withLoopCall(ctx context.Context) (context.Context, func()) {
	lc := &loopCall{n: n}
	lc.active.Store(true)
	return context.WithValue(ctx, loopCallKey{}, lc), func() { lc.active.Store(false) }
}

// inLoopCall reports whether ctx marks a call of this node's loop that the loop still
// waits for.
func (n *Node) inLoopCall(ctx context.Context) bool {
	lc, ok := ctx.Value(loopCallKey{}).(*loopCall)
	return ok && lc.n == n && lc.active.Load()
}

// The kubelet's killPodNow timeout and event (pod_workers.go).
const (
	// ReasonExceededGracePeriod is the Warning event Preempt records when the pod's
	// containers did not stop in time.
	ReasonExceededGracePeriod = "ExceededGracePeriod"
	// ReasonPreempting is the Warning event Preempt records for each pod it kills
	// (admission.ReasonPreempting).
	ReasonPreempting = admission.ReasonPreempting
	minKillTimeout   = 10 * time.Second
)

// Preempt is the kill of the kubelet's critical-pod preemption as an
// admission.KillFunc, for admission.CriticalPodPreemption in Config.Admit:
//
//	Admit: []admission.Handler{admission.PredicateHandler(admission.PredicateConfig{
//		Node: getNode, OnFailure: admission.CriticalPodPreemption(node.Preempt, nil)})}
//
// It kills the pod through the node whose loop called the admit handler (ctx is the
// handler's, which names that node) with KillPod: evicted, no grace-period override,
// status (admission.PreemptedStatus) applied, a Warning event ReasonPreempting with
// admission.MessagePreempted recorded first. As the kubelet's killPodNow, it waits
// until the pod's containers are stopped, at most 1.5 times the pod's
// spec.terminationGracePeriodSeconds and at least 10 s on the node's clock; past that it
// records a Warning event ReasonExceededGracePeriod and returns an error wrapping
// ErrKillPending (the kill goes on, the critical pod is admitted). The loop waits
// meanwhile, as the kubelet's sync loop does. Called with any other context it fails
// with ErrNotAdmitting and kills nothing.
func Preempt(ctx context.Context, pod *v1.Pod, status func(*v1.PodStatus)) error {
	lc, ok := ctx.Value(loopCallKey{}).(*loopCall)
	if !ok || !lc.active.Load() {
		return ErrNotAdmitting
	}
	if pod == nil {
		return ErrEmptyUID
	}
	n := lc.n
	n.recordEvent(pod, v1.EventTypeWarning, ReasonPreempting, "%s", admission.MessagePreempted)
	n.log.DebugContext(ctx, "preempting pod to free up resources", podKeys(pod, "")...)
	done, err := n.requestKill(ctx, pod.UID, KillPodOptions{Status: status, Evict: true})
	if err != nil {
		return err
	}
	var grace int64
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	timeout := max(time.Duration(grace+grace/2)*time.Second, minKillTimeout)
	timer := n.clock.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-done:
		return nil
	case <-timer.C():
		n.recordEvent(pod, v1.EventTypeWarning, ReasonExceededGracePeriod, "Container runtime did not kill the pod within specified grace period.")
		return fmt.Errorf("%w: pod %s: timeout waiting to kill pod after %v", ErrKillPending, pod.UID, timeout)
	case <-n.ended:
		return fmt.Errorf("%w: pod %s may still run", ErrStopped, pod.UID)
	case <-ctx.Done():
		return fmt.Errorf("%w: pod %s: %w", ErrKillPending, pod.UID, ctx.Err())
	}
}
