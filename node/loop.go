package node

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/internal/podfacts"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/statusmgr"
)

// loop is the kubelet's syncLoop: config changes, PLEG events and the housekeeping tick,
// one at a time, until ctx ends.
func (n *Node) loop(ctx context.Context) {
	housekeeping := n.clock.NewTimer(n.cfg.HousekeepingPeriod)
	defer housekeeping.Stop()
	// hk runs housekeeping's runtime calls off this goroutine; they end with ctx.
	hk := newHousekeeper()
	defer hk.wg.Wait()
	// deadline fires when the earliest active deadline of a pod passes (deadlineC is nil
	// while there is none).
	var deadline clock.Timer
	var deadlineC <-chan time.Time
	resetDeadline := func(next time.Time) {
		if deadline != nil {
			deadline.Stop()
		}
		deadline, deadlineC = nil, nil
		if !next.IsZero() {
			deadline = n.clock.NewTimer(next.Sub(n.clock.Now()))
			deadlineC = deadline.C()
		}
	}
	defer func() { resetDeadline(time.Time{}) }()
	// delivered fires once every source's first full list is on the mux's channel (it
	// may be after the loop took the list's last update); it is nil once ready.
	delivered := n.mux.AllSourcesDelivered()
	// next is a PLEG event taken from the channel but not handled yet (see
	// handlePLEGRun): while there is one, it stands in for the channel.
	var next *pleg.PodLifecycleEvent
	for {
		if delivered != nil && n.checkReady(ctx) {
			delivered = nil
		}
		events, nextReady := n.relister.Events(), (<-chan struct{})(nil)
		if next != nil {
			events, nextReady = nil, closedChan
		}
		select {
		case <-ctx.Done():
			return
		case <-delivered:
			// checkReady runs at the top of the loop.
		case u := <-n.mux.Updates():
			n.dispatch(ctx, u)
		case ev := <-events:
			next = n.handlePLEGRun(ev)
		case <-nextReady:
			next = n.handlePLEGRun(next)
		case req := <-n.kills:
			n.handleKill(req)
		case <-n.deadlines.wake:
			resetDeadline(n.syncDeadlines())
		case <-deadlineC:
			resetDeadline(n.syncDeadlines())
		case <-housekeeping.C():
			// The timer restarts when the round ends: one round at a time.
			if !n.housekeeping(ctx, hk) {
				housekeeping.Reset(n.cfg.HousekeepingPeriod)
			}
		case hr := <-hk.listed:
			if !n.listedRuntime(ctx, hk, hr) {
				housekeeping.Reset(n.cfg.HousekeepingPeriod)
			}
		case hr := <-hk.removed:
			n.removedRuntime(ctx, hr)
			housekeeping.Reset(n.cfg.HousekeepingPeriod)
		}
	}
}

// isReady reports whether every source has delivered its first full list to the loop.
func (n *Node) isReady() bool {
	select {
	case <-n.ready:
		return true
	default:
		return false
	}
}

// checkReady closes ready once every source's first full list is on the mux's channel
// and, drained from it here, has been dispatched: only then does the pod manager hold
// every desired pod, and a pod missing from it is really gone.
func (n *Node) checkReady(ctx context.Context) bool {
	if n.isReady() {
		return true
	}
	if !n.mux.SourcesDelivered(n.cfg.Sources...) {
		return false
	}
	for drained := false; !drained; {
		select {
		case u := <-n.mux.Updates():
			n.dispatch(ctx, u)
		default:
			drained = true
		}
	}
	close(n.ready)
	n.log.Info("all pod sources are ready", "sources", n.cfg.Sources)
	return true
}

