package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/examples/cri"
	"github.com/podlife/podlife/examples/kube"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

// TestE2ECRIShutdownNodeAgent runs the command as node1 on containerd and the server of
// hack/e2e.sh with -shutdown-grace-period 10s, and sends the process SIGTERM: the command
// returns only once every pod is Failed, reason Terminated, on the server, and in time.
func TestE2ECRIShutdownNodeAgent(t *testing.T) {
	dir, ep := os.Getenv("PODLIFE_E2E_APISERVER"), os.Getenv("PODLIFE_E2E_CRI")
	if dir == "" || ep == "" {
		t.Skip("PODLIFE_E2E_APISERVER or PODLIFE_E2E_CRI is not set: run hack/e2e.sh")
	}
	image := os.Getenv("PODLIFE_E2E_IMAGE")
	if image == "" {
		image = "podlife.test/testimage:v1"
	}
	admin, err := kube.NewClient(kube.ClientConfig{Kubeconfig: filepath.Join(dir, "admin.kubeconfig")})
	if err != nil {
		t.Fatal(err)
	}
	forgetNode(t, admin)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	logRoot := t.TempDir()
	pods := []*v1.Pod{criPod("nodeagent-shutdown-exits", 30, image, 200*time.Millisecond),
		criPod("nodeagent-shutdown-ignores", 30, image, -1)}
	rt, err := cri.New(cri.Config{Endpoint: ep, LogRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for i, p := range pods {
		created, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods[i] = created
		defer func() {
			_ = admin.CoreV1().Pods("default").Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			rp := &pleg.Pod{ID: created.UID, Name: created.Name, Namespace: created.Namespace}
			_ = rt.KillRuntimePod(context.Background(), rp)
			_ = rt.RemovePod(context.Background(), rp)
		}()
	}

	var out syncWriter
	done := make(chan error, 1)
	go func() {
		done <- runContext(ctx, []string{"-kubeconfig", filepath.Join(dir, "node1.kubeconfig"), "-node", "node1",
			"-cri", ep, "-log-root", logRoot, "-quiet", "-timeout", "2m", "-port", "0",
			"-shutdown-grace-period", "10s", "-shutdown-grace-period-critical-pods", "3s"}, &out)
	}()
	list := func() []v1.Pod {
		t.Helper()
		l, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "node1").String()})
		if err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	for {
		running := 0
		for _, p := range list() {
			if p.Status.Phase == v1.PodRunning {
				running++
			}
		}
		if running == len(pods) && strings.Contains(out.String(), "# running node node1") {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the command returned before the pods ran: %v\n%s", err, out.String())
		case <-ctx.Done():
			t.Fatalf("the pods never ran; output:\n%s", out.String())
		case <-time.After(200 * time.Millisecond):
		}
	}

	start := time.Now()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("nodeagent: %v\n%s", err, out.String())
	}
	took := time.Since(start)
	t.Logf("the command exited %v after SIGTERM; output:\n%s", took.Round(time.Millisecond), out.String())
	if took < 7*time.Second || took > 15*time.Second {
		t.Errorf("the command exited %v after SIGTERM, want 7 s (the ordinary pods' part) to 15 s", took)
	}
	for _, p := range list() {
		if p.Status.Phase != v1.PodFailed || p.Status.Reason != node.ShutdownReason || p.Status.Message != node.ShutdownMessage {
			t.Errorf("%s at the command's exit: phase %s, reason %q, message %q", p.Name, p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
	}
	for _, want := range []string{"# admission on: node node1 allocatable", "# terminated: graceful node shutdown (shutdownGracePeriod 10s",
		"# graceful node shutdown done after"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
