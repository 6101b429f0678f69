// Package evict is the kubelet's eviction manager's local-storage part as a runner on top
// of a podlife node: every Period (the kubelet's eviction monitoring interval, 10 s) it
// lists the node's active pods, reads each one's ephemeral-storage use, and evicts each pod
// eviction.LocalStorageEviction says is over a limit (an emptyDir over its sizeLimit, the
// pod over its ephemeral-storage limit, a container over its own), as the kubelet's
// localStorageEviction and evictPod do:
//
//   - it records the Warning event Evicted with the kubelet's message (Config.Recorder);
//   - it kills the pod at once through node.Node.KillPod: grace
//     eviction.ImmediateGracePeriodSeconds (1 s), the eviction mark, and the status
//     eviction.EvictedStatus (phase Failed, reason Evicted, the message; no
//     DisruptionTarget condition for a limit eviction), which the API server gets before
//     the pod's final delete. KillPod waits until the pod's containers are stopped, so a
//     round evicts its pods one after the other, and the next round starts Period after
//     the last one ended (the kubelet waits the same way).
//
// Critical pods are never evicted. Node pressure (thresholds on the node's free memory or
// disk, RankMemoryPressure, RankDiskPressure) is not covered: it needs the node's own
// stats.
//
// With examples/cri:
//
//	ev, err := evict.New(evict.Config{
//		Node:       n, // *node.Node
//		ActivePods: evict.RuntimePods(n, rt),
//		Stats:      rt.PodStats, // *cri.Runtime
//		Recorder:   recorder,
//	})
//	...
//	go ev.Run(ctx)
package evict

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/eviction"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

// Defaults of Config.
const (
	// DefaultPeriod is the kubelet's eviction monitoring interval.
	DefaultPeriod = 10 * time.Second
	// DefaultKillTimeout is how long an eviction waits for KillPod at most: the
	// kubelet's killPodNow waits 1.5 times the grace period, at least 10 s.
	DefaultKillTimeout = 10 * time.Second
)

// ErrInvalidConfig is wrapped by New's error for a bad Config.
var ErrInvalidConfig = errors.New("evict: invalid config")

// Killer kills a pod on the node's decision: node.Node's KillPod.
type Killer interface {
	KillPod(ctx context.Context, uid types.UID, opts node.KillPodOptions) error
}

var _ Killer = (*node.Node)(nil)

// Config configures an Evictor.
type Config struct {
	// Node kills the pods to evict (a *node.Node). Required.
	Node Killer
	// ActivePods returns the node's active pods (the kubelet's GetActivePods): the pods
	// to check, read-only (see RuntimePods). Required.
	ActivePods func(context.Context) ([]*v1.Pod, error)
	// Stats returns a pod's ephemeral-storage use (cri.Runtime.PodStats). Required. A pod
	// whose stats fail is skipped this round.
	Stats func(context.Context, *v1.Pod) (eviction.PodStats, error)
	// DedicatedImageFs: the containers' writable layers are on a filesystem of their own
	// (the image filesystem), and do not count against a container's limit.
	DedicatedImageFs bool
	// Period is the time between rounds; 0 means DefaultPeriod.
	Period time.Duration
	// KillTimeout bounds the wait for each KillPod; 0 means DefaultKillTimeout. The kill
	// goes on after it.
	KillTimeout time.Duration
	// Clock is the time source of the period; nil means the real clock.
	Clock clock.Clock
	// Recorder, if set, gets the Warning event Evicted of each eviction.
	Recorder node.EventRecorder
	// Logger; nil discards.
	Logger *slog.Logger
}

// Evictor evicts the pods over their local-storage limits. Create it with New and run it
// with Run.
type Evictor struct {
	cfg Config
	clk clock.Clock
	log *slog.Logger
}