// dispatch hands one category of changes to the pod workers, as the kubelet's
// HandlePodRemoves, HandlePodAdditions, HandlePodUpdates and HandlePodReconcile do;
// an ADD's pods go through Config.Admit first (admitPod).
func (n *Node) dispatch(ctx context.Context, u config.PodUpdate) {
	pods := u.Pods
	if u.Op == config.Add && !slices.IsSortedFunc(pods, olderFirst) {
		// The kubelet admits new pods oldest first (a copy: the update's list is the
		// config merge's).
		pods = slices.Clone(pods)
		slices.SortStableFunc(pods, olderFirst)
	}
	for _, p := range pods {
		if p == nil {
			continue
		}
		if n.observed() {
			n.emit(Event{Kind: EventConfig, Op: u.Op, Pod: p, Message: fmt.Sprintf("%s from %s", u.Op, u.Source)})
		}
		mirror := podfacts.IsMirror(p)
		switch u.Op {
		case config.Remove:
			n.pods.remove(p)
			if mirror {
				n.handleMirrorPod(p)
				continue
			}
			if !n.isReady() {
				// The kubelet refuses removals until every source is ready: housekeeping
				// stops the pod later if it is really gone.
				n.emit(Event{Kind: EventError, Pod: p, Reason: ReasonRemoveRefused, Err: ErrSourcesNotReady})
				continue
			}
			n.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, Pod: p})
		case config.Add, config.Update, config.Delete:
			n.pods.set(p)
			if mirror {
				n.handleMirrorPod(p)
				continue
			}
			ut := podworker.SyncPodUpdate
			if u.Op == config.Add {
				if !n.admitPod(ctx, p) {
					continue // refused: never started, its Failed status written
				}
				ut = podworker.SyncPodCreate
			}
			// A graceful delete is an update whose deletionTimestamp makes the pod stop.
			n.updatePod(podworker.UpdatePodOptions{UpdateType: ut, Pod: p, MirrorPod: n.mirrorOf(p)})
		case config.Reconcile:
			n.pods.set(p)
			if mirror {
				continue
			}
			n.reconcile(p)
		}
	}
}

// reconcile handles a pod whose only change is its status (the kubelet's
// HandlePodReconcile), now in the pod manager: a known pod that needs it is synced;
// otherwise the pod workers and the status manager take it as their newest object
// without a sync, so that neither keeps the previous one alive. Nothing a sync sees
// changes but the status the pod carries, which a sync reads only where the kubelet's
// does from the pod manager's newest pod: its periodic syncs and retries take that pod
// (getPodsToSync, HandlePodSyncs), and the status manager's cached status comes first.
func (n *Node) reconcile(p *v1.Pod) {
	n.status.RefreshPod(p)
	if needsReconcile(p) { // checked first: it needs no lock, and most pods do not
		if _, known := n.workers.PodState(p.UID); known {
			n.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodSync, Pod: p, MirrorPod: n.mirrorOf(p)})
			return
		}
	}
	n.workers.RefreshPod(p) // refused for an unknown pod
}

// needsReconcile: the server's status of a pod whose only change is its status asks
// for a sync (the kubelet's HandlePodReconcile): its Ready condition disagrees with its
// containers, or it is terminal and deleted, so its worker can finish it.
func needsReconcile(p *v1.Pod) bool {
	if p.DeletionTimestamp != nil && podfacts.IsTerminalPhase(p.Status.Phase) {
		return true
	}
	want := statusmgr.PodReadyCondition(p, &p.Status)
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status != want.Status
		}
	}
	return false
}

// mirrorOf returns the mirror pod of a static pod, or nil.
func (n *Node) mirrorOf(p *v1.Pod) *v1.Pod {
	if !podfacts.IsStatic(p) {
		return nil
	}
	mp, _ := n.pods.GetMirrorPodByPod(p)
	return mp
}

// handleMirrorPod syncs the static pod of a mirror pod that changed (the kubelet's
// handleMirrorPod): mirror pods never get a worker of their own.
func (n *Node) handleMirrorPod(mirror *v1.Pod) {
	if p, ok := n.pods.staticPodOf(mirror); ok {
		n.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: p, MirrorPod: n.mirrorOf(p)})
	}
}

func (n *Node) updatePod(opts podworker.UpdatePodOptions) {
	if err := n.workers.UpdatePod(opts); err != nil {
		e := Event{Kind: EventError, Pod: opts.Pod, Reason: ReasonFailedSync, Err: err}
		keys := podKeys(opts.Pod, "")
		if rp := opts.RunningPod; rp != nil {
			e.UID = rp.ID
			keys = []any{"pod", rp.Namespace + "/" + rp.Name, "podUID", rp.ID}
		}
		n.emit(e)
		n.log.Error("pod worker update failed", append(keys, "err", err)...)
	}
}

// olderFirst orders pods by creation time, oldest first.
func olderFirst(a, b *v1.Pod) int {
	return a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time)
}

