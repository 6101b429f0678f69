package podworker

import (
	"context"

	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/internal/podfacts"
	"github.com/podlife/podlife/internal/validate"
	"github.com/podlife/podlife/pleg"
)

// Config configures a Runner. Only Syncer is required.
type Config struct {
	// Syncer is the caller's PodSyncer. Required.
	Syncer PodSyncer
	// View is read before every sync (except for runtime-only pods) for a status
	// observed after the pod's previous sync, inspected afresh for every terminating and
	// terminated work, so a transition does not wait for a periodic relist (see
	// RuntimeView); *pleg.Relister implements it. nil: syncs get a nil status, and a pod
	// first seen in a terminal phase is stopped through SyncTerminatingPod first.
	View RuntimeView
	// Clock is the time source of the runner; nil means the real clock.
	Clock clock.Clock
	// Logger receives debug logs of transitions and error logs of failed syncs; nil
	// discards them.
	Logger *slog.Logger
	// ResyncInterval, BackoffInitial, BackoffMax, MaxConcurrentSyncs and
	// SerializeByName: see MachineConfig.
	ResyncInterval     time.Duration
	BackoffInitial     time.Duration
	BackoffMax         time.Duration
	MaxConcurrentSyncs int
	SerializeByName    bool
	// Rand returns numbers in [0, 1) for the jitter of resyncs and backoffs; nil means
	// math/rand/v2's Float64. It is called once per finished work, by the goroutine that
	// ran it, never with the runner's lock held: calls may be concurrent, so it must be
	// safe for concurrent use. Its number goes to Machine.Complete with the work's
	// outcome.
	Rand func() float64
	// OnTransition, if set, is called for every stage change of a pod, in the Machine's
	// order, outside the runner's lock (it may call the Runner), just before
	// Hooks.Transition, which also gets the time of the change; see Hooks for the order
	// of transitions and works.
	OnTransition func(Transition)
	// Hooks are the runner's observation points (syncs started and finished, stage
	// changes), each called outside the runner's lock; the zero value observes nothing.
	Hooks Hooks
}

// Runner drives a Machine: it owns the lock, the goroutines and the timer, and calls the
// caller's PodSyncer outside the lock. A worker goroutine exists only while works are in
// flight, at most one per work (at most MaxConcurrentSyncs PodSyncer calls run at once,
// 1,024 by default; a burst of short syncs is run by a few workers; a worker that just
// finished may linger briefly while it exits), plus at most 2*GOMAXPROCS idle ones
// waiting for the next burst and one timer goroutine, all while Run runs. All methods
// are safe for concurrent use.
//
// How works run is the engine's business (see engine): by default workers never wait for
// the lock, a finished work is queued as a completion, and whichever goroutine holds (or
// next takes) the lock applies every queued completion to the Machine (flat combining),
// so a burst of thousands of short syncs does not turn into a convoy on one mutex.
type Runner struct {
	syncer       PodSyncer
	view         RuntimeView
	clock        clock.Clock
	log          *slog.Logger
	onTransition func(Transition)
	hooks        Hooks
	// rand is Config.Rand (or its default), called outside mu.
	rand func() float64

	mu sync.Mutex
	m  *Machine
	// ctx is Run's context, set before running is; running is true while Run runs,
	// stopped once it returned.
	ctx      context.Context
	running  bool
	stopped  bool
	deferred []Work
	// cancels holds the context of every in-flight work; cancelsPeak is its largest size
	// since it was last allocated (maps never shrink, so an emptied one that grew past
	// the default bound is replaced).
	cancels     map[types.UID]canceler
	cancelsPeak int
	// armed is the due time the timer goroutine waits for (zero: none).
	armed time.Time
	kick  chan struct{}
	// eng runs the works; wg counts its goroutines.
	eng engine
	wg  sync.WaitGroup

	// hmu guards hq (the transitions not yet delivered to OnTransition and
	// Hooks.Transition, in the Machine's order), hspare (an emptied buffer for hq),
	// delivering (a goroutine is delivering them), and the changes of the counts of
	// transitions queued and delivered so far (read without it); hdone is broadcast
	// when delivered grows.
	hmu               sync.Mutex
	hq, hspare        []timedTransition
	delivering        bool
	queued, delivered atomic.Uint64
	hdone             *sync.Cond
}

