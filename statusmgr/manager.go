package statusmgr

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/internal/validate"
)

// DefaultSyncPeriod is the period of the full sync when Config.SyncPeriod is 0.
const DefaultSyncPeriod = 10 * time.Second

// DefaultMaxConflictRetries is Config.MaxConflictRetries when it is 0.
const DefaultMaxConflictRetries = 2

// DefaultMaxConcurrentWrites is Config.MaxConcurrentWrites when it is 0.
const DefaultMaxConcurrentWrites = 64

// MaxConcurrentStatusWrites bounds, within Config.MaxConcurrentWrites, the writes of pods
// that are not finished (TerminatePod has not run for them): so few that a burst of
// status changes coalesces (a pod's versions set while it waits are sent as one) instead of
// each version being sent as it comes.
const MaxConcurrentStatusWrites = 1

// Config configures a Manager. Patcher is required; everything else has a default.
type Config struct {
	// Patcher is the caller's API client. Required.
	Patcher StatusPatcher
	// Lookup is the node agent's view of its desired pods (optional). Without it, the
	// manager knows a pod from the last SetPodStatus/TerminatePod call, accepts any mirror
	// pod on the server as a static pod's mirror, and does not reconcile (see Stats.Reconciled).
	Lookup PodLookup
	// CouldHaveRunningContainers answers, for a pod UID, whether any of its containers may
	// still run (the pod worker knows). While it says true, a terminal phase is not written
	// (MergePodStatusAt rule 5). nil means "until TerminatePod was called for the pod".
	CouldHaveRunningContainers func(uid types.UID) bool
	// Clock is the time source of the sync loop and of the statuses' timestamps.
	// nil means clock.RealClock{}.
	Clock clock.Clock
	// SyncPeriod is the period of the full sync, which retries every status that is not
	// on the server yet. 0 means DefaultSyncPeriod; negative is an error.
	SyncPeriod time.Duration
	// MaxConflictRetries is how often one sync re-reads the pod and retries after a
	// Conflict before leaving it to the next sync. 0 means DefaultMaxConflictRetries;
	// negative is an error.
	MaxConflictRetries int
	// MaxConcurrentWrites bounds how many pods' statuses are written at once (Run's
	// immediate and full syncs and Sync together): the StatusPatcher sees at most this
	// many calls in flight, and never two for one pod. Of these, at most
	// MaxConcurrentStatusWrites (1) write pods that are not finished, so that a burst of
	// status changes coalesces into few patches, as with the kubelet's single writer; the
	// finished pods' final work (the terminal status after TerminatePod, then the delete)
	// may use every slot, and neither kind waits behind the other's queue. With an API
	// round trip of r and two calls per finished pod, n pods finishing at once are all
	// deleted after about 2·r·n/MaxConcurrentWrites (the default: 3,000 pods at 1 ms, p50
	// 48 ms, all within 94 ms). 1 writes one pod at a time, as the kubelet does. 0 means
	// DefaultMaxConcurrentWrites; negative is an error.
	MaxConcurrentWrites int
	// Logger receives the manager's logs. nil discards them.
	Logger *slog.Logger
	// UpdateStatus makes a write that holds the node agent's current copy of the pod from
	// the API server (the PodLookup's, with a resourceVersion) send the merged status as a
	// status update guarded by that copy's resourceVersion and UID, the call
	// virtual-kubelet makes, instead of the kubelet's strategic-merge patch; a Conflict
	// (the copy was stale) reads the pod and patches, as without it. Conditions another
	// client wrote are never lost: the update is refused unless the server still has the
	// copy the status was merged with. The Patcher must implement StatusUpdater. false
	// (the default): every status write is a patch, as the kubelet's.
	UpdateStatus bool
	// ObserveSyncLatency, if set, is called (without the manager's lock) each time a status
	// reaches the server, with the time since the oldest version it covers was set (the
	// kubelet's pod status sync duration; an upper bound when newer versions arrived
	// during the sync). It must not block; it is called from the writing goroutines,
	// several at once.
	ObserveSyncLatency func(latency time.Duration)
}