// closedChan is always ready to receive from.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// handlePLEGRun handles ev and the events queued right behind it for the same pod that
// come from the inspection ev came from, and returns the first queued event it did not
// handle (nil if none is queued). The pod is synced once for all of them: an inspection
// caches the pod's status before it sends the pod's events (a sandbox's and a
// container's, say), so the sync ev asks for reads a status that holds what the later
// ones report, and each of them would ask for a sync that finds nothing new (the
// kubelet's pod workers merge such syncs when the first has not started yet). An event
// queued after the relister cached a newer status of the pod (another inspection) is
// returned, to be handled on its own. The cached status's identity tells the inspections
// apart: a status in the cache is never modified and stands for one observation (pleg's
// RuntimeService contract), and a vanished pod's entry is gone before its events come.
func (n *Node) handlePLEGRun(ev *pleg.PodLifecycleEvent) *pleg.PodLifecycleEvent {
	p, ok := n.reportPLEG(ev)
	if !ok {
		return nil
	}
	// With nothing queued behind ev there is nothing to merge (an event that comes later
	// is the loop's), and the status need not be read. Else it is read before the sync is
	// asked for, so that the sync reads this status or a newer one.
	queued := len(n.relister.Events()) > 0
	var seen *pleg.PodStatus
	var err error
	if queued {
		seen, err = n.relister.LastStatus(ev.ID)
	}
	n.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodSync, Pod: p, MirrorPod: n.mirrorOf(p)})
	if !queued || err != nil {
		return nil
	}
	for {
		select {
		case later := <-n.relister.Events():
			if later == nil || later.ID != ev.ID {
				return later
			}
			if now, err := n.relister.LastStatus(ev.ID); err != nil || now != seen {
				return later
			}
			n.reportPLEG(later)
		default:
			return nil
		}
	}
}

// reportPLEG reports a lifecycle event and returns its pod, false for an event of a pod no
// source knows (dropped: no sync).
func (n *Node) reportPLEG(ev *pleg.PodLifecycleEvent) (*v1.Pod, bool) {
	if ev == nil {
		return nil, false
	}
	p, ok := n.pods.GetPodByUID(ev.ID)
	if n.observed() {
		msg := fmt.Sprintf("%s %v", ev.Type, ev.Data)
		if !ok {
			n.emit(Event{Kind: EventPLEG, UID: ev.ID, PLEG: string(ev.Type), Message: msg + " (pod unknown)"})
		} else {
			n.emit(Event{Kind: EventPLEG, Pod: p, PLEG: string(ev.Type), Message: msg})
		}
	}
	return p, ok
}

// housekeepingRound is a housekeeping round between the loop and its runtime goroutine:
// the loop does the round's bookkeeping, a goroutine lists the runtime's pods (listed),
// the loop decides what to kill and what to remove, and a goroutine removes the
// leftovers (removed). The Runtime's ListPods and RemovePod never run on the loop's
// goroutine: a slow runtime holds up no config change, PLEG event or kill.
type housekeepingRound struct {
	round HousekeepingRound
	known map[types.UID]podworker.PodWorkerSync
	// pods and err are ListPods' answer.
	pods []*pleg.Pod
	err  error
	// failed are the RemovePod errors and removed the pods removed, for the loop to
	// report.
	failed  []removeFailure
	removed []*pleg.Pod
}

type removeFailure struct {
	pod *pleg.Pod
	err error
}

// housekeeper runs the goroutines of one housekeeping round at a time.
type housekeeper struct {
	listed  chan *housekeepingRound
	removed chan *housekeepingRound
	wg      sync.WaitGroup
}

func newHousekeeper() *housekeeper {
	return &housekeeper{listed: make(chan *housekeepingRound), removed: make(chan *housekeepingRound)}
}

// goSend runs f on its own goroutine and hands hr to the loop on ch, unless ctx ends.
func (h *housekeeper) goSend(ctx context.Context, ch chan<- *housekeepingRound, hr *housekeepingRound, f func()) {
	h.wg.Go(func() {
		f()
		select {
		case ch <- hr:
		case <-ctx.Done():
		}
	})
}

