package prober

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// DefaultWorkers is how many probes a Runner runs at once unless Config.Workers says
// otherwise.
const DefaultWorkers = 64

// ErrInvalidConfig is wrapped by New's errors.
var ErrInvalidConfig = errors.New("prober: invalid config")

// ErrAlreadyRunning is returned by a second call of Run.
var ErrAlreadyRunning = errors.New("prober: Run called twice")

// Config configures a Runner.
type Config struct {
	// Probe runs one probe once and returns its outcome (Success or Failure; Unknown
	// counts as Failure). An error means it could not be run: the outcome is thrown
	// away. ctx ends after the probe's timeout or when Run's context ends. It is called
	// from the Runner's workers, outside its lock, for many probes at once. Required.
	Probe func(ctx context.Context, p Probe) (Result, error)
	// OnChange, if set, receives each result a run changed, outside the lock, from the
	// worker that ran it. It must not block for long.
	OnChange func(Change)
	// Clock is the time source (timers and timeouts); nil means the real clock.
	Clock clock.Clock
	// Workers bounds the probes run at once (DefaultWorkers when 0). A probe due while
	// every worker is busy waits for one.
	Workers int
	// Rand returns uniform random numbers in [0, 1) for the jitter of the probes added in
	// the first period after New (see NewMachine); nil means a source of the Runner's
	// own, seeded at random.
	Rand func() float64
}

// Runner runs a Machine: one scheduling goroutine with one timer for the earliest probe
// due, and a goroutine per run in flight, at most Config.Workers, whatever the number
// of probes (none while no probe runs). Its methods are safe for concurrent use; the Machine is behind its lock,
// and Config.Probe and Config.OnChange are called outside it.
type Runner struct {
	cfg   Config
	clock clock.Clock

	mu sync.Mutex
	m  *Machine
	// armed is when the scheduler's timer fires (zero: it waits for a wake only);
	// guarded by mu.
	armed time.Time
	// wake asks the scheduler to look at the machine again.
	wake    chan struct{}
	running chan struct{}
}

// New validates cfg and returns a Runner. It starts nothing.
func New(cfg Config) (*Runner, error) {
	if cfg.Probe == nil {
		return nil, fmt.Errorf("%w: Probe is required", ErrInvalidConfig)
	}
	if cfg.Workers < 0 {
		return nil, fmt.Errorf("%w: Workers %d is negative", ErrInvalidConfig, cfg.Workers)
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())).Float64 // called under mu only
	}
	return &Runner{cfg: cfg, clock: cfg.Clock, m: NewMachine(cfg.Clock.Now(), cfg.Rand),
		wake: make(chan struct{}, 1), running: make(chan struct{}, 1)}, nil
}

// SetPod adds the pod's probes and records its containers' instances (Machine.SetPod);
// it returns the results that changed (OnChange does not get them).
func (r *Runner) SetPod(pod *v1.Pod, instances []Instance) []Change {
	r.mu.Lock()
	ch := r.m.SetPod(pod, instances, r.clock.Now())
	r.kickLocked()
	r.mu.Unlock()
	return ch
}

// RemovePod forgets the pod's probes (Machine.RemovePod).
func (r *Runner) RemovePod(uid types.UID) {
	r.mu.Lock()
	r.m.RemovePod(uid)
	r.mu.Unlock()
}

// StopLivenessAndStartup forgets the pod's liveness and startup probes
// (Machine.StopLivenessAndStartup).
func (r *Runner) StopLivenessAndStartup(uid types.UID) {
	r.mu.Lock()
	r.m.StopLivenessAndStartup(uid)
	r.mu.Unlock()
}

// CleanupPods forgets the probes of every pod keep refuses; keep is called under the
// lock and must not call the Runner.
func (r *Runner) CleanupPods(keep func(types.UID) bool) {
	r.mu.Lock()
	r.m.CleanupPods(keep)
	r.mu.Unlock()
}

// Result returns a probe's current result (Machine.Result).
func (r *Runner) Result(key Key) (containerID string, res Result, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m.Result(key)
}

// Len returns the number of probes held.
func (r *Runner) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m.Len()
}

// kickLocked wakes the scheduler if the earliest probe is due before its timer fires.
// Callers hold mu.
func (r *Runner) kickLocked() {
	next, ok := r.m.NextDue()
	if !ok || (!r.armed.IsZero() && !next.Before(r.armed)) {
		return
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run runs the probes until ctx ends, then waits for the probes in flight (their
// contexts end with ctx) and returns nil. It may be called once.
func (r *Runner) Run(ctx context.Context) error {
	select {
	case r.running <- struct{}{}:
	default:
		return ErrAlreadyRunning
	}
	// sem holds a token per run in flight: a run's goroutine exists only while it runs.
	sem := make(chan struct{}, r.cfg.Workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	var buf []Probe
	for {
		now := r.clock.Now()
		r.mu.Lock()
		buf = r.m.Due(now, buf[:0])
		next, ok := r.m.NextDue()
		if ok && len(buf) == 0 {
			r.armed = next
		} else {
			r.armed = time.Time{}
		}
		r.mu.Unlock()
		for i, p := range buf {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
			wg.Go(func() {
				defer func() { <-sem }()
				r.run(ctx, p)
			})
			buf[i] = Probe{} // keep no pod alive
		}
		if len(buf) > 0 {
			continue // more may be due by now
		}
		var timer clock.Timer
		var fire <-chan time.Time
		if ok {
			timer = r.clock.NewTimer(next.Sub(now))
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil
		case <-fire:
		case <-r.wake:
			if timer != nil {
				timer.Stop()
			}
		}
	}
}

// run runs one probe with its timeout and reports its outcome.
func (r *Runner) run(ctx context.Context, p Probe) {
	pctx, cancel := context.WithCancel(ctx)
	stop := r.afterFunc(p.Timeout, cancel)
	res, err := r.cfg.Probe(pctx, p)
	stop()
	cancel()
	r.mu.Lock()
	changes := r.m.Report(p, res, err == nil, r.clock.Now())
	r.kickLocked()
	r.mu.Unlock()
	if r.cfg.OnChange != nil {
		for _, c := range changes {
			r.cfg.OnChange(c)
		}
	}
}

// afterFunc calls f after d on the clock and returns the function that cancels it.
func (r *Runner) afterFunc(d time.Duration, f func()) func() {
	if c, ok := r.clock.(clock.WithDelayedExecution); ok {
		t := c.AfterFunc(d, f)
		return func() { t.Stop() }
	}
	t := time.AfterFunc(d, f) // a clock without AfterFunc: the timeout in real time
	return func() { t.Stop() }
}
