package podworker

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// combiningEngine runs works on workers that never wait for the runner's lock: a
// finished work is queued as a completion, and whichever goroutine holds (or next takes)
// the lock applies every queued completion to the Machine (flat combining). A worker
// whose completion starts another work runs that one itself, and a worker left without
// work waits as one of at most 2*GOMAXPROCS idle ones for the next burst. Works get a
// workContext, which costs no registration with Run's context.
type combiningEngine struct {
	r *Runner

	// cmu guards completions: finished works not yet reported to the Machine. Every
	// holder of r.mu checks it after unlocking, so none is ever stranded.
	cmu         sync.Mutex
	completions []completion
	spare       []completion

	// handoff passes a work to an idle worker; idle counts the workers that are (or are
	// about to be) waiting on it, at most maxIdle; accepting tells workers whether they
	// may wait (until Run returns).
	handoff   chan workItem
	idle      atomic.Int32
	maxIdle   int32
	accepting atomic.Bool
}

// workItem is a work with its context, handed to an idle worker.
type workItem struct {
	w   Work
	ctx context.Context
}

// completion is a finished work waiting to be reported to the Machine.
type completion struct {
	uid types.UID
	res Result
	at  time.Time
}

func newCombiningEngine(r *Runner) engine {
	e := &combiningEngine{r: r, handoff: make(chan workItem), maxIdle: int32(2 * runtime.GOMAXPROCS(0))}
	e.accepting.Store(true)
	return e
}

func (*combiningEngine) newContext(parent context.Context) (context.Context, canceler) {
	c := &workContext{Context: parent}
	return c, c
}

func (e *combiningEngine) spawn(w Work, ctx context.Context) {
	if e.idle.Load() > 0 {
		select {
		case e.handoff <- workItem{w: w, ctx: ctx}:
			e.idle.Add(-1)
			return
		default:
		}
	}
	e.r.wg.Add(1)
	go e.worker(ctx, w)
}

// unlocked applies the completions queued while r.mu was held, if any.
func (e *combiningEngine) unlocked() {
	if e.hasCompletions() {
		e.combine(false)
	}
}

func (e *combiningEngine) stopping() { e.accepting.Store(false) }

func (e *combiningEngine) hasCompletions() bool {
	e.cmu.Lock()
	defer e.cmu.Unlock()
	return len(e.completions) > 0
}

// combine applies queued completions for as long as it gets the lock without waiting
// and completions keep arriving. With inline, the first work to start is returned to
// the caller (a worker that runs it next) instead of spawned.
func (e *combiningEngine) combine(inline bool) (next Work, nextCtx context.Context, ok bool) {
	r := e.r
	for r.mu.TryLock() {
		for {
			e.cmu.Lock()
			batch := e.completions
			e.completions, e.spare = e.spare[:0], nil
			e.cmu.Unlock()
			if len(batch) == 0 {
				break
			}
			for i := range batch {
				c := &batch[i]
				if w, wctx, got := r.completeLocked(c.uid, c.res, c.at, inline && !ok); got {
					next, nextCtx, ok = w, wctx, true
				}
			}
			clear(batch)
			if cap(batch) <= 256 { // a burst's large buffer is not kept
				e.cmu.Lock()
				if e.spare == nil {
					e.spare = batch[:0]
				}
				e.cmu.Unlock()
			}
		}
		r.mu.Unlock()
		if !e.hasCompletions() {
			break
		}
	}
	return next, nextCtx, ok
}

// worker runs works until none is left for it. A worker left without work waits for a
// handoff if fewer than maxIdle others do (so a burst of short syncs does not start a
// goroutine per pod), and exits otherwise or when Run's context ends.
func (e *combiningEngine) worker(ctx context.Context, w Work) {
	r := e.r
	defer r.wg.Done()
	done := r.ctx.Done()
	for {
		res := r.execute(ctx, w)
		now := r.clock.Now()
		e.cmu.Lock()
		e.completions = append(e.completions, completion{uid: w.UID, res: res, at: now})
		e.cmu.Unlock()
		var ok bool
		w, ctx, ok = e.combine(true)
		r.deliver()
		if ok {
			continue
		}
		if !e.accepting.Load() || e.idle.Add(1) > e.maxIdle {
			e.idle.Add(-1)
			return
		}
		select {
		case it := <-e.handoff:
			w, ctx = it.w, it.ctx
		case <-done:
			e.idle.Add(-1)
			return
		}
	}
}

// workContext is the context of one work: cancelled by the runner when the Machine asks
// or when Run ends. Unlike context.WithCancel it does not register with its parent (the
// runner cancels every in-flight work itself when Run's context ends), which keeps a
// work's start cheap. Values and the deadline come from Run's context. It implements
// AfterFunc, which the context package uses to propagate a cancellation to the contexts
// derived from it (context.WithTimeout, WithCancel, AfterFunc), so that they start no
// goroutine to watch it.
type workContext struct {
	context.Context
	mu   sync.Mutex
	done chan struct{}
	err  error
	// afters are the functions registered by AfterFunc and not yet stopped or called;
	// nextAfter numbers them.
	afters    map[uint64]func()
	nextAfter uint64
}

// Done returns a channel closed when the work is cancelled.
func (c *workContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

// Err returns context.Canceled once the work is cancelled.
func (c *workContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// AfterFunc arranges for f to be called once the work is cancelled (at once if it is),
// unless stop is called first; stop reports whether it prevented the call.
func (c *workContext) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		f()
		return func() bool { return false }
	}
	if c.afters == nil {
		c.afters = make(map[uint64]func())
	}
	id := c.nextAfter
	c.nextAfter++
	c.afters[id] = f
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.afters[id]
		delete(c.afters, id)
		return ok
	}
}

// cancel ends the work's context and then, without the lock, calls the functions
// registered by AfterFunc.
func (c *workContext) cancel() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = context.Canceled
	if c.done != nil {
		close(c.done)
	}
	afters := c.afters
	c.afters = nil
	c.mu.Unlock()
	for _, f := range afters {
		f()
	}
}
