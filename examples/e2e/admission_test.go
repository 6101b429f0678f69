package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podlife/podlife/admission"
	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/nodeinfo"
	podnode "github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

// The node ends and refuses pods itself (issue 32), on containerd and the real API
// server: admission against the node's resources, and the graceful node shutdown.

// requesting sets the pod's container's cpu request.
func requesting(p *v1.Pod, cpu string) *v1.Pod {
	p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
	return p
}

// A pod requesting more cpu than the node has is Failed OutOfcpu on the server, with the
// kubelet's message, and no sandbox is ever created for it; a pod that fits runs.
func TestE2ECRIOutOfcpu(t *testing.T) {
	admin, nodeClient, ep, image := criEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	rt := newCRI(t, ep)
	n := nodeinfo.NewNode(node, v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"),
		v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("110")}, nil)
	big := requesting(criPod(t, "cri-outofcpu", image, v1.RestartPolicyAlways, 30), "2")
	bw := watchPod(t, ctx, admin, big.Name)
	big = createPod(t, ctx, admin, big)
	removeLeftovers(t, rt, big)
	a := startAgentWith(t, nodeClient, agent.Config{Backend: rt, Admit: []admission.Handler{
		admission.PredicateHandler(admission.PredicateConfig{Node: func(context.Context) (*v1.Node, error) { return n, nil }})}})
	events := bw.waitFor(t, ctx, "Failed", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodFailed })
	})
	got := events[len(events)-1].Pod.Status
	const wantMsg = "Pod was rejected: Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000"
	if got.Reason != "OutOfcpu" || got.Message != wantMsg || len(got.ContainerStatuses) != 0 {
		t.Errorf("status: reason %q, message %q, %d container statuses; want OutOfcpu, %q, none",
			got.Reason, got.Message, len(got.ContainerStatuses), wantMsg)
	}
	if slices.ContainsFunc(events, func(e podEvent) bool { return e.Phase == v1.PodRunning }) {
		t.Errorf("the refused pod ran; events:\n%s", formatEvents(events))
	}

	small := requesting(criPod(t, "cri-fits", image, v1.RestartPolicyAlways, 30), "500m")
	sw := watchPod(t, ctx, admin, small.Name)
	small = createPod(t, ctx, admin, small)
	removeLeftovers(t, rt, small)
	sw.waitFor(t, ctx, "Running", func(es []podEvent) bool { return last(es, running) })

	pods, err := rt.ListPods(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(pods, func(p *pleg.Pod) bool { return p.ID == big.UID }) {
		t.Errorf("containerd has a sandbox of the refused pod")
	}
	if !slices.ContainsFunc(pods, func(p *pleg.Pod) bool { return p.ID == small.UID }) {
		t.Errorf("containerd lacks the pod that fits")
	}
	if got := rt.Stats()["RunPodSandbox"]; got != 1 {
		t.Errorf("RunPodSandbox calls = %d, want 1 (the pod that fits); stats %v", got, rt.Stats())
	}
	a.waitTrace(t, ctx, big, "ADD rejected: OutOfcpu")
}

// The graceful node shutdown (podnode.Shutdown through the agent) with shutdownGracePeriod
// 10 s, 3 s of it for critical pods: the ordinary pods get 7 s (one ignores SIGTERM and is
// killed then, 137), the critical one 3 s; every pod ends Failed, reason Terminated, with
// the DisruptionTarget condition on the server, and every container is stopped in
// containerd.
func TestE2ECRIShutdown(t *testing.T) {
	admin, nodeClient, ep, image := criEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	rt := newCRI(t, ep)
	exits := criPod(t, "cri-shutdown-exits", image, v1.RestartPolicyAlways, 30)
	ignores := criPod(t, "cri-shutdown-ignores", image, v1.RestartPolicyAlways, 30, "-ignore-term")
	critical := criPod(t, "cri-shutdown-critical", image, v1.RestartPolicyAlways, 30)
	critical.Spec.PriorityClassName = "system-node-critical"
	pods := []*v1.Pod{exits, ignores, critical}
	watches := make([]*podWatch, len(pods))
	for i, p := range pods {
		watches[i] = watchPod(t, ctx, admin, p.Name)
		pods[i] = createPod(t, ctx, admin, p)
	}
	removeLeftovers(t, rt, pods...)
	if p := pods[2].Spec.Priority; p == nil || *p < podnode.SystemCriticalPriority {
		t.Fatalf("the critical pod's priority is %v", p)
	}
	a := startCRIAgent(t, nodeClient, rt)
	for _, w := range watches {
		w.waitFor(t, ctx, "Running", func(es []podEvent) bool { return last(es, running) })
	}

	start := time.Now()
	if err := a.Node().Shutdown(ctx, podnode.ShutdownConfig{GracePeriod: 10 * time.Second, GracePeriodCriticalPods: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("Shutdown returned after %v", took.Round(time.Millisecond))
	// 7 s for the pod ignoring SIGTERM, then the critical pod's stop (under a second).
	if took < 7*time.Second || took > 11*time.Second {
		t.Errorf("Shutdown took %v, want 7 to 11 s", took)
	}
	for i, w := range watches {
		events := w.waitFor(t, ctx, "Failed", func(es []podEvent) bool {
			return last(es, func(e podEvent) bool { return e.Phase == v1.PodFailed })
		})
		t.Logf("%s Failed %v after the shutdown began", pods[i].Name, events[len(events)-1].At.Sub(start).Round(time.Millisecond))
		st := events[len(events)-1].Pod.Status
		if st.Reason != podnode.ShutdownReason || st.Message != podnode.ShutdownMessage {
			t.Errorf("%s: reason %q, message %q", pods[i].Name, st.Reason, st.Message)
		}
		ci := slices.IndexFunc(st.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.DisruptionTarget })
		if ci < 0 || st.Conditions[ci].Status != v1.ConditionTrue || st.Conditions[ci].Reason != podnode.DisruptionReasonTerminationByKubelet {
			t.Errorf("%s: no DisruptionTarget condition (TerminationByKubelet): %+v", pods[i].Name, st.Conditions)
		}
		if slices.ContainsFunc(events, func(e podEvent) bool { return e.Type == "DELETED" }) {
			t.Errorf("%s was deleted", pods[i].Name)
		}
	}
	for _, p := range pods {
		rc := runtimeContainer(t, ctx, rt, p, "main")
		if rc == nil || rc.State != pleg.ContainerStateExited {
			t.Errorf("%s: container in containerd %+v, want exited", p.Name, rc)
			continue
		}
		if p == pods[1] && rc.ExitCode != 137 {
			t.Errorf("%s: exit code %d, want 137 (killed when the 7 s ran out)", p.Name, rc.ExitCode)
		}
	}
}
