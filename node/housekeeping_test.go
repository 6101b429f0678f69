package node_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

// slowRuntime's ListPods and RemovePod block, once armed, until released (or their
// context ends).
type slowRuntime struct {
	node.Runtime
	armed   atomic.Bool
	release chan struct{}
	once    sync.Once
}

func (r *slowRuntime) wait(ctx context.Context) {
	if !r.armed.Load() {
		return
	}
	select {
	case <-r.release:
	case <-ctx.Done():
	}
}

func (r *slowRuntime) ListPods(ctx context.Context, all bool) ([]*pleg.Pod, error) {
	r.wait(ctx)
	return r.Runtime.ListPods(ctx, all)
}

func (r *slowRuntime) RemovePod(ctx context.Context, pod *pleg.Pod) error {
	r.wait(ctx)
	return r.Runtime.RemovePod(ctx, pod)
}

// Housekeeping's runtime calls run off the loop: while its ListPods hangs, a config
// change is still handled.
func TestSlowHousekeepingHoldsUpNoConfigChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := &slowRuntime{release: make(chan struct{})}
		e := start(t, nil, nil, envOpts{wrap: func(rt node.Runtime) node.Runtime { slow.Runtime = rt; return slow }})
		<-e.n.Ready()
		slow.armed.Store(true)
		// A housekeeping round starts and hangs in ListPods.
		time.Sleep(3 * node.DefaultHousekeepingPeriod)
		synctest.Wait()
		e.create(newPod("late", 30, v1.RestartPolicyAlways, nil))
		synctest.Wait()
		handled := false
		e.mu.Lock()
		for _, ev := range e.events {
			if ev.Kind == node.EventConfig && ev.Pod != nil && ev.Pod.Name == "late" {
				handled = true
			}
		}
		e.mu.Unlock()
		if !handled {
			t.Error("the pod's ADD was not handled while housekeeping's ListPods hung")
		}
		close(slow.release)
		e.waitPhase("late", v1.PodRunning)
		e.stop()
	})
}
