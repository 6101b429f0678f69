package statusmgr

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// reconcile runs on every full sync when a PodLookup is configured. It refreshes the cached
// pod objects (a new deletionTimestamp) and, like the kubelet's needsReconcile, checks that
// the server's status as the node agent sees it (the lookup's pod, or its mirror pod) is
// what a sync would leave there: when a status already sent would still change the
// server's (someone else overwrote it, or a write was lost), it is sent again from a fresh
// GET. The full sync that calls it then picks up every entry that needs an update.
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
		merged := MergePodStatusAt(src, src.Status, s.status, couldRun, now)
		if _, unchanged, err := StatusPatch(src.UID, &src.Status, &merged); err == nil && !unchanged {
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

// syncPod writes one snapshot to the server and deletes the pod when it can; no lock held.
func (m *Manager) syncPod(ctx context.Context, s snapshot) error {
	ns, name := s.pod.Namespace, s.pod.Name
	log := m.log.With("pod", ns+"/"+name, "podUID", s.uid, "version", s.version)

	var wantUID types.UID // the UID the server's pod must have; "" = any mirror pod
	static := IsStaticPod(s.pod)
	if !static {
		wantUID = s.uid
	} else if m.lookup != nil {
		mirror, ok := m.lookup.GetMirrorPodByPod(s.pod)
		if !ok || mirror == nil {
			m.count(func(st *Stats) { st.NoMirror++ })
			log.Debug("static pod has no mirror pod; not synced")
			return nil
		}
		wantUID = mirror.UID
	}

	server := s.server
	conflicts := 0
	refreshed := false
	sent := false
	for {
		if server == nil {
			pod, err := m.patcher.GetPod(ctx, ns, name)
			m.count(func(st *Stats) { st.Gets++ })
			if err != nil {
				return m.callFailed(s, "get", err, log)
			}
			if pod == nil {
				return m.callFailed(s, "get", apierrors.NewNotFound(v1.Resource("pods"), name), log)
			}
			server = pod
			refreshed = true
		}
		if static && wantUID == "" && !IsMirrorPod(server) {
			// Without a lookup, a static pod's status waits for a mirror pod of its name.
			m.count(func(st *Stats) { st.NoMirror++ })
			m.commit(s, false, nil)
			log.Debug("server's pod is not a mirror pod; static pod not synced", "serverUID", server.UID)
			return nil
		}
		if (wantUID != "" && server.UID != wantUID) || (static && !IsMirrorPod(server)) {
			m.forget(s, func(st *Stats) { st.Recreated++ })
			log.Info("pod was deleted and recreated; status forgotten", "serverUID", server.UID)
			return nil
		}

		couldRun := !s.finished
		if m.couldRun != nil {
			couldRun = m.couldRun(s.uid)
		}
		merged := MergePodStatusAt(server, server.Status, s.status, couldRun, m.clock.Now())
		patch, unchanged, err := StatusPatch(server.UID, &server.Status, &merged)
		if err != nil {
			m.count(func(st *Stats) { st.Errors++ })
			return fmt.Errorf("statusmgr: pod %s/%s: %w", ns, name, err)
		}
		if !unchanged {
			patched, err := m.patcher.PatchPodStatus(ctx, ns, name, patch)
			m.count(func(st *Stats) { st.Patches++; st.PatchBytes += len(patch) })
			if err == nil && patched == nil {
				err = fmt.Errorf("statusmgr: patcher returned no pod")
			}
			if apierrors.IsConflict(err) && conflicts < m.maxConflict {
				conflicts++
				m.count(func(st *Stats) { st.Conflicts++ })
				log.Debug("conflict patching status; re-reading the pod", "err", err)
				server = nil
				continue
			}
			if err != nil {
				return m.callFailed(s, "patch", err, log)
			}
			log.Debug("patched status", "patch", string(patch))
			server = patched
		}
		sent = true

		if CanBeDeleted(server, s.status, s.finished) {
			err := m.patcher.DeletePod(ctx, ns, name, server.UID)
			m.count(func(st *Stats) { st.Deletes++ })
			if err == nil {
				m.forget(s, func(st *Stats) { st.Deleted++ })
				log.Debug("pod fully terminated and deleted")
				return nil
			}
			if apierrors.IsConflict(err) && conflicts < m.maxConflict {
				// The UID precondition failed or the object changed: the pod may have been
				// recreated, or not. Never guess: read it again, forget the status only if
				// the server's pod is gone or has another UID, else delete it again.
				conflicts++
				m.count(func(st *Stats) { st.Conflicts++ })
				log.Debug("conflict deleting the pod; re-reading it", "err", err)
				server = nil
				continue
			}
			// The status is on the server; the delete is retried from a fresh GET.
			m.commit(s, sent, server)
			err = m.callFailed(s, "delete", err, log)
			m.mu.Lock()
			m.c.retryDelete(s)
			m.mu.Unlock()
			return err
		}
		if s.finished && !refreshed && !static && s.pod.DeletionTimestamp != nil && server.DeletionTimestamp == nil {
			// Our copy of the server's pod predates the deletion: read it again.
			server = nil
			continue
		}
		m.commit(s, sent, server)
		return nil
	}
}

// callFailed handles a failed API call: NotFound forgets the status unless the Lookup still
// has the pod (then it waits for the next full sync, as any failed call does); anything
// else drops the server copy (its state is unknown) and is counted, logged and returned.
func (m *Manager) callFailed(s snapshot, verb string, err error, log *slog.Logger) error {
	if apierrors.IsNotFound(err) && IsStaticPod(s.pod) && verb == "get" {
		// A static pod's mirror pod may not exist yet: keep the status for later.
		m.mu.Lock()
		m.stats.NotFounds++
		m.stats.NoMirror++
		_, _ = m.c.commit(s, false, nil)
		m.mu.Unlock()
		log.Debug("static pod has no mirror pod on the server yet; not synced")
		return nil
	}
	if apierrors.IsNotFound(err) && m.stillDesired(s) {
		// The node still has the pod: the server's answer is older than the pod (a node
		// identity's authorizer may not know a just-bound pod yet) or the pod was deleted
		// and its removal has not reached the node. Keep the status, as the kubelet does,
		// for the next full sync; RemoveOrphanedStatuses drops it once the pod is gone.
		m.mu.Lock()
		m.stats.NotFounds++
		_, _ = m.c.commit(s, false, nil)
		m.mu.Unlock()
		log.Info("pod not found on the server but still desired; status kept for the next sync", "call", verb, "err", err)
		return nil
	}
	if apierrors.IsNotFound(err) {
		m.forget(s, func(st *Stats) { st.NotFounds++; st.Gone++ })
		log.Info("pod not found on the server; status forgotten", "call", verb)
		return nil
	}
	m.mu.Lock()
	if apierrors.IsConflict(err) {
		m.stats.Conflicts++
	} else {
		m.stats.Errors++
	}
	_, _ = m.c.commit(s, false, nil)
	m.mu.Unlock()
	log.Error("status sync failed; will retry", "call", verb, "err", err)
	return fmt.Errorf("statusmgr: %s pod %s/%s: %w", verb, s.pod.Namespace, s.pod.Name, err)
}

// stillDesired reports whether the Lookup (if any) still has the pod of the snapshot, with
// its UID.
func (m *Manager) stillDesired(s snapshot) bool {
	if m.lookup == nil {
		return false
	}
	p, ok := m.lookup.GetPodByUID(s.uid)
	return ok && p != nil && p.UID == s.uid
}

func (m *Manager) count(f func(*Stats)) {
	m.mu.Lock()
	f(&m.stats)
	m.mu.Unlock()
}

func (m *Manager) forget(s snapshot, f func(*Stats)) {
	m.mu.Lock()
	if m.c.forget(s) {
		f(&m.stats)
	}
	m.mu.Unlock()
}

func (m *Manager) commit(s snapshot, sent bool, server *v1.Pod) {
	m.mu.Lock()
	again, setAt := m.c.commit(s, sent, server)
	m.mu.Unlock()
	if m.observe != nil && !setAt.IsZero() {
		m.observe(m.clock.Since(setAt))
	}
	if again {
		m.signal()
	}
}
