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
	"github.com/podlife/podlife/node/nodetest"
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

// nodetest.Runtime's scripted failures through the node: an image pull that always fails
// shows ErrImagePull, then ImagePullBackOff with the kubelet's message; a container that
// keeps exiting shows Waiting CrashLoopBackOff with the kubelet's message, its exit in
// lastState.
func TestScriptedWaitingReasons(t *testing.T) {
	t.Run("image pull", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := start(t, nil, nil, envOpts{})
			e.create(newPod("web", 30, v1.RestartPolicyAlways, map[string]string{nodetest.AnnotationImagePullError: "not found"}))
			for _, want := range []v1.ContainerStateWaiting{
				{Reason: node.ReasonErrImagePull, Message: "not found"},
				{Reason: node.ReasonImagePullBackOff, Message: `Back-off pulling image "busybox": not found`},
			} {
				e.waitPod("web", func(p *v1.Pod, ok bool) bool {
					return ok && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
						*p.Status.ContainerStatuses[0].State.Waiting == want
				})
			}
			e.stop()
		})
	})
	t.Run("crash loop", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := start(t, nil, nil, envOpts{containers: nodetest.ContainerBehaviour{RunFor: time.Second, ExitCode: 1, CrashLoopBackOff: true}})
			p := e.create(newPod("web", 30, v1.RestartPolicyAlways, nil))
			want := fmt.Sprintf("back-off 10s restarting failed container=app pod=web_default(%s)", p.UID)
			var got v1.ContainerStatus
			e.waitPod("web", func(p *v1.Pod, ok bool) bool {
				if !ok || len(p.Status.ContainerStatuses) != 1 {
					return false
				}
				got = p.Status.ContainerStatuses[0]
				return got.State.Waiting != nil && got.State.Waiting.Reason == node.ReasonCrashLoopBackOff
			})
			if got.State.Waiting.Message != want {
				t.Errorf("message %q, want %q", got.State.Waiting.Message, want)
			}
			if got.LastTerminationState.Terminated == nil || got.LastTerminationState.Terminated.ExitCode != 1 {
				t.Errorf("lastState %+v, want terminated with exit code 1", got.LastTerminationState)
			}
			e.stop()
		})
	})
}
