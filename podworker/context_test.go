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
