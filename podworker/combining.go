package podworker

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/podworker/internal/workctx"
)

// combiningEngine runs works on workers that never wait for the runner's lock: a
// finished work is queued as a completion, and whichever goroutine holds (or next takes)
// the lock applies every queued completion to the Machine (flat combining). A worker
// whose completion starts another work runs that one itself; the other works to start
// wait in a run queue, which workers take from when they are left without work. While
// works wait there, one worker is on its way to take the next (started, or woken from
// the idle ones) and, before it runs that work, starts the next one if works still
// wait: a burst of short syncs is run by a few workers instead of a goroutine per work,
// and a burst of blocking syncs still gets a worker per work, started one after the
// other. A worker left without work waits as one of at most 2*GOMAXPROCS idle ones for
// the next burst. Works get package workctx's contexts, which cost no registration with
// Run's context (unless the build has the tag podlife_simple).
type combiningEngine struct {
	r *Runner

	// cmu guards completions: finished works not yet reported to the Machine. Every
	// holder of r.mu checks it after unlocking, so none is ever stranded; pending is
	// len(completions), changed under cmu, read without it.
	cmu         sync.Mutex
	completions []completion
	spare       []completion
	pending     atomic.Int32

	// qmu guards runq, the works spawned and not yet taken by a worker (in spawn
	// order), and starting: a worker was started or woken to take from runq and has not
	// taken yet. runq is never non-empty while starting is false.
	qmu      sync.Mutex
	runq     workQueue
	starting bool

	// wake wakes an idle worker to take from runq; idle counts the workers that are (or
	// are about to be) waiting on it, at most maxIdle; accepting tells workers whether
	// they may wait (until Run returns).
	wake      chan struct{}
	idle      atomic.Int32
	maxIdle   int32
	accepting atomic.Bool

	// ctxs hands out the works' contexts (r.mu held): the fast ones of package workctx,
	// or their simple twin in a build with the tag podlife_simple.
	ctxs *workctx.Source
}

// workItem is a work with its context, waiting in the run queue.
type workItem struct {
	w   Work
	ctx context.Context
}

// completion is a finished work waiting to be reported to the Machine.
type completion struct {
	uid types.UID
	res Result
	at  time.Time
	rnd float64 // Config.Rand's number for it, drawn outside the lock
}

func newCombiningEngine(r *Runner) engine {
	e := &combiningEngine{r: r, wake: make(chan struct{}), maxIdle: int32(2 * runtime.GOMAXPROCS(0)),
		ctxs: workctx.NewSource(workctx.Simple)}
	e.accepting.Store(true)
	return e
}

// newContext hands out the next work context (r.mu is held).
func (e *combiningEngine) newContext(parent context.Context) (context.Context, canceler) {
	return e.ctxs.New(parent)
}

// spawn queues w for a worker, and starts one unless one is on its way.
func (e *combiningEngine) spawn(w Work, ctx context.Context) {
	e.qmu.Lock()
	e.runq.push(workItem{w: w, ctx: ctx})
	start := !e.starting
	e.starting = true
	e.qmu.Unlock()
	if start {
		e.startWorker()
	}
}

// take returns the next work of the run queue, if any; starter says that the caller is
// the worker that was on its way. If works still wait, it makes sure one is.
func (e *combiningEngine) take(starter bool) (workItem, bool) {
	e.qmu.Lock()
	if starter {
		e.starting = false
	}
	it, ok := e.runq.pop()
	start := e.runq.len() > 0 && !e.starting
	if start {
		e.starting = true
	}
	e.qmu.Unlock()
	if start {
		e.startWorker()
	}
	return it, ok
}

// startWorker wakes an idle worker, or starts one, to take from the run queue.
func (e *combiningEngine) startWorker() {
	if e.idle.Load() > 0 {
		select {
		case e.wake <- struct{}{}:
			e.idle.Add(-1)
			return
		default:
		}
	}
	e.r.wg.Add(1)
	go e.worker()
}

// unlocked applies the completions queued while r.mu was held, if any.
func (e *combiningEngine) unlocked() {
	if e.hasCompletions() {
		e.combine(false)
	}
}

func (e *combiningEngine) stopping() { e.accepting.Store(false) }

