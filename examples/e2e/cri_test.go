package e2e

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/examples/cri"
	"github.com/podlife/podlife/pleg"
)

// The CRI tests run the agent as system:node:node1 on real containerd (examples/cri):
// hostNetwork pods of the local test image (hack/testimage), whose args choose how the
// container behaves.

func running(e podEvent) bool { return e.Phase == v1.PodRunning && ready(e.Pod) }

// Creation: the server shows the pod Running with the real container's ID, image ID and
// start time.
func TestE2ECRICreation(t *testing.T) {
	admin, nodeClient, ep, image := criEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	rt := newCRI(t, ep)
	pod := criPod(t, "cri-create", image, v1.RestartPolicyAlways, 30)
	pw := watchPod(t, ctx, admin, pod.Name)
	start := time.Now()
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	startCRIAgent(t, nodeClient, rt)
	events := pw.waitFor(t, ctx, "Running and Ready", func(es []podEvent) bool { return last(es, running) })
	t.Logf("Running and Ready %v after the create", time.Since(start).Round(time.Millisecond))

	got := containerStatus(events[len(events)-1].Pod, "main")
	rc := runtimeContainer(t, ctx, rt, pod, "main")
	if got == nil || rc == nil || got.State.Running == nil {
		t.Fatalf("server: %+v; runtime: %+v", got, rc)
	}
	if got.ContainerID != "containerd://"+rc.ID {
		t.Errorf("containerID = %q, want containerd://%s", got.ContainerID, rc.ID)
	}
	if got.ImageID == "" || got.ImageID != rc.ImageID {
		t.Errorf("imageID = %q, want the runtime's %q", got.ImageID, rc.ImageID)
	}
	if !got.State.Running.StartedAt.Time.Equal(rc.StartedAt.Truncate(time.Second)) {
		t.Errorf("startedAt = %v, want the runtime's %v", got.State.Running.StartedAt, rc.StartedAt)
	}
	if got.RestartCount != 0 || !got.Ready {
		t.Errorf("restartCount %d, ready %v", got.RestartCount, got.Ready)
	}
}

// Deletion of a container that ignores SIGTERM with grace G: it is killed at the deadline
// (137), the server shows the pod Failed before the final delete, and the whole deletion
// takes between G and G+3 s.
func TestE2ECRIDeletionKilledAtDeadline(t *testing.T) {
	admin, nodeClient, ep, image := criEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	rt := newCRI(t, ep)
	const g = 3
	pod := criPod(t, "cri-ignore-term", image, v1.RestartPolicyAlways, 30, "-ignore-term")
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	a := startCRIAgent(t, nodeClient, rt)
	pw.waitFor(t, ctx, "Running", func(es []podEvent) bool { return last(es, running) })

	start := time.Now()
	deletePod(t, ctx, admin, pod.Name, ptr.To[int64](g))
	events := pw.waitFor(t, ctx, "the pod deleted", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Type == watch.Deleted })
	})
	took := time.Since(start)
	t.Logf("deleted %v after the delete (grace %d s); events:\n%s", took.Round(time.Millisecond), g, formatEvents(events))
	if took < g*time.Second || took > (g+3)*time.Second {
		t.Errorf("the deletion took %v, want between %d and %d s", took, g, g+3)
	}
	failed := slices.IndexFunc(events, func(e podEvent) bool { return e.Type == watch.Modified && e.Phase == v1.PodFailed })
	if failed < 0 || failed == len(events)-1 {
		t.Fatalf("the server never showed the pod Failed before its removal")
	}
	cs := containerStatus(events[failed].Pod, "main")
	if cs == nil || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 137 {
		t.Errorf("terminal container status = %+v, want exit code 137", cs)
	}
	a.waitTrace(t, ctx, pod, "final delete")
	if n := finalDeletes(a.trace(pod)); n != 1 {
		t.Errorf("final deletes = %d, want 1; trace:\n  %s", n, strings.Join(a.trace(pod), "\n  "))
	}
}

