package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/cri"
)

// Probes on containerd and the real API server (issue 28): examples/cri runs them
// (node.Prober: exec through ExecSync, httpGet to the pod's address), the node feeds the
// results into the pod's status without waiting for a relist and restarts a container
// whose liveness probe failed, with the kubelet's events.

// probeEnv starts a CRI agent that records its events on the server.
func probeEnv(t *testing.T) (admin kubernetes.Interface, rt *cri.Runtime, image string) {
	t.Helper()
	admin, nodeClient, ep, image := criEnv(t)
	rt, _ = startCRINode(t, nodeClient, cri.Config{Endpoint: ep}, agent.Config{})
	return admin, rt, image
}

// execProbe is an exec probe of the test image checking path, every second.
func execProbe(path string, failures int32) *v1.Probe {
	return &v1.Probe{PeriodSeconds: 1, TimeoutSeconds: 2, SuccessThreshold: 1, FailureThreshold: failures,
		ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"/testimage", "-check", path}}}}
}

// mainStatus is the status of the pod's container "main" (zero without one).
func mainStatus(p *v1.Pod) v1.ContainerStatus {
	if cs := containerStatus(p, "main"); cs != nil {
		return *cs
	}
	return v1.ContainerStatus{}
}

// waitEvent waits for an event of the pod with type, reason and message on the server.
func waitEvent(t *testing.T, ctx context.Context, admin kubernetes.Interface, pod *v1.Pod, eventType, reason, message string) {
	t.Helper()
	watchEvent(t, ctx, admin, pod.UID, fmt.Sprintf("%s %s %q", eventType, reason, message), func(e *v1.Event) bool {
		return e.Type == eventType && e.Reason == reason && e.Message == message
	})
}

// watchEvent waits, as an admin watches them, for an event about the pod uid that
// matches, and returns it; what names it in the failure.
func watchEvent(t *testing.T, ctx context.Context, admin kubernetes.Interface, uid types.UID, what string, match func(*v1.Event) bool) *v1.Event {
	t.Helper()
	w, err := admin.CoreV1().Events(namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(uid)).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var seen []string
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the event watch ended; events seen: %q", seen)
			}
			if e, isEvent := ev.Object.(*v1.Event); isEvent {
				if match(e) {
					return e
				}
				seen = append(seen, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Message))
			}
		case <-ctx.Done():
			t.Fatalf("waiting for the event %s of %s: %v; events seen: %q", what, uid, ctx.Err(), seen)
		}
	}
}

// A readiness probe (exec, every second) turns the container and the pod Ready after its
// first success, and not ready again when it fails; the container is never restarted.
func TestE2ECRIReadinessProbe(t *testing.T) {
	admin, rt, image := probeEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	pod := criPod(t, "cri-readiness", image, v1.RestartPolicyAlways, 2,
		"-touch", "/tmp/ready", "-touch-after", "3s", "-remove-after", "10s")
	pod.Spec.Containers[0].ReadinessProbe = execProbe("/tmp/ready", 1)
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	pw.waitFor(t, ctx, "Running, not ready", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool {
			return e.Phase == v1.PodRunning && mainStatus(e.Pod).State.Running != nil && !ready(e.Pod)
		})
	})
	pw.waitFor(t, ctx, "Ready", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return ready(e.Pod) && mainStatus(e.Pod).Ready })
	})
	events := pw.waitFor(t, ctx, "not ready again", func(es []podEvent) bool {
		i := slices.IndexFunc(es, func(e podEvent) bool { return ready(e.Pod) })
		return i >= 0 && last(es[i:], func(e podEvent) bool { return !ready(e.Pod) && !mainStatus(e.Pod).Ready })
	})
	if got := mainStatus(events[len(events)-1].Pod); got.RestartCount != 0 || got.State.Running == nil {
		t.Errorf("after the readiness failure: restartCount %d, state %+v; want 0, running", got.RestartCount, got.State)
	}
	waitEvent(t, ctx, admin, pod, v1.EventTypeWarning, "Unhealthy", "Readiness probe failed: /tmp/ready: not there\n")
}

// A liveness probe (httpGet on the hostNetwork pod's port) that starts failing gets the
// container killed and started again, with the kubelet's Unhealthy and Killing events on
// the server. Each instance runs 12 s before it fails, longer than the 10 s crash-loop
// back-off: as with the kubelet, which decides the back-off on the status from before the
// kill, the second restart is not backed off either (no BackOff event by restartCount 2).
func TestE2ECRILivenessProbe(t *testing.T) {
	admin, rt, image := probeEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	port := freePort(t)
	pod := criPod(t, "cri-liveness", image, v1.RestartPolicyAlways, 2,
		"-http", "127.0.0.1:"+strconv.Itoa(port), "-healthy-for", "12s")
	pod.Spec.Containers[0].LivenessProbe = &v1.Probe{PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 2,
		ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt(port)}}}
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	events := pw.waitFor(t, ctx, "a restart", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return mainStatus(e.Pod).RestartCount >= 1 })
	})
	got := mainStatus(events[len(events)-1].Pod)
	if term := got.LastTerminationState.Terminated; term == nil {
		t.Errorf("after the restart: no lastState.terminated: %+v", got)
	}
	waitEvent(t, ctx, admin, pod, v1.EventTypeWarning, "Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 500")
	waitEvent(t, ctx, admin, pod, v1.EventTypeNormal, "Killing", "Container main failed liveness probe, will be restarted")
	pw.waitFor(t, ctx, "a second restart", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return mainStatus(e.Pod).RestartCount >= 2 })
	})
	evs, err := admin.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)).String()})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Reason == "BackOff" {
			t.Errorf("a BackOff event before the second restart: %s", e.Message)
		}
	}
}

// A startup probe holds the liveness probe back: the liveness probe (the same check)
// would fail before the file exists, yet the container is not restarted; it is Started
// once the startup probe succeeded, then Ready.
func TestE2ECRIStartupProbe(t *testing.T) {
	admin, rt, image := probeEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	pod := criPod(t, "cri-startup", image, v1.RestartPolicyAlways, 2, "-touch", "/tmp/started", "-touch-after", "5s")
	c := &pod.Spec.Containers[0]
	c.StartupProbe = execProbe("/tmp/started", 30)
	c.LivenessProbe = execProbe("/tmp/started", 1)
	c.ReadinessProbe = execProbe("/tmp/started", 1)
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	events := pw.waitFor(t, ctx, "Started and Ready", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { cs := mainStatus(e.Pod); return ptr.Deref(cs.Started, false) && cs.Ready })
	})
	for _, e := range events {
		cs := mainStatus(e.Pod)
		if cs.RestartCount != 0 {
			t.Fatalf("the container was restarted while its startup probe had not succeeded; events:\n%s", formatEvents(events))
		}
	}
	if !slices.ContainsFunc(events, func(e podEvent) bool {
		cs := mainStatus(e.Pod)
		return cs.State.Running != nil && cs.Started != nil && !*cs.Started
	}) {
		t.Errorf("never seen running and not started; events:\n%s", formatEvents(events))
	}
}
