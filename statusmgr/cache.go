package statusmgr

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/statusmgr/internal/patch"
)

// entry is the cached state of one pod's status. The manager's lock guards it.
type entry struct {
	// pod is the last pod object the node agent passed (or its lookup returned); never nil,
	// never modified (replaced whole).
	pod *v1.Pod
	// status is the latest normalized status; never nil, never modified once stored
	// (replaced whole), so a snapshot, a setter and GetPodStatus share it. Once the server
	// has exactly it, it is the status of server, the server's copy (statusToKeep).
	status *v1.PodStatus
	// version counts the statuses set for this pod; starts at 1, only grows.
	version uint64
	// sentVersion is the highest version the server is known to have; 0 = none.
	// Invariant: sentVersion <= version.
	sentVersion uint64
	// podIsFinished is set by TerminatePod; once true it stays true for a non-static pod.
	podIsFinished bool
	// server is the server's pod as the last sync left it, nil when unknown (never read, or
	// dropped after an error or conflict): what a later sync reads of a GET or PATCH
	// answer (keepServer), or, once the node agent's own object of the pod carries the
	// same resourceVersion, that object (RefreshPod). Never modified.
	server *v1.Pod
	// firstUnsent is when the oldest version not yet on the server was set (zero when none).
	firstUnsent time.Time
	// versionAt is when the current version was set.
	versionAt time.Time
	// queued is true while the UID is in the queue of lane.
	queued bool
	// lane is the queue the UID was last put in (laneFinal once the pod is finished).
	lane lane
	// mirrorUID is, for a static pod, the UID of its mirror pod last seen on the server
	// ("" until one was seen); cache.mirrors maps it back.
	mirrorUID types.UID
	// deleteFailed is true after the final delete failed (any error, a Conflict included)
	// and until the next sync commits: the status is kept and the pod needs a sync (a
	// fresh GET decides between deleting it again and forgetting the status).
	deleteFailed bool
}

// cache is the pure machine of the manager: versioned statuses and the decisions on them.
// It is not safe for concurrent use, never blocks, never reads the clock and never calls
// out; the Manager wraps it with a lock and talks to the API server.
type cache struct {
	entries map[types.UID]*entry
	// mirrors maps the UID of a mirror pod seen on the server to its static pod's UID
	// (entry.mirrorUID is the reverse); a mapping whose entry is gone is removed with it.
	mirrors map[types.UID]types.UID
	// queues lists, per lane and in order, the UIDs whose status changed since their last
	// sync; each live at most once (entry.queued, in the queue of entry.lane; a UID left in
	// the other lane's queue when its pod finished is skipped there).
	queues [numLanes]queue
	// writing holds the UID of every pod with a sync in flight (at most one per pod), with
	// its lane and whether the pod was taken from the queue meanwhile (then it is queued
	// again when the sync ends, so its newer version is written after the older one's call
	// returned). Keyed by UID, not by entry: a forgotten entry's sync still blocks a new one.
	writing map[types.UID]write
	// bounds are the write bounds (schedule.go); inFlight counts the writes in flight per
	// lane. Invariant: inFlight[laneStatus] <=
	// bounds.maxStatus and inFlight[laneStatus]+inFlight[laneFinal] <= bounds.max.
	bounds   writeBounds
	inFlight [numLanes]int
}

// newCache returns an empty cache with the default write bounds.
func newCache() *cache {
	return &cache{entries: make(map[types.UID]*entry), mirrors: make(map[types.UID]types.UID),
		writing: make(map[types.UID]write), bounds: newWriteBounds(DefaultMaxConcurrentWrites)}
}

