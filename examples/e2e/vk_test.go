package e2e

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/examples/vk/vktest"
)

// The virtual-kubelet tests run vk.Run, as the node identity system:node:node1, over a
// vktest provider (polled, and notifying through NotifyPods) against the real API server,
// and replay virtual-kubelet's lifecycle issues. They assert on the server's state (an
// admin's watch of each pod, whose events are stamped when received), on the provider's
// recorded calls and on the status writes recorded by a wrapper of the node's patcher; the
// agent's own output is only waited on, never asserted on.

// Lifecycle and node: the Node object and its lease are registered; a pod bound to the node
// is created in the provider once and runs; a graceful delete (30 s) calls DeletePod, the
// terminal phase reaches the server before the object goes, and the object goes within a
// few seconds (not at the end of the grace period), deleted once, by the agent.
func TestE2EVirtualKubeletLifecycle(t *testing.T) {
	for _, kind := range vkKinds {
		t.Run(kind.name, func(t *testing.T) {
			e := newVKEnv(t, kind)
			// Start from no Node and no Lease, so the runner is what registers them.
			deleteNodeAndLease(t, e)
			p, patcher, r := e.run("", vktest.Config{}, nil)

			eventually(t, e.within(20*time.Second), "the Node object node1, Ready", func() (bool, string) {
				n, err := e.admin.CoreV1().Nodes().Get(e.ctx, node, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				for _, c := range n.Status.Conditions {
					if c.Type == v1.NodeReady {
						return c.Status == v1.ConditionTrue, fmt.Sprintf("Ready=%s", c.Status)
					}
				}
				return false, "no Ready condition"
			})
			eventually(t, e.within(20*time.Second), "the Lease of node1 in kube-node-lease", func() (bool, string) {
				l, err := e.admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(e.ctx, node, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				return leaseHeld(l), fmt.Sprintf("holder %v, renewed %v", ptr.Deref(l.Spec.HolderIdentity, "<nil>"), l.Spec.RenewTime)
			})

			pod := vkPod(t, "life", v1.RestartPolicyAlways)
			w := e.watch(pod.Name)
			pod = createPod(t, e.ctx, e.admin, pod)
			w.waitFor(t, e.ctx, "Running on the server", hasPhase(pod.UID, v1.PodRunning))

			deleted := vkClock.Now()
			deletePod(t, e.ctx, e.admin, pod.Name, ptr.To[int64](30))
			events := of(w.waitFor(t, e.within(15*time.Second), "the object removed", removed(pod.UID)), pod.UID)
			if took := events[len(events)-1].At.Sub(deleted); took > 10*time.Second {
				t.Errorf("the object went %v after the graceful delete, want within a few seconds", took)
			}
			graceful, terminal := deleteOrder(t, events, w)
			if g := events[graceful].Pod.DeletionGracePeriodSeconds; g == nil || *g != 30 {
				t.Errorf("deletionGracePeriodSeconds = %v, want 30", g)
			}
			dels := p.log.find(vktest.Delete, pod.UID)
			if len(dels) == 0 {
				t.Fatal("the provider never got DeletePod")
			}
			if !dels[0].At.Before(events[terminal].At) {
				t.Errorf("the terminal phase reached the server before DeletePod was called")
			}

			if err := r.stop(); err != nil {
				t.Fatalf("vk.Run: %v", err)
			}
			if n := p.CountFor(pod.UID, vktest.Create); n != 1 {
				t.Errorf("CreatePod calls = %d, want 1", n)
			}
			if _, ok := p.Has(namespace, pod.Name); ok {
				t.Error("the provider still holds the deleted pod")
			}
			finals := patcher.find("delete", "")
			if len(finals) != 1 || finals[0].UID != pod.UID || !finals[0].AfterTerminal {
				t.Errorf("final deletes = %v, want one, of %s, after its terminal phase was written", finals, pod.UID)
			}
		})
	}
}

// deleteOrder checks, on the events of a deleted pod, the kubelet's order on the server: the
// graceful delete (deletionTimestamp) while the phase is not terminal, then the terminal
// phase (while the object is still there), never left again, then the removal. It returns
// the positions of the first event with the deletionTimestamp and of the first with the
// terminal phase.
func deleteOrder(t *testing.T, events []podEvent, w *podWatch) (graceful, terminal int) {
	t.Helper()
	graceful = index(events, func(s podEvent) bool { return s.Deleting })
	terminal = index(events, func(s podEvent) bool { return isTerminal(s.Phase) })
	if len(events) == 0 || events[len(events)-1].Type != watch.Deleted ||
		graceful < 0 || terminal <= graceful || terminal >= len(events)-1 {
		t.Fatalf("want the graceful delete, then the terminal phase, then the removal; events:\n%s", w)
	}
	phaseNeverLeftTerminal(t, events)
	return graceful, terminal
}

// leaseHeld reports whether the node lease is node1's and was renewed.
func leaseHeld(l *coordinationv1.Lease) bool {
	return ptr.Deref(l.Spec.HolderIdentity, "") == node && l.Spec.RenewTime != nil
}

// deleteNodeAndLease removes node1's Node object and Lease (as the admin), so a runner
// started next is what registers them again.
func deleteNodeAndLease(t *testing.T, e *vkEnv) {
	t.Helper()
	if err := e.admin.CoreV1().Nodes().Delete(e.ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if err := e.admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Delete(e.ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	eventually(t, e.within(10*time.Second), "node1's Node and Lease gone", func() (bool, string) {
		_, nerr := e.admin.CoreV1().Nodes().Get(e.ctx, node, metav1.GetOptions{})
		_, lerr := e.admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(e.ctx, node, metav1.GetOptions{})
		return apierrors.IsNotFound(nerr) && apierrors.IsNotFound(lerr), fmt.Sprintf("node: %v, lease: %v", nerr, lerr)
	})
}

// Virtual-kubelet #989: a pod created and deleted (30 s; the object stays, the pod is bound)
// while the runner is down reaches the provider's DeletePod once the runner starts, is
// never created in the provider, and the object then goes.
func TestE2EVirtualKubeletDeletedWhileDown(t *testing.T) {
	for _, kind := range vkKinds {
		t.Run(kind.name, func(t *testing.T) {
			e := newVKEnv(t, kind)
			pod := vkPod(t, "down", v1.RestartPolicyAlways)
			w := e.watch(pod.Name)
			pod = createPod(t, e.ctx, e.admin, pod)
			deletePod(t, e.ctx, e.admin, pod.Name, ptr.To[int64](30))
			w.waitFor(t, e.ctx, "the graceful delete on the server", func(es []podEvent) bool {
				return index(es, func(s podEvent) bool { return s.UID == pod.UID && s.Deleting }) >= 0
			})
			cur, err := e.admin.CoreV1().Pods(namespace).Get(e.ctx, pod.Name, metav1.GetOptions{})
			if err != nil || cur.UID != pod.UID || cur.DeletionTimestamp == nil {
				t.Fatalf("before the runner starts, the object is %v (err %v), want it kept with a deletionTimestamp", cur, err)
			}

			p := e.newProvider("", vktest.Config{})
			patcher := e.newPatcher("", nil)
			started := vkClock.Now()
			r := e.startRunner("", p, patcher)
			events := of(w.waitFor(t, e.within(15*time.Second), "the object removed", removed(pod.UID)), pod.UID)
			gone := events[len(events)-1]
			if took := gone.At.Sub(started); took > 10*time.Second {
				t.Errorf("the object went %v after the runner started, want within a few seconds", took)
			}
			dels := p.log.find(vktest.Delete, pod.UID)
			if len(dels) == 0 {
				t.Fatal("the pod deleted while the runner was down never reached DeletePod")
			}
			if !dels[0].At.Before(gone.At) {
				t.Error("the object went before DeletePod was called")
			}
			deleteOrder(t, events, w)

			if err := r.stop(); err != nil {
				t.Fatalf("vk.Run: %v", err)
			}
			if n := p.CountFor(pod.UID, vktest.Delete); n != 1 {
				t.Errorf("DeletePod calls = %d, want 1", n)
			}
			if n := p.Count(vktest.Create); n != 0 {
				t.Errorf("CreatePod calls = %d, want none (the pod was deleted before the runner started)", n)
			}
			if finals := patcher.find("delete", ""); len(finals) != 1 || finals[0].UID != pod.UID || !finals[0].AfterTerminal {
				t.Errorf("final deletes = %v, want one, of %s, after its terminal phase was written", finals, pod.UID)
			}
		})
	}
}

// Virtual-kubelet #712: the first status patch that carries the terminal phase fails; the
// terminal phase still reaches the server (the status manager retries it), and the object
// is deleted only after that. A pod whose containers exit on their own (restartPolicy
// Never, no delete) ends Succeeded on the server and stays; a deleted pod goes only after
// its terminal phase was written.
func TestE2EVirtualKubeletTerminalPatchFails(t *testing.T) {
	for _, kind := range vkKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Run("exited", func(t *testing.T) { terminalPatchFailsOnExit(t, kind) })
			t.Run("deleted", func(t *testing.T) { terminalPatchFailsOnDelete(t, kind) })
		})
	}
}

var errInjected = errors.New("e2e: injected failure of the first terminal status patch")

func terminalPatchFailsOnExit(t *testing.T, kind vkKind) {
	e := newVKEnv(t, kind)
	p, patcher, r := e.run("", vktest.Config{RunFor: 2 * time.Second}, apierrors.NewInternalError(errInjected))
	pod := vkPod(t, "exit", v1.RestartPolicyNever)
	w := e.watch(pod.Name)
	pod = createPod(t, e.ctx, e.admin, pod)
	w.waitFor(t, e.ctx, "Running on the server", hasPhase(pod.UID, v1.PodRunning))
	// The failed patch is retried by the status manager's next full sync (10 s).
	w.waitFor(t, e.within(30*time.Second), "Succeeded on the server", hasPhase(pod.UID, v1.PodSucceeded))
	if err := r.stop(); err != nil {
		t.Fatalf("vk.Run: %v", err)
	}

	// The wrapper failed the first patch setting a terminal phase, so the Succeeded the
	// server shows came from a later one.
	patches := patcher.find("patch", pod.UID)
	inj := slices.IndexFunc(patches, func(wr write) bool { return wr.Injected })
	if inj < 0 {
		t.Fatalf("no terminal status patch was failed; writes:\n%s", patcher)
	}
	if ph := patches[inj].Phase; ph != v1.PodSucceeded {
		t.Errorf("the failed terminal patch set %s, want Succeeded", ph)
	}
	if retry := slices.IndexFunc(patches[inj+1:], func(wr write) bool { return wr.Phase == v1.PodSucceeded }); retry >= 0 {
		t.Logf("the terminal patch was sent again %v after the failed one", patches[inj+1+retry].Started.Sub(patches[inj].Started))
	}
	if finals := patcher.find("delete", ""); len(finals) != 0 {
		t.Errorf("final deletes = %v, want none (the pod was not deleted)", finals)
	}
	cur, err := e.admin.CoreV1().Pods(namespace).Get(e.ctx, pod.Name, metav1.GetOptions{})
	if err != nil || cur.UID != pod.UID {
		t.Fatalf("the finished pod's object is gone: %v (err %v)", cur, err)
	}
	if cur.Status.Phase != v1.PodSucceeded || cur.DeletionTimestamp != nil {
		t.Errorf("the finished pod is %s (deletionTimestamp %v), want Succeeded and not deleted", cur.Status.Phase, cur.DeletionTimestamp)
	}
	if len(cur.Status.ContainerStatuses) != 1 || cur.Status.ContainerStatuses[0].State.Terminated == nil ||
		cur.Status.ContainerStatuses[0].State.Terminated.Reason != vktest.ReasonCompleted {
		t.Errorf("container statuses = %+v, want one terminated (%s)", cur.Status.ContainerStatuses, vktest.ReasonCompleted)
	}
	phaseNeverLeftTerminal(t, of(w.waitFor(t, e.ctx, "", func([]podEvent) bool { return true }), pod.UID))
	if n := p.CountFor(pod.UID, vktest.Create); n != 1 {
		t.Errorf("CreatePod calls = %d, want 1", n)
	}
}

func terminalPatchFailsOnDelete(t *testing.T, kind vkKind) {
	e := newVKEnv(t, kind)
	p, patcher, r := e.run("", vktest.Config{}, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "", errInjected))
	pod := vkPod(t, "del", v1.RestartPolicyAlways)
	w := e.watch(pod.Name)
	pod = createPod(t, e.ctx, e.admin, pod)
	w.waitFor(t, e.ctx, "Running on the server", hasPhase(pod.UID, v1.PodRunning))
	deletePod(t, e.ctx, e.admin, pod.Name, ptr.To[int64](30))
	events := of(w.waitFor(t, e.within(30*time.Second), "the object removed", removed(pod.UID)), pod.UID)
	if err := r.stop(); err != nil {
		t.Fatalf("vk.Run: %v", err)
	}

	deleteOrder(t, events, w)
	patches := patcher.find("patch", pod.UID)
	inj := -1
	for i, wr := range patches {
		if wr.Injected {
			inj = i
		}
	}
	if inj < 0 {
		t.Fatalf("no terminal status patch was failed; writes:\n%s", patcher)
	}
	if dels := p.log.find(vktest.Delete, pod.UID); len(dels) == 0 || !dels[0].At.Before(patches[inj].Started) {
		t.Errorf("the failed terminal patch was not after DeletePod (provider DeletePod calls: %v)", dels)
	}
	if retry := slices.IndexFunc(patches[inj+1:], func(wr write) bool { return isTerminal(wr.Phase) }); retry >= 0 {
		t.Logf("the terminal patch was sent again %v after the failed one", patches[inj+1+retry].Started.Sub(patches[inj].Started))
	}
	finals := patcher.find("delete", "")
	if len(finals) != 1 || finals[0].UID != pod.UID {
		t.Fatalf("final deletes = %v, want one, of %s", finals, pod.UID)
	}
	if !finals[0].AfterTerminal || finals[0].Started.Before(patches[inj].Started) {
		t.Errorf("the final delete (%s) was sent before the terminal phase was on the server; writes:\n%s", finals[0], patcher)
	}
}

