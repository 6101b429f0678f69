package statusmgr

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/statusmgr/internal/patch"
)

// reconcile runs on every full sync when a PodLookup is configured. It refreshes the cached
// pod objects (a new deletionTimestamp) and, like the kubelet's needsReconcile, checks that
// the server's status as the node agent sees it (the lookup's pod, or its mirror pod) is
// what a sync would leave there: when a status already sent would still change the
// server's (someone else overwrote it, or a write was lost), it is sent again, patched
// against the lookup's pod (a pod from the API server: its resourceVersion guards the
// patch) or a fresh GET. The full sync that calls it then picks up every entry that needs an update.
func (m *Manager) reconcile() {
	m.mu.Lock()
	snaps := make([]snapshot, 0, len(m.c.entries))
	for uid, e := range m.c.entries {
		snaps = append(snaps, e.snapshot(uid))
	}
	m.mu.Unlock()
	slices.SortFunc(snaps, func(a, b snapshot) int { return strings.Compare(string(a.uid), string(b.uid)) })

	fresh := make(map[types.UID]*v1.Pod, len(snaps))
	var stale []snapshot
	now := m.clock.Now()
	scratch := patch.GetBuffer() // the patches are only compared: one buffer for all
	defer patch.PutBuffer(scratch)
	for _, s := range snaps {
		pod, ok := m.lookup.GetPodByUID(s.uid)
		if !ok || pod == nil || pod.UID != s.uid {
			continue
		}
		fresh[s.uid] = pod
		src := pod
		if IsStaticPod(pod) {
			if src, ok = m.lookup.GetMirrorPodByPod(pod); !ok || src == nil {
				continue
			}
		}
		couldRun := !s.finished
		if m.couldRun != nil {
			couldRun = m.couldRun(s.uid)
		}
		if _, unchanged, err := mergedStatusPatch(src, s.status, couldRun, now, scratch); err == nil && !unchanged {
			stale = append(stale, s)
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	for uid, pod := range fresh {
		if e := m.c.entries[uid]; e != nil {
			e.pod = pod
		}
	}
	for _, s := range stale {
		e := m.c.entries[s.uid]
		if e != s.e || e.version != s.version || e.sentVersion != e.version {
			continue // changed meanwhile, or not sent yet: a sync is due anyway
		}
		m.stats.Reconciled++
		e.sentVersion = 0
		e.server = nil
	}
}

// syncPod writes one snapshot to the server and deletes the pod when it can: it runs the
// snapshot's PodSync, making the calls it asks for; no lock held.
func (m *Manager) syncPod(ctx context.Context, s snapshot) error {
	var ps PodSync // on the stack: drive keeps no reference to it
	m.initPodSync(&ps, &s)
	return m.drive(ctx, &ps)
}

// podSync returns the PodSync of a snapshot (see initPodSync).
func (m *Manager) podSync(s snapshot) *PodSync {
	ps := new(PodSync)
	m.initPodSync(ps, &s)
	return ps
}

// initPodSync makes ps the PodSync of the snapshot s, asking the callbacks
// (CouldHaveRunningContainers, the PodLookup) what it needs; no lock held.
func (m *Manager) initPodSync(ps *PodSync, s *snapshot) {
	in := podSyncInput{Pod: s.pod, Status: *s.status, Finished: s.finished, CouldRunContainers: !s.finished,
		Server: s.server, MaxConflictRetries: m.maxConflict}
	if m.couldRun != nil {
		in.CouldRunContainers = m.couldRun(s.uid)
	}
	var mirror *v1.Pod
	found := true
	if m.lookup != nil {
		if IsStaticPod(s.pod) {
			mirror, found = m.lookup.GetMirrorPodByPod(s.pod)
			found = found && mirror != nil
		}
		p, ok := m.lookup.GetPodByUID(s.uid)
		in.Desired = ok && p != nil && p.UID == s.uid
		if in.Desired {
			in.Source = p
		}
	}
	in.Target, in.MirrorUID = targetOf(s.pod, mirror, found)
	*ps = newPodSync(in)
	ps.snap = *s
}

// drive runs ps to its end, making its calls, and records its outcome.
func (m *Manager) drive(ctx context.Context, ps *PodSync) error {
	var a Answer
	for {
		st := ps.Step(a, m.clock.Now())
		if st.Done() {
			return m.finish(ps)
		}
		a = m.call(ctx, st.Call)
	}
}

// call makes one StatusPatcher call.
func (m *Manager) call(ctx context.Context, c Call) Answer {
	var a Answer
	switch c.Verb {
	case VerbGet:
		a.Pod, a.Err = m.patcher.GetPod(ctx, c.Namespace, c.Name)
	case VerbPatch:
		a.Pod, a.Err = m.patcher.PatchPodStatus(ctx, c.Namespace, c.Name, c.Patch)
	case VerbDelete:
		a.Err = m.patcher.DeletePod(ctx, c.Namespace, c.Name, c.UID)
	default:
		a.Err = fmt.Errorf("%w: unknown call %q", ErrAPI, c.Verb)
	}
	return a
}

// finish records the outcome of a PodSync of the Manager (a snapshot's) in the cache, logs
// it, and returns its error. Not for a PodSync of podSyncOf (ErrUnknownPod).
func (m *Manager) finish(ps *PodSync) error {
	o, done := ps.result()
	if ps.snap.e == nil || !done {
		return fmt.Errorf("%w: the sync is not a Manager's, or not done", ErrUnknownPod)
	}
	s := ps.snap
	var again bool
	var setAt time.Time
	var keep *v1.PodStatus
	server := o.Server
	if o.Result != resultForgotten {
		if server != s.server { // a call answered with another copy (or none)
			server = keepServer(server)
		}
		keep = statusToKeep(&s, server)
	}
	m.mu.Lock()
	m.stats.add(ps.calls)
	if o.Result == resultForgotten {
		if o.Sent {
			_, setAt = m.c.commit(s, true, nil, nil)
		}
		if m.c.forget(s) {
			m.stats.add(o.Stats)
		}
	} else {
		again, setAt = m.c.commit(s, o.Sent, server, keep)
		if o.Reason == reasonDeleteFailed {
			m.c.retryDelete(s)
		}
		m.stats.add(o.Stats)
	}
	m.mu.Unlock()
	if m.observe != nil && !setAt.IsZero() {
		m.observe(m.clock.Since(setAt))
	}
	if again {
		m.signal()
	}
	m.logOutcome(s, o)
	return o.Err
}

// outcomeLogs are the log messages of the sync outcomes, by Reason.
var outcomeLogs = [...]string{
	reasonSynced:          "status synced",
	reasonNoMirror:        "static pod has no mirror pod; not synced",
	reasonNotFoundDesired: "pod not found on the server but still desired; status kept for the next sync",
	reasonFailed:          "status sync failed; will retry",
	reasonDeleteFailed:    "status sync failed; will retry",
	reasonDeleted:         "pod fully terminated and deleted",
	reasonGone:            "pod not found on the server; status forgotten",
	reasonRecreated:       "pod was deleted and recreated; status forgotten",
}

// logOutcome logs how the sync of s ended: at Debug, a failure at Error with its reason
// and error. The record is only built when the logger takes that level.
func (m *Manager) logOutcome(s snapshot, o outcome) {
	if o.Reason < 0 || int(o.Reason) >= len(outcomeLogs) {
		return
	}
	failed := o.Reason == reasonFailed || o.Reason == reasonDeleteFailed
	level := slog.LevelDebug
	if failed {
		level = slog.LevelError
	}
	ctx := context.Background()
	if !m.log.Enabled(ctx, level) {
		return
	}
	args := []any{"pod", s.pod.Namespace + "/" + s.pod.Name, "podUID", s.uid, "version", s.version}
	if failed {
		args = append(args, "reason", o.Reason, "err", o.Err)
	}
	m.log.Log(ctx, level, outcomeLogs[o.Reason], args...)
}
