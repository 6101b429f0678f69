package cri_test

import (
	"context"
	"os"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/examples/cri"
	"github.com/podlife/podlife/pleg"
)

// Environment of the tests on a real CRI runtime (hack/containerd.sh up prints them).
const (
	EnvCRI   = "PODLIFE_E2E_CRI"
	EnvImage = "PODLIFE_E2E_IMAGE"
)

func realRuntime(t *testing.T) (*cri.Runtime, string) {
	t.Helper()
	ep := os.Getenv(EnvCRI)
	if ep == "" {
		t.Skipf("%s is not set: run hack/containerd.sh up (or hack/e2e.sh) for a containerd", EnvCRI)
	}
	image := os.Getenv(EnvImage)
	if image == "" {
		image = "podlife.test/testimage:v1"
	}
	r, err := cri.New(cri.Config{Endpoint: ep, LogRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, image
}

func testPod(uid types.UID, image string, args ...string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "real-" + string(uid)[:8], Namespace: "default", UID: uid},
		Spec: v1.PodSpec{HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](3),
			Containers: []v1.Container{{Name: "c", Image: image, Args: args, ImagePullPolicy: v1.PullNever}}},
	}
}

// TestE2ECRIRuntime runs a sandbox and a container that ignores SIGTERM on a real runtime,
// kills it with grace 2 (it dies by SIGKILL at the deadline) and removes it.
func TestE2ECRIRuntime(t *testing.T) {
	r, image := realRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	uid := types.UID("0f9c5b1e-real-4c1e-9a51-" + time.Now().Format("150405000000"))
	pod := testPod(uid, image, "-ignore-term")
	t.Cleanup(func() {
		_ = r.RemovePod(context.Background(), &pleg.Pod{ID: uid, Name: pod.Name, Namespace: pod.Namespace})
	})

	if err := r.SyncPod(ctx, pod, nil); err != nil {
		t.Fatalf("SyncPod: %v", err)
	}
	st, err := r.PodStatus(ctx, uid, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.SandboxStatuses) != 1 || st.SandboxStatuses[0].State != pleg.SandboxReady {
		t.Fatalf("sandboxes: %+v", st.SandboxStatuses)
	}
	cs := st.FindContainerStatusByName("c")
	if cs == nil || cs.State != pleg.ContainerStateRunning || cs.StartedAt.IsZero() || cs.ImageID == "" {
		t.Fatalf("container status: %+v", cs)
	}
	t.Logf("container %s image %s (%s) started %v", cs.ID, cs.Image, cs.ImageID, cs.StartedAt)
	// A second sync changes nothing.
	if err := r.SyncPod(ctx, pod, st); err != nil {
		t.Fatalf("SyncPod again: %v", err)
	}
	pods, err := r.ListPods(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range pods {
		if p.ID == uid {
			found = len(p.Containers) == 1 && len(p.Sandboxes) == 1
		}
	}
	if !found {
		t.Fatalf("ListPods does not list the pod with one container and one sandbox")
	}

	start := time.Now()
	if err := r.KillPod(ctx, pod, st, 2); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	took := time.Since(start)
	st, err = r.PodStatus(ctx, uid, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	cs = st.FindContainerStatusByName("c")
	if cs == nil || cs.State != pleg.ContainerStateExited || cs.ExitCode != 137 {
		t.Fatalf("after KillPod: %+v", cs)
	}
	if took < 2*time.Second || took > 5*time.Second {
		t.Errorf("KillPod took %v, want 2-5 s", took)
	}
	t.Logf("killed in %v: exit %d, reason %q; CRI calls %v", took, cs.ExitCode, cs.Reason, r.Stats())
	if err := r.RemovePod(ctx, &pleg.Pod{ID: uid, Name: pod.Name, Namespace: pod.Namespace}); err != nil {
		t.Fatalf("RemovePod: %v", err)
	}
	st, err = r.PodStatus(ctx, uid, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.ContainerStatuses)+len(st.SandboxStatuses) != 0 {
		t.Fatalf("after RemovePod: %+v", st)
	}
}

// TestE2ECRIEphemeralStats: a container that writes 8 MiB into its own filesystem shows
// them in PodStats (its writable layer, as containerd's snapshotter reports it, within its
// stats collection period) besides its log.
func TestE2ECRIEphemeralStats(t *testing.T) {
	r, image := realRuntime(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	uid := types.UID("0f9c5b1e-stat-4c1e-9a51-" + time.Now().Format("150405000000"))
	pod := testPod(uid, image, "-write-file", "/big", "-write-bytes", "8388608")
	t.Cleanup(func() {
		rp := &pleg.Pod{ID: uid, Name: pod.Name, Namespace: pod.Namespace}
		_ = r.KillRuntimePod(context.Background(), rp)
		_ = r.RemovePod(context.Background(), rp)
	})
	if err := r.SyncPod(ctx, pod, nil); err != nil {
		t.Fatalf("SyncPod: %v", err)
	}
	start := time.Now()
	for {
		s, err := r.PodStats(ctx, pod)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Containers) != 1 || s.Containers[0].Name != "c" || s.Containers[0].LogsBytes == nil {
			t.Fatalf("stats %+v, want container c with its logs", s)
		}
		c := s.Containers[0]
		var rootfs int64 = -1
		if c.RootfsBytes != nil {
			rootfs = *c.RootfsBytes
		}
		t.Logf("%v: rootfs %d, logs %d, total %d", time.Since(start).Round(time.Millisecond), rootfs, *c.LogsBytes, *s.EphemeralStorageBytes)
		if rootfs >= 8<<20 {
			if *c.LogsBytes == 0 || *s.EphemeralStorageBytes != rootfs+*c.LogsBytes {
				t.Errorf("logs %d, total %d: want the log counted", *c.LogsBytes, *s.EphemeralStorageBytes)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the writable layer never showed the 8 MiB written")
		case <-time.After(time.Second):
		}
	}
}
