package node_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

// pullFails is a runtime whose image pulls fail until pulled is set: SyncPod starts
// nothing and reports ErrImagePull for the pod's container.
type pullFails struct {
	node.Runtime
	mu     sync.Mutex
	pulled bool
}

func (r *pullFails) SyncPod(ctx context.Context, pod *v1.Pod, rs *pleg.PodStatus) error {
	r.mu.Lock()
	pulled := r.pulled
	r.mu.Unlock()
	if pulled {
		return r.Runtime.SyncPod(ctx, pod, rs)
	}
	return fmt.Errorf("pulling: %w", &node.ContainerError{Container: "app", Reason: node.ReasonErrImagePull,
		Message: "failed to pull image \"busybox\": not found"})
}

// A ContainerError of SyncPod reaches the API: the back-off retry of the failed sync
// writes the container as Waiting ErrImagePull with the runtime's message, the kubelet's
// event (Failed "Error: ErrImagePull") is recorded, and once SyncPod succeeds the reason
// is gone and the pod runs.
func TestWaitingReasonReachesAPI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var events []string
		rec := node.EventRecorderFunc(func(p *v1.Pod, typ, reason, msg string) {
			mu.Lock()
			events = append(events, typ+" "+reason+": "+msg)
			mu.Unlock()
		})
		rt := &pullFails{}
		e := start(t, nil, nil, envOpts{recorder: rec, wrap: func(r node.Runtime) node.Runtime { rt.Runtime = r; return rt }})
		e.create(newPod("web", 30, v1.RestartPolicyAlways, nil))
		var got v1.ContainerState
		e.waitPod("web", func(p *v1.Pod, ok bool) bool {
			if !ok || len(p.Status.ContainerStatuses) != 1 {
				return false
			}
			got = p.Status.ContainerStatuses[0].State
			return got.Waiting != nil && got.Waiting.Reason == node.ReasonErrImagePull
		})
		want := v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: node.ReasonErrImagePull,
			Message: "failed to pull image \"busybox\": not found"}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("container state (-want +got):\n%s", d)
		}
		mu.Lock()
		if len(events) == 0 || events[0] != "Warning Failed: Error: ErrImagePull" {
			t.Errorf("events %q, want Warning Failed: Error: ErrImagePull first", events)
		}
		mu.Unlock()
		rt.mu.Lock()
		rt.pulled = true
		rt.mu.Unlock()
		e.waitPhase("web", v1.PodRunning)
		e.waitPod("web", func(p *v1.Pod, ok bool) bool {
			return ok && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
		})
		time.Sleep(time.Second)
		e.stop()
	})
}