// checkPhase refuses an unknown phase, and a phase change away from a terminal phase the
// cached status (cached, may be nil) already has.
func checkPhase(cached *v1.PodStatus, p v1.PodPhase) error {
	switch p {
	case "", v1.PodPending, v1.PodRunning, v1.PodSucceeded, v1.PodFailed, v1.PodUnknown:
	default:
		return fmt.Errorf("%w: unknown phase %q", ErrInvalidPhase, p)
	}
	if cached != nil && IsTerminalPhase(cached.Phase) && p != cached.Phase {
		return fmt.Errorf("%w: %s is final, got %q", ErrInvalidPhase, cached.Phase, p)
	}
	return nil
}

// current is what a setter reads of a pod's cache entry under the lock, to compute a new
// version without it: the entry's identity and version, and its status (shared: a stored
// status is never modified).
type current struct {
	e        *entry        // nil: nothing cached
	status   *v1.PodStatus // nil: nothing cached
	version  uint64
	finished bool
}

// cached returns the cached status (read only), nil if none.
func (cur *current) cached() *v1.PodStatus { return cur.status }

// current returns the pod's entry as it is now.
func (c *cache) current(uid types.UID) current {
	e := c.entries[uid]
	if e == nil {
		return current{}
	}
	return current{e: e, version: e.version, status: e.status, finished: e.podIsFinished}
}

// newVersion is a status prepared outside the lock from a current, for store.
type newVersion struct {
	from current
	pod  *v1.Pod
	// status is the status to store: the prepared one, or the cached one when a forced
	// version equals it.
	status   *v1.PodStatus
	finished bool
	// skip is true when the status equals the cached one and the set is not forced: only
	// the pod object is refreshed.
	skip bool
	now  time.Time
}

// prepare applies the kubelet's updateStatusInternal rules to status (the caller's copy,
// handed over: it is modified, and stored if the version is) as the next version after
// cur: pure, it reads neither the cache nor the clock. base is the status to compare
// against when nothing is cached (the mirror pod's status, else pod.Status). An illegal
// container transition (ErrIllegalTransition) or phase (ErrInvalidPhase) is an error. A
// status identical to the cached one (ignoring conditions other clients own) is skipped
// unless mode is setForced or setFinished; setFinished marks the pod finished (for good,
// unless it is static). A forced version whose prepared status equals the cached one
// (patch.FieldsEqual: a patch from one to the other is empty) keeps the cached
// status, as an entry keeps the server's status equal to its own (statusToKeep): the
// manager does not hold two equal statuses, and status is not stored.
func prepare(pod *v1.Pod, status *v1.PodStatus, base *v1.PodStatus, cur current, mode setMode, now time.Time) (newVersion, error) {
	force, finished := mode != setIfChanged, mode == setFinished
	old := base
	if cur.status != nil {
		old = cur.status
	}
	if old == nil {
		old = &pod.Status
	}
	if err := checkPhase(cur.cached(), status.Phase); err != nil {
		return newVersion{}, fmt.Errorf("pod %s/%s (%s): %w", pod.Namespace, pod.Name, pod.UID, err)
	}
	if err := CheckContainerStateTransition(pod, old, status); err != nil {
		return newVersion{}, fmt.Errorf("pod %s/%s (%s): %w", pod.Namespace, pod.Name, pod.UID, err)
	}
	for _, t := range transitionTimeConditions() {
		setTransitionTime(status, old, t, now)
	}
	// status.StartTime, if set, is the caller's copy too: written in place (unless it is
	// old's own, which then has the value already).
	switch {
	case old.StartTime != nil && !old.StartTime.IsZero():
		if status.StartTime == nil {
			status.StartTime = new(metav1.Time)
		}
		if status.StartTime != old.StartTime {
			*status.StartTime = *old.StartTime
		}
	case status.StartTime == nil:
		t := metav1.NewTime(now)
		status.StartTime = &t
	case status.StartTime.IsZero():
		*status.StartTime = metav1.NewTime(now)
	}
	if old.ObservedGeneration > status.ObservedGeneration {
		status.ObservedGeneration = old.ObservedGeneration
	}
	if len(status.VolumeHealth) == 0 && len(old.VolumeHealth) > 0 {
		status.VolumeHealth = make([]v1.PodVolumeHealth, len(old.VolumeHealth))
		for i := range old.VolumeHealth {
			old.VolumeHealth[i].DeepCopyInto(&status.VolumeHealth[i])
		}
	}
	NormalizeStatus(pod, status)

	nv := newVersion{from: cur, pod: pod, status: status, finished: finished || stillFinished(cur, pod), now: now}
	switch {
	case cur.status == nil:
	case !force:
		nv.skip = statusEqualByKubelet(cur.status, status)
	case patch.FieldsEqual(cur.status, status, ""):
		nv.status = cur.status
	}
	return nv, nil
}

