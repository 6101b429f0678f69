package podworker

import (
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilptr "k8s.io/utils/ptr"

	"github.com/podlife/podlife/grace"
	"github.com/podlife/podlife/internal/podfacts"
)

// Defaults of MachineConfig and Config.
const (
	DefaultResyncInterval = time.Minute
	DefaultBackoffInitial = time.Second
	DefaultBackoffMax     = 10 * time.Second
	// DefaultMaxConcurrentSyncs is the default bound of PodSyncer calls in flight at
	// once. The kubelet runs a goroutine per pod without a bound; a bound keeps the
	// goroutines (and their stacks) of a node that receives tens of thousands of pods at
	// once in check. A blocking SyncTerminatingPod holds its slot for up to the pod's
	// grace period: a node that expects more blocking syncs at once than this raises it,
	// or opts out with Unbounded.
	DefaultMaxConcurrentSyncs = 1024
)

// RuntimeHint is what the caller of Machine.UpdatePod knows of a pod in the runtime.
type RuntimeHint int

const (
	// RuntimeUnknown: the caller does not know whether anything of the pod runs.
	RuntimeUnknown RuntimeHint = iota
	// RuntimeStopped: the caller knows that nothing of the pod runs in the runtime.
	RuntimeStopped
)

// String returns "unknown" or "stopped", and a descriptive string for any other value.
func (h RuntimeHint) String() string {
	switch h {
	case RuntimeUnknown:
		return "unknown"
	case RuntimeStopped:
		return "stopped"
	default:
		return fmt.Sprintf("RuntimeHint(%d)", int(h))
	}
}

// Unbounded, as MaxConcurrentSyncs, lets every pod's work run at once (the kubelet's
// rule: a goroutine per pod).
const Unbounded = -1

// MachineConfig configures a Machine. Zero durations take the defaults.
type MachineConfig struct {
	// ResyncInterval is how long after a successful SyncPod the pod is synced again
	// (jittered downwards by up to half). Default DefaultResyncInterval.
	ResyncInterval time.Duration
	// BackoffInitial and BackoffMax bound the retry delay after a failed work: it
	// doubles per consecutive failure from BackoffInitial up to BackoffMax, jittered
	// downwards by up to half. Defaults DefaultBackoffInitial and DefaultBackoffMax.
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	// MaxConcurrentSyncs bounds how many works are in flight at once over all pods;
	// pods beyond the bound wait in arrival order. 0 means DefaultMaxConcurrentSyncs;
	// Unbounded means no bound (the kubelet's behaviour); any other negative value is
	// invalid.
	MaxConcurrentSyncs int
	// SerializeByName makes every pod wait for its full name (namespace and name) as
	// static pods do: a pod does not start while another UID of the same name has
	// started and not finished, and waiting pods start in arrival order. Runtimes that
	// key pods by name (virtual-kubelet providers) need it, so that a pod recreated under
	// the same name is created only once the old one is stopped. Unlike a static pod, a
	// pod whose termination is requested before it started still gets
	// SyncTerminatingPod (once the name is free, ahead of live waiters), so the runtime
	// hears of every pod it may hold.
	SerializeByName bool
}

func (c *MachineConfig) validate() error {
	switch {
	case c.ResyncInterval < 0:
		return fmt.Errorf("%w: negative ResyncInterval %v", ErrInvalidConfig, c.ResyncInterval)
	case c.BackoffInitial < 0:
		return fmt.Errorf("%w: negative BackoffInitial %v", ErrInvalidConfig, c.BackoffInitial)
	case c.BackoffMax < 0:
		return fmt.Errorf("%w: negative BackoffMax %v", ErrInvalidConfig, c.BackoffMax)
	case c.MaxConcurrentSyncs < 0 && c.MaxConcurrentSyncs != Unbounded:
		return fmt.Errorf("%w: MaxConcurrentSyncs %d is negative and not Unbounded", ErrInvalidConfig, c.MaxConcurrentSyncs)
	}
	if c.MaxConcurrentSyncs == 0 {
		c.MaxConcurrentSyncs = DefaultMaxConcurrentSyncs
	}
	if c.ResyncInterval == 0 {
		c.ResyncInterval = DefaultResyncInterval
	}
	if c.BackoffInitial == 0 {
		c.BackoffInitial = DefaultBackoffInitial
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = max(DefaultBackoffMax, c.BackoffInitial)
	}
	if c.BackoffMax < c.BackoffInitial {
		return fmt.Errorf("%w: BackoffMax %v below BackoffInitial %v", ErrInvalidConfig, c.BackoffMax, c.BackoffInitial)
	}
	return nil
}