func (e *combiningEngine) hasCompletions() bool { return e.pending.Load() > 0 }

// combine applies queued completions for as long as it gets the lock without waiting
// and completions keep arriving. With inline, the first work to start is returned to
// the caller (a worker that runs it next) instead of spawned.
func (e *combiningEngine) combine(inline bool) (next Work, nextCtx context.Context, ok bool) {
	r := e.r
	for r.mu.TryLock() {
		for {
			e.cmu.Lock()
			batch := e.completions
			if len(batch) == 0 {
				e.cmu.Unlock()
				break
			}
			e.completions, e.spare = e.spare[:0], nil
			e.pending.Store(0)
			e.cmu.Unlock()
			for i := range batch {
				c := &batch[i]
				if w, wctx, got := r.completeLocked(c.uid, c.res, c.at, c.rnd, inline && !ok); got {
					next, nextCtx, ok = w, wctx, true
				}
			}
			clear(batch)
			if keepBuffer(len(batch), cap(batch)) {
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

// worker is started (or woken) to take a work from the run queue. It runs works until
// none is left for it: the next one its completion starts, else the next queued one.
// Then it waits for a wake if fewer than maxIdle others do, and exits otherwise or when
// Run's context ends.
func (e *combiningEngine) worker() {
	r := e.r
	defer r.wg.Done()
	done := r.ctx.Done()
	starter := true
	for {
		it, ok := e.take(starter)
		starter = false
		if !ok {
			if !e.awaitWake(done) {
				return
			}
			starter = true
			continue
		}
		e.run(it.w, it.ctx)
	}
}

// run runs w, then every work its completion hands back (see combine).
func (e *combiningEngine) run(w Work, ctx context.Context) {
	r := e.r
	for ok := true; ok; {
		res := r.execute(ctx, w)
		now, rnd := r.clock.Now(), r.rand()
		e.cmu.Lock()
		e.completions = append(e.completions, completion{uid: w.UID, res: res, at: now, rnd: rnd})
		e.pending.Store(int32(len(e.completions)))
		e.cmu.Unlock()
		w, ctx, ok = e.combine(true)
		r.deliver()
	}
}

// awaitWake waits, as an idle worker, until it is woken to take from the run queue
// (true), or returns false at once if maxIdle others wait or Run is returning, or when
// it does.
func (e *combiningEngine) awaitWake(done <-chan struct{}) bool {
	if !e.accepting.Load() || e.idle.Add(1) > e.maxIdle {
		e.idle.Add(-1)
		return false
	}
	select {
	case <-e.wake:
		return true
	case <-done:
		e.idle.Add(-1)
		return false
	}
}

// keepBuffer reports whether a Runner's buffer (of completions, works to start or
// transitions to deliver), of which used entries of capacity were just used, is kept for
// reuse: one that fits the default bound of works in flight always (so bursts do not
// regrow it), a larger one while a burst still fills a good part of it (it is dropped
// at its next light use).
func keepBuffer(used, capacity int) bool {
	return capacity <= DefaultMaxConcurrentSyncs || used >= capacity/4
}

// workQueue is a FIFO of works in a ring buffer: n works wait from items[head] on;
// peak is the largest n since the queue was last empty.
type workQueue struct {
	items   []workItem
	head, n int
	peak    int
}

func (q *workQueue) len() int { return q.n }

func (q *workQueue) push(it workItem) {
	if q.n == len(q.items) {
		grown := make([]workItem, max(16, 2*q.n))
		m := copy(grown, q.items[q.head:])
		copy(grown[m:], q.items[:q.head])
		q.items, q.head = grown, 0
	}
	q.items[(q.head+q.n)%len(q.items)] = it
	q.n++
	q.peak = max(q.peak, q.n)
}

func (q *workQueue) pop() (workItem, bool) {
	if q.n == 0 {
		return workItem{}, false
	}
	it := q.items[q.head]
	q.items[q.head] = workItem{}
	q.head = (q.head + 1) % len(q.items)
	q.n--
	if q.n == 0 {
		q.head = 0
		if !keepBuffer(q.peak, len(q.items)) {
			q.items = nil
		}
		q.peak = 0
	}
	return it, true
}
