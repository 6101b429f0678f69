package podworker

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/pleg"
)

// TestOnTransitionOutsideTheLock: Config.OnTransition runs after the runner's lock is
// released, in the Machine's order, each before the work its transition starts: an
// observer may call the Runner, and one that blocks holds up neither the Runner's lock
// nor its callers, only the works that start after it was called.
func TestOnTransitionOutsideTheLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r *Runner
		var got []string
		block := make(chan struct{})
		blocked := make(chan struct{})
		observer := func(tr Transition) {
			if len(got) == 0 {
				close(blocked)
				<-block
			}
			st, _ := r.PodState(tr.UID) // re-enters the Runner
			got = append(got, string(tr.UID)+" "+tr.From.String()+"->"+tr.To.String()+" working="+strconv.FormatBool(st.Working))
		}
		var mu sync.Mutex
		var syncs []string
		called := func(what string, p *v1.Pod) {
			mu.Lock()
			defer mu.Unlock()
			syncs = append(syncs, what+" "+string(p.UID))
		}
		syncer := PodSyncerFuncs{
			SyncPodFunc: func(_ context.Context, _ SyncPodType, p, _ *v1.Pod, _ *pleg.PodStatus) (bool, error) {
				called("SyncPod", p)
				return false, nil
			},
			SyncTerminatingPodFunc: func(_ context.Context, p *v1.Pod, _ *pleg.PodStatus, _ int64, _ func(*v1.PodStatus)) error {
				called("SyncTerminatingPod", p)
				return nil
			},
		}
		var err error
		r, err = New(Config{Syncer: syncer, OnTransition: observer})
		if err != nil {
			t.Fatal(err)
		}
		stop := startRun(t, r)
		go func() {
			if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a", deleted(1))}); err != nil {
				t.Error(err)
			}
		}()
		<-blocked
		// The observer blocks in a's first transition: the Runner still answers and takes
		// updates; the works wait for their transitions to be observed.
		if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("b")}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := r.Len(); n != 2 || len(syncs) != 0 {
			t.Errorf("while the observer blocks: %d pods known, syncs %v; want 2 and none", n, syncs)
		}
		close(block)
		synctest.Wait()
		want := []string{
			"a none->terminating working=true",
			"b none->syncing working=true",
			"a terminating->terminated working=true",
			"a terminated->finished working=false",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("transitions observed, in order (-want +got):\n%s", diff)
		}
		if s, _ := r.PodState("a"); s.Stage != StageFinished || len(syncs) != 2 {
			t.Errorf("a %v, syncs %v; want a finished after SyncTerminatingPod a and SyncPod b", s.Stage, syncs)
		}
		stop()
	})
}

// TestTransitionsLoggedWithoutObservers: a Runner without observers logs the
// transitions its Machine reports only if its logger logs at debug level.
func TestTransitionsLoggedWithoutObservers(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		t.Run(level.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs bytes.Buffer
				logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: level}))
				r, err := New(Config{Syncer: PodSyncerFuncs{}, Logger: logger})
				if err != nil {
					t.Fatal(err)
				}
				stop := startRun(t, r)
				if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a", deleted(1))}); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				if s, _ := r.PodState("a"); s.Stage != StageFinished {
					t.Errorf("a is %v, want finished", s.Stage)
				}
				stop()
				logged := strings.Count(logs.String(), "pod stage changed")
				if want := map[slog.Level]int{slog.LevelInfo: 0, slog.LevelDebug: 3}[level]; logged != want {
					t.Errorf("%d stage changes logged, want %d:\n%s", logged, want, logs.String())
				}
			})
		})
	}
}