// Machine is the pure pod-worker state machine: one serialized lifecycle per pod UID.
// It never blocks, starts no goroutine and reads no clock: time comes in as arguments,
// and every decision comes out as a Ready. It is not safe for concurrent use; Runner
// wraps it with a lock, goroutines and a timer.
type Machine struct {
	cfg     MachineConfig
	backoff Backoff

	pods map[types.UID]*podState
	// peakPods is the largest len(pods) since the map was last rebuilt.
	peakPods int
	// podsSynced is set by the first SyncKnownPods: from then on, a pod unknown to the
	// Machine is known not to run.
	podsSynced bool

	// queue holds, in arrival order, the pods with a pending update and no work in
	// flight (podState.queued), and forgotten ones (skipped); queue[qhead:] is live.
	queue []*podState
	qhead int
	// inFlight counts works started and not yet completed.
	inFlight int

	// requeue is a min-heap of pods by due time.
	requeue requeueHeap

	// buf backs the slices of the Ready returned by the last call.
	buf Ready

	// nameHolders maps the full name of every pod serialized by name (static pods, and
	// every pod under SerializeByName) to the UID allowed to run under it; nameWaiters
	// lists, in arrival order, the UIDs that want to.
	nameHolders map[string]types.UID
	nameWaiters map[string][]types.UID

	// chans tracks every completion some known pod waits on (podState.kill.notify), so
	// that it is listed in Ready.Close when the last of them is terminated. An entry
	// goes when no known pod waits on the completion. That a completion was listed is
	// recorded in the Completion itself, so none is ever listed twice.
	chans map[*Completion]*chanState
}

// chanState is the Machine's record of one completion.
type chanState struct {
	// waiting counts the known pods that hold the completion in their notify list: it is
	// listed when the last of them is terminated.
	waiting int
}

// NewMachine returns an empty Machine, or an error wrapping ErrInvalidConfig.
func NewMachine(cfg MachineConfig) (*Machine, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Machine{
		cfg:         cfg,
		backoff:     Backoff{Initial: cfg.BackoffInitial, Max: cfg.BackoffMax},
		pods:        make(map[types.UID]*podState),
		nameHolders: make(map[string]types.UID),
		nameWaiters: make(map[string][]types.UID),
		chans:       make(map[*Completion]*chanState),
	}, nil
}

// ready returns an empty Ready backed by the Machine's buffers (the previous Ready is
// dead by contract; the references it held are dropped).
func (m *Machine) ready() Ready {
	b := &m.buf
	clear(b.Close[:cap(b.Close)])
	clear(b.Start[:cap(b.Start)])
	return Ready{
		Transitions: b.Transitions[:0], Cancel: b.Cancel[:0], Close: b.Close[:0],
		Start: b.Start[:0], Requeue: b.Requeue[:0],
	}
}

// keep stores r's slices for reuse by the next call; a huge one (a mass SyncKnownPods)
// is not kept, so a burst does not pin memory.
func (m *Machine) keep(r *Ready) {
	const huge = 256
	m.buf = *r
	if cap(r.Start) > huge {
		m.buf.Start = nil
	}
	if cap(r.Transitions) > huge {
		m.buf.Transitions = nil
	}
	if cap(r.Cancel) > huge || cap(r.Close) > huge || cap(r.Requeue) > huge {
		m.buf.Cancel, m.buf.Close, m.buf.Requeue = nil, nil, nil
	}
}

