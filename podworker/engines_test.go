package podworker

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg"
)

// engines are the Runner's engines by name: the one Runners use and its plain twin.
var engines = []struct {
	name string
	new  func(*Runner) engine
}{
	{"combining", newCombiningEngine},
	{"plain", newPlainEngine},
}

// newOnEngine returns New for Runners on the named engine (the one New uses for an
// unknown name).
func newOnEngine(name string) func(Config) (*Runner, error) {
	for _, e := range engines {
		if e.name == name {
			return func(cfg Config) (*Runner, error) { return newRunner(cfg, e.new) }
		}
	}
	return New
}

// TestEnginesStress runs the stress test on every engine.
func TestEnginesStress(t *testing.T) {
	for _, e := range engines {
		for _, bound := range []int{0, 3, Unbounded} {
			t.Run(fmt.Sprintf("%s/max=%d", e.name, bound), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { stress(t, newOnEngine(e.name), bound) })
			})
		}
	}
}

// TestEnginesRunBlockingBurst: a burst of syncs that block until the work is cancelled
// (more of them than idle workers are kept) all run at once on every engine, given
// before Run and while it runs, and all end when Run does.
func TestEnginesRunBlockingBurst(t *testing.T) {
	const before, during = 40, 60
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var inFlight, cancelled atomic.Int32
				syncer := PodSyncerFuncs{SyncPodFunc: func(ctx context.Context, _ SyncPodType, _, _ *v1.Pod, _ *pleg.PodStatus) (bool, error) {
					inFlight.Add(1)
					<-ctx.Done()
					cancelled.Add(1)
					return false, ctx.Err()
				}}
				r, err := newOnEngine(e.name)(Config{Syncer: syncer})
				if err != nil {
					t.Fatal(err)
				}
				update := func(i int) {
					if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod(strconv.Itoa(i))}); err != nil {
						t.Fatal(err)
					}
				}
				for i := range before {
					update(i)
				}
				stop := startRun(t, r)
				synctest.Wait()
				if got := inFlight.Load(); got != before {
					t.Errorf("%d syncs in flight after Run started, want %d", got, before)
				}
				for i := range during {
					update(before + i)
				}
				synctest.Wait()
				if got := inFlight.Load(); got != before+during {
					t.Errorf("%d syncs in flight, want %d", got, before+during)
				}
				stop()
				if got := cancelled.Load(); got != before+during {
					t.Errorf("%d syncs returned when Run did, want %d", got, before+during)
				}
			})
		})
	}
}

// TestWorkQueue: works come out in the order they went in, across the ring's wrap and
// its growth; a large buffer is kept while bursts fill it and dropped after a light use.
func TestWorkQueue(t *testing.T) {
	var q workQueue
	next, want := 0, 0
	push := func(n int) {
		for range n {
			q.push(workItem{w: Work{UID: types.UID(strconv.Itoa(next))}})
			next++
		}
	}
	pop := func(n int) {
		t.Helper()
		for range n {
			it, ok := q.pop()
			if !ok || it.w.UID != types.UID(strconv.Itoa(want)) {
				t.Fatalf("pop = %q, %v; want %d", it.w.UID, ok, want)
			}
			want++
		}
	}
	push(10)
	pop(6)
	push(12) // wraps around the ring of 16
	pop(4)
	push(30) // grows while wrapped
	pop(q.len())
	if _, ok := q.pop(); ok {
		t.Fatal("pop from an empty queue succeeded")
	}

	const big = 4 * DefaultMaxConcurrentSyncs
	push(big)
	pop(big)
	if cap(q.items) < big {
		t.Fatalf("a fully used buffer of %d was dropped", cap(q.items))
	}
	push(1)
	pop(1)
	if q.items != nil {
		t.Errorf("a buffer of %d was kept after a light use", cap(q.items))
	}
}
