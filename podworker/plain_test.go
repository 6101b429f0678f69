package podworker

import "context"

// plainEngine is the plain twin of combiningEngine: a goroutine per work, which takes the
// runner's lock to report the outcome, and a context.WithCancel per work.
type plainEngine struct{ r *Runner }

func newPlainEngine(r *Runner) engine { return plainEngine{r: r} }

// cancelFunc is a context.CancelFunc as a canceler.
type cancelFunc context.CancelFunc

func (f cancelFunc) Cancel() { f() }

func (plainEngine) newContext(parent context.Context) (context.Context, canceler) {
	ctx, cancel := context.WithCancel(parent)
	return ctx, cancelFunc(cancel)
}

func (e plainEngine) spawn(w Work, ctx context.Context) {
	e.r.wg.Add(1)
	go e.run(ctx, w)
}

// run runs one work and reports it under the lock.
func (e plainEngine) run(ctx context.Context, w Work) {
	defer e.r.wg.Done()
	res := e.r.execute(ctx, w)
	now, rnd := e.r.clock.Now(), e.r.rand()
	e.r.mu.Lock()
	e.r.completeLocked(w.UID, res, now, rnd, false)
	e.r.unlock()
}

func (plainEngine) unlocked() {}

func (plainEngine) stopping() {}