// UpdatePod records an update of a pod at time now and returns what to do. It returns
// an error (and changes nothing) for invalid options, see UpdatePodOptions.Validate.
//
// rt is what the caller knows of the pod in the runtime; it is consulted only when the
// pod is first seen in a terminal phase (an agent restart): with RuntimeStopped such a
// pod goes straight to terminated, so SyncTerminatedPod still runs and it never counts
// as active.
//
// Documented drops (nil error, nothing changes): a create for a pod that is terminating
// (the UID was reused; the pod is restarted once finished and forgotten), any update
// for a finished pod, and a runtime-only kill for a terminated pod. Their completion
// channels, if any, are closed at once.
func (m *Machine) UpdatePod(now time.Time, opts UpdatePodOptions, rt RuntimeHint) (Ready, error) {
	r := m.ready()
	defer m.keep(&r)
	if err := opts.Validate(); err != nil {
		return r, err
	}
	uid := opts.uid()
	runtimeOnly := opts.Pod == nil
	var completed *Completion
	if opts.KillPodOptions != nil {
		completed = opts.KillPodOptions.Completion
	}

	st, known := m.pods[uid]
	if !known {
		st = &podState{uid: uid, heapIdx: -1, lastWork: -1}
		if !runtimeOnly {
			st.static = podfacts.IsStatic(opts.Pod)
			st.byName = st.static || m.cfg.SerializeByName
			if podfacts.IsTerminal(opts.Pod) && rt == RuntimeStopped {
				st.terminatingAt, st.terminatedAt = now, now
				st.terminationStarted = true
			}
		}
		if st.byName {
			st.fullname = podfacts.PodFullName(opts.Pod)
			m.nameWaiters[st.fullname] = append(m.nameWaiters[st.fullname], uid)
		}
		m.pods[uid] = st
		m.peakPods = max(m.peakPods, len(m.pods))
	}
	defer m.note(st, &r)

	switch {
	case known && st.isTerminationRequested() && opts.UpdateType == SyncPodCreate:
		st.restartRequested = true
		return r, nil
	case st.finished, st.isTerminated() && runtimeOnly:
		m.closeNow(completed, &r)
		return r, nil
	}

	// Remember the latest configuration. A runtime-only kill of a pod known with a
	// configuration applies to that configuration.
	if runtimeOnly {
		st.observedRuntime = true
	}
	if !runtimeOnly {
		st.pod = opts.Pod
		st.running = nil
		if opts.MirrorPod != nil {
			st.mirror = opts.MirrorPod
		}
	} else if st.pod == nil {
		st.running = opts.RunningPod
	}

	became := false
	if !st.isTerminationRequested() {
		switch {
		case runtimeOnly, st.pod.DeletionTimestamp != nil:
			st.deleted = true
			became = true
		case podfacts.IsTerminal(st.pod):
			became = true
		case opts.UpdateType == SyncPodKill:
			if opts.KillPodOptions != nil && opts.KillPodOptions.Evict {
				st.evicted = true
			}
			became = true
		}
		if became {
			st.terminatingAt = now
		}
	}

	shortened := false
	switch {
	case st.isTerminated():
		m.closeNow(completed, &r)
	case st.isTerminationRequested():
		var override *int64
		if ko := opts.KillPodOptions; ko != nil {
			m.addNotify(st, ko.Completion)
			if ko.PodStatusFunc != nil {
				st.statusFn = ko.PodStatusFunc
			}
			override = ko.PodTerminationGracePeriodSecondsOverride
		}
		if st.pod == nil {
			one := int64(1) // runtime-only pods are killed with grace 1
			override = &one
		}
		st.gracePeriod, shortened = grace.Effective(st.gracePeriod, st.pod, override)
	}

	m.setPending(st, opts.UpdateType)
	if st.working && (became || shortened) && !st.cancelRequested {
		st.cancelRequested = true
		r.Cancel = append(r.Cancel, uid)
	}
	m.note(st, &r)
	m.fill(now, &r)
	return r, nil
}

