package node

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// The events queued behind a PLEG event for the same pod from the same inspection are
// handled with it (reported, one sync for all); the first event of another pod, or of the
// same pod after the relister cached a newer status of it, is left for the loop.
func TestHandlePLEGRunMergesOneInspection(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// startB: pod b is started after pod a, before the first relist.
		startB bool
		// reinspect: once the second event is handled, pod a's container stops and the
		// relister inspects again (a newer status, with events of its own).
		reinspect bool
		handled   string // the events handled by the first run, in order
		left      string // the event returned, "" for none
	}{
		{name: "one pod", handled: "a ContainerStarted, a ContainerStarted"},
		{name: "two pods", startB: true, handled: "a ContainerStarted, a ContainerStarted", left: "b ContainerStarted"},
		{name: "newer inspection", reinspect: true, handled: "a ContainerStarted, a ContainerStarted", left: "a ContainerDied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := plegtest.NewRuntime(nil)
			rt := RuntimeFuncs{ListPodsFunc: mem.ListPods, PodStatusFunc: mem.PodStatus}
			var handled []string
			var n *Node
			observe := func(e Event) {
				if e.Kind != EventPLEG {
					return
				}
				handled = append(handled, string(e.UID)+" "+e.PLEG)
				if tc.reinspect && len(handled) == 2 {
					if err := mem.KillPod(ctx, "a", 0); err != nil {
						t.Fatal(err)
					}
					if err := n.relister.Relist(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			var err error
			n, err = New(Config{NodeName: "node1", Runtime: rt, Patcher: statusmgrtest.NewFakeAPI(), OnEvent: observe})
			if err != nil {
				t.Fatal(err)
			}
			start := func(uid types.UID) {
				spec := plegtest.PodSpec{UID: uid, Name: string(uid), Namespace: "default", Containers: []plegtest.ContainerSpec{{Name: "c"}}}
				if err := mem.StartPod(ctx, spec); err != nil {
					t.Fatal(err)
				}
				n.pods.set(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, Name: spec.Name, Namespace: spec.Namespace}})
			}
			start("a")
			if tc.startB {
				start("b")
			}
			if err := n.relister.Relist(ctx); err != nil {
				t.Fatal(err)
			}
			first := <-n.relister.Events() // the relister inspects pods in the order they were created
			if first.ID != "a" {
				t.Fatalf("first event %+v, want one of pod a", first)
			}
			left := n.handlePLEGRun(first)
			if got := strings.Join(handled, ", "); got != tc.handled {
				t.Errorf("handled %q, want %q", got, tc.handled)
			}
			got := ""
			if left != nil {
				got = string(left.ID) + " " + string(left.Type)
			}
			if got != tc.left {
				t.Errorf("left event %q, want %q", got, tc.left)
			}
		})
	}
}
