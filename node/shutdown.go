package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Graceful node shutdown: the kubelet's nodeshutdown manager (nodeshutdown_manager.go,
// 1.37) without its systemd inhibitor lock, which is the caller's.
const (
	// SystemCriticalPriority is the priority from which a pod is critical
	// (scheduling.SystemCriticalPriority): system-cluster-critical and
	// system-node-critical pods. ShutdownConfig.GracePeriodCriticalPods is theirs.
	SystemCriticalPriority int32 = 2_000_000_000
	// ShutdownReason and ShutdownMessage are the status.reason and status.message of a
	// pod ended by a graceful node shutdown (and ShutdownMessage its DisruptionTarget
	// condition's message).
	ShutdownReason  = "Terminated"
	ShutdownMessage = "Pod was terminated in response to imminent node shutdown."
)

// ErrInvalidShutdown is wrapped by ShutdownPlan's and Shutdown's errors for an invalid
// ShutdownConfig.
var ErrInvalidShutdown = errors.New("node: invalid shutdown config")

// ShutdownGracePeriodByPodPriority is the shutdown grace period of the pods from a
// priority on (the kubelet's ShutdownGracePeriodByPodPriority): each pod belongs to the
// group with the highest Priority not above its own (the lowest group when none is).
type ShutdownGracePeriodByPodPriority struct {
	Priority                   int32
	ShutdownGracePeriodSeconds int64
}

// ShutdownConfig is the kubelet's graceful node shutdown configuration. Either
// GracePeriod (with GracePeriodCriticalPods) or ByPodPriority is set; the zero value
// shuts nothing down (the kubelet's feature disabled).
type ShutdownConfig struct {
	// GracePeriod is the whole shutdown's duration (shutdownGracePeriod, whole seconds,
	// 0 or at least 1 s); GracePeriodCriticalPods (shutdownGracePeriodCriticalPods, at
	// most GracePeriod) is the last part of it, reserved for critical pods (priority
	// SystemCriticalPriority and above): other pods get GracePeriod -
	// GracePeriodCriticalPods first.
	GracePeriod             time.Duration
	GracePeriodCriticalPods time.Duration
	// ByPodPriority (shutdownGracePeriodByPodPriority) gives each priority range its
	// own period instead; the groups are shut down from the lowest priority to the
	// highest. Periods may not be negative.
	ByPodPriority []ShutdownGracePeriodByPodPriority
}

// ShutdownGroup is one step of a shutdown: its pods are killed together, and the next
// group starts once they are stopped or ShutdownGracePeriodSeconds has passed.
type ShutdownGroup struct {
	ShutdownGracePeriodByPodPriority
	Pods []ShutdownPod
}

// ShutdownPod is a pod of a ShutdownGroup and the grace period it is killed with: the
// group's, or the pod's spec.terminationGracePeriodSeconds when that is not longer.
type ShutdownPod struct {
	Pod                *v1.Pod
	GracePeriodSeconds int64
}

