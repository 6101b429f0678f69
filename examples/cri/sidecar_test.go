package cri_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

// sidecarPod is fakePod with a restartable init container "proxy" before the app.
func sidecarPod(startupProbe bool) *v1.Pod {
	pod := fakePod(v1.RestartPolicyAlways, "app")
	always := v1.ContainerRestartPolicyAlways
	proxy := v1.Container{Name: "proxy", Image: "img:1", ImagePullPolicy: v1.PullIfNotPresent, RestartPolicy: &always}
	if startupProbe {
		proxy.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"/bin/ready"}}}}
	}
	pod.Spec.InitContainers = []v1.Container{proxy}
	return pod
}

func runningNames(st *pleg.PodStatus) []string {
	var out []string
	for _, c := range st.ContainerStatuses {
		if c.State == pleg.ContainerStateRunning {
			out = append(out, c.Name)
		}
	}
	slices.Sort(out)
	return out
}

// TestSidecarStartsApp: the app starts once the sidecar runs (before: nextInit waited for
// the always-running sidecar to exit, and the app never started).
func TestSidecarStartsApp(t *testing.T) {
	h := newHarness(t, nil)
	pod := sidecarPod(false)
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"proxy"}, runningNames(h.status(t, pod))); diff != "" {
		t.Fatalf("after the first sync (-want +got):\n%s", diff)
	}
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"app", "proxy"}, runningNames(h.status(t, pod))); diff != "" {
		t.Errorf("after the second sync (-want +got):\n%s", diff)
	}
	// The sidecar exits: it is restarted, the app keeps running.
	h.exitContainer(t, "proxy", 1)
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"app", "proxy"}, runningNames(h.status(t, pod))); diff != "" {
		t.Errorf("after the sidecar exited (-want +got):\n%s", diff)
	}
}

// TestSidecarStartupProbe: a sidecar with a startup probe holds the app until a startup
// probe run through the runtime succeeded.
func TestSidecarStartupProbe(t *testing.T) {
	h := newHarness(t, nil)
	pod := sidecarPod(true)
	for range 2 {
		if err := h.sync(t, pod); err != nil {
			t.Fatal(err)
		}
	}
	st := h.status(t, pod)
	if diff := cmp.Diff([]string{"proxy"}, runningNames(st)); diff != "" {
		t.Fatalf("before the startup probe (-want +got):\n%s", diff)
	}
	proxy := st.FindContainerStatusByName("proxy")
	res, _, err := h.rt.Probe(t.Context(), pod, st, &pod.Spec.InitContainers[0], proxy.ID, node.ProbeStartup)
	if err != nil || res != node.ProbeSuccess {
		t.Fatalf("Probe = %v, %v; want success", res, err)
	}
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"app", "proxy"}, runningNames(h.status(t, pod))); diff != "" {
		t.Errorf("after the startup probe succeeded (-want +got):\n%s", diff)
	}
}

// TestSidecarStopsAfterApp: KillPod stops the app first, the sidecar once the app
// stopped (before: all in parallel, the sidecar first while the app's stop was held).
func TestSidecarStopsAfterApp(t *testing.T) {
	h := newHarness(t, nil)
	pod := sidecarPod(false)
	for range 2 {
		if err := h.sync(t, pod); err != nil {
			t.Fatal(err)
		}
	}
	release := make(chan struct{})
	entered := make(chan struct{})
	h.mu.Lock()
	h.stopHold = func(name string) {
		if name == "app" {
			close(entered)
			<-release
		}
	}
	h.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- h.rt.KillPod(context.WithoutCancel(t.Context()), pod, h.status(t, pod), 10) }()
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("KillPod returned %v before the app was stopped (did the app start?)", err)
	}
	// Hold the app's stop until the sidecar either waits for its turn (its timer on the
	// fake clock) or was stopped already (the bug).
	deadline := time.Now().Add(10 * time.Second)
	for !h.clock.HasWaiters() && time.Now().Before(deadline) {
		h.fakeCRI.mu.Lock()
		n := len(h.stopOrder)
		h.fakeCRI.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond) // polling a condition, not timing
	}
	h.clock.Step(3 * time.Second) // the app takes 3 s to stop
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	h.fakeCRI.mu.Lock()
	order := slices.Clone(h.stopOrder)
	h.fakeCRI.mu.Unlock()
	if diff := cmp.Diff([]string{"app", "proxy"}, order); diff != "" {
		t.Errorf("stop order (-want +got):\n%s", diff)
	}
	// The sidecar waited 3 s of its 10: 7 left.
	if diff := cmp.Diff(map[string]int64{"app": 10, "proxy": 7}, h.stopTimeouts()); diff != "" {
		t.Errorf("StopContainer timeouts (-want +got):\n%s", diff)
	}
}