// A container that exits on SIGTERM stops in under a second and the object goes at once.
func TestE2ECRIDeletionExitsOnTerm(t *testing.T) {
	admin, nodeClient, ep, image := criEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	rt := newCRI(t, ep)
	pod := criPod(t, "cri-exits", image, v1.RestartPolicyAlways, 30)
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	startCRIAgent(t, nodeClient, rt)
	pw.waitFor(t, ctx, "Running", func(es []podEvent) bool { return last(es, running) })

	start := time.Now()
	deletePod(t, ctx, admin, pod.Name, nil)
	events := pw.waitFor(t, ctx, "the pod deleted", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Type == watch.Deleted })
	})
	took := time.Since(start)
	rc := runtimeContainer(t, ctx, rt, pod, "main")
	if rc == nil || rc.State != pleg.ContainerStateExited {
		t.Fatalf("runtime: %+v", rc)
	}
	stopped := rc.FinishedAt.Sub(start)
	t.Logf("container stopped %v and the object went %v after the delete (grace 30 s)", stopped.Round(time.Millisecond), took.Round(time.Millisecond))
	if stopped > time.Second {
		t.Errorf("the container took %v to stop, want under 1 s", stopped)
	}
	if took > 3*time.Second {
		t.Errorf("the object went %v after the delete, want at once (under 3 s)", took)
	}
	if p := events[len(events)-1].Phase; !isTerminal(p) {
		t.Errorf("the deleted pod's phase = %s", p)
	}
}

// An agent restarted while containers run adopts them: same container IDs, restartCount 0.
func TestE2ECRIAgentRestartAdopts(t *testing.T) {
	admin, nodeClient, ep, image := criEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	rt1 := newCRI(t, ep)
	pod := criPod(t, "cri-adopt", image, v1.RestartPolicyAlways, 30)
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt1, pod)
	a1 := startCRIAgent(t, nodeClient, rt1)
	events := pw.waitFor(t, ctx, "Running", func(es []podEvent) bool { return last(es, running) })
	before := containerStatus(events[len(events)-1].Pod, "main").ContainerID
	if err := a1.stop(); err != nil {
		t.Fatal(err)
	}

	rt2 := newCRI(t, ep)
	a2 := startCRIAgent(t, nodeClient, rt2)
	a2.waitTrace(t, ctx, pod, "work ")
	// Two relists later the agent has seen the pod's containers as they are (rt1 polls, so
	// that only the agent's calls count on rt2).
	relists := rt2.Stats()["ListContainers"]
	waitRuntime(t, ctx, rt1, pod.UID, "two more relists", func(*pleg.PodStatus) bool { return rt2.Stats()["ListContainers"] >= relists+2 })
	st, err := rt2.PodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.ContainerStatuses) != 1 || len(st.SandboxStatuses) != 1 || st.ContainerStatuses[0].RestartCount != 0 ||
		"containerd://"+st.ContainerStatuses[0].ID != before || st.ContainerStatuses[0].State != pleg.ContainerStateRunning {
		t.Fatalf("after the restart the runtime has %+v, sandboxes %+v; want the one container %s running", st.ContainerStatuses, st.SandboxStatuses, before)
	}
	got, err := admin.CoreV1().Pods(namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cs := containerStatus(got, "main"); cs.ContainerID != before || cs.RestartCount != 0 || got.Status.Phase != v1.PodRunning {
		t.Errorf("server after the restart: %s %+v, want Running with %s, restartCount 0", got.Status.Phase, cs, before)
	}
	noErrors(t, a2.trace(pod))
}

// A container that dies on its own is restarted (Always: restartCount 1) or ends the pod
// Failed (Never).
func TestE2ECRIContainerDies(t *testing.T) {
	admin, nodeClient, ep, image := criEnv(t)
	rt := newCRI(t, ep)
	startCRIAgent(t, nodeClient, rt)
	t.Run("Always", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
		defer cancel()
		pod := criPod(t, "cri-dies-always", image, v1.RestartPolicyAlways, 30, "-exit-after", "1s", "-exit-code", "3")
		pw := watchPod(t, ctx, admin, pod.Name)
		pod = createPod(t, ctx, admin, pod)
		removeLeftovers(t, rt, pod)
		events := pw.waitFor(t, ctx, "restartCount 1", func(es []podEvent) bool {
			return last(es, func(e podEvent) bool {
				cs := containerStatus(e.Pod, "main")
				return cs != nil && cs.RestartCount >= 1
			})
		})
		cs := containerStatus(events[len(events)-1].Pod, "main")
		if cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ExitCode != 3 {
			t.Errorf("last termination: %+v", cs.LastTerminationState.Terminated)
		}
		if p := events[len(events)-1].Phase; p != v1.PodRunning {
			t.Errorf("phase = %s, want Running", p)
		}
	})
	t.Run("Never", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
		defer cancel()
		pod := criPod(t, "cri-dies-never", image, v1.RestartPolicyNever, 30, "-exit-after", "1s", "-exit-code", "3")
		pw := watchPod(t, ctx, admin, pod.Name)
		pod = createPod(t, ctx, admin, pod)
		removeLeftovers(t, rt, pod)
		events := pw.waitFor(t, ctx, "Failed", func(es []podEvent) bool {
			return last(es, func(e podEvent) bool { return e.Phase == v1.PodFailed })
		})
		cs := containerStatus(events[len(events)-1].Pod, "main")
		if cs == nil || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 3 || cs.RestartCount != 0 {
			t.Errorf("container status = %+v, want terminated with 3, never restarted", cs)
		}
		// Nothing of it runs, and nothing restarts it.
		waitRuntime(t, ctx, rt, pod.UID, "the sandbox stopped", func(st *pleg.PodStatus) bool { return !st.IsRunning() })
	})
}

