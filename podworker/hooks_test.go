package podworker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/pleg"
)

// TestHooks: a pod created (its first sync fails), then deleted: the hooks see each work
// start and finish with its operation type, duration and error, and every stage change in
// order with the pod's name and time, all outside the runner's lock (they call PodState).
func TestHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var lines []string
		var r *Runner
		add := func(format string, args ...any) {
			mu.Lock()
			lines = append(lines, fmt.Sprintf(format, args...))
			mu.Unlock()
		}
		t0 := time.Now()
		fail := errors.New("boom")
		first := true
		syncer := PodSyncerFuncs{
			SyncPodFunc: func(context.Context, SyncPodType, *v1.Pod, *v1.Pod, *pleg.PodStatus) (bool, error) {
				time.Sleep(2 * time.Second)
				if first {
					first = false
					return false, fail
				}
				return false, nil
			},
			SyncTerminatingPodFunc: func(context.Context, *v1.Pod, *pleg.PodStatus, int64, func(*v1.PodStatus)) error {
				time.Sleep(3 * time.Second)
				return nil
			},
		}
		var err error
		r, err = New(Config{Syncer: syncer, BackoffInitial: time.Second, Rand: func() float64 { return 0 }, Hooks: Hooks{
			SyncStarted: func(s Sync) {
				r.PodState(s.UID) // would deadlock under the lock
				add("start %s %s %s +%v", s.PodName(), s.WorkType, s.OperationType(), s.Started.Sub(t0))
			},
			SyncFinished: func(s Sync) {
				add("end %s %s %v err=%v", s.PodName(), s.OperationType(), s.Duration, s.Err)
			},
			Transition: func(tr Transition, at time.Time) {
				r.Len()
				add("%s %s -> %s +%v", tr.PodName(), tr.From, tr.To, at.Sub(t0))
			},
		}})
		if err != nil {
			t.Fatal(err)
		}
		stop := startRun(t, r)
		if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second) // the failed sync, the backoff, the second sync
		synctest.Wait()
		if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: testPod("a", deleted(1))}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		stop()
		want := []string{
			"ns/a none -> syncing +0s",
			"start ns/a sync create +0s",
			"end ns/a create 2s err=boom",
			"start ns/a sync sync +3s", // the retry
			"end ns/a sync 2s err=<nil>",
			"ns/a syncing -> terminating +10s",
			"start ns/a terminating kill +10s",
			"end ns/a kill 3s err=<nil>",
			"ns/a terminating -> terminated +13s",
			"start ns/a terminated terminated +13s",
			"end ns/a terminated 0s err=<nil>",
			"ns/a terminated -> finished +13s",
		}
		if diff := cmp.Diff(want, lines); diff != "" {
			t.Errorf("hooks (-want +got):\n%s", diff)
		}
	})
}
