package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/examples/kube"
)

// syncWriter is an io.Writer safe for the command's goroutines and the test.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestE2ENodeAgentOnARealCluster runs the command with -kubeconfig as node1 against the server
// of hack/e2e.sh, creates a pod as the admin and waits for the agent to run it.
func TestE2ENodeAgentOnARealCluster(t *testing.T) {
	dir := os.Getenv("PODLIFE_E2E_APISERVER")
	if dir == "" {
		t.Skip("PODLIFE_E2E_APISERVER is not set: run hack/e2e.sh to start a real kube-apiserver and etcd and run this test")
	}
	admin, err := kube.NewClient(kube.ClientConfig{Kubeconfig: filepath.Join(dir, "admin.kubeconfig")})
	if err != nil {
		t.Fatal(err)
	}
	forgetNode(t, admin)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out syncWriter
	done := make(chan error, 1)
	go func() {
		done <- runContext(ctx, []string{"-kubeconfig", filepath.Join(dir, "node1.kubeconfig"), "-node", "node1", "-timeout", "2m", "-port", "0"}, &out)
	}()

	pod := newPod("nodeagent-e2e", 30)
	w, err := admin.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = admin.CoreV1().Pods("default").Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}()
	running := false
	for ev := range w.ResultChan() {
		if p, ok := ev.Object.(*v1.Pod); ok && p.Status.Phase == v1.PodRunning {
			running = true
			break
		}
	}
	if !running {
		t.Fatalf("the watch ended before the pod ran; output:\n%s", out.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The server shows Running, so the agent printed every step before its Running patch. The
	// patch's own line may not be there: the watch can deliver the change before the agent
	// reads the patch's response, and the cancel above may interrupt that read.
	for _, want := range []string{"# registering node node1", "# running node node1 on a real API server", "default/nodeagent-e2e", "ADD",
		"ContainerStarted", "1 running container(s)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// forgetNode deletes the Node object and Lease the command registers (-register-node is
// on by default) when the test ends, so later tests find the server as they expect it.
func forgetNode(t *testing.T, admin kubernetes.Interface) {
	t.Cleanup(func() {
		if err := admin.CoreV1().Nodes().Delete(context.Background(), "node1", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the Node node1: %v", err)
		}
		if err := admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Delete(context.Background(), "node1", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the Lease of node1: %v", err)
		}
	})
}