// Virtual-kubelet #867: pod "web" (uid1) is deleted gracefully while the provider stops it
// slowly (3 s); meanwhile the admin force-deletes it and creates "web" again (uid2). The
// agent never deletes uid2 (its final delete carries the UID precondition), the provider
// gets CreatePod for uid2 only after uid1 stopped, and uid2 ends Running on the server.
// uid2 is created once the agent's status patches of uid1 in flight have been answered: a
// patch that reached uid1 during the force delete would otherwise make the API server
// delete uid2 (patchTracker).
func TestE2EVirtualKubeletRecreatedWhileStopping(t *testing.T) {
	const stopDelay = 3 * time.Second
	for _, kind := range vkKinds {
		t.Run(kind.name, func(t *testing.T) {
			e := newVKEnv(t, kind)
			p, patcher, r := e.run("", vktest.Config{StopDelay: stopDelay}, nil)
			old := vkPod(t, "web", v1.RestartPolicyAlways)
			w := e.watch(old.Name)
			fresh := old.DeepCopy()
			old = createPod(t, e.ctx, e.admin, old)
			w.waitFor(t, e.ctx, "uid1 Running on the server", hasPhase(old.UID, v1.PodRunning))

			deletePod(t, e.ctx, e.admin, old.Name, ptr.To[int64](30))
			p.log.waitFor(t, e.within(10*time.Second), "DeletePod of uid1", func(cs []vkCall) bool {
				return len(p.log.find(vktest.Delete, old.UID)) > 0
			})
			deletePod(t, e.ctx, e.admin, old.Name, ptr.To[int64](0))
			w.waitFor(t, e.ctx, "uid1 removed", removed(old.UID))
			patcher.inFlight.waitIdle(t, e.within(10*time.Second), old.Name)
			fresh = createPod(t, e.ctx, e.admin, fresh)
			events := w.waitFor(t, e.within(20*time.Second), "uid2 Running on the server, or removed", func(es []podEvent) bool {
				return hasPhase(fresh.UID, v1.PodRunning)(es) || removed(fresh.UID)(es)
			})
			if removed(fresh.UID)(events) {
				t.Fatalf("uid2 was removed from the server before it ran; its events:\n%s", formatEvents(of(events, fresh.UID)))
			}
			if err := r.stop(); err != nil {
				t.Fatalf("vk.Run: %v", err)
			}

			if finals := patcher.find("delete", fresh.UID); len(finals) != 0 {
				t.Errorf("the agent deleted uid2: %v", finals)
			}
			creates := p.log.find(vktest.Create, fresh.UID)
			if len(creates) != 1 || creates[0].Err != nil {
				t.Fatalf("CreatePod calls for uid2 = %v, want one, successful", creates)
			}
			stopping := p.log.find(vktest.Delete, old.UID)[0]
			gap := creates[0].At.Sub(stopping.At)
			if gap < stopDelay {
				t.Errorf("uid2 was created %v after DeletePod of uid1, before uid1 stopped (%v)", gap, stopDelay)
			}
			t.Logf("CreatePod of uid2 came %v after DeletePod of uid1 (which stops it in %v)", gap, stopDelay)
			if uid, ok := p.Has(namespace, fresh.Name); !ok || uid != fresh.UID {
				t.Errorf("the provider holds %q (%v) under the name, want uid2 %s", uid, ok, fresh.UID)
			}
			for _, s := range of(w.waitFor(t, e.ctx, "", func([]podEvent) bool { return true }), fresh.UID) {
				if s.Deleting || isTerminal(s.Phase) || s.Type == watch.Deleted {
					t.Errorf("uid2 was finished or deleted on the server: %s", s)
				}
			}
			cur, err := e.admin.CoreV1().Pods(namespace).Get(e.ctx, fresh.Name, metav1.GetOptions{})
			if err != nil || cur.UID != fresh.UID || cur.DeletionTimestamp != nil || cur.Status.Phase != v1.PodRunning {
				t.Errorf("after the runner stopped the object is %v (err %v), want uid2 Running and not deleted", podSummary(cur), err)
			}
		})
	}
}