// New returns a Runner, or an error wrapping ErrInvalidConfig: for a nil Syncer, an
// interface field holding a nil pointer, func or the like (a typed nil), or a
// MachineConfig field out of range.
func New(cfg Config) (*Runner, error) { return newRunner(cfg, newCombiningEngine) }

// newRunner is New with the engine newEngine returns for the Runner.
func newRunner(cfg Config, newEngine func(*Runner) engine) (*Runner, error) {
	if cfg.Syncer == nil {
		return nil, fmt.Errorf("%w: nil Syncer", ErrInvalidConfig)
	}
	if bad := validate.TypedNils(
		validate.Field{Name: "Syncer", Value: cfg.Syncer},
		validate.Field{Name: "View", Value: cfg.View},
		validate.Field{Name: "Clock", Value: cfg.Clock},
	); len(bad) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(bad, "; "))
	}
	if f, ok := cfg.View.(RuntimeViewFuncs); ok && (f.StatusAfterFunc == nil || f.LastStatusFunc == nil) {
		return nil, fmt.Errorf("%w: View is a RuntimeViewFuncs with a nil func", ErrInvalidConfig)
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	r := &Runner{rand: cfg.Rand}
	if r.rand == nil {
		r.rand = rand.Float64
	}
	m, err := NewMachine(MachineConfig{
		ResyncInterval:     cfg.ResyncInterval,
		BackoffInitial:     cfg.BackoffInitial,
		BackoffMax:         cfg.BackoffMax,
		MaxConcurrentSyncs: cfg.MaxConcurrentSyncs,
		SerializeByName:    cfg.SerializeByName,
	})
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r.syncer, r.view, r.clock, r.log = cfg.Syncer, cfg.View, clk, log
	r.onTransition, r.hooks, r.m = cfg.OnTransition, cfg.Hooks, m
	r.cancels, r.kick = make(map[types.UID]canceler), make(chan struct{}, 1)
	r.hdone = sync.NewCond(&r.hmu)
	r.eng = newEngine(r)
	return r, nil
}

// Run starts the work queued so far and drives resyncs and retries until ctx ends; then
// it cancels every in-flight sync, waits for the goroutines to return and returns nil.
// Updates given after Run returned are recorded but start no work. Run may be called
// once; a second call returns ErrRunning.
func (r *Runner) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.running || r.stopped {
		r.unlock()
		return ErrRunning
	}
	r.running, r.ctx = true, ctx
	for _, w := range r.deferred {
		r.spawnLocked(w)
	}
	r.deferred = nil
	r.unlock()

	r.timerLoop(ctx)

	r.mu.Lock()
	r.running, r.stopped = false, true
	r.eng.stopping()
	for _, c := range r.cancels {
		c.Cancel()
	}
	r.unlock()
	r.wg.Wait()
	return nil
}

// unlock releases mu, lets the engine act on what happened meanwhile (the default one
// applies the completions queued meanwhile) and delivers the transitions queued for
// OnTransition and Hooks.Transition.
func (r *Runner) unlock() {
	r.mu.Unlock()
	r.eng.unlocked()
	r.deliver()
}

// completeLocked reports a finished work to the Machine and carries out its decision,
// with r.mu held; rnd is the number Config.Rand gave for it (drawn before locking), the
// jitter of a resync or backoff it schedules. With inline, the first work to start is
// returned to the caller instead of spawned (see applyLocked).
func (r *Runner) completeLocked(uid types.UID, res Result, at time.Time, rnd float64, inline bool) (next Work, nextCtx context.Context, ok bool) {
	if c := r.cancels[uid]; c != nil {
		c.Cancel() // the work is over: its context ends (and leaves its parent)
		delete(r.cancels, uid)
	}
	if len(r.cancels) == 0 && r.cancelsPeak > DefaultMaxConcurrentSyncs {
		r.cancels, r.cancelsPeak = make(map[types.UID]canceler), 0
	}
	rd, err := r.m.Complete(at, uid, res, rnd)
	if err != nil {
		r.log.Error("pod worker lost its work", "podUID", uid, "err", err)
		return next, nextCtx, false
	}
	return r.applyLocked(&rd, at, inline)
}

