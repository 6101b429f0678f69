package workctx

import (
	"context"
	"sync"
)

// fastContext is the fast work context: cancelled by its Canceler only (it does not
// register with its parent, whose Done it never watches). Values and the deadline come
// from the parent. It implements AfterFunc, which the context package uses to propagate
// a cancellation to the contexts derived from it (context.WithTimeout, WithCancel,
// AfterFunc), so that they start no goroutine to watch it.
type fastContext struct {
	context.Context
	mu        sync.Mutex
	done      chan struct{}
	cancelled bool
	// afters are the functions registered by AfterFunc and not yet stopped or called.
	afters map[*afterFunc]struct{}
}

// afterFunc is one function registered by fastContext.AfterFunc.
type afterFunc struct{ f func() }

// Done returns a channel closed when the work is cancelled.
func (c *fastContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.cancelled {
			close(c.done)
		}
	}
	return c.done
}

// Err returns context.Canceled once the work is cancelled.
func (c *fastContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancelled {
		return context.Canceled
	}
	return nil
}

// AfterFunc arranges for f to be called once the work is cancelled (at once, on a
// goroutine of its own, if it is: the context package calls AfterFunc holding a lock
// that f takes), unless stop is called first; stop reports whether it prevented the call.
func (c *fastContext) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.cancelled {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	if c.afters == nil {
		c.afters = make(map[*afterFunc]struct{})
	}
	a := &afterFunc{f: f}
	c.afters[a] = struct{}{}
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.afters[a]
		delete(c.afters, a)
		return ok
	}
}

// Cancel ends the work's context and then, without the lock, calls the functions
// registered by AfterFunc.
func (c *fastContext) Cancel() {
	c.mu.Lock()
	if c.cancelled {
		c.mu.Unlock()
		return
	}
	c.cancelled = true
	if c.done != nil {
		close(c.done)
	}
	afters := c.afters
	c.afters = nil
	c.mu.Unlock()
	for a := range afters {
		a.f()
	}
}