// A sandbox left by an earlier run, whose pod the server does not have, is stopped and
// removed by housekeeping.
func TestE2ECRILeftoverRemoved(t *testing.T) {
	_, nodeClient, ep, image := criEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	rt := newCRI(t, ep)
	orphan := criPod(t, "cri-orphan", image, v1.RestartPolicyAlways, 30)
	orphan.UID = types.UID(uuid.NewUUID())
	removeLeftovers(t, rt, orphan)
	if err := rt.SyncPod(ctx, orphan, nil); err != nil {
		t.Fatal(err)
	}
	if st, err := rt.PodStatus(ctx, orphan.UID, orphan.Name, orphan.Namespace); err != nil || st.RunningContainers() != 1 {
		t.Fatalf("the orphan does not run: %+v, %v", st, err)
	}
	start := time.Now()
	startCRIAgent(t, nodeClient, rt)
	waitRuntime(t, ctx, rt, orphan.UID, "the orphan removed", func(st *pleg.PodStatus) bool {
		return len(st.ContainerStatuses)+len(st.SandboxStatuses) == 0
	})
	t.Logf("the orphan was stopped and removed %v after the agent started", time.Since(start).Round(time.Millisecond))
}

// A pod force-deleted while its container still stops, and recreated at once under the
// same name (once the agent's status patches of the old pod in flight have been answered:
// patchTracker): the new pod runs, and the old one's termination does not touch it.
func TestE2ECRIRecreatedWhileTerminating(t *testing.T) {
	admin, nodeClient, ep, image := criEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	rt := newCRI(t, ep)
	a := startCRIAgent(t, nodeClient, rt)
	old := criPod(t, "cri-same-name", image, v1.RestartPolicyAlways, 30, "-ignore-term")
	name := old.Name
	pw := watchPod(t, ctx, admin, name)
	old = createPod(t, ctx, admin, old)
	removeLeftovers(t, rt, old)
	pw.waitFor(t, ctx, "the first pod Running", func(es []podEvent) bool { return last(es, running) })

	deletePod(t, ctx, admin, name, ptr.To[int64](0))
	pw.waitFor(t, ctx, "the first pod gone", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Type == watch.Deleted })
	})
	a.patches.waitIdle(t, ctx, name)
	recreated := criPod(t, "unused", image, v1.RestartPolicyAlways, 30)
	recreated.Name = name
	recreated = createPod(t, ctx, admin, recreated)
	removeLeftovers(t, rt, recreated)
	if rc := runtimeContainer(t, ctx, rt, old, "main"); rc == nil || rc.State != pleg.ContainerStateRunning {
		t.Logf("the first pod's container already stopped when the second was created: %+v", rc)
	}
	events := pw.waitFor(t, ctx, "the second pod Running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.UID == recreated.UID && running(e) })
	})
	newID := containerStatus(events[len(events)-1].Pod, "main").ContainerID

	// The old container is killed (SIGTERM ignored: at the 2 s minimum), the new one runs on.
	waitRuntime(t, ctx, rt, old.UID, "the first pod stopped", func(st *pleg.PodStatus) bool { return !st.IsRunning() })
	rc := runtimeContainer(t, ctx, rt, recreated, "main")
	if rc == nil || rc.State != pleg.ContainerStateRunning || "containerd://"+rc.ID != newID || rc.RestartCount != 0 {
		t.Errorf("the second pod's container: %+v, want %s running", rc, newID)
	}
	got, err := admin.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil || got.UID != recreated.UID || got.Status.Phase != v1.PodRunning || got.DeletionTimestamp != nil {
		t.Errorf("the second pod on the server: %v, %v", got, err)
	}
}

