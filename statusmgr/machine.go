package statusmgr

import (
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// MachineConfig configures a Machine. Every field has a default.
type MachineConfig struct {
	// MaxConflictRetries is how often one write re-reads the pod and retries after a
	// Conflict before leaving it to the next full sync. 0 means DefaultMaxConflictRetries;
	// negative is an error.
	MaxConflictRetries int
	// MaxConcurrentWrites bounds the writes in flight (see Config.MaxConcurrentWrites).
	// 0 means DefaultMaxConcurrentWrites; negative is an error.
	MaxConcurrentWrites int
	// UpdateStatus: a write that holds the Facts' Source asks for a status update
	// (VerbUpdate) instead of a patch (see Config.UpdateStatus).
	UpdateStatus bool
}

// Machine is the status manager's whole state and every decision on it, without IO: the
// versioned statuses (the setters), the write policy (NextWrite: which pod's status is
// written next, within the bounds of MaxConcurrentWrites and MaxConcurrentStatusWrites)
// and the steps of each write (StartWrite, Answer: the GET, PATCH and DELETE calls to
// make, what each answer means). The time is an argument, it starts no goroutine and calls
// nothing of its caller's. Not safe for concurrent use: a runner (the Manager) serializes
// its calls and makes the API calls it asks for, without holding whatever lock guards it.
//
// A runner's loop:
//
//	m.QueueAll() // every SyncPeriod: a full sync
//	for w, ok := m.NextWrite(); ok; w, ok = m.NextWrite() {
//		// (typically on a goroutine of its own)
//		r, err := m.StartWrite(now, w.UID, facts(w)) // what the PodLookup answers of w.Pod
//		for !r.Done() {
//			a := call(r.Call) // the StatusPatcher call
//			r, err = m.Answer(now, w.UID, a)
//		}
//		// r.End: how the write ended
//	}
//
// A write holds its slot from NextWrite until its Ready is done; a pod set again while
// its write is in flight is written again after it.
type Machine struct {
	c            *cache
	maxConflict  int
	updateStatus bool
	stats        Stats
	// syncs holds the sync of every write in flight (granted by NextWrite or claim), by
	// UID; spare keeps ended ones for the next writes.
	syncs map[types.UID]*podSync
	spare []*podSync
}

// NewMachine validates cfg and returns an empty Machine. Every problem is returned,
// joined, each wrapping ErrInvalidConfig.
func NewMachine(cfg MachineConfig) (*Machine, error) {
	var errs []error
	if cfg.MaxConflictRetries < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxConflictRetries %d is negative", ErrInvalidConfig, cfg.MaxConflictRetries))
	}
	if cfg.MaxConcurrentWrites < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxConcurrentWrites %d is negative", ErrInvalidConfig, cfg.MaxConcurrentWrites))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if cfg.MaxConflictRetries == 0 {
		cfg.MaxConflictRetries = DefaultMaxConflictRetries
	}
	if cfg.MaxConcurrentWrites == 0 {
		cfg.MaxConcurrentWrites = DefaultMaxConcurrentWrites
	}
	m := &Machine{c: newCache(), maxConflict: cfg.MaxConflictRetries, updateStatus: cfg.UpdateStatus, syncs: make(map[types.UID]*podSync)}
	m.c.bounds = newWriteBounds(cfg.MaxConcurrentWrites)
	return m, nil
}

// Write is a write the write policy granted (NextWrite): one sync of one pod's status. It
// holds its slot until the Ready of its last call is done.
type Write struct {
	UID types.UID
	// Pod is the node agent's pod as the Machine last got it (read only): what the runner
	// asks its PodLookup about for the write's Facts.
	Pod *v1.Pod
	// Finished is true once TerminatePod ran for the pod.
	Finished bool
}

// Facts is what the runner knows of a pod when its write starts: what its PodLookup and
// CouldHaveRunningContainers answered (called without a lock).
type Facts struct {
	// Lookup is true when the runner has a PodLookup; the fields below are its answers.
	// Without one, a static pod's status goes to any mirror pod of its name and a pod's
	// first patch waits for a GET.
	Lookup bool
	// Source is the lookup's pod of the UID (GetPodByUID; nil if it has none): the node
	// agent still has the pod, and, when it came from the API server (it has a
	// resourceVersion), it stands in for a GET before the first patch.
	Source *v1.Pod
	// Mirror is, for a static pod, the lookup's mirror pod (GetMirrorPodByPod; nil if none:
	// nothing is written until there is one).
	Mirror *v1.Pod
	// CouldRunContainers is CouldHaveRunningContainers's answer (without it, !Finished):
	// while true, a terminal phase is not written.
	CouldRunContainers bool
}

