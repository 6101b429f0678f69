package cri_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/node"
)

type reason struct{ Container, Reason, Message string }

func reasons(err error) []reason {
	var out []reason
	for _, ce := range node.ContainerErrors(err) {
		out = append(out, reason{ce.Container, ce.Reason, ce.Message})
	}
	return out
}

// TestSyncPodReasons: a container that SyncPod does not start is reported as a
// *node.ContainerError with the kubelet's reason and message; the other containers start.
func TestSyncPodReasons(t *testing.T) {
	pullErr := status.Error(codes.NotFound, "pull access denied")
	for _, tc := range []struct {
		name  string
		setup func(h *harness, c *v1.Container)
		want  []reason
	}{
		{"ErrImagePull", func(h *harness, c *v1.Container) { h.failWith(pullErr, nil, nil); c.Image = "missing:1" },
			[]reason{{"a", node.ReasonErrImagePull, pullErr.Error()}}},
		{"ErrImageNeverPull", func(h *harness, c *v1.Container) { c.Image, c.ImagePullPolicy = "missing:1", v1.PullNever },
			[]reason{{"a", node.ReasonErrImageNeverPull, `Container image "missing:1" is not present with pull policy of Never`}}},
		{"InvalidImageName", func(h *harness, c *v1.Container) { c.Image = "Img:1" },
			[]reason{{"a", node.ReasonInvalidImageName, `Failed to apply default image tag "Img:1": invalid reference format: repository name must be lowercase`}}},
		{"InvalidImageName bad tag", func(h *harness, c *v1.Container) { c.Image = "img:-x" },
			[]reason{{"a", node.ReasonInvalidImageName, `Failed to apply default image tag "img:-x": invalid reference format`}}},
		{"CreateContainerError", func(h *harness, c *v1.Container) {
			h.failWith(nil, status.Error(codes.Unknown, "no such file"), nil)
		}, []reason{{"a", node.ReasonCreateContainerError, "no such file"}, {"b", node.ReasonCreateContainerError, "no such file"}}},
		{"RunContainerError", func(h *harness, c *v1.Container) {
			h.failWith(nil, nil, status.Error(codes.Unknown, "exec: not found"))
		}, []reason{{"a", node.ReasonRunContainerError, "exec: not found"}, {"b", node.ReasonRunContainerError, "exec: not found"}}},
		{"valid references", func(h *harness, c *v1.Container) {
			c.Image = "registry.example.com:5000/team/app_x:v1.2@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.images["img:1"] = true
			pod := fakePod(v1.RestartPolicyAlways, "a", "b")
			tc.setup(h, &pod.Spec.Containers[0])
			err := h.sync(t, pod)
			if diff := cmp.Diff(tc.want, reasons(err)); diff != "" {
				t.Errorf("SyncPod = %v; reasons (-want +got):\n%s", err, diff)
			}
		})
	}
}

// TestImagePullBackOff: a failed pull gives ErrImagePull; until its back-off (10 s, then
// 20 s, ...) has passed, ImagePullBackOff with the pull's error, and no pull; then the
// pull is tried again.
func TestImagePullBackOff(t *testing.T) {
	h := newHarness(t, nil)
	pullErr := status.Error(codes.NotFound, "not found")
	h.failWith(pullErr, nil, nil)
	pod := fakePod(v1.RestartPolicyAlways, "a")
	pod.Spec.Containers[0].Image = "missing:1"
	backOff := reason{"a", node.ReasonImagePullBackOff, `Back-off pulling image "missing:1": ` + pullErr.Error()}
	failed := reason{"a", node.ReasonErrImagePull, pullErr.Error()}
	for i, s := range []struct {
		step  time.Duration
		want  reason
		pulls int
	}{
		{0, failed, 1},
		{5 * time.Second, backOff, 1},
		{5 * time.Second, failed, 2},
		{19 * time.Second, backOff, 2},
		{time.Second, failed, 3},
	} {
		h.clock.Step(s.step)
		err := h.sync(t, pod)
		if diff := cmp.Diff([]reason{s.want}, reasons(err)); diff != "" {
			t.Fatalf("sync %d: (-want +got):\n%s", i, diff)
		}
		h.mu.Lock()
		h.fakeCRI.mu.Lock()
		pulls := len(h.pulls)
		h.fakeCRI.mu.Unlock()
		h.mu.Unlock()
		if pulls != s.pulls {
			t.Fatalf("sync %d: %d pulls, want %d", i, pulls, s.pulls)
		}
	}
	h.failWith(nil, nil, nil)
	h.clock.Step(40 * time.Second)
	if err := h.sync(t, pod); err != nil {
		t.Fatalf("after the back-off with the registry back: %v", err)
	}
}
