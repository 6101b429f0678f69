package statusmgr

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

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
	snaps := make([]snapshot, 0, len(m.mach.c.entries))
	for uid, e := range m.mach.c.entries {
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
		if e := m.mach.c.entries[uid]; e != nil {
			e.pod = pod
		}
	}
	for _, s := range stale {
		m.mach.resend(s)
	}
}

// facts asks the PodLookup and CouldHaveRunningContainers what the write w needs; no lock
// held.
func (m *Manager) facts(w Write) Facts {
	f := Facts{CouldRunContainers: !w.Finished}
	if m.couldRun != nil {
		f.CouldRunContainers = m.couldRun(w.UID)
	}
	if m.lookup == nil {
		return f
	}
	f.Lookup = true
	if IsStaticPod(w.Pod) {
		if mirror, ok := m.lookup.GetMirrorPodByPod(w.Pod); ok {
			f.Mirror = mirror
		}
	}
	if p, ok := m.lookup.GetPodByUID(w.UID); ok {
		f.Source = p
	}
	return f
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
	case VerbUpdate:
		if u, ok := m.patcher.(StatusUpdater); ok { // New checked it
			a.Pod, a.Err = u.UpdatePodStatus(ctx, c.Pod)
		} else {
			a.Err = fmt.Errorf("%w: the Patcher is no StatusUpdater", ErrAPI)
		}
	default:
		a.Err = fmt.Errorf("%w: unknown call %q", ErrAPI, c.Verb)
	}
	return a
}

// ended reports how a write ended: the sync latency to ObserveSyncLatency (when it put a
// version on the server), the outcome to the log. No lock held.
func (m *Manager) ended(end End) {
	if m.observe != nil && !end.Since.IsZero() {
		m.observe(m.clock.Since(end.Since))
	}
	m.logOutcome(end)
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

// logOutcome logs how a write ended: at Debug, a failure at Error with its reason and
// error. The record is only built when the logger takes that level.
func (m *Manager) logOutcome(o End) {
	if o.reason < 0 || int(o.reason) >= len(outcomeLogs) {
		return
	}
	failed := o.reason == reasonFailed || o.reason == reasonDeleteFailed
	level := slog.LevelDebug
	if failed {
		level = slog.LevelError
	}
	ctx := context.Background()
	if !m.log.Enabled(ctx, level) {
		return
	}
	args := []any{"pod", o.Pod.Namespace + "/" + o.Pod.Name, "podUID", o.Pod.UID, "version", o.Version}
	if failed {
		args = append(args, "reason", o.Outcome, "err", o.Err)
	}
	m.log.Log(ctx, level, outcomeLogs[o.reason], args...)
}