// A pod that needs its own network (not hostNetwork) on a node without a CNI setup gets a
// clear error and a NetworkNotReady event on the server, and stays Pending with nothing
// created in the runtime.
func TestE2ECRIPodNetworkRefused(t *testing.T) {
	admin, nodeClient, ep, image := criEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	events := eventWriter(t, nodeClient)
	rt := newCRIConfig(t, cri.Config{Endpoint: ep, Event: events.Event})
	a := startCRIAgent(t, nodeClient, rt)
	pod := criPod(t, "cri-podnet", image, v1.RestartPolicyAlways, 30)
	pod.Spec.HostNetwork = false
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)

	w, err := admin.CoreV1().Events(namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got *v1.Event
	for got == nil {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the event watch ended")
			}
			if e, isEvent := ev.Object.(*v1.Event); isEvent && e.Reason == "NetworkNotReady" {
				got = e
			}
		case <-ctx.Done():
			t.Fatalf("no NetworkNotReady event; agent trace:\n  %s", strings.Join(a.trace(pod), "\n  "))
		}
	}
	t.Logf("event: %s %s: %s", got.Type, got.Reason, got.Message)
	if got.Type != v1.EventTypeWarning || got.Source.Host != node {
		t.Errorf("event = %+v", got)
	}
	st, err := rt.PodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil || len(st.SandboxStatuses)+len(st.ContainerStatuses) != 0 {
		t.Errorf("the runtime has %+v (%v), want nothing", st, err)
	}
	a.waitTrace(t, ctx, pod, "pod network unavailable")
	p, err := admin.CoreV1().Pods(namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil || p.Status.Phase != v1.PodPending {
		t.Errorf("the pod on the server: %v, %v; want Pending", p.Status.Phase, err)
	}
}

// A pod deleted while it starts (issue 28 item 5): examples/cri lets its RunPodSandbox,
// CreateContainer and StartContainer calls finish instead of cancelling them (containerd
// then killed the shim and reported exit code 128, StartError), and KillPod stops what
// started. A proxy holds every StartContainer for 1.5 s before containerd gets it; each of
// 20 pods is deleted at a random moment within that window, while its start is in flight.
// No start call is ever cancelled by the agent (without the fix every one of them was), no
// container reports exit code 128 or StartError, and every pod ends deleted.
func TestE2ECRIDeleteWhileStarting(t *testing.T) {
	admin, nodeClient, ep, image := criEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	proxy := startCRIProxy(t, ep)
	proxy.delay["StartContainer"] = 1500 * time.Millisecond
	proxy.entered = make(chan string, 1)
	rt := newCRI(t, proxy.Endpoint)
	startCRIAgent(t, nodeClient, rt)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(uint64(seed), 0))
	const n = 20
	pods := make([]*v1.Pod, n)
	watches := make([]*podWatch, n)
	for i := range pods {
		p := criPod(t, "cri-del-starting", image, v1.RestartPolicyAlways, 30)
		watches[i] = watchPod(t, ctx, admin, p.Name)
		pods[i] = createPod(t, ctx, admin, p)
		removeLeftovers(t, rt, pods[i])
		select {
		case <-proxy.entered: // its StartContainer is held by the proxy
		case <-ctx.Done():
			t.Fatalf("%s: no StartContainer", p.Name)
		}
		time.Sleep(time.Duration(rnd.Int64N(int64(time.Second))))
		if err := admin.CoreV1().Pods(namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete %s: %v", p.Name, err)
		}
	}
	for i, pw := range watches {
		events := pw.waitFor(t, ctx, pods[i].Name+" deleted", func(es []podEvent) bool {
			return last(es, func(e podEvent) bool { return e.Type == watch.Deleted })
		})
		for _, e := range events {
			for _, cs := range e.Pod.Status.ContainerStatuses {
				for _, term := range []*v1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
					if term != nil && (term.ExitCode == 128 || term.Reason == "StartError") {
						t.Errorf("%s: container %s terminated with exit code %d, reason %s: %s",
							pods[i].Name, cs.Name, term.ExitCode, term.Reason, term.Message)
					}
				}
			}
		}
	}
	got := proxy.Cancelled()
	for _, m := range []string{"RunPodSandbox", "CreateContainer", "StartContainer"} {
		if got[m] != 0 {
			t.Errorf("%d %s call(s) cancelled by the agent; cancelled calls: %v", got[m], m, got)
		}
	}
	calls, _ := proxy.Stats()
	if calls["StartContainer"] < n {
		t.Errorf("%d StartContainer calls, want one per pod (%d)", calls["StartContainer"], n)
	}
}