// ShutdownPeriods returns the priority groups of cfg, sorted by priority, lowest first
// (the kubelet's newPodManager): ByPodPriority, or GracePeriod and
// GracePeriodCriticalPods migrated to two groups, priority 0 with GracePeriod -
// GracePeriodCriticalPods and SystemCriticalPriority with GracePeriodCriticalPods
// (migrateConfig). A zero cfg has none. Invalid settings (the kubelet's configuration
// validation) give an error wrapping ErrInvalidShutdown.
func ShutdownPeriods(cfg ShutdownConfig) ([]ShutdownGracePeriodByPodPriority, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidShutdown}, args...)...)
	}
	total, critical := cfg.GracePeriod, cfg.GracePeriodCriticalPods
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"GracePeriod", total}, {"GracePeriodCriticalPods", critical}} {
		if d.v < 0 || (d.v > 0 && d.v < time.Second) {
			return nil, bad("%s %v must be either zero or otherwise >= 1 sec", d.name, d.v)
		}
	}
	if critical > total {
		return nil, bad("GracePeriodCriticalPods %v must be <= GracePeriod %v", critical, total)
	}
	if len(cfg.ByPodPriority) > 0 {
		if total > 0 || critical > 0 {
			return nil, bad("ByPodPriority and GracePeriod cannot both be set")
		}
		for _, p := range cfg.ByPodPriority {
			if p.ShutdownGracePeriodSeconds < 0 {
				return nil, bad("priority %d: ShutdownGracePeriodSeconds %d is negative", p.Priority, p.ShutdownGracePeriodSeconds)
			}
		}
		periods := slices.Clone(cfg.ByPodPriority)
		slices.SortStableFunc(periods, func(a, b ShutdownGracePeriodByPodPriority) int { return cmp.Compare(a.Priority, b.Priority) })
		return periods, nil
	}
	if total == 0 {
		return nil, nil
	}
	return []ShutdownGracePeriodByPodPriority{
		{Priority: 0, ShutdownGracePeriodSeconds: int64((total - critical) / time.Second)},
		{Priority: SystemCriticalPriority, ShutdownGracePeriodSeconds: int64(critical / time.Second)},
	}, nil
}

// ShutdownPlan groups pods as the kubelet's graceful node shutdown kills them
// (groupByPriority): one group per period of ShutdownPeriods(cfg), lowest priority
// first, every group listed even when no pod falls in it (Shutdown skips those). A pod
// (priority spec.priority, 0 when unset) goes to the group with the highest priority not
// above its own, to the lowest group when its priority is below every group's; the pods
// keep their order within a group. Each is killed with the group's period, or its
// spec.terminationGracePeriodSeconds when that is not longer. nil pods are skipped; pods
// is not modified.
func ShutdownPlan(pods []*v1.Pod, cfg ShutdownConfig) ([]ShutdownGroup, error) {
	periods, err := ShutdownPeriods(cfg)
	if err != nil || len(periods) == 0 {
		return nil, err
	}
	groups := make([]ShutdownGroup, len(periods))
	for i, p := range periods {
		groups[i].ShutdownGracePeriodByPodPriority = p
	}
	for _, pod := range pods {
		if pod == nil {
			continue
		}
		var priority int32
		if pod.Spec.Priority != nil {
			priority = *pod.Spec.Priority
		}
		// The last group whose priority is not above the pod's; the first if none.
		i, _ := slices.BinarySearchFunc(groups, priority, func(g ShutdownGroup, p int32) int {
			if g.Priority <= p {
				return -1
			}
			return 1
		})
		i = max(i-1, 0)
		g := &groups[i]
		grace := g.ShutdownGracePeriodSeconds
		if t := pod.Spec.TerminationGracePeriodSeconds; t != nil && *t <= grace {
			grace = *t
		}
		g.Pods = append(g.Pods, ShutdownPod{Pod: pod, GracePeriodSeconds: grace})
	}
	return groups, nil
}

// ShutdownStatus returns the status function of a pod ended by a graceful node shutdown
// (the kubelet's): phase Failed (unless the status is Succeeded), reason ShutdownReason,
// message ShutdownMessage and the DisruptionTarget condition with reason
// TerminationByKubelet. pod gives the condition's observedGeneration (0 when nil).
func ShutdownStatus(pod *v1.Pod) func(*v1.PodStatus) {
	var generation int64
	if pod != nil {
		generation = pod.Generation
	}
	return func(s *v1.PodStatus) {
		if s == nil {
			return
		}
		if s.Phase != v1.PodSucceeded {
			s.Phase = v1.PodFailed
		}
		s.Reason, s.Message = ShutdownReason, ShutdownMessage
		SetDisruptionTarget(s, DisruptionReasonTerminationByKubelet, ShutdownMessage, generation)
	}
}

