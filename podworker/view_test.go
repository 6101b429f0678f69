package podworker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/internal/seedpod"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/podworker"
)

// TestViewAsFunctions: a Runner given the relister's methods as functions
// (RuntimeViewFuncs) does exactly what it does given the relister: the same statuses reach
// the PodSyncer and the runtime is inspected as often.
func TestViewAsFunctions(t *testing.T) {
	run := func(t *testing.T, asFuncs bool) (calls []string, inspections int) {
		synctest.Test(t, func(t *testing.T) {
			rt := plegtest.NewRuntime(nil)
			rel, err := pleg.New(pleg.Config{Runtime: rt, Cache: pleg.NewCache()})
			if err != nil {
				t.Fatal(err)
			}
			var view podworker.RuntimeView = rel
			if asFuncs {
				view = podworker.RuntimeViewFuncs{StatusAfterFunc: rel.StatusAfter, LastStatusFunc: rel.LastStatus}
			}
			var mu sync.Mutex
			record := func(method string, s *pleg.PodStatus) {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, fmt.Sprintf("%s running=%d", method, s.RunningContainers()))
			}
			syncer := podworker.PodSyncerFuncs{
				SyncPodFunc: func(ctx context.Context, _ podworker.SyncPodType, pod, _ *v1.Pod, s *pleg.PodStatus) (bool, error) {
					record("SyncPod", s)
					return false, rt.StartPod(ctx, plegtest.PodSpec{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace,
						Containers: []plegtest.ContainerSpec{{Name: "app", StopDelay: time.Second}}})
				},
				SyncTerminatingPodFunc: func(ctx context.Context, pod *v1.Pod, s *pleg.PodStatus, g int64, _ func(*v1.PodStatus)) error {
					record("SyncTerminatingPod", s)
					return rt.KillPod(ctx, pod.UID, time.Duration(g)*time.Second)
				},
				SyncTerminatedPodFunc: func(_ context.Context, _ *v1.Pod, s *pleg.PodStatus) error {
					record("SyncTerminatedPod", s)
					return nil
				},
			}
			r, err := podworker.New(podworker.Config{Syncer: syncer, View: view})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() { done <- r.Run(ctx) }()
			pod := seedpod.Merged(0, time.Now())
			if err := r.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: pod}); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			time.Sleep(time.Second)
			del := pod.DeepCopy()
			now, grace := metav1.Now(), int64(30)
			del.DeletionTimestamp, del.DeletionGracePeriodSeconds = &now, &grace
			if err := r.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: del}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Minute)
			synctest.Wait()
			if s, _ := r.PodState(pod.UID); s.Stage != podworker.StageFinished {
				t.Errorf("stage %v, want finished", s.Stage)
			}
			inspections = rt.Calls().PodStatus
			cancel()
			<-done
		})
		return calls, inspections
	}
	relCalls, relInspections := run(t, false)
	funcCalls, funcInspections := run(t, true)
	want := []string{"SyncPod running=0", "SyncTerminatingPod running=1", "SyncTerminatedPod running=0"}
	if diff := cmp.Diff(want, relCalls); diff != "" {
		t.Errorf("with the relister (-want +got):\n%s", diff)
	}
	if relInspections == 0 {
		t.Error("the runtime was never inspected")
	}
	if diff := cmp.Diff(relCalls, funcCalls); diff != "" || relInspections != funcInspections {
		t.Errorf("functions instead of the relister: calls (-relister +funcs):\n%s\ninspections %d, want %d", diff, funcInspections, relInspections)
	}
}