func podSummary(p *v1.Pod) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s uid=%s phase=%s deleting=%v", p.Name, p.UID, p.Status.Phase, p.DeletionTimestamp != nil)
}

// Virtual-kubelet #762: a restartPolicy Never pod finishes (Succeeded on the server); the
// runner stops and a new one starts with a new, empty provider (a crash lost the
// provider's state). The finished pod is never created in the new provider and stays
// Succeeded, its container terminated.
func TestE2EVirtualKubeletFinishedPodAfterRestart(t *testing.T) {
	for _, kind := range vkKinds {
		t.Run(kind.name, func(t *testing.T) {
			e := newVKEnv(t, kind)
			p1, _, r1 := e.run("first", vktest.Config{RunFor: time.Second}, nil)
			pod := vkPod(t, "done", v1.RestartPolicyNever)
			w := e.watch(pod.Name)
			pod = createPod(t, e.ctx, e.admin, pod)
			w.waitFor(t, e.within(20*time.Second), "Succeeded on the server", hasPhase(pod.UID, v1.PodSucceeded))
			if err := r1.stop(); err != nil {
				t.Fatalf("vk.Run (first): %v", err)
			}
			if n := p1.CountFor(pod.UID, vktest.Create); n != 1 {
				t.Fatalf("CreatePod calls of the first provider = %d, want 1", n)
			}

			p2, patcher2, r2 := e.run("second", vktest.Config{RunFor: time.Second}, nil)
			// The new runner finishes the pod's worker; then three more relists of the
			// provider, time enough to have created the pod if it were going to.
			r2.waitStep(t, e.within(15*time.Second), pod.UID, "SyncTerminatedPod")
			lists := p2.Count(vktest.List)
			p2.log.waitFor(t, e.within(10*time.Second), "three relists", func(cs []vkCall) bool {
				return p2.Count(vktest.List) >= lists+3
			})
			if err := r2.stop(); err != nil {
				t.Fatalf("vk.Run (second): %v", err)
			}

			if n := p2.Count(vktest.Create); n != 0 {
				t.Errorf("the new provider got %d CreatePod call(s) for the finished pod, want none", n)
			}
			if finals := patcher2.find("delete", ""); len(finals) != 0 {
				t.Errorf("final deletes = %v, want none (the pod was not deleted)", finals)
			}
			phaseNeverLeftTerminal(t, of(w.waitFor(t, e.ctx, "", func([]podEvent) bool { return true }), pod.UID))
			cur, err := e.admin.CoreV1().Pods(namespace).Get(e.ctx, pod.Name, metav1.GetOptions{})
			if err != nil || cur.UID != pod.UID {
				t.Fatalf("the finished pod's object is gone: %v (err %v)", cur, err)
			}
			if cur.Status.Phase != v1.PodSucceeded || cur.DeletionTimestamp != nil {
				t.Errorf("the finished pod is %s (deletionTimestamp %v), want Succeeded and not deleted", cur.Status.Phase, cur.DeletionTimestamp)
			}
			if len(cur.Status.ContainerStatuses) != 1 || cur.Status.ContainerStatuses[0].State.Terminated == nil {
				t.Errorf("container statuses = %+v, want one terminated", cur.Status.ContainerStatuses)
			}
		})
	}
}