// housekeeping is the kubelet's HandlePodCleanups, skipped until every source is ready
// (a pod missing from a source that has not listed yet is not gone). It does the
// round's bookkeeping on the loop and starts the runtime listing on its own goroutine
// (see listedRuntime); it reports whether a round started.
func (n *Node) housekeeping(ctx context.Context, h *housekeeper) bool {
	if !n.isReady() {
		n.log.DebugContext(ctx, "housekeeping skipped: not every pod source is ready", "sources", n.cfg.Sources)
		return false
	}
	hr := &housekeepingRound{round: HousekeepingRound{At: n.clock.Now()}}
	round := &hr.round
	desired, mirrors, uids := n.pods.snapshot()
	for _, p := range desired {
		if podfacts.IsStatic(p) {
			round.DesiredStaticPods++
		} else {
			round.DesiredPods++
		}
	}
	before := n.workers.Len()
	known := n.workers.SyncKnownPods(desired)
	hr.known = known
	if forgot := before - len(known); forgot > 0 {
		n.emit(Event{Kind: EventHousekeeping, Reason: ReasonForgot, Message: fmt.Sprintf("forgot %d finished pod(s)", forgot)})
	}
	// Desired pods the workers do not know (a UID reused after its pod finished, a
	// static pod with a fixed UID) start again, unless they are terminal (on the server
	// or in the status manager: a pod Config.Admit refused is); the status of
	// their previous run is dropped with the orphans', so the new run starts afresh.
	var restart []*v1.Pod
	for _, p := range desired {
		if _, ok := known[p.UID]; ok || n.isAdmittedPodTerminal(p) {
			continue
		}
		restart = append(restart, p)
		delete(uids, p.UID)
	}
	n.status.RemoveOrphanedStatuses(uids)
	if n.probes != nil {
		// The kubelet's probeManager.CleanupPods: probes of pods no worker knows.
		n.probes.CleanupPods(func(uid types.UID) bool { _, ok := known[uid]; return ok })
	}
	n.removeOrphanedMirrorPods(ctx, mirrors, known)
	n.pods.prune(func(uid types.UID) bool { _, ok := known[uid]; return ok })
	for _, p := range restart {
		n.log.DebugContext(ctx, "pod will be restarted because it is in the desired set and not known to the pod workers (likely due to UID reuse)", podKeys(p, "")...)
		n.emit(Event{Kind: EventHousekeeping, Pod: p, Reason: ReasonRestarted, Message: "desired pod unknown to the pod workers: started again"})
		if podfacts.IsStatic(p) {
			round.RestartedStatic++
		} else {
			round.Restarted++
		}
		n.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: p, MirrorPod: n.mirrorOf(p)})
		known[p.UID] = podworker.PodWorkerSync{State: podworker.SyncPod, HasConfig: true, Static: podfacts.IsStatic(p)}
	}
	h.goSend(ctx, h.listed, hr, func() { hr.pods, hr.err = n.runtime.ListPods(ctx, true) })
	return true
}

