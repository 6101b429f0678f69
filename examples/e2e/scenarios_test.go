package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/pleg/plegtest"
)

const gate v1.PodConditionType = "podlife.example/gate"

func hasGate(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == gate && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

// A condition written by another client (a readiness gate's) survives every later patch of
// the agent, through a graceful deletion to the terminal phase.
func TestE2EConditionOfAnotherClientSurvives(t *testing.T) {
	admin, nodeClient := clients(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	startAgent(t, nodeClient, nil, agent.ContainerBehaviour{StopDelay: time.Second})
	pod := busybox(t)
	pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: gate}}
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	pw.waitFor(t, ctx, "Running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodRunning })
	})

	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{
		{"type": gate, "status": v1.ConditionTrue, "lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Pods(namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	deletePod(t, ctx, admin, pod.Name, nil)
	events := pw.waitFor(t, ctx, "the pod deleted", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Type == watch.Deleted })
	})
	gated, terminalWithGate := false, false
	for _, e := range events {
		if hasGate(e.Pod) {
			gated = true
			terminalWithGate = terminalWithGate || isTerminal(e.Phase)
			continue
		}
		if gated {
			t.Errorf("the gate's condition was lost: %s %+v", e, e.Pod.Status.Conditions)
		}
	}
	if !terminalWithGate {
		t.Errorf("want the gate's condition kept up to the agent's terminal phase; events:\n%s", formatEvents(events))
	}
}

// The pod is force-deleted while its containers stop, and a pod of the same name (bound to
// another node) is created at once (once the agent's status patches of the old pod in
// flight have been answered: patchTracker): the agent finishes the old pod without ever
// patching or deleting the new one.
func TestE2ERecreatedUnderTheSameName(t *testing.T) {
	admin, nodeClient := clients(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	a := startAgent(t, nodeClient, nil, agent.ContainerBehaviour{StopDelay: 3 * time.Second})
	old, pw := runPod(t, ctx, admin)
	deletePod(t, ctx, admin, old.Name, nil)
	a.waitTrace(t, ctx, old, "SyncTerminatingPod")
	deletePod(t, ctx, admin, old.Name, ptr.To[int64](0))
	pw.waitFor(t, ctx, "the old pod removed", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Type == watch.Deleted })
	})
	a.patches.waitIdle(t, ctx, old.Name)
	fresh := busybox(t)
	fresh.Name = old.Name
	fresh.Spec.NodeName = "node2"
	fresh, err := admin.CoreV1().Pods(namespace).Create(ctx, fresh, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The agent finishes the old pod: its containers stop, its worker ends.
	a.waitTrace(t, ctx, old, "terminating -> terminated")
	a.waitTrace(t, ctx, old, "SyncTerminatedPod")
	got, err := admin.CoreV1().Pods(namespace).Get(ctx, fresh.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the new pod is gone: %v", err)
	}
	if got.UID != fresh.UID || got.ResourceVersion != fresh.ResourceVersion {
		t.Errorf("the new pod changed: uid %s rv %s, created as uid %s rv %s; status %+v",
			got.UID, got.ResourceVersion, fresh.UID, fresh.ResourceVersion, got.Status)
	}
	for _, line := range a.trace(old) {
		if line == "delete final delete (grace 0)" {
			t.Errorf("the agent made a final delete after the pod was force-deleted: %q", line)
		}
	}
}

func finalDeletes(trace []string) int {
	n := 0
	for _, line := range trace {
		if line == "delete final delete (grace 0)" {
			n++
		}
	}
	return n
}

// The agent is restarted while the pod's containers ignore the stop signal (the runtime, like
// a real one, keeps them): the new agent finishes the termination, and the pod is deleted
// exactly once.
func TestE2EAgentRestartedMidTermination(t *testing.T) {
	admin, nodeClient := clients(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	runtime := plegtest.NewRuntime(nil)
	behaviour := agent.ContainerBehaviour{StopDelay: -1}
	first := startAgent(t, nodeClient, runtime, behaviour)
	pod := busybox(t)
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	pw.waitFor(t, ctx, "Running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodRunning })
	})
	deletePod(t, ctx, admin, pod.Name, nil)
	first.waitTrace(t, ctx, pod, "SyncTerminatingPod")
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Pods(namespace).Get(ctx, pod.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the pod is gone before the restart: %v", err)
	}

	second := startAgent(t, nodeClient, runtime, behaviour)
	events := pw.waitFor(t, ctx, "the pod deleted", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Type == watch.Deleted })
	})
	if p := events[len(events)-1].Phase; !isTerminal(p) {
		t.Errorf("the deleted pod's phase = %s, want Succeeded or Failed", p)
	}
	second.waitTrace(t, ctx, pod, "final delete")
	if n1, n2 := finalDeletes(first.trace(pod)), finalDeletes(second.trace(pod)); n1 != 0 || n2 != 1 {
		t.Errorf("final deletes: %d by the first agent, %d by the second; want 0 and 1", n1, n2)
	}
	noErrors(t, second.trace(pod))
}

// A second delete shortens the grace period while the containers, which ignore the stop
// signal, are being stopped: the agent kills them at the shorter deadline, not the first.
func TestE2EGraceShortenedBySecondDelete(t *testing.T) {
	admin, nodeClient := clients(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	a := startAgent(t, nodeClient, nil, agent.ContainerBehaviour{StopDelay: -1})
	pod := busybox(t) // grace 30 s
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	pw.waitFor(t, ctx, "Running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodRunning })
	})
	deletePod(t, ctx, admin, pod.Name, nil)
	a.waitTrace(t, ctx, pod, "SyncTerminatingPod (grace 30s)")
	deletePod(t, ctx, admin, pod.Name, ptr.To[int64](2))
	// Well before the first deadline (30 s).
	short, cancelShort := context.WithTimeout(ctx, 15*time.Second)
	defer cancelShort()
	events := pw.waitFor(t, short, "the pod deleted after the shortened grace", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Type == watch.Deleted })
	})
	if p := events[len(events)-1].Phase; !isTerminal(p) {
		t.Errorf("the deleted pod's phase = %s, want Succeeded or Failed", p)
	}
	a.waitTrace(t, ctx, pod, "final delete")
	trace := a.trace(pod)
	noErrors(t, trace)
	if n := finalDeletes(trace); n != 1 {
		t.Errorf("final deletes = %d, want 1", n)
	}
}

// A force delete (grace 0) while the containers are stopping removes the object at once: the
// agent still stops the containers, and neither patches nor deletes the gone pod.
func TestE2EForceDeleteWhileStopping(t *testing.T) {
	admin, nodeClient := clients(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	a := startAgent(t, nodeClient, nil, agent.ContainerBehaviour{StopDelay: -1})
	pod, pw := runPod(t, ctx, admin)
	deletePod(t, ctx, admin, pod.Name, nil)
	a.waitTrace(t, ctx, pod, "SyncTerminatingPod (grace 30s)")
	deletePod(t, ctx, admin, pod.Name, ptr.To[int64](0))
	pw.waitFor(t, ctx, "the pod removed", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Type == watch.Deleted })
	})
	a.waitTrace(t, ctx, pod, "REMOVE")
	a.waitTrace(t, ctx, pod, "terminating -> terminated")
	trace := a.trace(pod)
	if n := finalDeletes(trace); n != 0 {
		t.Errorf("final deletes = %d of a force-deleted pod, want 0", n)
	}
	noErrors(t, trace)
}
