package node

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/internal/podfacts"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/podworker"
)

// syncer is the node's PodSyncer (the kubelet's SyncPod, SyncTerminatingPod,
// SyncTerminatingRuntimePod and SyncTerminatedPod): it writes each stage's status to the
// status manager and has the Runtime act. The pod workers call it, one call per pod at a
// time, outside their lock.
type syncer Node

var _ podworker.PodSyncer = (*syncer)(nil)

// SyncPod writes the pod's status from its runtime status and, unless that status is
// terminal, has the runtime start or update the pod (status first, as the kubelet; with
// a StartReporter, a pod's first status once the runtime reports it: see StartReporter). With
// a Prober, the pod's probes are added and given its containers' instances first, and
// the containers whose liveness or startup probe failed are killed before
// Runtime.SyncPod, which gets the status inspected after the kills.
func (s *syncer) SyncPod(ctx context.Context, ut podworker.SyncPodType, pod, _ *v1.Pod, rs *pleg.PodStatus) (bool, error) {
	n := (*Node)(s)
	if n.observed() {
		n.emit(Event{Kind: EventWork, Pod: pod, Reason: ReasonSyncPod, Message: fmt.Sprintf("SyncPod (%s), %d running container(s)", ut, rs.RunningContainers())})
	}
	n.setProbes(pod, rs)
	st := n.generate(pod, rs, false)
	terminal := podfacts.IsTerminalPhase(st.Phase)
	// later: the pod's first status waits for the runtime's report of its start
	// (StartReporter); it is written now only if SyncPod fails.
	later := !terminal && n.reportsStart && !reported(rs) && !n.hasStatus(pod.UID)
	if !later {
		if err := n.setStatus(pod, st, true); err != nil {
			return false, err
		}
		n.scheduleDeadline(pod, &st)
	}
	if terminal {
		if n.observed() {
			n.emit(Event{Kind: EventWork, Pod: pod, Reason: ReasonSyncPod, Message: fmt.Sprintf("SyncPod: pod is terminal (%s)", st.Phase)})
		}
		return true, nil
	}
	if err := n.ensureMirrorPod(ctx, pod); err != nil {
		// The kubelet logs this and goes on: the pod runs without its mirror pod.
		n.emit(Event{Kind: EventError, Pod: pod, Reason: ReasonFailedSync, Err: err})
	}
	rs, err := n.killUnhealthy(ctx, pod, rs)
	if err != nil {
		return false, err
	}
	err = n.runtime.SyncPod(ctx, pod, rs)
	if err != nil && ctx.Err() != nil {
		// Cancelled: the error says nothing about the containers.
		return false, fmt.Errorf("node: syncing %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	n.reasons.update(pod.UID, err)
	if later && err != nil {
		if err := n.setStatus(pod, st, true); err != nil {
			return false, err
		}
		n.scheduleDeadline(pod, &st)
	}
	if err != nil {
		n.emit(Event{Kind: EventError, Pod: pod, Reason: ReasonFailedSync, Err: err})
		n.recordSyncFailure(pod, err) // the pod workers log it, once
		return false, fmt.Errorf("node: syncing %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return false, nil
}

// hasStatus reports whether the status manager holds a status of the pod.
func (n *Node) hasStatus(uid types.UID) bool {
	_, ok := n.status.PodStatusView(uid)
	return ok
}

// reported reports whether a runtime status shows anything of the pod (a container or a
// sandbox).
func reported(rs *pleg.PodStatus) bool {
	return rs != nil && (len(rs.ContainerStatuses) > 0 || len(rs.SandboxStatuses) > 0)
}

// recordSyncFailure records the kubelet's events for a failed SyncPod: for each
// ContainerError the kuberuntime's (BackOff "Back-off restarting failed container ..."
// for CrashLoopBackOff, Failed "Error: <reason>" otherwise), or FailedSync when the
// error carries none.
func (n *Node) recordSyncFailure(pod *v1.Pod, err error) {
	ces := ContainerErrors(err)
	if len(ces) == 0 {
		n.recordEvent(pod, v1.EventTypeWarning, ReasonFailedSync, "error syncing pod: %v", err)
		return
	}
	for _, ce := range ces {
		if ce.Reason == ReasonCrashLoopBackOff {
			n.recordEvent(pod, v1.EventTypeWarning, ReasonBackOff, "Back-off restarting failed container %s in pod %s",
				ce.Container, formatPod(pod))
			continue
		}
		n.recordEvent(pod, v1.EventTypeWarning, ReasonFailed, "Error: %s", ce.Reason)
	}
}

// formatPod is the kubelet's format.Pod: "name_namespace(uid)".
func formatPod(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// SyncTerminatingPod writes the terminating status, has the runtime stop every container
// within the grace period, and writes the stopped status once nothing runs.
func (s *syncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, rs *pleg.PodStatus, gracePeriod int64, fn func(*v1.PodStatus)) error {
	n := (*Node)(s)
	if n.probes != nil {
		n.probes.StopLivenessAndStartup(pod.UID) // no probe restarts a container of it any more
	}
	n.reasons.forget(pod.UID)
	st := withStatusFunc(n.generate(pod, rs, false), fn)
	if n.observed() {
		n.emit(Event{Kind: EventWork, Pod: pod, Reason: ReasonKilling,
			Message: fmt.Sprintf("SyncTerminatingPod (grace %ds), %d running container(s)", gracePeriod, rs.RunningContainers())})
	}
	if err := n.setStatus(pod, st, fn == nil); err != nil {
		return err
	}
	n.recordKilling(pod, rs)
	if err := n.runtime.KillPod(ctx, pod, rs, gracePeriod); err != nil {
		if ctx.Err() == nil {
			n.emit(Event{Kind: EventError, Pod: pod, Reason: ReasonFailedKillPod, Err: err})
			n.recordEvent(pod, v1.EventTypeWarning, ReasonFailedKillPod, "error killing pod: %v", err)
		} else {
			n.emit(Event{Kind: EventWork, Pod: pod, Reason: ReasonKilling, Message: fmt.Sprintf("SyncTerminatingPod interrupted: %v", context.Cause(ctx))})
		}
		return fmt.Errorf("node: killing %s/%s with a grace period of %ds: %w", pod.Namespace, pod.Name, gracePeriod, err)
	}
	// The relister inspects the pod (its cache and events see the stop at once), and the
	// terminated work gets this status without inspecting it again.
	stopped, err := n.relister.Refresh(ctx, pod.UID)
	if err != nil {
		return fmt.Errorf("node: inspecting %s/%s after the kill: %w", pod.Namespace, pod.Name, err)
	}
	if stopped == nil {
		stopped = &pleg.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}
	if k := stopped.RunningContainers(); k > 0 {
		err := fmt.Errorf("node: %d container(s) of %s/%s still running after the kill", k, pod.Namespace, pod.Name)
		n.emit(Event{Kind: EventError, Pod: pod, Reason: ReasonFailedKillPod, Err: err})
		n.recordEvent(pod, v1.EventTypeWarning, ReasonFailedKillPod, "error killing pod: %v", err)
		return err
	}
	if len(stopped.IPs) == 0 && rs != nil && len(rs.IPs) > 0 {
		// A stopped sandbox reports no IPs: keep the ones the pod had.
		cp := *stopped
		cp.IPs = rs.IPs
		stopped = &cp
	}
	st = withStatusFunc(n.generate(pod, stopped, true), fn)
	if err := n.setStatus(pod, st, fn == nil); err != nil {
		return err
	}
	n.stopped.put(pod.UID, stopped)
	n.emit(Event{Kind: EventWork, Pod: pod, Reason: ReasonKilling, Message: "SyncTerminatingPod done: every container stopped"})
	return nil
}

// withStatusFunc returns st as fn changes it (a kill's status function; nil changes
// nothing). Only a status that fn gets is moved to the heap: one that fn cannot keep
// stays on the caller's stack.
func withStatusFunc(st v1.PodStatus, fn func(*v1.PodStatus)) v1.PodStatus {
	if fn != nil {
		changed := st
		fn(&changed)
		return changed
	}
	return st
}

// SyncTerminatingRuntimePod has the runtime stop a pod no source knows of.
func (s *syncer) SyncTerminatingRuntimePod(ctx context.Context, rp *pleg.Pod) error {
	n := (*Node)(s)
	n.emit(Event{Kind: EventWork, UID: rp.ID, Reason: ReasonKillingOrphan,
		Message: fmt.Sprintf("SyncTerminatingRuntimePod %s/%s (grace 1s)", rp.Namespace, rp.Name)})
	if err := n.runtime.KillRuntimePod(ctx, rp); err != nil {
		if ctx.Err() == nil {
			n.emit(Event{Kind: EventError, UID: rp.ID, Reason: ReasonFailedKillPod, Err: err})
		}
		return fmt.Errorf("node: killing runtime pod %s/%s: %w", rp.Namespace, rp.Name, err)
	}
	return nil
}

// SyncTerminatedPod writes the final status, has the runtime clean up and hands the pod
// to the status manager's TerminatePod, after which the pod object may be deleted.
func (s *syncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, rs *pleg.PodStatus) error {
	n := (*Node)(s)
	n.emit(Event{Kind: EventWork, Pod: pod, Reason: ReasonTerminated, Message: "SyncTerminatedPod"})
	if n.probes != nil {
		n.probes.RemovePod(pod.UID)
	}
	st := n.generate(pod, rs, true)
	if err := n.setStatus(pod, st, true); err != nil {
		return err
	}
	if err := n.runtime.CleanupPod(ctx, pod); err != nil {
		if ctx.Err() == nil {
			n.emit(Event{Kind: EventError, Pod: pod, Reason: ReasonFailedSync, Err: err})
		}
		return fmt.Errorf("node: cleaning up %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return n.status.TerminatePod(pod)
}

// generate is the pod's API status from its runtime status (GenerateAPIStatus, then the
// runtime's StatusGenerator if it has one). The old status is the status manager's
// without a copy: GenerateAPIStatus only reads it and its result shares nothing with it.
func (n *Node) generate(pod *v1.Pod, rs *pleg.PodStatus, podIsTerminal bool) v1.PodStatus {
	old, ok := n.status.PodStatusView(pod.UID)
	if !ok {
		old = pod.Status
	}
	st := GenerateAPIStatus(pod, rs, GenerateOptions{HostIPs: n.cfg.HostIPs, Now: n.clock.Now(),
		PodIsTerminal: podIsTerminal, OldStatus: old, ProbeResult: n.probeResult(pod),
		StartFailure: n.reasons.startFailure(pod.UID)})
	applyActiveDeadline(pod, &st, n.clock.Now())
	if n.gen != nil {
		st = n.gen.APIStatus(pod, rs, st, podIsTerminal)
	}
	return st
}

// scheduleDeadline has the loop sync the pod when its active deadline passes (the
// kubelet's ShouldSync, without polling), and records the kubelet's Normal
// DeadlineExceeded event when st is the status of a pod past it. A pod update that
// changes the deadline syncs the pod, which schedules it again.
func (n *Node) scheduleDeadline(pod *v1.Pod, st *v1.PodStatus) {
	if st.Phase == v1.PodFailed && st.Reason == ReasonDeadlineExceeded {
		n.deadlines.set(pod.UID, time.Time{})
		n.recordEvent(pod, v1.EventTypeNormal, ReasonDeadlineExceeded, "%s", MessageDeadlineExceeded)
		n.log.Info("pod is past its active deadline", podKeys(pod, "")...)
		return
	}
	var at time.Time
	if st.StartTime != nil && !podfacts.IsTerminalPhase(st.Phase) {
		now := n.clock.Now()
		if _, wait := ActiveDeadlineExceeded(pod, st.StartTime.Time, now); wait > 0 {
			at = now.Add(wait)
		}
	}
	n.deadlines.set(pod.UID, at)
}

// syncDeadlines syncs every pod whose active deadline passed and returns when the next
// one passes (zero: none).
func (n *Node) syncDeadlines() time.Time {
	uids, next := n.deadlines.due(n.clock.Now())
	for _, uid := range uids {
		if p, ok := n.pods.GetPodByUID(uid); ok {
			n.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodSync, Pod: p, MirrorPod: n.mirrorOf(p)})
		}
	}
	return next
}

// setStatus hands a status to the status manager, reporting a refusal. generated says
// that st is generate's result as it returned it (no status function changed it): without
// a StatusGenerator that is GenerateAPIStatus's, which shares no memory with anything and
// which the node neither keeps nor modifies, so the manager takes it without a copy.
func (n *Node) setStatus(pod *v1.Pod, st v1.PodStatus, generated bool) error {
	set := n.status.SetPodStatus
	if generated && n.gen == nil {
		set = n.status.SetPodStatusNoCopy
	}
	if err := set(pod, st); err != nil {
		n.emit(Event{Kind: EventError, Pod: pod, Reason: ReasonFailedSync, Err: err})
		return fmt.Errorf("node: setting the status of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// statusAfter is the pod workers' view of the runtime: the relister's, except that the
// terminated work right after a successful SyncTerminatingPod gets the status that call
// inspected after the kill (nothing ran then, and nothing starts a stopped pod again), so
// a graceful stop inspects the runtime twice, not three times.
func (n *Node) statusAfter(ctx context.Context, uid types.UID, minTime time.Time) (*pleg.PodStatus, error) {
	if s := n.stopped.take(uid); s != nil {
		return s, nil
	}
	return n.relister.StatusAfter(ctx, uid, minTime)
}

// stoppedStatuses maps pods to the status inspected after their kill, each kept from a
// successful SyncTerminatingPod to the next status read of the pod. Every status read of
// every pod worker asks it, so it takes no lock common to all pods: a pod's UID hashes to
// one of stoppedShards maps, each behind a lock of its own. Keeping a status allocates
// nothing once its shard's map has room (a sync.Map allocates an entry and boxes the UID
// for every store). Its seed is set by New.
type stoppedStatuses struct {
	seed   maphash.Seed
	shards [stoppedShards]stoppedShard
}

// stoppedShards is the number of maps of stoppedStatuses.
const stoppedShards = 64

// stoppedShard is one map of stoppedStatuses and its lock.
type stoppedShard struct {
	mu sync.Mutex
	m  map[types.UID]*pleg.PodStatus
}

// shard returns the map uid belongs to.
func (s *stoppedStatuses) shard(uid types.UID) *stoppedShard {
	return &s.shards[maphash.String(s.seed, string(uid))%stoppedShards]
}

// put keeps status as the pod's, replacing one kept before.
func (s *stoppedStatuses) put(uid types.UID, status *pleg.PodStatus) {
	sh := s.shard(uid)
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[types.UID]*pleg.PodStatus)
	}
	sh.m[uid] = status
	sh.mu.Unlock()
}

// take returns and forgets the pod's status, or nil.
func (s *stoppedStatuses) take(uid types.UID) *pleg.PodStatus {
	sh := s.shard(uid)
	sh.mu.Lock()
	status, ok := sh.m[uid]
	if ok {
		delete(sh.m, uid)
	}
	sh.mu.Unlock()
	return status
}