// Ready is what a write asks of its runner next: a StatusPatcher call, or its end. The
// call (and its patch) is the runner's until it hands the answer to Answer.
type Ready struct {
	// Call is the call to make; its Verb is "" once the write is done.
	Call Call
	// End is how the write ended, once it is done.
	End End
}

// Done reports whether the write is over (End is set, the Machine has recorded it and its
// slot is free).
func (r Ready) Done() bool { return r.Call.Verb == "" }

// End is how a write ended.
type End struct {
	// Pod is the node agent's pod of the write (read only), Version the version written.
	Pod     *v1.Pod
	Version uint64
	// Outcome says in a word how it ended: "synced" (the server has the version),
	// "deleted" (the final delete succeeded; the status is forgotten), "gone" (no such pod
	// on the server; forgotten), "recreated" (the name is another pod's; forgotten),
	// "no-mirror" (a static pod without its mirror pod; kept), "not-found-desired" (no such
	// pod on the server but the node agent still has it; kept), "failed" (a call failed;
	// kept and retried by the next full sync), "delete-failed" (the final delete failed;
	// kept, the next full sync reads the pod and decides).
	Outcome string
	// Err is the error of "failed" and "delete-failed": it wraps ErrAPI (and the call's
	// error) or ErrEncode.
	Err error
	// Since is when the oldest version the write put on the server was set (zero when it
	// put none there): the start of the pod status sync latency.
	Since time.Time

	reason reason
}

// NextWrite is the write policy's decision for one more write: the first queued pod of the
// status lane (the pods not finished) that needs a sync and has no write in flight, if
// fewer than MaxConcurrentStatusWrites of that lane are in flight, else the first such pod
// of the finished pods' lane, within MaxConcurrentWrites writes in flight in all. false
// when no write may start. Hand the write's Facts to StartWrite.
func (m *Machine) NextWrite() (Write, bool) {
	s, _, ok := m.c.nextWrite()
	if !ok {
		return Write{}, false
	}
	return m.begin(s), true
}

// claim is Sync's way in: the write of the pod with the UID, if it needs a sync, has none
// in flight and its lane has a free slot (claimBusy: wait for a write to end and try
// again; claimNone: nothing to write).
func (m *Machine) claim(uid types.UID) (Write, claimResult) {
	s, res := m.c.claim(uid)
	if res != claimed {
		return Write{}, res
	}
	return m.begin(s), claimed
}

// begin keeps the sync of a granted write until it starts.
func (m *Machine) begin(s snapshot) Write {
	var ps *podSync
	if n := len(m.spare); n > 0 {
		ps, m.spare = m.spare[n-1], m.spare[:n-1]
	} else {
		ps = new(podSync)
	}
	*ps = podSync{snap: s}
	m.syncs[s.uid] = ps
	return Write{UID: s.uid, Pod: s.pod, Finished: s.finished}
}

// StartWrite starts the write of the pod with the UID, which NextWrite granted, with what
// the runner knows of the pod, and returns its first call (or its end). An error wrapping
// ErrUnknownPod, and nothing changed, when no such write waits to start.
func (m *Machine) StartWrite(now time.Time, uid types.UID, f Facts) (Ready, error) {
	ps, err := m.starting(uid, f)
	if err != nil {
		return Ready{}, err
	}
	return m.advance(now, ps, Answer{}), nil
}

// starting makes the sync of the granted write of the pod with the UID start from f.
func (m *Machine) starting(uid types.UID, f Facts) (*podSync, error) {
	ps := m.syncs[uid]
	if ps == nil || ps.started {
		return nil, fmt.Errorf("%w: no write of pod %s waits to start", ErrUnknownPod, uid)
	}
	s := ps.snap
	in := podSyncInput{Pod: s.pod, Status: *s.status, Finished: s.finished, CouldRunContainers: f.CouldRunContainers,
		Server: s.server, MaxConflictRetries: m.maxConflict, Update: m.updateStatus}
	mirror, found := (*v1.Pod)(nil), true
	if f.Lookup {
		if IsStaticPod(s.pod) {
			mirror, found = f.Mirror, f.Mirror != nil
		}
		in.Desired = f.Source != nil && f.Source.UID == s.uid
		if in.Desired {
			in.Source = f.Source
		}
	}
	in.Target, in.MirrorUID = targetOf(s.pod, mirror, found)
	*ps = newPodSync(in)
	ps.snap, ps.started = s, true
	return ps, nil
}