// listedRuntime is housekeeping's second step, on the loop once the runtime's pods are
// listed: deleted terminal pods no worker knows go to the workers, running runtime pods
// no worker is in charge of are killed (grace 1), and the leftovers of stopped ones that
// neither a worker nor a config needs are removed on a goroutine (see removedRuntime).
// It decides from the pod workers' and the pod manager's state now, not the round's
// start: the loop may have started pods meanwhile. It reports whether the round goes on.
func (n *Node) listedRuntime(ctx context.Context, h *housekeeper, hr *housekeepingRound) bool {
	round, known := &hr.round, hr.known
	if hr.err != nil {
		if ctx.Err() == nil {
			n.emit(Event{Kind: EventError, Reason: ReasonHousekeepingError, Err: fmt.Errorf("node: listing the runtime's pods: %w", hr.err)})
		}
		n.endHousekeeping(hr)
		return false
	}
	stateOf := func(uid types.UID) (podworker.WorkType, bool) {
		st, ok := n.workers.PodState(uid)
		return st.WorkType, ok
	}
	desired, _, uids := n.pods.snapshot()
	running := make(map[types.UID]bool, len(hr.pods))
	for _, rp := range hr.pods {
		if rp != nil && isRunning(rp) {
			running[rp.ID] = true
		}
	}
	// Terminal pods that were deleted and that no worker knows (the agent restarted)
	// are handed to the workers so their objects can be deleted.
	for _, p := range desired {
		if _, ok := stateOf(p.UID); ok || p.DeletionTimestamp == nil || !podfacts.IsTerminalPhase(p.Status.Phase) || running[p.UID] {
			continue
		}
		n.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, Pod: p, MirrorPod: n.mirrorOf(p)})
		known[p.UID] = podworker.PodWorkerSync{State: podworker.TerminatingPod, HasConfig: true}
	}
	one := int64(1)
	var remove []*pleg.Pod
	for _, rp := range hr.pods {
		if rp == nil {
			continue
		}
		state, ok := stateOf(rp.ID)
		if ok && (state == podworker.SyncPod || state == podworker.TerminatingPod) {
			continue // its worker is in charge
		}
		if running[rp.ID] {
			// Nothing runs it on purpose: an orphan, killed with grace 1.
			n.log.DebugContext(ctx, "cleaning up the containers of an orphaned runtime pod", "pod", rp.Namespace+"/"+rp.Name, "podUID", rp.ID)
			round.OrphansKilled++
			if _, k := known[rp.ID]; !k {
				known[rp.ID] = podworker.PodWorkerSync{State: podworker.TerminatingPod, Orphan: true}
			}
			n.emit(Event{Kind: EventHousekeeping, UID: rp.ID, Reason: ReasonKillingOrphan,
				Message: fmt.Sprintf("runtime pod %s/%s unknown to the pod workers: killed with grace 1", rp.Namespace, rp.Name)})
			n.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, RunningPod: rp,
				KillPodOptions: &podworker.KillPodOptions{PodTerminationGracePeriodSecondsOverride: &one}})
			continue
		}
		if ok || uids[rp.ID] {
			continue // its worker or its config may still need it
		}
		remove = append(remove, rp)
	}
	if len(remove) == 0 {
		n.endHousekeeping(hr)
		return false
	}
	h.goSend(ctx, h.removed, hr, func() {
		for _, rp := range remove {
			// The loop may have given the pod a config or a worker since it decided.
			if _, ok := n.pods.GetPodByUID(rp.ID); ok {
				continue
			}
			if _, ok := n.workers.PodState(rp.ID); ok {
				continue
			}
			if err := n.runtime.RemovePod(ctx, rp); err != nil {
				hr.failed = append(hr.failed, removeFailure{rp, err})
				continue
			}
			hr.removed = append(hr.removed, rp)
		}
	})
	return true
}

// removedRuntime is housekeeping's last step, on the loop once the leftovers are
// removed: it reports the removals and ends the round.
func (n *Node) removedRuntime(ctx context.Context, hr *housekeepingRound) {
	for _, f := range hr.failed {
		if ctx.Err() == nil {
			n.emit(Event{Kind: EventError, UID: f.pod.ID, Reason: ReasonHousekeepingError,
				Err: fmt.Errorf("node: removing the leftovers of %s/%s: %w", f.pod.Namespace, f.pod.Name, f.err)})
		}
	}
	if n.observed() {
		for _, rp := range hr.removed {
			n.emit(Event{Kind: EventRuntime, UID: rp.ID, Reason: ReasonRemovedLeftovers,
				Message: fmt.Sprintf("removed the containers and sandbox of %s/%s", rp.Namespace, rp.Name)})
		}
	}
	n.endHousekeeping(hr)
}

// endHousekeeping reports the round to Config.Metrics.Housekeeping.
func (n *Node) endHousekeeping(hr *housekeepingRound) {
	if n.cfg.Metrics.Housekeeping != nil {
		hr.round.Working = workingPods(countWorking(hr.known))
		n.cfg.Metrics.Housekeeping(hr.round)
	}
}

// isRunning reports whether a container or sandbox of the runtime pod runs.
func isRunning(rp *pleg.Pod) bool {
	for _, cs := range [][]*pleg.Container{rp.Containers, rp.Sandboxes} {
		for _, c := range cs {
			if c != nil && c.State == pleg.ContainerStateRunning {
				return true
			}
		}
	}
	return false
}

// podKeys are the log keys of a pod: pod (namespace/name) and podUID, the same in every
// package of the library.
func podKeys(p *v1.Pod, uid types.UID) []any {
	if p == nil {
		return []any{"podUID", uid}
	}
	return []any{"pod", p.Namespace + "/" + p.Name, "podUID", p.UID}
}
