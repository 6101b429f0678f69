package e2e

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// activeDeadlineSeconds on containerd and the real API server (issue 28 item 3): a pod
// with a 5 s deadline runs, then ends Failed, reason DeadlineExceeded, with the kubelet's
// message, its container stopped (terminated on the server), about 5 s after its start (a
// shorter deadline can run out before a loaded machine has started the container).
func TestE2ECRIActiveDeadline(t *testing.T) {
	admin, rt, image := probeEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	pod := criPod(t, "cri-deadline", image, v1.RestartPolicyAlways, 2)
	pod.Spec.ActiveDeadlineSeconds = ptr.To[int64](5)
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	pw.waitFor(t, ctx, "Running", func(es []podEvent) bool { return last(es, running) })
	events := pw.waitFor(t, ctx, "Failed", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodFailed })
	})
	st := events[len(events)-1].Pod.Status
	const msg = "Pod was active on the node longer than the specified deadline"
	if st.Reason != "DeadlineExceeded" || st.Message != msg {
		t.Errorf("status: reason %q, message %q; want DeadlineExceeded, %q", st.Reason, st.Message, msg)
	}
	if st.StartTime == nil {
		t.Fatal("no startTime")
	}
	failedAt := events[len(events)-1].At
	if d := failedAt.Sub(st.StartTime.Time); d < 5*time.Second || d > 20*time.Second {
		t.Errorf("Failed %v after the start, want about 5 s", d)
	}
	pw.waitFor(t, ctx, "the container terminated", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { cs := mainStatus(e.Pod); return cs.State.Terminated != nil })
	})
	waitEvent(t, ctx, admin, pod, v1.EventTypeNormal, "DeadlineExceeded", msg)
}
