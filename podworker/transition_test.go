package podworker

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// TestOnTransitionOutsideTheLock: Config.OnTransition runs after the runner's lock is
// released, in the Machine's order: an observer may call the Runner, and one that blocks
// holds up neither the Runner's other callers nor the pods' work.
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
			got = append(got, string(tr.UID)+" "+tr.From.String()+"->"+tr.To.String()+" now "+st.Stage.String())
		}
		var err error
		r, err = New(Config{Syncer: PodSyncerFuncs{}, OnTransition: observer})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- r.Run(ctx) }()
		go func() {
			if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a", deleted(1))}); err != nil {
				t.Error(err)
			}
		}()
		<-blocked
		// The observer blocks in the first transition: the Runner still answers and works.
		if err := r.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("b")}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		for _, uid := range []types.UID{"a", "b"} {
			if st, ok := r.PodState(uid); !ok || (uid == "a") != (st.Stage == StageFinished) {
				t.Errorf("pod %s: %+v, %t; want a finished and b syncing while the observer blocks", uid, st, ok)
			}
		}
		close(block)
		synctest.Wait()
		want := []string{
			"a none->terminating now finished",
			"a terminating->terminated now finished",
			"a terminated->finished now finished",
			"b none->syncing now syncing",
		}
		// The pods' work interleaves; each pod's transitions come in order.
		slices.SortStableFunc(got, func(x, y string) int { return strings.Compare(x[:1], y[:1]) })
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("transitions observed, in order per pod (-want +got):\n%s", diff)
		}
		cancel()
		<-done
	})
}