// stillFinished reports whether the pod of cur stays finished whatever the mode of the
// next version: it is, and it is not static.
func stillFinished(cur current, pod *v1.Pod) bool {
	return cur.e != nil && cur.finished && !IsStaticPod(pod)
}

// keepCached is the version after cur (which has a status) that keeps the cached status
// as it is, without preparing it again: what prepare would give a forced version (mode
// setForced or setFinished) equal to it, for a setter that knows the status would not
// change (TerminatePod of a pod already terminated).
func keepCached(pod *v1.Pod, cur current, mode setMode, now time.Time) newVersion {
	return newVersion{from: cur, pod: pod, status: cur.status, finished: mode == setFinished || stillFinished(cur, pod), now: now}
}

// store records nv as the newest version of its pod's status, if the entry is still the
// one nv was prepared from (same entry, same version); stale is true otherwise, and the
// caller prepares again. changed is whether a new version was stored (not for a skip).
func (c *cache) store(nv newVersion) (changed, stale bool) {
	uid := nv.pod.UID
	e := c.entries[uid]
	if e != nv.from.e || (e != nil && e.version != nv.from.version) {
		return false, true
	}
	if nv.skip {
		e.pod = nv.pod
		return false, false
	}
	if e == nil {
		e = &entry{}
		c.entries[uid] = e
	}
	e.pod = nv.pod
	e.status = nv.status
	e.version++
	e.podIsFinished = nv.finished
	if e.firstUnsent.IsZero() {
		e.firstUnsent = nv.now
	}
	e.versionAt = nv.now
	c.enqueue(uid, e)
	return true, false
}

// set is prepare and store in one, under the caller's lock (tests).
func (c *cache) set(pod *v1.Pod, status v1.PodStatus, base *v1.PodStatus, mode setMode, now time.Time) (bool, error) {
	nv, err := prepare(pod, &status, base, c.current(pod.UID), mode, now)
	if err != nil {
		return false, err
	}
	changed, _ := c.store(nv)
	return changed, nil
}

// needsUpdate reports whether the pod's status must be synced (the kubelet's needsUpdate):
//   - a version the server does not have;
//   - a final delete that failed (retried until the pod is deleted, gone or recreated);
//   - or, for a finished pod that is not a mirror pod, the final steps are still open: the
//     pod can be deleted (CanBeDeleted on the server's copy), or the server's copy is
//     unknown or stale while the node agent saw a deletionTimestamp, or the terminal phase
//     is not on the server yet (a merge held it back while containers could still run).
//
// This is what lets a finished pod be written and deleted without another status change.
func (e *entry) needsUpdate() bool {
	if e.sentVersion < e.version || e.deleteFailed {
		return true
	}
	if !e.podIsFinished || IsMirrorPod(e.server) || IsStaticPod(e.pod) {
		return false
	}
	if e.server == nil {
		return e.pod.DeletionTimestamp != nil
	}
	if CanBeDeleted(e.server, *e.status, true) {
		return true
	}
	if e.server.DeletionTimestamp == nil && e.pod.DeletionTimestamp != nil {
		return true
	}
	return IsTerminalPhase(e.status.Phase) && !IsTerminalPhase(e.server.Status.Phase)
}