// RefreshPod makes pod, a newer object of a known pod that changed only in its status
// (the config merge's Reconcile that needs no sync), the configuration the pod's worker
// holds, without an update: no work is queued, no stage changes, and the next work the
// worker starts (a resync, a retry, the next stage) gets pod. The kubelet's periodic
// syncs and retries take the pod manager's newest pod too (getPodsToSync,
// HandlePodSyncs); holding it here instead of the object of the last UpdatePod lets the
// older one go. It reports whether pod was taken. It is refused (false, nothing changes)
// for nil, an unknown or finished pod, a runtime-only one, and a pod that differs from
// the held one in what the Machine decides on (deletionTimestamp, deletion grace period,
// terminal phase, name): such a change needs UpdatePod.
func (m *Machine) RefreshPod(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	st, ok := m.pods[pod.UID]
	if !ok || st.finished || st.pod == nil || !sameDecisions(st.pod, pod) {
		return false
	}
	st.pod = pod
	return true
}

// sameDecisions reports whether the Machine decides the same on a and b: same name and
// namespace, deletionTimestamp set on both or neither, same deletion grace period, both
// terminal or neither.
func sameDecisions(a, b *v1.Pod) bool {
	return a.Name == b.Name && a.Namespace == b.Namespace &&
		utilptr.Equal(a.DeletionGracePeriodSeconds, b.DeletionGracePeriodSeconds) &&
		(a.DeletionTimestamp == nil) == (b.DeletionTimestamp == nil) &&
		podfacts.IsTerminal(a) == podfacts.IsTerminal(b)
}

// setPending records a pending update and queues the pod if it can be started.
func (m *Machine) setPending(st *podState, t SyncPodType) {
	st.hasPending = true
	st.pendingType = t
	if !st.working && !st.queued {
		st.waitingForName = false
		m.enqueue(st)
	}
}

// Complete reports the outcome of the in-flight work of pod uid, which ended at now,
// and returns what to do next. It returns ErrNotWorking if uid has no work in flight.
// random, a number in [0, 1) from the caller's random source, is the jitter of the
// resync or retry the completion schedules, if any (0: none; see Backoff.When): the
// Machine holds no random source, so the same inputs give the same Ready.
//
// A work whose context the Machine cancelled and that returned an error (whatever it
// is) is superseded: no backoff, the pending update that caused the cancellation runs
// at once. Any other error backs off. A successful
// SyncPod is resynced after the resync interval; a transition queues the next stage at
// once.
func (m *Machine) Complete(now time.Time, uid types.UID, res Result, random float64) (Ready, error) {
	r := m.ready()
	defer m.keep(&r)
	st, ok := m.pods[uid]
	if !ok || !st.working {
		return r, fmt.Errorf("%w %s", ErrNotWorking, uid)
	}
	m.inFlight--
	st.working = false
	st.lastSyncAt = now
	cancelled := st.cancelRequested
	st.cancelRequested = false
	wt := st.lastWork

	switch {
	case res.Err != nil && cancelled:
		// Superseded: the pending update that caused the cancellation runs next.
	case res.Err != nil:
		st.failures++
		m.schedule(st, now, m.backoff.When(int(st.failures), random), &r)
	case wt == TerminatedPod:
		m.finish(st, now, &r)
		m.note(st, &r)
		m.fill(now, &r)
		return r, nil
	case wt == TerminatingPod && st.pod == nil:
		// A runtime-only pod is not desired state: once stopped, forget it.
		st.terminatedAt = now
		m.note(st, &r)
		m.closeNotify(st, &r)
		m.finish(st, now, &r)
		m.note(st, &r)
		m.forget(st)
		m.note(st, &r)
		m.fill(now, &r)
		return r, nil
	case wt == TerminatingPod:
		st.failures = 0
		st.terminatedAt = now
		m.closeNotify(st, &r)
		st.statusFn = nil
		m.unschedule(st)
		m.requeueLast(st)
	case res.IsTerminal && wt == SyncPod:
		st.failures = 0
		if !st.isTerminationRequested() {
			st.terminatingAt = now
			st.gracePeriod, _ = grace.Effective(st.gracePeriod, st.pod, nil)
		}
		st.terminationStarted = true
		m.unschedule(st)
		m.requeueLast(st)
	default:
		st.failures = 0
		if wt == SyncPod && !st.isTerminationRequested() {
			m.schedule(st, now, jitter(m.cfg.ResyncInterval, random), &r)
		}
	}
	if st.hasPending && !st.queued {
		m.enqueue(st)
	}
	m.note(st, &r)
	m.fill(now, &r)
	return r, nil
}

