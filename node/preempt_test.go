package node_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/admission"
	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
)

// onePodNode is a node with room for one pod, as admission sees it.
func onePodNode(context.Context) (*v1.Node, error) {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("4"), v1.ResourcePods: resource.MustParse("1")}}}, nil
}

// A critical static pod that does not fit preempts the best-effort pod that fills the
// node, as the kubelet's CriticalPodAdmissionHandler does: the admit handler kills the
// victim through KillPod with the handler's context (on the loop, which waits for the
// victim to stop, its whole grace period here), the victim ends Failed/Preempting on
// the server, and the critical pod runs.
func TestCriticalPodPreemptsThroughKillPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n *node.Node // the node, once started; the kill runs only after that
		kill := func(ctx context.Context, p *v1.Pod, status func(*v1.PodStatus)) error {
			return n.KillPod(ctx, p.UID, node.KillPodOptions{Status: status, Evict: true})
		}
		handler := admission.PredicateHandler(admission.PredicateConfig{Node: onePodNode,
			OnFailure: admission.CriticalPodPreemption(kill, func(p *v1.Pod, err error) { t.Errorf("preempting %s: %v", p.Name, err) })})
		e := start(t, nil, nil, envOpts{sources: []string{node.SourceAPI, "file"}, admit: []admission.Handler{handler}})
		n = e.n
		ctx := context.Background()
		if err := e.n.Update(ctx, config.PodUpdate{Op: config.Set, Source: "file"}); err != nil {
			t.Fatal(err)
		}
		victim := e.create(newPod("web", 5, v1.RestartPolicyAlways, map[string]string{nodetest.AnnotationStopDelay: "never"}))
		e.waitPhase("web", v1.PodRunning)

		static := newPod("etcd", 30, v1.RestartPolicyAlways, nil)
		static.UID = "static-etcd"
		begin := time.Now()
		if err := e.n.Update(ctx, config.PodUpdate{Op: config.Set, Source: "file", Pods: []*v1.Pod{static}}); err != nil {
			t.Fatal(err)
		}
		e.waitPod("web", func(p *v1.Pod, ok bool) bool { return ok && p.Status.Phase == v1.PodFailed })
		synctest.Wait()
		for e.rt.Count(nodetest.VerbSyncPod, static.UID) == 0 {
			time.Sleep(100 * time.Millisecond)
		}
		started := time.Since(begin)
		got, _ := e.api.Pod("default", "web")
		e.stop()
		if got.Status.Reason != admission.ReasonPreempting || got.Status.Message != admission.MessagePreempted {
			t.Errorf("victim's status: reason %q message %q, want %q %q", got.Status.Reason, got.Status.Message,
				admission.ReasonPreempting, admission.MessagePreempted)
		}
		if c := disruption(got); c == nil || c.Reason != v1.PodReasonTerminationByKubelet {
			t.Errorf("victim's DisruptionTarget condition = %+v, want reason %s", c, v1.PodReasonTerminationByKubelet)
		}
		if n := e.rt.Count(nodetest.VerbKillPod, victim.UID); n == 0 {
			t.Error("the victim was never killed")
		}
		// The victim ignores SIGTERM: the critical pod starts once its 5 s are over.
		if started < 5*time.Second {
			t.Errorf("the critical pod started %v after it arrived, before the victim's 5 s grace ran out", started)
		}
		if !e.mem.IsRunning(static.UID) {
			t.Error("the critical pod does not run")
		}
	})
}

// Once Shutdown started, a new pod is refused with the kubelet's node shutdown
// admission result, whether or not Config.Admit has handlers.
func TestShutdownRefusesNewPods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, nil, nil, envOpts{})
		e.create(newPod("old", 2, v1.RestartPolicyAlways, nil))
		e.waitPhase("old", v1.PodRunning)
		if err := e.n.Shutdown(context.Background(), node.ShutdownConfig{GracePeriod: 10 * time.Second}); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		late := e.create(newPod("late", 2, v1.RestartPolicyAlways, nil))
		e.waitPhase("late", v1.PodFailed)
		got, _ := e.api.Pod("default", "late")
		e.stop()
		wantMsg := "Pod was rejected: " + node.NodeShutdownNotAdmittedMessage
		if got.Status.Reason != node.NodeShutdownNotAdmittedReason || got.Status.Message != wantMsg {
			t.Errorf("late pod: reason %q message %q, want %q %q", got.Status.Reason, got.Status.Message,
				node.NodeShutdownNotAdmittedReason, wantMsg)
		}
		if n := e.rt.Count(nodetest.VerbSyncPod, late.UID); n != 0 {
			t.Errorf("%d SyncPod calls for the pod that came during shutdown, want none", n)
		}
	})
}
