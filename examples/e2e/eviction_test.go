package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/cri"
	"github.com/podlife/podlife/examples/evict"
	"github.com/podlife/podlife/examples/kube"
	"github.com/podlife/podlife/pleg"
)

// The sig-node test "Pod Container lifecycle evicted pods should be terminal" on
// containerd: a container with an ephemeral-storage limit of 5Mi writes 10 MiB into its
// own filesystem; the evictor (examples/evict over cri.Runtime.PodStats, every second)
// evicts it: the server shows the pod Failed, reason Evicted, with the kubelet's message,
// its container terminated, the Warning event Evicted; it is not restarted
// (restartPolicy OnFailure), and a delete removes the object.
func TestE2ECRIEphemeralStorageEviction(t *testing.T) {
	admin, nodeClient, ep, image := criEnv(t)
	// containerd updates a writable layer's usage every 10 s: allow for it.
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout+time.Minute)
	defer cancel()
	recCtx, stopRec := context.WithCancel(context.Background())
	rec, err := kube.NewRecorder(recCtx, nodeClient, "kubelet", node)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopRec(); <-rec.Done() })
	rt := newCRIConfig(t, cri.Config{Endpoint: ep, Event: rec.Event})

	pod := criPod(t, "cri-evicted", image, v1.RestartPolicyOnFailure, 30, "-write-file", "/big", "-write-bytes", "10485760")
	pod.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("5Mi")}
	const wantMsg = "Pod ephemeral local storage usage exceeds the total limit of containers 5Mi. "
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	a := startAgentWith(t, nodeClient, agent.Config{Backend: rt, Recorder: rec})
	ev, err := evict.New(evict.Config{Node: a.Node(), ActivePods: evict.RuntimePods(a.Node(), rt), Stats: rt.PodStats,
		Period: time.Second, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	evCtx, stopEv := context.WithCancel(context.Background())
	evDone := make(chan error, 1)
	go func() { evDone <- ev.Run(evCtx) }()
	t.Cleanup(func() {
		stopEv()
		if err := <-evDone; err != nil {
			t.Errorf("evictor: %v", err)
		}
	})

	start := time.Now()
	events := pw.waitFor(t, ctx, "the pod Failed", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodFailed })
	})
	t.Logf("Failed %v after the create; events:\n%s", time.Since(start).Round(time.Millisecond), formatEvents(events))
	got := events[len(events)-1].Pod
	if got.Status.Reason != "Evicted" || got.Status.Message != wantMsg {
		t.Errorf("status reason %q, message %q; want Evicted, %q", got.Status.Reason, got.Status.Message, wantMsg)
	}
	if slices.ContainsFunc(got.Status.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.DisruptionTarget }) {
		t.Errorf("a limit eviction has no DisruptionTarget condition: %+v", got.Status.Conditions)
	}
	cs := containerStatus(got, "main")
	if cs == nil || cs.State.Terminated == nil {
		t.Errorf("container status %+v, want terminated", cs)
	}
	st := waitRuntime(t, ctx, rt, pod.UID, "the container stopped", func(st *pleg.PodStatus) bool {
		c := st.FindContainerStatusByName("main")
		return c != nil && c.State == pleg.ContainerStateExited
	})
	if c := st.FindContainerStatusByName("main"); c.RestartCount != 0 {
		t.Errorf("the evicted container was restarted (restart count %d)", c.RestartCount)
	}

	// The Evicted event, as an admin lists it.
	w, err := admin.CoreV1().Events(namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for found := false; !found; {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the event watch ended")
			}
			if e, isEvent := e.Object.(*v1.Event); isEvent && e.Reason == "Evicted" {
				if e.Type != v1.EventTypeWarning || e.Message != wantMsg {
					t.Errorf("event Evicted: %s %q, want Warning %q", e.Type, e.Message, wantMsg)
				}
				found = true
			}
		case <-ctx.Done():
			t.Fatalf("no Evicted event on the server: %v", ctx.Err())
		}
	}

	// Terminal: still Failed, not restarted, after the evictor's later rounds.
	p, err := admin.CoreV1().Pods(namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != v1.PodFailed || p.Status.Reason != "Evicted" {
		t.Errorf("later: phase %s, reason %q; want Failed, Evicted", p.Status.Phase, p.Status.Reason)
	}

	deletePod(t, ctx, admin, pod.Name, nil)
	pw.waitFor(t, ctx, "the pod deleted", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Type == watch.Deleted })
	})
}
