package podworker

import (
	"context"
	"runtime/metrics"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/pleg"
)

// TestDerivedContextsStartNoGoroutine: contexts a PodSyncer derives from its work's
// context (context.WithTimeout, WithCancel, AfterFunc) start no goroutine to watch it, and
// still end when the work is cancelled.
func TestDerivedContextsStartNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100
		var children []context.Context
		added := -1
		afterFuncs := make(chan struct{}, n)
		syncer := PodSyncerFuncs{SyncPodFunc: func(ctx context.Context, _ SyncPodType, _, _ *v1.Pod, _ *pleg.PodStatus) (bool, error) {
			before := goroutinesCreated()
			for i := range n {
				var c context.Context
				var stop context.CancelFunc
				switch i % 3 {
				case 0:
					c, stop = context.WithTimeout(ctx, time.Hour)
					defer stop()
				case 1:
					c, stop = context.WithCancel(ctx)
					defer stop()
				default:
					c = ctx
					context.AfterFunc(ctx, func() { afterFuncs <- struct{}{} })
				}
				children = append(children, c)
			}
			added = int(goroutinesCreated() - before)
			<-ctx.Done()
			return false, ctx.Err()
		}}
		r, err := New(Config{Syncer: syncer})
		if err != nil {
			t.Fatal(err)
		}
		stop := startRun(t, r)
		if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if added != 0 {
			t.Errorf("%d derived contexts started %d goroutines, want 0", n, added)
		}
		// Deleting the pod cancels SyncPod's context, and with it every derived one.
		if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: testPod("a", deleted(1))}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		for i, c := range children {
			if c.Err() == nil {
				t.Fatalf("derived context %d not cancelled with the work", i)
			}
		}
		if got, want := len(afterFuncs), n/3; got != want {
			t.Errorf("%d AfterFunc functions called, want %d", got, want)
		}
		stop()
	})
}

// goroutinesCreated is how many goroutines the process created so far.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestWorkContextAfterFunc: stop prevents the call before cancellation and reports it;
// after cancellation a new function is called at once (on a goroutine of its own).
func TestWorkContextAfterFunc(t *testing.T) {
	c := &workContext{Context: context.Background()}
	calls := 0
	stop := c.AfterFunc(func() { calls++ })
	kept := c.AfterFunc(func() { calls += 10 })
	if !stop() || stop() {
		t.Fatal("stop: want true once, then false")
	}
	c.cancel()
	c.cancel()
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
	*workContext
	reads *int
}

// Done cancels the work at the second read: the context package reads Done, then checks
// whether the parent is a *cancelCtx (reading Done again), then calls AfterFunc.
func (c cancelInWindow) Done() <-chan struct{} {
	done := c.workContext.Done()
	if *c.reads++; *c.reads == 2 {
		c.workContext.cancel()
	}
	return done
}

func (c cancelInWindow) AfterFunc(f func()) func() bool {
	registered := make(chan struct{})
	defer close(registered)
	return c.workContext.AfterFunc(func() { <-registered; f() })
}

// TestWorkContextCancelledWhileDeriving: context.WithCancel of a work's context that is
// cancelled while the child is being set up returns, and the child ends. The context
// package holds the child's lock while it calls AfterFunc, and the function it registers
// takes that lock: a function registered after cancellation must run on a goroutine of
// its own, as context.AfterFunc's does, never on AfterFunc's caller's.
func TestWorkContextCancelledWhileDeriving(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent := cancelInWindow{&workContext{Context: context.Background()}, new(int)}
		child, cancel := context.WithCancel(parent)
		defer cancel()
		<-child.Done()
		if *parent.reads < 2 {
			t.Fatalf("Done read %d times: the cancellation did not land before AfterFunc", *parent.reads)
		}
	})
}