// New validates cfg and returns its Evictor.
func New(cfg Config) (*Evictor, error) {
	switch {
	case cfg.Node == nil:
		return nil, fmt.Errorf("%w: Node is required", ErrInvalidConfig)
	case cfg.ActivePods == nil:
		return nil, fmt.Errorf("%w: ActivePods is required", ErrInvalidConfig)
	case cfg.Stats == nil:
		return nil, fmt.Errorf("%w: Stats is required", ErrInvalidConfig)
	case cfg.Period < 0 || cfg.KillTimeout < 0:
		return nil, fmt.Errorf("%w: negative duration", ErrInvalidConfig)
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.KillTimeout == 0 {
		cfg.KillTimeout = DefaultKillTimeout
	}
	e := &Evictor{cfg: cfg, clk: cfg.Clock, log: cfg.Logger}
	if e.clk == nil {
		e.clk = clock.RealClock{}
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	return e, nil
}

// Run runs a round (Synchronize) now and then Period after each round ended, until ctx
// ends; it then returns nil.
func (e *Evictor) Run(ctx context.Context) error {
	for {
		e.Synchronize(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-e.clk.After(e.cfg.Period):
		}
	}
}

// Synchronize is one round: it evicts every active pod over a local-storage limit, one
// after the other, and returns them (those whose KillPod failed too: the kubelet counts
// them as evicted, and logs the error).
func (e *Evictor) Synchronize(ctx context.Context) []*v1.Pod {
	pods, err := e.cfg.ActivePods(ctx)
	if err != nil {
		e.log.ErrorContext(ctx, "eviction: listing the active pods failed", "err", err)
		return nil
	}
	var evicted []*v1.Pod
	for _, pod := range pods {
		if ctx.Err() != nil {
			break
		}
		if pod == nil {
			continue
		}
		stats, err := e.cfg.Stats(ctx, pod)
		if err != nil {
			e.log.ErrorContext(ctx, "eviction: reading the pod's stats failed", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID, "err", err)
			continue
		}
		msg, ok := eviction.LocalStorageEviction(pod, stats, e.cfg.DedicatedImageFs)
		if !ok {
			continue
		}
		e.evict(ctx, pod, msg)
		evicted = append(evicted, pod)
	}
	return evicted
}

// evict is the kubelet's evictPod: the event, then the kill with grace 1 and the evicted
// status, waited for.
func (e *Evictor) evict(ctx context.Context, pod *v1.Pod, msg string) {
	if e.cfg.Recorder != nil {
		e.cfg.Recorder.Event(pod, v1.EventTypeWarning, eviction.Reason, msg)
	}
	e.log.InfoContext(ctx, "eviction: evicting pod", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID, "message", msg)
	grace := eviction.ImmediateGracePeriodSeconds
	kctx, cancel := context.WithTimeout(ctx, e.cfg.KillTimeout)
	defer cancel()
	err := e.cfg.Node.KillPod(kctx, pod.UID, node.KillPodOptions{GracePeriodOverride: &grace,
		Status: eviction.EvictedStatus(pod, msg, false), Evict: true})
	if err != nil {
		e.log.ErrorContext(ctx, "eviction: pod failed to evict", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID, "err", err)
		return
	}
	e.log.InfoContext(ctx, "eviction: pod is evicted", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID)
}

// PodLister lists the runtime's pods: node.Runtime's ListPods.
type PodLister interface {
	ListPods(ctx context.Context, all bool) ([]*pleg.Pod, error)
}

// RuntimePods is an ActivePods for a node without a list of its own: the pods the runtime
// has something running of (rt.ListPods with all false) that the node desires (n.Pod)
// and that are active as the kubelet's isPodInactive says: not known to the pod workers
// as terminated, and not terminal (in the source or the status manager) unless their
// termination was requested. A pod with nothing running uses storage too, but it is
// terminated or about to be, and an eviction would not free anything.
func RuntimePods(n *node.Node, rt PodLister) func(context.Context) ([]*v1.Pod, error) {
	return func(ctx context.Context) ([]*v1.Pod, error) {
		running, err := rt.ListPods(ctx, false)
		if err != nil {
			return nil, fmt.Errorf("evict: listing the runtime's pods: %w", err)
		}
		var pods []*v1.Pod
		for _, rp := range running {
			p, ok := n.Pod(rp.ID)
			if !ok || n.Workers().IsPodKnownTerminated(p.UID) {
				continue
			}
			if terminal(n, p) && !n.Workers().IsPodTerminationRequested(p.UID) {
				continue
			}
			pods = append(pods, p)
		}
		return pods, nil
	}
}

// terminal: the pod's phase is terminal in its source or in the node's status manager.
func terminal(n *node.Node, p *v1.Pod) bool {
	if p.Status.Phase == v1.PodFailed || p.Status.Phase == v1.PodSucceeded {
		return true
	}
	s, ok := n.Status().PodStatusView(p.UID)
	return ok && (s.Phase == v1.PodFailed || s.Phase == v1.PodSucceeded)
}