// Shutdown ends every active pod as the kubelet's graceful node shutdown does
// (processShutdownEvent): the pods the sources list that are neither terminated nor
// terminal (oldest first), grouped by ShutdownPlan(cfg), are killed group after group
// through KillPod with their grace period and ShutdownStatus; the next group starts
// once every pod of the group is stopped or the group's period has passed on the node's
// clock, whichever comes first (a kill still going on goes on). Pods added meanwhile
// are not killed: from Shutdown's start on (unless cfg is zero), new pods are refused
// (ReasonNodeShutdown), for the rest of the node's life. It returns nil once the last group is done, or an error wrapping
// ErrInvalidShutdown, ErrStopped (Run returned) or ctx's error. Kills that fail (a pod
// removed meanwhile) are logged and skipped. Call it from any goroutine but those
// KillPod waits for, while Run runs; the node keeps running afterwards (end Run's
// context to stop it).
func (n *Node) Shutdown(ctx context.Context, cfg ShutdownConfig) error {
	groups, err := ShutdownPlan(n.activePodsOldestFirst(), cfg)
	if err != nil {
		return err
	}
	if len(groups) > 0 {
		n.shuttingDown.Store(true) // new pods are refused from now on
	}
	n.log.InfoContext(ctx, "graceful node shutdown: killing pods by priority", "groups", len(groups))
	for _, g := range groups {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("node: shutdown: %w", err)
		}
		if len(g.Pods) == 0 {
			continue // no wait for an empty group
		}
		if err := n.shutdownGroup(ctx, g); err != nil {
			return err
		}
	}
	n.log.InfoContext(ctx, "graceful node shutdown: done")
	return nil
}

// shutdownGroup kills the pods of g and waits until they are stopped or g's period ends.
func (n *Node) shutdownGroup(ctx context.Context, g ShutdownGroup) error {
	var waits []<-chan struct{}
	for _, sp := range g.Pods {
		grace := sp.GracePeriodSeconds
		n.log.InfoContext(ctx, "graceful node shutdown: killing pod", append(podKeys(sp.Pod, ""), "gracePeriod", grace)...)
		done, err := n.requestKill(ctx, sp.Pod.UID, KillPodOptions{GracePeriodOverride: &grace, Status: ShutdownStatus(sp.Pod)})
		switch {
		case errors.Is(err, ErrStopped):
			return err
		case err != nil && ctx.Err() != nil:
			return fmt.Errorf("node: shutdown: %w", ctx.Err())
		case err != nil:
			n.log.InfoContext(ctx, "graceful node shutdown: killing pod failed", append(podKeys(sp.Pod, ""), "err", err)...)
			continue
		}
		waits = append(waits, done)
	}
	timer := n.clock.NewTimer(time.Duration(g.ShutdownGracePeriodSeconds) * time.Second)
	defer timer.Stop()
	for _, done := range waits {
		select {
		case <-done:
		case <-timer.C():
			n.log.InfoContext(ctx, "graceful node shutdown: pod killing timed out", "gracePeriod", g.ShutdownGracePeriodSeconds, "priority", g.Priority)
			return nil
		case <-n.ended:
			return fmt.Errorf("%w: shutdown interrupted", ErrStopped)
		case <-ctx.Done():
			return fmt.Errorf("node: shutdown: %w", ctx.Err())
		}
	}
	n.log.InfoContext(ctx, "graceful node shutdown: every pod of the group stopped", "gracePeriod", g.ShutdownGracePeriodSeconds, "priority", g.Priority)
	return nil
}

// activePodsOldestFirst are the active pods (see activePods), oldest first.
func (n *Node) activePodsOldestFirst() []*v1.Pod {
	active := n.activePods()
	slices.SortStableFunc(active, func(a, b *v1.Pod) int {
		if c := olderFirst(a, b); c != 0 {
			return c
		}
		return cmp.Compare(a.UID, b.UID)
	})
	return active
}