// requeueLast makes sure the pod has a pending update so the next stage runs at once
// (the kubelet's requeueLastPodUpdate).
func (m *Machine) requeueLast(st *podState) {
	if !st.hasPending {
		st.hasPending = true
		st.pendingType = SyncPodSync
	}
}

// Tick runs the resyncs and retries that are due at now.
func (m *Machine) Tick(now time.Time) Ready {
	r := m.ready()
	defer m.keep(&r)
	for len(m.requeue) > 0 && !m.requeue[0].due.After(now) {
		st := m.requeue[0]
		m.unschedule(st)
		if st.finished {
			continue
		}
		if !st.hasPending {
			m.setPending(st, SyncPodSync)
		} else if !st.working && !st.queued {
			m.enqueue(st)
		}
	}
	m.fill(now, &r)
	return r
}

// NextRequeue returns the earliest due time of a resync or retry, if any.
func (m *Machine) NextRequeue() (time.Time, bool) {
	if len(m.requeue) == 0 {
		return time.Time{}, false
	}
	return m.requeue[0].due, true
}

// SyncKnownPods reconciles the Machine with the pods that are desired (every pod the
// node agent still has a configuration for) at time now. Finished pods that are not
// desired, or that were asked to restart, are forgotten (nothing of them is kept), and so
// are pods not desired that never started (no work ever ran for them, e.g. waiting for
// their full name) and were never seen in the runtime (no RunningPod update): their kill
// completion channels are closed, no PodSyncer call is made. Other pods not desired whose
// termination was not yet requested are asked to terminate, as deleted pods. It returns
// the state of every pod still known, and what to do.
func (m *Machine) SyncKnownPods(now time.Time, desired []*v1.Pod) (map[types.UID]PodWorkerSync, Ready) {
	r := m.ready()
	defer m.keep(&r)
	m.podsSynced = true
	want := make(map[types.UID]struct{}, len(desired))
	for _, p := range desired {
		if p != nil {
			want[p.UID] = struct{}{}
		}
	}
	// Sized for the desired pods: when few are, most known ones are usually forgotten.
	known := make(map[types.UID]PodWorkerSync, min(len(m.pods), len(want)))
	for uid, st := range m.pods {
		_, isDesired := want[uid]
		orphan := !isDesired
		if st.finished && (orphan || st.restartRequested) {
			m.forget(st)
			m.note(st, &r)
			continue
		}
		if orphan && !st.isStarted() && !st.observedRuntime {
			// Never started (e.g. waiting for its full name) and never seen in the
			// runtime: nothing of it can run, so no sync is owed (the kubelet's
			// removeTerminatedWorker). Forget it now, so that a runtime kill of its UID
			// in the same housekeeping round starts afresh instead of waiting with it.
			st.deleted = true
			m.finish(st, now, &r) // closes its kill completion channels
			m.note(st, &r)
			m.forget(st)
			m.note(st, &r)
			continue
		}
		if orphan && !st.isTerminationRequested() {
			st.deleted = true
			st.terminatingAt = now
			st.gracePeriod, _ = grace.Effective(st.gracePeriod, st.pod, nil)
			m.setPending(st, SyncPodKill)
			if st.working && !st.cancelRequested {
				st.cancelRequested = true
				r.Cancel = append(r.Cancel, uid)
			}
			m.note(st, &r)
		}
		known[uid] = PodWorkerSync{
			State:     st.workType(),
			Orphan:    orphan,
			HasConfig: st.pod != nil,
			Static:    st.static,
		}
	}
	m.compact()
	m.fill(now, &r)
	return known, r
}

// Len returns how many pods the Machine knows.
func (m *Machine) Len() int { return len(m.pods) }

// PodState returns a snapshot of a known pod.
func (m *Machine) PodState(uid types.UID) (PodState, bool) {
	st, ok := m.pods[uid]
	if !ok {
		return PodState{}, false
	}
	return st.snapshot(), true
}