// Answer hands in the answer to the call the write of the pod with the UID asked for last,
// and returns its next call (or its end). An error wrapping ErrUnknownPod, and nothing
// changed, when no write of the pod waits for an answer.
func (m *Machine) Answer(now time.Time, uid types.UID, a Answer) (Ready, error) {
	ps := m.syncs[uid]
	if ps == nil || !ps.started || ps.waiting == "" {
		return Ready{}, fmt.Errorf("%w: no write of pod %s waits for an answer", ErrUnknownPod, uid)
	}
	return m.advance(now, ps, a), nil
}

// advance takes the answer and, once the write is done, records how it ended.
func (m *Machine) advance(now time.Time, ps *podSync, a Answer) Ready {
	st := ps.Step(a, now)
	if !st.Done() {
		return Ready{Call: st.Call}
	}
	return Ready{End: m.end(ps)}
}

// end records how the write of ps ended (ps is done) and frees its slot. A write's steps
// (podSync.Step, settle) touch only the write's own podSync, which reads only what never
// changes (the snapshot's status and pods): the Manager runs them without its lock,
// calling the Machine under the lock only to start and to end the write.
func (m *Machine) end(ps *podSync) End {
	end := m.finish(ps)
	delete(m.syncs, ps.snap.uid)
	m.c.done(ps.snap.uid)
	*ps = podSync{}
	m.spare = append(m.spare, ps)
	return end
}

// finish records the outcome of an ended write in the cache and the counters.
func (m *Machine) finish(ps *podSync) End {
	o := ps.out
	s := ps.snap
	end := End{Pod: s.pod, Version: s.version, Outcome: o.Reason.String(), Err: o.Err, reason: o.Reason}
	m.stats.add(ps.calls)
	if o.Result == resultForgotten {
		if o.Sent {
			_, end.Since = m.c.commit(s, true, nil, nil)
		}
		if m.c.forget(s) {
			m.stats.add(o.Stats)
		}
		return end
	}
	ps.settle()
	_, end.Since = m.c.commit(s, o.Sent, ps.keptServer, ps.keptStatus)
	if o.Reason == reasonDeleteFailed {
		m.c.retryDelete(s)
	}
	m.stats.add(o.Stats)
	return end
}

// QueueAll queues, after the pods already queued, every pod whose status needs a sync (a
// full sync: failed writes, finished pods to delete), in UID order.
func (m *Machine) QueueAll() { m.c.queueAll() }

// validPod checks a pod argument and counts a refusal.
func (m *Machine) validPod(pod *v1.Pod) error {
	switch {
	case pod == nil:
		m.stats.Invalid++
		return ErrNilPod
	case pod.UID == "":
		m.stats.Invalid++
		return fmt.Errorf("%w: pod %s/%s", ErrEmptyUID, pod.Namespace, pod.Name)
	}
	return nil
}

// SetPodStatus stores status (copied) as the newest version of pod's status, with the
// rules of Manager.SetPodStatus, at the time now; base is the status a pod without a
// cached one is compared against (a static pod's mirror pod's status; nil: pod.Status).
// It reports whether a new version was stored. Errors as Manager.SetPodStatus.
func (m *Machine) SetPodStatus(now time.Time, pod *v1.Pod, status v1.PodStatus, base *v1.PodStatus) (bool, error) {
	if err := m.validPod(pod); err != nil {
		return false, err
	}
	return m.update(now, pod, base, podStatusBuild(pod, status, true), podStatusMode(pod))
}

// TerminatePod stores the final status of pod, with the rules of Manager.TerminatePod, at
// the time now; base as for SetPodStatus. It reports whether a new version was stored.
func (m *Machine) TerminatePod(now time.Time, pod *v1.Pod, base *v1.PodStatus) (bool, error) {
	if err := m.validPod(pod); err != nil {
		return false, err
	}
	return m.update(now, pod, base, terminateBuild(pod), setFinished)
}

// SetContainerReadiness sets the Ready flag of a container of a pod with a cached status,
// as Manager.SetContainerReadiness, at the time now. It reports whether a new version was
// stored.
func (m *Machine) SetContainerReadiness(now time.Time, uid types.UID, containerID string, ready bool) (bool, error) {
	return m.setContainer(now, uid, containerID, readinessChange(ready, now))
}

// SetContainerStartup sets the Started flag of a container of a pod with a cached status,
// as Manager.SetContainerStartup, at the time now. It reports whether a new version was
// stored.
func (m *Machine) SetContainerStartup(now time.Time, uid types.UID, containerID string, started bool) (bool, error) {
	return m.setContainer(now, uid, containerID, startupChange(started))
}