// snapshot is what one sync of one pod needs, copied out under the lock.
type snapshot struct {
	uid      types.UID
	e        *entry // identity: the sync's results apply only if the entry is still this one
	pod      *v1.Pod
	status   *v1.PodStatus // shared with the entry: read only
	version  uint64
	finished bool
	server   *v1.Pod
	at       time.Time // when the entry got this version
}

func (e *entry) snapshot(uid types.UID) snapshot {
	return snapshot{uid: uid, e: e, pod: e.pod, status: e.status, version: e.version, finished: e.podIsFinished, server: e.server, at: e.versionAt}
}

// statusToKeep decides, without the lock, which object the entry of the snapshot s holds
// as its status once a sync that ended with server (what the entry keeps of the server's
// copy, nil: unknown) commits, if the entry still holds s's status; nil means that one:
//   - the server's status when server is new and has exactly s's status (a patch from one
//     to the other is empty): the manager then keeps one status per pod instead of its
//     own and the server's (both are never modified);
//   - an own copy when s's status is the status of s's server copy (taken by an earlier
//     sync) and the sync ended with another copy: the replaced copy is not kept alive for
//     its status.
func statusToKeep(s *snapshot, server *v1.Pod) *v1.PodStatus {
	switch {
	case server != nil && server != s.server && server.UID == s.uid && patch.FieldsEqual(s.status, &server.Status, ""):
		return &server.Status
	case server != s.server && s.server != nil && s.status == &s.server.Status:
		return s.status.DeepCopy()
	}
	return nil
}

// keepServer returns what an entry keeps of p, the server's pod from a GET or a PATCH
// answer (nil: unknown): what a later sync reads of it (its identity, resourceVersion,
// generation, deletion, mirror annotation and status), sharing them with p. The rest of p
// (its spec, labels, other annotations, managed fields: an answer decoded from the API
// server is a whole pod) is not kept alive with the entry.
func keepServer(p *v1.Pod) *v1.Pod {
	if p == nil {
		return nil
	}
	k := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			Generation: p.Generation, DeletionTimestamp: p.DeletionTimestamp,
			DeletionGracePeriodSeconds: p.DeletionGracePeriodSeconds,
		},
		Status: p.Status,
	}
	if v, ok := p.Annotations[v1.MirrorPodAnnotationKey]; ok {
		k.Annotations = map[string]string{v1.MirrorPodAnnotationKey: v}
	}
	return k
}

// sameServerState reports whether pod, the node agent's newest object of a pod, says what
// server, the entry's copy of the server's pod, says to a sync: the same UID, deletion and
// status (patch.FieldsEqual: a patch from one to the other is empty). The node's
// object can then stand for the copy. Called without the lock.
func sameServerState(server, pod *v1.Pod) bool {
	return server != nil && pod != nil && server != pod && server.UID == pod.UID &&
		(server.DeletionTimestamp == nil) == (pod.DeletionTimestamp == nil) &&
		IsMirrorPod(server) == IsMirrorPod(pod) &&
		patch.FieldsEqual(&server.Status, &pod.Status, "")
}

// takeServer makes pod the entry's copy of the server's pod in place of server
// (sameServerState), if the entry still holds server, and its status if the entry's
// status was server's: the manager then holds no object or status of its own for the pod
// beyond the node's.
func (e *entry) takeServer(server, pod *v1.Pod) {
	if e.server != server {
		return // a sync replaced it meanwhile
	}
	if e.status == &server.Status {
		e.status = &pod.Status
	}
	e.server = pod
}