// note reports the pod's stage change since the last report, if any.
func (m *Machine) note(st *podState, r *Ready) {
	to := st.stage()
	if st.forgotten {
		to = StageNone
	}
	if to == st.reported {
		return
	}
	t := Transition{UID: st.uid, From: st.reported, To: to}
	switch {
	case st.pod != nil:
		t.Namespace, t.Name = st.pod.Namespace, st.pod.Name
	case st.running != nil:
		t.Namespace, t.Name = st.running.Namespace, st.running.Name
	}
	r.Transitions = append(r.Transitions, t)
	st.reported = to
}

// addNotify makes c (may be nil) wait for the pod's termination, unless the pod already
// waits on it or it was already listed (closed).
func (m *Machine) addNotify(st *podState, c *Completion) {
	if c == nil || c.listed.Load() || (st.kill != nil && slices.Contains(st.kill.notify, c)) {
		return
	}
	cs := m.chans[c]
	if cs == nil {
		cs = &chanState{}
		m.chans[c] = cs
	}
	cs.waiting++
	k := st.kills()
	k.notify = append(k.notify, c)
}

// closeNow lists c (may be nil) for a pod that is already terminated: at once, unless
// other pods still wait on it (it is listed with the last).
func (m *Machine) closeNow(c *Completion, r *Ready) {
	if c == nil {
		return
	}
	if cs := m.chans[c]; cs != nil && cs.waiting > 0 {
		return
	}
	list(c, r)
}

// list lists c in r.Close unless it was ever listed (by any Machine): a Completion is
// listed at most once, so its channel is closed at most once.
func list(c *Completion, r *Ready) {
	if c.listed.CompareAndSwap(false, true) {
		r.Close = append(r.Close, c)
	}
}

// closeNotify releases the pod's waiting completions (it is terminated): each is listed
// when no other pod waits on it.
func (m *Machine) closeNotify(st *podState, r *Ready) {
	if st.kill == nil {
		return
	}
	for _, c := range st.kill.notify {
		if cs := m.chans[c]; cs != nil {
			cs.waiting--
			if cs.waiting > 0 {
				continue
			}
			delete(m.chans, c)
		}
		list(c, r)
	}
	clear(st.kill.notify)
	st.kill.notify = nil
}

// dropChans releases the completions a forgotten pod holds. Its notify list is empty: a
// pod is forgotten only once terminated, or after closeNotify.
func (m *Machine) dropChans(st *podState) {
	if st.kill == nil {
		return
	}
	for _, c := range st.kill.notify { // defensive: a forgotten pod waits for nothing
		if cs := m.chans[c]; cs != nil {
			cs.waiting--
			if cs.waiting == 0 {
				delete(m.chans, c)
			}
		}
	}
	st.kill = nil
}

// finish marks the pod finished: no more work, updates ignored until forgotten.
func (m *Machine) finish(st *podState, now time.Time, r *Ready) {
	if st.terminatedAt.IsZero() {
		st.terminatedAt = now
	}
	if st.terminatingAt.IsZero() {
		st.terminatingAt = now
	}
	st.finished = true
	st.hasPending = false
	st.waitingForName = false
	st.statusFn = nil
	m.closeNotify(st, r)
	m.unschedule(st)
	m.releaseName(st)
}

// forget drops every trace of the pod.
func (m *Machine) forget(st *podState) {
	m.dropChans(st)
	m.unschedule(st)
	m.releaseName(st)
	if st.byName {
		m.setWaiting(st.fullname, withoutUID(m.nameWaiters[st.fullname], st.uid))
	}
	delete(m.pods, st.uid)
	st.forgotten = true
}

// compact rebuilds the pod map once most of its peak content was forgotten, since Go
// maps never shrink: a forgotten pod must leave nothing behind.
func (m *Machine) compact() {
	if m.peakPods < 64 || len(m.pods) > m.peakPods/4 {
		return
	}
	pods := make(map[types.UID]*podState, len(m.pods))
	for k, v := range m.pods {
		pods[k] = v
	}
	m.pods = pods
	m.peakPods = len(pods)
	if m.qhead == len(m.queue) {
		m.queue, m.qhead = nil, 0
	}
	if len(m.requeue) == 0 {
		m.requeue = nil
	}
}