func (m *Machine) setContainer(now time.Time, uid types.UID, containerID string, change containerChange) (bool, error) {
	pod, err := m.podOf(uid)
	if err != nil {
		return false, err
	}
	return m.update(now, pod, &pod.Status, containerBuild(pod, containerID, change), setIfChanged)
}

// podOf returns the pod object of a cached status (counting an empty UID).
func (m *Machine) podOf(uid types.UID) (*v1.Pod, error) {
	if uid == "" {
		m.stats.Invalid++
		return nil, ErrEmptyUID
	}
	e := m.c.entries[uid]
	if e == nil {
		return nil, fmt.Errorf("%w: no status for pod %s", ErrUnknownPod, uid)
	}
	return e.pod, nil
}

// update builds, prepares and stores the next version of pod's status in one go.
func (m *Machine) update(now time.Time, pod *v1.Pod, base *v1.PodStatus, build buildFunc, mode setMode) (bool, error) {
	if base == nil {
		base = &pod.Status
	}
	nv, built, err := prepareNext(m.c.current(pod.UID), pod, base, build, mode, now)
	if err != nil {
		m.refused(err)
		return false, err
	}
	if nv.pod == nil {
		return false, nil // nothing to store
	}
	changed, _ := m.c.store(nv)
	releaseUnstored(built, nv, changed)
	return changed, nil
}

// refused counts a status the rules refused.
func (m *Machine) refused(err error) {
	if errors.Is(err, ErrIllegalTransition) || errors.Is(err, ErrInvalidPhase) {
		m.stats.Refused++
	}
}

// RefreshPod records pod as the node agent's newest object of a pod whose status is
// cached, without a new status (see Manager.RefreshPod).
func (m *Machine) RefreshPod(pod *v1.Pod) {
	if pod == nil || pod.UID == "" {
		return
	}
	e := m.c.entries[pod.UID]
	if e == nil {
		return
	}
	server := e.server
	e.pod = pod
	if sameServerState(server, pod) {
		e.takeServer(server, pod)
	}
}

// PodStatus returns the cached status of the pod with the UID, or of the static pod whose
// mirror pod (as last seen on the server) has that UID: shared with the Machine, read only
// (it is never modified; a newer version replaces it).
func (m *Machine) PodStatus(uid types.UID) (*v1.PodStatus, bool) {
	e := m.c.entries[uid]
	if e == nil {
		e = m.c.byMirrorUID(uid)
	}
	if e == nil {
		return nil, false
	}
	return e.status, true
}

// RemoveOrphanedStatuses forgets the status of every pod whose UID is not a key of podUIDs
// and returns how many it forgot (Stats.Orphaned). A status forgotten here is never
// written (a write in flight ends without effect on the cache).
func (m *Machine) RemoveOrphanedStatuses(podUIDs map[types.UID]bool) int {
	n := 0
	for uid := range m.c.entries {
		if _, ok := podUIDs[uid]; !ok {
			m.c.remove(uid)
			n++
		}
	}
	m.stats.Orphaned += n
	return n
}

// Stats returns the counters.
func (m *Machine) Stats() Stats { return m.stats }

// buildFunc returns the status to store, given the cached one (nil if none; read only): a
// status of its own, which the caller may modify and store, or release to statusStructs
// when it does not store it; or, for a forced mode, cached itself: the new version keeps
// the cached status as it is (keepCached). ok false means there is nothing to store.
type buildFunc func(cached *v1.PodStatus) (status *v1.PodStatus, ok bool, err error)

// prepareNext builds and prepares the version after cur (pure: no cache, no lock). nv.pod
// is nil when there is nothing to store; built is the status build returned (to release
// when not stored).
func prepareNext(cur current, pod *v1.Pod, base *v1.PodStatus, build buildFunc, mode setMode, now time.Time) (nv newVersion, built *v1.PodStatus, err error) {
	status, ok, err := build(cur.cached())
	if err != nil || !ok {
		return newVersion{}, nil, err
	}
	if status == cur.status {
		return keepCached(pod, cur, mode, now), nil, nil
	}
	nv, err = prepare(pod, status, base, cur, mode, now)
	if err != nil {
		return newVersion{}, nil, err
	}
	return nv, status, nil
}

// releaseUnstored returns built (a status of prepareNext) to statusStructs when the entry
// does not hold it.
func releaseUnstored(built *v1.PodStatus, nv newVersion, changed bool) {
	if built != nil && (!changed || nv.status != built) {
		releaseStatusStruct(built)
	}
}

// podStatusMode is SetPodStatus's mode: forced once the pod is being deleted.
func podStatusMode(pod *v1.Pod) setMode {
	if pod.DeletionTimestamp != nil {
		return setForced
	}
	return setIfChanged
}