// commit records the outcome of a sync: the server has s.version (when sent) and server is
// its current copy (nil: unknown); keep, if not nil, replaces s's status as the entry's
// (statusToKeep). It returns whether the entry needs another sync now, and when the oldest
// version just written was set (zero if nothing new was written).
func (c *cache) commit(s snapshot, sent bool, server *v1.Pod, keep *v1.PodStatus) (again bool, setAt time.Time) {
	e := c.entries[s.uid]
	if e != s.e {
		return false, time.Time{} // forgotten or replaced meanwhile
	}
	if keep != nil && e.status == s.status {
		e.status = keep
	}
	if sent && s.version > e.sentVersion {
		e.sentVersion = s.version
		setAt = e.firstUnsent
		e.firstUnsent = time.Time{}
		if e.sentVersion < e.version {
			e.firstUnsent = s.at // newer versions are pending; s.at is a lower bound
		}
	}
	e.server = server
	e.deleteFailed = false
	if server != nil && server.UID != e.mirrorUID && IsMirrorPod(server) && IsStaticPod(e.pod) {
		if e.mirrorUID != "" && c.mirrors[e.mirrorUID] == s.uid {
			delete(c.mirrors, e.mirrorUID)
		}
		e.mirrorUID = server.UID
		c.mirrors[server.UID] = s.uid
	}
	return e.sentVersion < e.version, setAt
}

// retryDelete records that the final delete of the snapshot's pod failed: the entry (if
// still the snapshot's) keeps needing a sync until one commits or forgets it.
func (c *cache) retryDelete(s snapshot) {
	if e := c.entries[s.uid]; e == s.e {
		e.deleteFailed = true
	}
}

// byMirrorUID returns the entry of the static pod whose mirror pod, as last seen on the
// server, has the UID uid; nil if none.
func (c *cache) byMirrorUID(uid types.UID) *entry {
	e := c.entries[c.mirrors[uid]]
	if e == nil || e.mirrorUID != uid {
		return nil
	}
	return e
}

// remove deletes the entry of uid and its mirror index.
func (c *cache) remove(uid types.UID) {
	if e := c.entries[uid]; e != nil && e.mirrorUID != "" && c.mirrors[e.mirrorUID] == uid {
		delete(c.mirrors, e.mirrorUID)
	}
	delete(c.entries, uid)
}

// forget drops the pod's status if the entry is still the snapshot's.
func (c *cache) forget(s snapshot) bool {
	if c.entries[s.uid] != s.e {
		return false
	}
	c.remove(s.uid)
	return true
}

// setTransitionTime stamps the LastTransitionTime of the condition of type t in status:
// kept from old when its Status is unchanged, else now.
func setTransitionTime(status, old *v1.PodStatus, t v1.PodConditionType, now time.Time) {
	i := findCondition(status.Conditions, t)
	if i < 0 {
		return
	}
	ltt := metav1.NewTime(now)
	if j := findCondition(old.Conditions, t); j >= 0 && old.Conditions[j].Status == status.Conditions[i].Status {
		ltt = old.Conditions[j].LastTransitionTime
	}
	status.Conditions[i].LastTransitionTime = ltt
}

// statusEqualByKubelet compares two statuses as the kubelet does before skipping an update:
// the conditions the kubelet owns or shares (DisruptionTarget) must match by type, all other
// conditions are ignored, and every other field must be semantically equal.
func statusEqualByKubelet(a, b *v1.PodStatus) bool {
	if !kubeletConditionsEqual(a.Conditions, b.Conditions) || !kubeletConditionsEqual(b.Conditions, a.Conditions) {
		return false
	}
	// Field by field in place, by the patch's own comparisons (patch.FieldsEqual): no copy of either
	// status, no boxing.
	return patch.FieldsEqual(a, b, "conditions")
}

func kubeletConditionsEqual(a, b []v1.PodCondition) bool {
	for i := range a {
		if !IsKubeletOwnedCondition(a[i].Type) && a[i].Type != v1.DisruptionTarget {
			continue
		}
		j := findCondition(b, a[i].Type)
		if j < 0 || !patch.ConditionEqual(&a[i], &b[j]) {
			return false
		}
	}
	return true
}
