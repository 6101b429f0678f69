package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/cri"
)

// controllers starts hack/e2e.sh's kube-controller-manager again with the controllers
// given (and flags), and with the suite's set again when the test ends; it skips the test
// when the cluster was not started by hack/e2e.sh.
func controllers(t *testing.T, list string, flags ...string) {
	t.Helper()
	ctl := filepath.Join(os.Getenv(EnvAPIServer), "controlplane-ctl")
	if _, err := os.Stat(ctl); err != nil {
		t.Skipf("no %s: the cluster was not started by hack/e2e.sh", ctl)
	}
	run := func(args ...string) error {
		out, err := exec.Command(ctl, append([]string{"controllers"}, args...)...).CombinedOutput()
		if err != nil {
			t.Logf("controlplane-ctl %v: %s", args, out)
		}
		return err
	}
	if err := run(append([]string{list}, flags...)...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := run("default"); err != nil {
			t.Error(err)
		}
	})
}

// nodeReady is the node's Ready condition (zero without one).
func nodeReady(n *v1.Node) v1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c
		}
	}
	return v1.NodeCondition{}
}

// TestE2EControlPlane: a CRI node registered by the agent (package nodestatus) in a
// cluster with the real kube-scheduler and kube-controller-manager running every
// controller, the node lifecycle controller and PodGC included (issue 30 item 3):
//   - a pod created without nodeName is placed on node1 by the scheduler and runs;
//   - the Lease is renewed, and the node stays Ready for the node lifecycle controller;
//   - the node's pod outlives PodGC's 40 s orphan quarantine (its node exists), while
//     PodGC deletes a pod bound to a node that does not exist;
//   - once the agent stops, the node lifecycle controller marks the node Unknown,
//     "Kubelet stopped posting node status.", after its grace period (50 s, the default).
func TestE2EControlPlane(t *testing.T) {
	admin, nodeClient, ep, image := criEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	controllers(t, "*")

	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"),
		v1.ResourcePods: resource.MustParse("110"), v1.ResourceEphemeralStorage: resource.MustParse("20Gi")}
	rt, r := startCRINode(t, nodeClient, cri.Config{Endpoint: ep}, agent.Config{}, withRegistration(admin, nodeRegistration{resources: rl}))
	registered := waitReady(t, ctx, admin, "")

	// Scheduled by kube-scheduler, then run.
	pod := criPod(t, "cp-scheduled", image, v1.RestartPolicyAlways, 2)
	pod.Spec.NodeName = ""
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	events := pw.waitFor(t, ctx, "scheduled onto node1 and Running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodRunning })
	})
	if got := events[len(events)-1].Pod.Spec.NodeName; got != node {
		t.Fatalf("the pod runs on %q, want %q", got, node)
	}

	// The Lease renewed; the pod kept past PodGC's orphan quarantine (40 s), the node Ready.
	l := waitLease(t, ctx, admin, "the lease", func(*leaseView) bool { return true })
	waitLease(t, ctx, admin, "the lease renewed", func(v *leaseView) bool { return v.renew.After(l.renew) })
	// Meanwhile PodGC deletes, as an orphan, a pod bound to a node that does not exist.
	orphan := criPod(t, "cp-orphan", image, v1.RestartPolicyAlways, 2)
	orphan.Spec.NodeName = "node-gone"
	orphan = createPod(t, ctx, admin, orphan)
	orphaned := time.Now()
	t.Cleanup(func() { // PodGC's job; this in case it did not
		err := admin.CoreV1().Pods(namespace).Delete(context.Background(), orphan.Name, *metav1.NewDeleteOptions(0))
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", orphan.Name, err)
		}
	})
	quarantine := time.Now().Add(45 * time.Second)
	for time.Now().Before(quarantine) {
		p, err := admin.CoreV1().Pods(namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil || p.Status.Phase != v1.PodRunning {
			t.Fatalf("the pod of a registered node: %v, deleting %v, phase %q", err, p != nil && p.DeletionTimestamp != nil, phaseOf(p))
		}
		n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c := nodeReady(n); c.Status != v1.ConditionTrue || n.UID != registered.UID {
			t.Fatalf("node %s while its agent runs: Ready %s (%s: %s), UID %s (registered %s)", node, c.Status, c.Reason, c.Message, n.UID, registered.UID)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}

	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := admin.CoreV1().Pods(namespace).Get(ctx, orphan.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("PodGC did not delete the pod bound to node-gone: %v", err)
	}
	t.Logf("PodGC deleted the pod bound to node-gone %v after its creation", time.Since(orphaned).Round(time.Second))

	// The agent stops: the node lifecycle controller takes the node for lost.
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	var lost v1.NodeCondition
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		lost = nodeReady(n)
		return lost.Status == v1.ConditionUnknown, nil
	})
	if err != nil {
		t.Fatalf("node %s after its agent stopped: %v; Ready %+v", node, err, lost)
	}
	if lost.Reason != "NodeStatusUnknown" || lost.Message != "Kubelet stopped posting node status." {
		t.Errorf("Ready %s: reason %q message %q, want NodeStatusUnknown %q", lost.Status, lost.Reason, lost.Message, "Kubelet stopped posting node status.")
	}
	t.Logf("node %s Unknown %v after its agent stopped", node, time.Since(stopped).Round(time.Second))
}

func phaseOf(p *v1.Pod) v1.PodPhase {
	if p == nil {
		return ""
	}
	return p.Status.Phase
}
