package cri_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestSyncPodCancelledLetsCallsFinish: SyncPod's context ends (the pod was deleted) while
// RunPodSandbox, CreateContainer or StartContainer is in flight; the call is not cut short
// (containerd would kill the shim and report exit code 128, StartError): it finishes, and
// KillPod then stops what started.
func TestSyncPodCancelledLetsCallsFinish(t *testing.T) {
	for _, method := range []string{"RunPodSandbox", "CreateContainer", "StartContainer"} {
		t.Run(method, func(t *testing.T) {
			h := newHarness(t, nil)
			h.images["img:1"] = true
			pod := fakePod(v1.RestartPolicyAlways, "a")
			ctx, cancel := context.WithCancel(t.Context())
			var callErr error
			h.hold = func(callCtx context.Context, m string) {
				if m != method {
					return
				}
				cancel() // SyncPod's ctx ends while the call is in flight
				// gRPC carries a client's cancellation to the server's context within
				// microseconds; a real-time window (not the fake clock, which the transport
				// does not use) bounds how long a passing run waits for one that never comes.
				window := time.NewTimer(300 * time.Millisecond)
				defer window.Stop()
				select {
				case <-callCtx.Done():
				case <-window.C:
				}
				callErr = callCtx.Err()
			}
			st := h.status(t, pod)
			_ = h.rt.SyncPod(ctx, pod, st)
			if callErr != nil {
				t.Fatalf("%s ran under a context that ended: %v", method, callErr)
			}
			cs, sbs := h.snapshot()
			if len(sbs) != 1 {
				t.Fatalf("%d sandboxes, want 1", len(sbs))
			}
			if method != "RunPodSandbox" {
				var states []runtimeapi.ContainerState
				for _, c := range cs["a"] {
					states = append(states, c.state)
				}
				if diff := cmp.Diff([]runtimeapi.ContainerState{runtimeapi.ContainerState_CONTAINER_RUNNING}, states); diff != "" {
					t.Errorf("container a (-want +got):\n%s", diff)
				}
			}
			h.hold = nil
			if err := h.rt.KillPod(t.Context(), pod, h.status(t, pod), 30); err != nil {
				t.Fatalf("KillPod: %v", err)
			}
			cs, _ = h.snapshot()
			for _, c := range cs["a"] {
				if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
					t.Errorf("container %s still running after KillPod", c.id)
				}
			}
		})
	}
}