// Stats counts what the manager did and dropped. All counts only grow.
type Stats struct {
	// API calls made (failed ones included) and the bytes of the patches sent; Updates
	// are the status updates of Config.UpdateStatus.
	Gets, Patches, Deletes, PatchBytes, Updates int
	// Conflicts and NotFounds are API answers of those kinds; Errors counts every other
	// failed call (each is logged and retried).
	Conflicts, NotFounds, Errors int
	// Refused counts statuses refused for an illegal container state transition or an
	// invalid phase (ErrIllegalTransition, ErrInvalidPhase).
	Refused int
	// Invalid counts calls refused for bad input (nil pod, empty UID).
	Invalid int
	// Recreated counts statuses forgotten because the server's pod has another UID.
	Recreated int
	// Gone counts statuses forgotten because the pod was not found on the server.
	Gone int
	// Deleted counts pods deleted from the server (then forgotten).
	Deleted int
	// Orphaned counts statuses removed by RemoveOrphanedStatuses.
	Orphaned int
	// NoMirror counts syncs of static pods skipped for want of a mirror pod.
	NoMirror int
	// Reconciled counts statuses sent again because the lookup's copy of the server's
	// status differed from the cached one (full syncs with a PodLookup only).
	Reconciled int
}

// Manager is the status manager: it caches the node agent's pod statuses as versions and
// writes them to the API server through a StatusPatcher, then deletes finished pods. See
// the package documentation. Its methods are safe for concurrent use.
type Manager struct {
	patcher  StatusPatcher
	lookup   PodLookup
	couldRun func(types.UID) bool
	clock    clock.Clock
	period   time.Duration
	log      *slog.Logger
	observe  func(time.Duration)

	// wake has room for one signal: "the queue may hold a pod to write, or a write ended".
	wake chan struct{}
	// maxWrites is Config.MaxConcurrentWrites: the most writer goroutines Run keeps (the
	// bounds themselves are the cache's decision, schedule.go).
	maxWrites int

	mu   sync.Mutex // guards mach, running and idle
	mach *Machine
	// running is true while Run is active.
	running bool
	// idle, when not nil, is closed (and set to nil) when a write ends; Sync waits on it
	// for a pod whose write is in flight, or for a free slot.
	idle chan struct{}
}

