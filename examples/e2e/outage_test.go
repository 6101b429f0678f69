package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/examples/agent"
)

// apiserverCtl runs hack/e2e.sh's apiserver-ctl (stop or start), or skips the test when the
// server was not started by hack/e2e.sh.
func apiserverCtl(t *testing.T, ctx context.Context, verb string) {
	t.Helper()
	ctl := filepath.Join(os.Getenv(EnvAPIServer), "apiserver-ctl")
	if _, err := os.Stat(ctl); err != nil {
		t.Skipf("no %s: the server was not started by hack/e2e.sh", ctl)
	}
	out, err := exec.CommandContext(ctx, ctl, verb).CombinedOutput()
	if err != nil {
		t.Fatalf("apiserver-ctl %s: %v\n%s", verb, err, out)
	}
}

// The API server is down while the pod's container exits on its own: the agent's patch fails,
// and once the server is back the terminal phase is delivered, once, with no phase going
// backwards.
func TestE2EAPIServerOutage(t *testing.T) {
	admin, nodeClient := clients(t)
	if _, err := os.Stat(filepath.Join(os.Getenv(EnvAPIServer), "apiserver-ctl")); err != nil {
		t.Skip("the server was not started by hack/e2e.sh: it cannot be stopped and restarted")
	}
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	a := startAgent(t, nodeClient, nil, agent.ContainerBehaviour{StopDelay: time.Second})
	pod := busybox(t)
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Annotations = map[string]string{agent.AnnotationRunFor: "4s"}
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	pw.waitFor(t, ctx, "Running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodRunning })
	})

	apiserverCtl(t, ctx, "stop")
	restarted := false
	defer func() {
		if !restarted {
			apiserverCtl(t, context.Background(), "start")
		}
	}()
	// The container exits while the server is down: the agent finishes the pod, and its
	// status calls fail.
	a.waitTrace(t, ctx, pod, "SyncTerminatedPod")
	a.waitTrace(t, ctx, pod, "failed")
	apiserverCtl(t, ctx, "start")
	restarted = true

	// A new watch (the old one ended with the server) from the current state.
	pw = watchPod(t, ctx, admin, pod.Name)
	events := pw.waitFor(t, ctx, "Succeeded after the outage", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodSucceeded })
	})
	for i := 1; i < len(events); i++ {
		if isTerminal(events[i-1].Phase) && !isTerminal(events[i].Phase) {
			t.Errorf("the phase went back after the outage:\n%s", formatEvents(events))
		}
	}
	a.waitTrace(t, ctx, pod, "patched status: phase Succeeded")
	succeeded := 0
	for _, line := range a.trace(pod) {
		if strings.HasPrefix(line, "status patched status: phase Succeeded") {
			succeeded++
		}
	}
	if succeeded != 1 {
		t.Errorf("the terminal phase was patched %d times, want once; trace:\n  %s", succeeded, strings.Join(a.trace(pod), "\n  "))
	}
}
