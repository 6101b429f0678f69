package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The kubelet's waiting reasons on containerd and the real API server (issue 28 items 2,
// 5, 6): examples/cri reports why a container does not run (node.ContainerError), the node
// shows it as the container's Waiting state, with the kubelet's events.

// A container that exits 1 at once, restartPolicy Always, crash-loops: Waiting
// CrashLoopBackOff with the kubelet's message, lastState terminated with exit code 1,
// restartCount 1, and the BackOff event.
func TestE2ECRICrashLoopBackOff(t *testing.T) {
	admin, rt, image := probeEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	pod := criPod(t, "cri-crashloop", image, v1.RestartPolicyAlways, 2, "-exit-after", "200ms", "-exit-code", "1")
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	events := pw.waitFor(t, ctx, "CrashLoopBackOff", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool {
			w := mainStatus(e.Pod).State.Waiting
			return w != nil && w.Reason == "CrashLoopBackOff"
		})
	})
	cs := mainStatus(events[len(events)-1].Pod)
	want := fmt.Sprintf("back-off 10s restarting failed container=main pod=%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
	if cs.State.Waiting.Message != want {
		t.Errorf("waiting message %q, want %q", cs.State.Waiting.Message, want)
	}
	if term := cs.LastTerminationState.Terminated; term == nil || term.ExitCode != 1 || term.Reason != "Error" {
		t.Errorf("lastState %+v, want terminated, exit code 1, Error", cs.LastTerminationState)
	}
	if cs.RestartCount < 1 {
		t.Errorf("restartCount %d, want at least 1", cs.RestartCount)
	}
	waitEvent(t, ctx, admin, pod, v1.EventTypeWarning, "BackOff",
		fmt.Sprintf("Back-off restarting failed container main in pod %s_%s(%s)", pod.Name, pod.Namespace, pod.UID))
}

// An image that cannot be pulled (a registry on a loopback port nothing listens on) shows
// ErrImagePull with the pull's error, then ImagePullBackOff with the kubelet's message.
func TestE2ECRIImagePullBackOff(t *testing.T) {
	admin, rt, _ := probeEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	image := fmt.Sprintf("127.0.0.1:%d/podlife/missing:v1", freePort(t))
	pod := criPod(t, "cri-pull", image, v1.RestartPolicyAlways, 2)
	pod.Spec.Containers[0].ImagePullPolicy = v1.PullAlways
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	waiting := func(reason string) func([]podEvent) bool {
		return func(es []podEvent) bool {
			for _, e := range es {
				if w := mainStatus(e.Pod).State.Waiting; w != nil && w.Reason == reason {
					return true
				}
			}
			return false
		}
	}
	events := pw.waitFor(t, ctx, "ErrImagePull", waiting("ErrImagePull"))
	events = pw.waitFor(t, ctx, "ImagePullBackOff", waiting("ImagePullBackOff"))
	var pull, backOff *v1.ContainerStateWaiting
	for _, e := range events {
		if w := mainStatus(e.Pod).State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull":
				if backOff == nil {
					pull = w
				}
			case "ImagePullBackOff":
				if pull != nil && backOff == nil {
					backOff = w
				}
			}
		}
	}
	if pull == nil || backOff == nil {
		t.Fatalf("not ErrImagePull then ImagePullBackOff; events:\n%s", formatEvents(events))
	}
	if !strings.Contains(pull.Message, "127.0.0.1") {
		t.Errorf("ErrImagePull message %q, want the pull's error", pull.Message)
	}
	if want := fmt.Sprintf("Back-off pulling image %q", image); !strings.HasPrefix(backOff.Message, want) {
		t.Errorf("ImagePullBackOff message %q, want it to start with %q", backOff.Message, want)
	}
	if p := events[len(events)-1].Pod; p.Status.Phase != v1.PodPending {
		t.Errorf("phase %s, want Pending", p.Status.Phase)
	}
}