// UpdatePod records an update of a pod (see Machine.UpdatePod) and starts its work if
// possible. It never blocks on a sync; it returns an error for invalid options.
func (r *Runner) UpdatePod(opts UpdatePodOptions) error {
	rt := RuntimeUnknown
	if opts.Pod != nil && podfacts.IsTerminal(opts.Pod) && r.view != nil {
		if s, err := r.view.LastStatus(opts.Pod.UID); err == nil && !s.IsRunning() {
			rt = RuntimeStopped
		}
	}
	now := r.clock.Now()
	r.mu.Lock()
	defer r.unlock()
	rd, err := r.m.UpdatePod(now, opts, rt)
	if err != nil {
		return err
	}
	r.applyLocked(&rd, now, false)
	return nil
}

// RefreshPod makes pod the configuration a known pod's worker holds, without an update
// (see Machine.RefreshPod), and reports whether it was taken.
func (r *Runner) RefreshPod(pod *v1.Pod) bool {
	r.mu.Lock()
	defer r.unlock()
	return r.m.RefreshPod(pod)
}

// SyncKnownPods forgets finished pods that are not desired and those not desired that
// never started nor were seen in the runtime, asks the other pods that are not desired to
// terminate, and returns the state of every pod still known (see
// Machine.SyncKnownPods).
func (r *Runner) SyncKnownPods(desired []*v1.Pod) map[types.UID]PodWorkerSync {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.unlock()
	known, rd := r.m.SyncKnownPods(now, desired)
	r.applyLocked(&rd, now, false)
	return known
}

// applyLocked carries out a Ready, decided at now, with r.mu held. With inline, the
// first work to start is returned to the caller instead of spawned.
func (r *Runner) applyLocked(rd *Ready, now time.Time, inline bool) (next Work, nextCtx context.Context, ok bool) {
	debug := r.log.Enabled(context.Background(), slog.LevelDebug)
	for _, t := range rd.Transitions {
		if debug {
			r.log.Debug("pod stage changed", "pod", t.PodName(), "podUID", t.UID, "from", t.From.String(), "to", t.To.String())
		}
	}
	r.queueTransitionsLocked(rd.Transitions, now)
	for _, uid := range rd.Cancel {
		if c := r.cancels[uid]; c != nil {
			if debug {
				r.log.Debug("cancelling current pod sync", "podUID", uid)
			}
			r.cancelAfterTransitionsLocked(c)
		}
	}
	for _, c := range rd.Close {
		c.Close()
	}
	for _, w := range rd.Start {
		if !r.running {
			r.deferred = append(r.deferred, w)
			continue
		}
		if inline && !ok {
			next, nextCtx, ok = w, r.workContextLocked(w.UID), true
			continue
		}
		r.spawnLocked(w)
	}
	if len(rd.Requeue) > 0 {
		if due, has := r.m.NextRequeue(); has && (r.armed.IsZero() || due.Before(r.armed)) {
			r.armed = due
			select {
			case r.kick <- struct{}{}:
			default:
			}
		}
	}
	return next, nextCtx, ok
}

// workContextLocked returns the context of the pod's next work, registered for
// cancellation (ended already if Run is over).
func (r *Runner) workContextLocked(uid types.UID) context.Context {
	ctx, c := r.eng.newContext(r.ctx)
	if r.stopped || r.ctx.Err() != nil {
		c.Cancel()
	}
	r.cancels[uid] = c
	r.cancelsPeak = max(r.cancelsPeak, len(r.cancels))
	return ctx
}

// spawnLocked has the engine run w. r.mu must be held.
func (r *Runner) spawnLocked(w Work) {
	r.eng.spawn(w, r.workContextLocked(w.UID))
}

// execute reads the pod's runtime status and calls the PodSyncer, outside any lock,
// once the transitions queued before were delivered, between the SyncStarted and
// SyncFinished hooks.
func (r *Runner) execute(ctx context.Context, w Work) Result {
	r.awaitDelivery()
	if r.hooks.SyncStarted == nil && r.hooks.SyncFinished == nil {
		return r.sync(ctx, w)
	}
	s := Sync{UID: w.UID, Pod: w.Pod, RunningPod: w.RunningPod, WorkType: w.WorkType, UpdateType: w.UpdateType,
		Started: r.clock.Now()}
	if r.hooks.SyncStarted != nil {
		r.hooks.SyncStarted(s)
	}
	res := r.sync(ctx, w)
	if r.hooks.SyncFinished != nil {
		s.Duration, s.Err, s.IsTerminal, s.Cancelled = r.clock.Since(s.Started), res.Err, res.IsTerminal, ctx.Err() != nil
		r.hooks.SyncFinished(s)
	}
	return res
}

