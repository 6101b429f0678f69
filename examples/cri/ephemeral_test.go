package cri_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/pleg"
)

// TestEphemeralContainer: an ephemeral container added to a running pod is started by the
// next SyncPod, reported with the pod's containers, never restarted, and stopped with
// the pod.
func TestEphemeralContainer(t *testing.T) {
	h := newHarness(t, nil)
	pod := fakePod(v1.RestartPolicyAlways, "app")
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
		Name: "debug", Image: "img:1", ImagePullPolicy: v1.PullIfNotPresent, Command: []string{"/bin/sh"}}}}
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	cs := h.status(t, pod).FindContainerStatusByName("debug")
	if cs == nil || cs.State != pleg.ContainerStateRunning {
		t.Fatalf("debug after SyncPod: %+v, want running", cs)
	}
	if got := h.eventsWith("Started"); len(got) != 2 || got[1] != "Normal Started: Started container debug" {
		t.Errorf("Started events %v", got)
	}
	// Stopped with the pod.
	h2 := newHarness(t, nil)
	for range 2 { // the sandbox and app, then debug (not in a new sandbox's first round)
		if err := h2.sync(t, pod); err != nil {
			t.Fatal(err)
		}
	}
	if err := h2.rt.KillPod(t.Context(), pod, h2.status(t, pod), 10); err != nil {
		t.Fatal(err)
	}
	if got := h2.stopTimeouts(); got["debug"] != 10 {
		t.Errorf("StopContainer timeouts %v, want debug stopped with the pod", got)
	}
	if st := h2.status(t, pod); st.IsRunning() {
		t.Errorf("still running: %+v", st)
	}
	// Never restarted.
	h.exitContainer(t, "debug", 1)
	h.clock.Step(10 * time.Minute) // past any back-off
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	if cs := h.status(t, pod).FindContainerStatusByName("debug"); cs.State != pleg.ContainerStateExited || cs.RestartCount != 0 {
		t.Errorf("debug after it exited and a sync: %s, restarts %d; want exited, never restarted", cs.State, cs.RestartCount)
	}
}