// podStatusBuild is SetPodStatus's build: status (copied when deepCopy, else taken over),
// its ObservedGeneration the pod's generation.
func podStatusBuild(pod *v1.Pod, status v1.PodStatus, deepCopy bool) buildFunc {
	// prepare writes *StartTime in place; the value given is restored before every
	// attempt without a copy, so that a retry (the Manager's, after another setter of the
	// pod) starts from status as given. prepare's other writes into the shared memory (the
	// conditions' transition times, NormalizeStatus's) give the same result when
	// repeated, and its writes to status's own fields go to the attempt's struct.
	var start metav1.Time
	if !deepCopy && status.StartTime != nil {
		start = *status.StartTime
	}
	return func(*v1.PodStatus) (*v1.PodStatus, bool, error) {
		s := newStatusStruct()
		if deepCopy {
			status.DeepCopyInto(s)
		} else {
			*s = status
			if s.StartTime != nil {
				*s.StartTime = start
			}
		}
		s.ObservedGeneration = pod.Generation
		return s, true, nil
	}
}

// terminateBuild is TerminatePod's build: TerminatedStatus of the cached status (else
// pod.Status), or the cached status itself when terminating it changes nothing.
func terminateBuild(pod *v1.Pod) buildFunc {
	return func(cached *v1.PodStatus) (*v1.PodStatus, bool, error) {
		from := &pod.Status
		if cached != nil {
			from = cached
			if !needsTermination(pod, cached) && !cached.StartTime.IsZero() && cutsNoMessage(pod, cached) &&
				CheckContainerStateTransition(pod, cached, cached) == nil {
				// The cached status is prepared (or equal to a status prepared) with this
				// pod's spec but for the termination message budget (ephemeral
				// containers) and the containers the spec lists: terminated and prepared
				// again, it would be equal to itself (prepare would keep the cached one).
				// Kept as it is.
				return cached, true, nil
			}
		}
		s := newStatusStruct()
		terminatedStatusInto(pod, from, s)
		return s, true, nil
	}
}

// containerChange changes one container's status in a copy of the pod's status; false
// when it is unchanged.
type containerChange func(pod *v1.Pod, s *v1.PodStatus, cs *v1.ContainerStatus) bool

// readinessChange is SetContainerReadiness's change: the Ready flag, then the pod's
// ContainersReady and Ready conditions.
func readinessChange(ready bool, now time.Time) containerChange {
	return func(pod *v1.Pod, s *v1.PodStatus, cs *v1.ContainerStatus) bool {
		if cs.Ready == ready {
			return false
		}
		cs.Ready = ready
		s.Conditions = putCondition(s.Conditions, ContainersReadyCondition(pod, s), now)
		s.Conditions = putCondition(s.Conditions, PodReadyCondition(pod, s), now)
		return true
	}
}

// startupChange is SetContainerStartup's change: the Started flag.
func startupChange(started bool) containerChange {
	return func(_ *v1.Pod, _ *v1.PodStatus, cs *v1.ContainerStatus) bool {
		if cs.Started != nil && *cs.Started == started {
			return false
		}
		cs.Started = &started
		return true
	}
}

// containerBuild is the build of SetContainerReadiness and SetContainerStartup: a copy of
// the cached status with change applied to the container with the runtime ID containerID.
func containerBuild(pod *v1.Pod, containerID string, change containerChange) buildFunc {
	return func(cached *v1.PodStatus) (*v1.PodStatus, bool, error) {
		if cached == nil {
			return nil, false, fmt.Errorf("%w: no status for pod %s", ErrUnknownPod, pod.UID)
		}
		s := cached.DeepCopy()
		for _, list := range [...][]v1.ContainerStatus{s.ContainerStatuses, s.InitContainerStatuses} {
			for i := range list {
				if list[i].ContainerID == containerID {
					return s, change(pod, s, &list[i]), nil
				}
			}
		}
		return nil, false, fmt.Errorf("%w: pod %s has no container %q", ErrUnknownPod, pod.UID, containerID)
	}
}

// resend marks the status of the snapshot s, already on the server, as not sent, when the
// entry is still s's and has sent it: the full sync's reconcile found the server's status
// (as the PodLookup sees it) changed by someone else. Its server copy is dropped: the
// write reads or borrows a fresh one.
func (m *Machine) resend(s snapshot) {
	e := m.c.entries[s.uid]
	if e != s.e || e.version != s.version || e.sentVersion != e.version {
		return // changed meanwhile, or not sent yet: a sync is due anyway
	}
	m.stats.Reconciled++
	e.sentVersion = 0
	e.server = nil
}