// New validates cfg and returns a Manager. Call Run to start syncing. Every problem (a nil
// Patcher, an interface field holding a nil pointer or the like, a negative duration or
// count) is returned, joined, each wrapping ErrInvalidConfig.
func New(cfg Config) (*Manager, error) {
	var errs []error
	if cfg.Patcher == nil {
		errs = append(errs, fmt.Errorf("%w: Patcher is nil", ErrInvalidConfig))
	}
	for _, bad := range validate.TypedNils(
		validate.Field{Name: "Patcher", Value: cfg.Patcher},
		validate.Field{Name: "Lookup", Value: cfg.Lookup},
		validate.Field{Name: "Clock", Value: cfg.Clock},
	) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrInvalidConfig, bad))
	}
	if cfg.SyncPeriod < 0 {
		errs = append(errs, fmt.Errorf("%w: SyncPeriod %v is negative", ErrInvalidConfig, cfg.SyncPeriod))
	}
	if cfg.MaxConflictRetries < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxConflictRetries %d is negative", ErrInvalidConfig, cfg.MaxConflictRetries))
	}
	if cfg.MaxConcurrentWrites < 0 {
		errs = append(errs, fmt.Errorf("%w: MaxConcurrentWrites %d is negative", ErrInvalidConfig, cfg.MaxConcurrentWrites))
	}
	if _, ok := cfg.Patcher.(StatusUpdater); cfg.UpdateStatus && !ok && cfg.Patcher != nil {
		errs = append(errs, fmt.Errorf("%w: UpdateStatus needs a Patcher that implements StatusUpdater, %T does not", ErrInvalidConfig, cfg.Patcher))
	}
	if cfg.MaxConcurrentWrites == 0 {
		cfg.MaxConcurrentWrites = DefaultMaxConcurrentWrites
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	m := &Manager{
		patcher:   cfg.Patcher,
		lookup:    cfg.Lookup,
		couldRun:  cfg.CouldHaveRunningContainers,
		clock:     cfg.Clock,
		period:    cfg.SyncPeriod,
		log:       cfg.Logger,
		observe:   cfg.ObserveSyncLatency,
		wake:      make(chan struct{}, 1),
		maxWrites: cfg.MaxConcurrentWrites,
	}
	var err error
	if m.mach, err = NewMachine(MachineConfig{MaxConflictRetries: cfg.MaxConflictRetries, MaxConcurrentWrites: cfg.MaxConcurrentWrites,
		UpdateStatus: cfg.UpdateStatus}); err != nil {
		return nil, err
	}
	if m.clock == nil {
		m.clock = clock.RealClock{}
	}
	if m.period == 0 {
		m.period = DefaultSyncPeriod
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	return m, nil
}

// validPod checks a pod argument and counts a refusal.
func (m *Manager) validPod(pod *v1.Pod) error {
	if pod != nil && pod.UID != "" {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mach.validPod(pod)
}

// baseStatus is the status a new entry is compared against: the mirror pod's for a static
// pod, else the pod's own. Called without the lock (it calls the lookup).
func (m *Manager) baseStatus(pod *v1.Pod) *v1.PodStatus {
	if m.lookup != nil && IsStaticPod(pod) {
		if mirror, ok := m.lookup.GetMirrorPodByPod(pod); ok && mirror != nil {
			return &mirror.Status
		}
	}
	return &pod.Status
}

// setMode says when a setter stores a new version.
type setMode int

const (
	// setIfChanged stores a new version only if the status changed.
	setIfChanged setMode = iota
	// setForced always stores a new version (SetPodStatus of a deleting pod).
	setForced
	// setFinished always stores a new version and marks the pod finished (TerminatePod).
	setFinished
)

// update is the common path of the setters: store a new version and wake the sync loop.
// The new version is built and prepared (compared, normalized, copied) without the lock,
// from the entry as it was (prepareNext, pure); the lock is taken only to read the entry
// and to store the result in the Machine, which is prepared again if the entry changed
// meanwhile (another setter of the same pod). A built status that is not stored (skipped,
// equal to the cached one, or stale) goes back to statusStructs for the next setter.
func (m *Manager) update(pod *v1.Pod, build buildFunc, mode setMode) error {
	base := m.baseStatus(pod)
	for {
		m.mu.Lock()
		cur := m.mach.c.current(pod.UID)
		m.mu.Unlock()
		nv, built, err := prepareNext(cur, pod, base, build, mode, m.clock.Now())
		if err != nil {
			m.mu.Lock()
			m.mach.refused(err)
			m.mu.Unlock()
			m.log.Warn("status update refused", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID, "err", err)
			return err
		}
		if nv.pod == nil {
			return nil // nothing to store
		}
		m.mu.Lock()
		changed, stale := m.mach.c.store(nv)
		m.mu.Unlock()
		releaseUnstored(built, nv, changed)
		if stale {
			continue
		}
		if changed {
			m.signal()
		}
		return nil
	}
}

func (m *Manager) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// SetPodStatus caches status as the newest version of pod's status and wakes the sync loop.
// status is copied (the caller keeps ownership). Its ObservedGeneration is set to the
// pod's metadata.generation, as the kubelet does (GA since 1.35), unless the old status
// (cached, else the mirror pod's or the pod's own) has a higher one, which is kept.
// LastTransitionTimes of the kubelet's conditions are stamped, StartTime is kept once
// set, and the status is normalized
// (NormalizeStatus). A status equal to the cached one is skipped, unless the pod has a
// deletionTimestamp: then it always makes a new version, so a deleting pod is synced (and
// deleted) even without a change. It returns an error wrapping ErrNilPod or ErrEmptyUID
// for bad input, ErrIllegalTransition when a terminated container would become
// non-terminated and ErrInvalidPhase for an unknown phase or one that leaves the terminal
// phase of the cached status (nothing is stored then); each is counted in Stats.
func (m *Manager) SetPodStatus(pod *v1.Pod, status v1.PodStatus) error {
	return m.setPodStatus(pod, status, true)
}

// SetPodStatusNoCopy is SetPodStatus without the copy, for a caller that built status for
// this call alone (the node agent's freshly generated status, once per sync): the manager
// takes status over and caches it as it is, after stamping and normalizing it in place.
// Everything status points to (its slices, its pointers and what they point to) must
// belong to status alone, shared with no pod, no other status and nothing else anyone
// reads or writes, and nobody may modify it after the call; the caller may still read it,
// as it reads PodStatusView. Results, errors and Stats are SetPodStatus's.
func (m *Manager) SetPodStatusNoCopy(pod *v1.Pod, status v1.PodStatus) error {
	return m.setPodStatus(pod, status, false)
}

// setPodStatus is SetPodStatus (deepCopy) and SetPodStatusNoCopy.
func (m *Manager) setPodStatus(pod *v1.Pod, status v1.PodStatus, deepCopy bool) error {
	if err := m.validPod(pod); err != nil {
		return err
	}
	return m.update(pod, podStatusBuild(pod, status, deepCopy), podStatusMode(pod))
}

// TerminatePod makes the final status of a pod whose containers have all stopped (call it
// when termination has finished, as the kubelet does from SyncTerminatedPod): starting
// from the cached status (else pod.Status) it applies TerminatedStatus (absent container
// states become failed, the phase becomes terminal), marks the pod finished and forces a
// sync. Once that status is on the server and the pod has a deletionTimestamp, the sync
// deletes the pod (CanBeDeleted) and forgets its status.
func (m *Manager) TerminatePod(pod *v1.Pod) error {
	if err := m.validPod(pod); err != nil {
		return err
	}
	return m.update(pod, terminateBuild(pod), setFinished)
}

// RefreshPod records pod as the node agent's newest object of a pod whose status is
// cached, without a new status: what the full sync's reconcile takes from the PodLookup
// (its deletionTimestamp, annotations), taken at once. A node agent calls it when its pod
// changed only in its status (a Reconcile), so that the manager does not keep an older
// object alive until its next setter or full sync. When pod says what the manager's copy
// of the server's pod says to a sync (the same UID, deletion and status: typically the
// object its last PATCH answered, come back through the node's watch), the manager keeps
// pod instead of that copy and shares its status, so that it holds no object or status
// of its own for the pod; the comparison runs without the manager's lock. Nothing is written because of it. nil, an empty UID and a pod
// without a cached status are ignored; pod is not modified afterwards by the manager, nor
// may it be by the caller.
func (m *Manager) RefreshPod(pod *v1.Pod) {
	if pod == nil || pod.UID == "" {
		return
	}
	m.mu.Lock()
	e := m.mach.c.entries[pod.UID]
	var server *v1.Pod
	if e != nil {
		e.pod, server = pod, e.server
	}
	m.mu.Unlock()
	if !sameServerState(server, pod) {
		return
	}
	m.mu.Lock()
	if m.mach.c.entries[pod.UID] == e {
		e.takeServer(server, pod)
	}
	m.mu.Unlock()
}

// SetContainerReadiness sets the Ready flag of the container with the runtime ID
// containerID (as in ContainerStatus.ContainerID) in the pod's cached status and
// recomputes the pod's ContainersReady and Ready conditions. An unchanged flag is a no-op.
// It returns an error wrapping ErrUnknownPod when no status is cached for the pod or the
// container is not in it.
func (m *Manager) SetContainerReadiness(podUID types.UID, containerID string, ready bool) error {
	return m.setContainer(podUID, containerID, readinessChange(ready, m.clock.Now()))
}

// SetContainerStartup sets the Started flag of the container with the runtime ID
// containerID in the pod's cached status (the startup probe's verdict). An unchanged flag is
// a no-op. Errors as SetContainerReadiness.
func (m *Manager) SetContainerStartup(podUID types.UID, containerID string, started bool) error {
	return m.setContainer(podUID, containerID, startupChange(started))
}

func (m *Manager) setContainer(podUID types.UID, containerID string, change containerChange) error {
	m.mu.Lock()
	pod, err := m.mach.podOf(podUID)
	m.mu.Unlock()
	if err != nil {
		return err
	}
	return m.update(pod, containerBuild(pod, containerID, change), setIfChanged)
}

// GetPodStatus returns a copy of the cached status of the pod, if any. A mirror pod's UID
// gives its static pod's status, as in the kubelet: the UID is translated by the
// Config.Lookup if it implements PodUIDTranslator; otherwise (or if that finds nothing)
// it is matched against the mirror pods the sync loop last saw on the server.
func (m *Manager) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	status := m.cachedStatus(uid)
	if status == nil {
		return v1.PodStatus{}, false
	}
	return *status.DeepCopy(), true
}

// PodStatusView is GetPodStatus without the copy, for a caller that only reads the status
// (the node agent computing the next status from the last one, once per sync): the result
// shares its slices and pointers with the manager's cache. The manager never modifies a
// status it cached (a newer version replaces it whole), so the result stays valid and
// unchanged for as long as the caller keeps it; the caller must not modify it or anything
// it points to (take GetPodStatus's copy for that).
func (m *Manager) PodStatusView(uid types.UID) (v1.PodStatus, bool) {
	status := m.cachedStatus(uid)
	if status == nil {
		return v1.PodStatus{}, false
	}
	return *status, true
}

// cachedStatus returns the cached status of the pod (GetPodStatus's lookup), nil if none;
// read only.
func (m *Manager) cachedStatus(uid types.UID) *v1.PodStatus {
	want := uid
	if t, ok := m.lookup.(PodUIDTranslator); ok {
		if tr := t.TranslatePodUID(uid); tr != "" {
			want = tr
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if status, ok := m.mach.PodStatus(want); ok {
		return status
	}
	if e := m.mach.c.byMirrorUID(uid); e != nil {
		return e.status
	}
	return nil
}

// RemoveOrphanedStatuses forgets the status of every pod whose UID is not a key of
// podUIDs (the pods the node agent still knows), as the kubelet does during housekeeping.
// A status forgotten here is never written.
func (m *Manager) RemoveOrphanedStatuses(podUIDs map[types.UID]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mach.RemoveOrphanedStatuses(podUIDs)
}

// Stats returns the counters.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mach.Stats()
}
