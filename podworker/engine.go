package podworker

import (
	"context"

	"github.com/podlife/podlife/podworker/internal/workctx"
)

// engine is how a Runner runs its works, kept apart from the lifecycle logic (the
// Machine, its decisions, the timer and the hooks, in runner.go): it starts each work on
// a goroutine outside the runner's lock, runs it (Runner.execute) and has its outcome
// applied to the Machine (Runner.completeLocked). combiningEngine is the one Runners use;
// its plain twin (one mutex, a goroutine per work: plainEngine, in the tests) runs the
// same scenario scripts, stress tests and W2, which check the fast one against it and
// measure what it wins (docs/PERFORMANCE.md, W2).
//
// New gives every Runner a combiningEngine; the package's tests build Runners on either
// engine with newRunner.
type engine interface {
	// newContext returns the context of one work, derived from Run's context, and what
	// ends it. The Runner ends it when the Machine cancels the work, when the work is
	// over, and for every work in flight when Run ends.
	newContext(parent context.Context) (context.Context, canceler)
	// spawn has w run with ctx on a goroutine counted in Runner.wg (a new one, or a
	// worker that takes it from a queue), without waiting for other works. r.mu is held.
	spawn(w Work, ctx context.Context)
	// unlocked is called by every holder of r.mu right after releasing it.
	unlocked()
	// stopping says that Run is returning: no goroutine may wait for more work.
	stopping()
}

// canceler ends one work's context (workctx.Canceler).
type canceler = workctx.Canceler
