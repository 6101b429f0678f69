package workctx

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// sources are the two implementations, which every equivalence test runs against.
var sources = []struct {
	name   string
	simple bool
}{{"fast", false}, {"simple", true}}

type key struct{}

// TestEquivalence: both implementations give a context that carries the parent's values
// and deadline, ends (Done closed, Err Canceled) only when cancelled, however often, and
// ends the contexts and AfterFuncs derived from it.
func TestEquivalence(t *testing.T) {
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				deadline := time.Now().Add(time.Hour)
				parent, stopParent := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), deadline)
				defer stopParent()
				s := NewSource(src.simple)
				var ctxs []context.Context
				var cancels []Canceler
				for range 2 * batchSize { // more than one batch
					c, cancel := s.New(parent)
					ctxs, cancels = append(ctxs, c), append(cancels, cancel)
				}
				ctx, cancel := ctxs[0], cancels[0]
				if got := ctx.Value(key{}); got != "v" {
					t.Errorf("Value = %v, want the parent's", got)
				}
				if got, ok := ctx.Deadline(); !ok || !got.Equal(deadline) {
					t.Errorf("Deadline = %v, %v; want the parent's", got, ok)
				}
				timeout, stopTimeout := context.WithTimeout(ctx, time.Minute)
				defer stopTimeout()
				child, stopChild := context.WithCancel(ctx)
				defer stopChild()
				called := make(chan struct{})
				context.AfterFunc(ctx, func() { close(called) })
				stopped := false
				stop := context.AfterFunc(ctx, func() { stopped = true })
				if !stop() {
					t.Error("stop of an AfterFunc before cancellation returned false")
				}
				select {
				case <-ctx.Done():
					t.Fatal("done before Cancel")
				default:
				}
				if ctx.Err() != nil {
					t.Fatalf("Err = %v before Cancel", ctx.Err())
				}
				cancel.Cancel()
				cancel.Cancel()
				<-ctx.Done()
				<-called
				synctest.Wait()
				for name, c := range map[string]context.Context{"work": ctx, "WithTimeout": timeout, "WithCancel": child} {
					if !errors.Is(c.Err(), context.Canceled) {
						t.Errorf("%s: Err = %v, want Canceled", name, c.Err())
					}
				}
				if stopped {
					t.Error("a stopped AfterFunc was called")
				}
				for i, c := range ctxs[1:] {
					if c.Err() != nil {
						t.Errorf("context %d ended with another's Cancel", i+1)
					}
				}
				// Derived after cancellation: ended at once.
				late, stopLate := context.WithCancel(ctx)
				defer stopLate()
				<-late.Done()
				lateCalled := make(chan struct{})
				context.AfterFunc(ctx, func() { close(lateCalled) })
				<-lateCalled
				for _, c := range cancels[1:] {
					c.Cancel()
				}
			})
		})
	}
}

// TestFastAfterFunc: stop prevents the call before cancellation and reports it; after
// cancellation a new function is called at once (on a goroutine of its own).
func TestFastAfterFunc(t *testing.T) {
	c := &fastContext{Context: context.Background()}
	calls := 0
	stop := c.AfterFunc(func() { calls++ })
	kept := c.AfterFunc(func() { calls += 10 })
	if !stop() || stop() {
		t.Fatal("stop: want true once, then false")
	}
	c.Cancel()
	c.Cancel()
	if calls != 10 {
		t.Fatalf("calls = %d, want only the kept function once (10)", calls)
	}
	if kept() {
		t.Error("stop after the call reported true")
	}
	ran := make(chan struct{})
	c.AfterFunc(func() { close(ran) })
	<-ran // a function registered after cancellation runs at once
}

// cancelInWindow is a work's context whose cancellation lands between the context
// package's checks of Done and its call of AfterFunc, as the runner's cancel of a work can
// when a PodSyncer derives a context at that moment. The functions it registers wait
// until AfterFunc returned: called synchronously, one blocks the test (a deadlock, which
// synctest reports) instead of waiting forever for the lock the context package holds.
type cancelInWindow struct {
	*fastContext
	reads *int
}

// Done cancels the work at the second read: the context package reads Done, then checks
// whether the parent is a *cancelCtx (reading Done again), then calls AfterFunc.
func (c cancelInWindow) Done() <-chan struct{} {
	done := c.fastContext.Done()
	if *c.reads++; *c.reads == 2 {
		c.fastContext.Cancel()
	}
	return done
}

func (c cancelInWindow) AfterFunc(f func()) func() bool {
	registered := make(chan struct{})
	defer close(registered)
	return c.fastContext.AfterFunc(func() { <-registered; f() })
}

// TestFastCancelledWhileDeriving: context.WithCancel of a work's context that is
// cancelled while the child is being set up returns, and the child ends. The context
// package holds the child's lock while it calls AfterFunc, and the function it registers
// takes that lock: a function registered after cancellation must run on a goroutine of
// its own, as context.AfterFunc's does, never on AfterFunc's caller's.
func TestFastCancelledWhileDeriving(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent := cancelInWindow{&fastContext{Context: context.Background()}, new(int)}
		child, cancel := context.WithCancel(parent)
		defer cancel()
		<-child.Done()
		if *parent.reads < 2 {
			t.Fatalf("Done read %d times: the cancellation did not land before AfterFunc", *parent.reads)
		}
	})
}
