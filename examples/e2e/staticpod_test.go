package e2e

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/admission"
	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/nodeinfo"
	podnode "github.com/podlife/podlife/node"
)

// registerNode creates the Node object node1 as an admin (a mirror pod is owned by its
// node, which the agent does not register), deleted when the test ends.
func registerNode(t *testing.T, ctx context.Context, admin kubernetes.Interface) {
	t.Helper()
	_, err := admin.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := admin.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting node %s: %v", node, err)
		}
	})
}

// A critical static pod preempts a best-effort pod (issue 32), on containerd and the real
// API server: the node admits one pod (pods=1 allocatable); a best-effort API pod runs;
// a static pod of priority system-node-critical arrives from the "file" source and does
// not fit, so the kubelet's critical-pod preemption (admission.CriticalPodPreemption
// through node.Preempt) kills the best-effort pod, which ends Failed, reason Preempting,
// with the kubelet's message and DisruptionTarget condition on the server; the static
// pod runs, and its mirror pod (kube.Patcher is the node's mirror pod client) shows it
// Running.
func TestE2ECRICriticalStaticPodPreemption(t *testing.T) {
	admin, nodeClient, ep, image := criEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	rt := newCRI(t, ep)
	registerNode(t, ctx, admin)
	n := nodeinfo.NewNode(node, v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"),
		v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("1")}, nil)
	victim := criPod(t, "cri-besteffort", image, v1.RestartPolicyAlways, 2)
	vw := watchPod(t, ctx, admin, victim.Name)
	victim = createPod(t, ctx, admin, victim)
	removeLeftovers(t, rt, victim)
	a := startAgentWith(t, nodeClient, agent.Config{Backend: rt, StaticSources: []string{"file"},
		Admit: []admission.Handler{admission.PredicateHandler(admission.PredicateConfig{
			Node:      func(context.Context) (*v1.Node, error) { return n, nil },
			OnFailure: admission.CriticalPodPreemption(podnode.Preempt, nil)})}})
	vw.waitFor(t, ctx, "the best-effort pod Running", func(es []podEvent) bool { return last(es, running) })

	static := criPod(t, "cri-critical", image, v1.RestartPolicyAlways, 2)
	static.UID = types.UID("static-" + static.Name)
	static.Spec.PriorityClassName = "system-node-critical"
	static.Spec.Priority = ptr.To[int32](2000001000)
	mw := watchPod(t, ctx, admin, static.Name)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("agent trace of the static pod:\n  %s", strings.Join(a.trace(static), "\n  "))
		}
	})
	removeLeftovers(t, rt, static)
	if err := a.Node().Update(ctx, config.PodUpdate{Op: config.Set, Source: "file", Pods: []*v1.Pod{static}}); err != nil {
		t.Fatal(err)
	}

	events := vw.waitFor(t, ctx, "the best-effort pod Failed", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodFailed })
	})
	got := events[len(events)-1].Pod.Status
	if got.Reason != admission.ReasonPreempting || got.Message != admission.MessagePreempted {
		t.Errorf("the victim's status: reason %q, message %q; want %q, %q", got.Reason, got.Message,
			admission.ReasonPreempting, admission.MessagePreempted)
	}
	var dt *v1.PodCondition
	for i := range got.Conditions {
		if got.Conditions[i].Type == v1.DisruptionTarget {
			dt = &got.Conditions[i]
		}
	}
	if dt == nil || dt.Status != v1.ConditionTrue || dt.Reason != v1.PodReasonTerminationByKubelet || dt.Message != admission.MessagePreemptedCondition {
		t.Errorf("the victim's DisruptionTarget condition: %+v", dt)
	}
	mirror := mw.waitFor(t, ctx, "the static pod's mirror pod Running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Type != "DELETED" && e.Phase == v1.PodRunning })
	})
	mp := mirror[len(mirror)-1].Pod
	if mp.Annotations[podnode.ConfigMirrorAnnotationKey] == "" || mp.UID == static.UID {
		t.Errorf("the mirror pod: annotations %v, UID %s", mp.Annotations, mp.UID)
	}
	if cs := runtimeContainer(t, ctx, rt, static, "main"); cs == nil || cs.State != "running" {
		t.Errorf("the static pod's container on containerd: %+v", cs)
	}
}