// Virtual-kubelet #587, #681, #690: while the provider stops the pod (3 s), the object keeps
// its deletionTimestamp and a phase that is not terminal; once the provider has stopped it,
// the terminal phase is written, then the object goes (well before the 30 s grace period).
func TestE2EVirtualKubeletGracefulDeleteKeepsObject(t *testing.T) {
	const stopDelay = 3 * time.Second
	for _, kind := range vkKinds {
		t.Run(kind.name, func(t *testing.T) {
			e := newVKEnv(t, kind)
			p, patcher, r := e.run("", vktest.Config{StopDelay: stopDelay}, nil)
			pod := vkPod(t, "slow", v1.RestartPolicyAlways)
			w := e.watch(pod.Name)
			pod = createPod(t, e.ctx, e.admin, pod)
			w.waitFor(t, e.ctx, "Running on the server", hasPhase(pod.UID, v1.PodRunning))
			deletePod(t, e.ctx, e.admin, pod.Name, ptr.To[int64](30))
			events := of(w.waitFor(t, e.within(20*time.Second), "the object removed", removed(pod.UID)), pod.UID)
			if err := r.stop(); err != nil {
				t.Fatalf("vk.Run: %v", err)
			}

			dels := p.log.find(vktest.Delete, pod.UID)
			if len(dels) == 0 {
				t.Fatal("the provider never got DeletePod")
			}
			// The provider stops the pod stopDelay after DeletePod, not earlier.
			stoppedNoEarlier := dels[0].At.Add(stopDelay)
			graceful, terminal := deleteOrder(t, events, w)
			for _, s := range events[graceful:terminal] {
				if !s.Deleting || s.Phase != v1.PodRunning {
					t.Errorf("while the provider stopped the pod the object was %s, want Running with its deletionTimestamp", s)
				}
			}
			if !events[terminal].Deleting {
				t.Errorf("the terminal phase came without the deletionTimestamp: %s", events[terminal])
			}
			if at := events[terminal].At; at.Before(stoppedNoEarlier) {
				t.Errorf("the terminal phase was on the server %v before the provider stopped the pod", stoppedNoEarlier.Sub(at))
			}
			gone := events[len(events)-1]
			if took := gone.At.Sub(events[graceful].At); took > 10*time.Second {
				t.Errorf("the object went %v after the graceful delete, want soon after the %v stop", took, stopDelay)
			}
			finals := patcher.find("delete", "")
			if len(finals) != 1 || finals[0].UID != pod.UID || !finals[0].AfterTerminal {
				t.Errorf("final deletes = %v, want one, of %s, after its terminal phase was written", finals, pod.UID)
			}
			if len(finals) > 0 && finals[0].Started.Before(stoppedNoEarlier) {
				t.Errorf("the final delete was sent %v before the provider stopped the pod", stoppedNoEarlier.Sub(finals[0].Started))
			}
		})
	}
}