// sync reads the pod's runtime status and calls the PodSyncer.
func (r *Runner) sync(ctx context.Context, w Work) Result {
	var status *pleg.PodStatus
	if w.RunningPod == nil && r.view != nil {
		s, err := r.view.StatusAfter(ctx, w.UID, w.StatusNewerThan)
		if err != nil {
			return Result{Err: fmt.Errorf("%w: pod %s: %w", ErrRuntimeStatus, w.UID, err)}
		}
		status = s
	}
	var res Result
	switch {
	case w.WorkType == TerminatedPod:
		res.Err = r.syncer.SyncTerminatedPod(ctx, w.Pod, status)
	case w.WorkType == TerminatingPod && w.RunningPod != nil:
		res.Err = r.syncer.SyncTerminatingRuntimePod(ctx, w.RunningPod)
	case w.WorkType == TerminatingPod:
		res.Err = r.syncer.SyncTerminatingPod(ctx, w.Pod, status, w.GracePeriodSeconds, w.PodStatusFunc)
	default:
		res.IsTerminal, res.Err = r.syncer.SyncPod(ctx, w.UpdateType, w.Pod, w.MirrorPod, status)
	}
	if res.Err != nil && ctx.Err() == nil {
		r.log.ErrorContext(ctx, "error syncing pod, will retry", "pod", w.podName(), "podUID", w.UID, "workType", w.WorkType.String(), "err", res.Err)
	}
	return res
}

// timerLoop wakes the Machine when a resync or retry is due, until ctx ends.
func (r *Runner) timerLoop(ctx context.Context) {
	for {
		r.mu.Lock()
		due, has := r.m.NextRequeue()
		r.armed = due
		r.unlock()
		var timer clock.Timer
		var fire <-chan time.Time
		if has {
			d := due.Sub(r.clock.Now())
			if d <= 0 {
				r.tick()
				continue
			}
			timer = r.clock.NewTimer(d)
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-r.kick:
		case <-fire:
			r.tick()
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

func (r *Runner) tick() {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.unlock()
	rd := r.m.Tick(now)
	r.applyLocked(&rd, now, false)
}

// Len returns how many pods the runner knows.
func (r *Runner) Len() int {
	r.mu.Lock()
	defer r.unlock()
	return r.m.Len()
}

// PodState returns a snapshot of a known pod.
func (r *Runner) PodState(uid types.UID) (PodState, bool) {
	r.mu.Lock()
	defer r.unlock()
	return r.m.PodState(uid)
}

// query answers one of the Machine's queries under the runner's lock.
func (r *Runner) query(q func(*Machine, types.UID) bool, uid types.UID) bool {
	r.mu.Lock()
	defer r.unlock()
	return q(r.m, uid)
}

// IsPodKnownTerminated: see Machine.IsPodKnownTerminated.
func (r *Runner) IsPodKnownTerminated(uid types.UID) bool {
	return r.query((*Machine).IsPodKnownTerminated, uid)
}

// CouldHaveRunningContainers: see Machine.CouldHaveRunningContainers.
func (r *Runner) CouldHaveRunningContainers(uid types.UID) bool {
	return r.query((*Machine).CouldHaveRunningContainers, uid)
}

// ShouldPodBeFinished: see Machine.ShouldPodBeFinished.
func (r *Runner) ShouldPodBeFinished(uid types.UID) bool {
	return r.query((*Machine).ShouldPodBeFinished, uid)
}

// IsPodTerminationRequested: see Machine.IsPodTerminationRequested.
func (r *Runner) IsPodTerminationRequested(uid types.UID) bool {
	return r.query((*Machine).IsPodTerminationRequested, uid)
}

// ShouldPodContainersBeTerminating: see Machine.ShouldPodContainersBeTerminating.
func (r *Runner) ShouldPodContainersBeTerminating(uid types.UID) bool {
	return r.query((*Machine).ShouldPodContainersBeTerminating, uid)
}

// ShouldPodRuntimeBeRemoved: see Machine.ShouldPodRuntimeBeRemoved.
func (r *Runner) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	return r.query((*Machine).ShouldPodRuntimeBeRemoved, uid)
}

// ShouldPodContentBeRemoved: see Machine.ShouldPodContentBeRemoved.
func (r *Runner) ShouldPodContentBeRemoved(uid types.UID) bool {
	return r.query((*Machine).ShouldPodContentBeRemoved, uid)
}
