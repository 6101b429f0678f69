package node_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/admission"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// cpuNode is a node with one cpu and room for 110 pods, as admission sees it.
func cpuNode(context.Context) (*v1.Node, error) {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("1"), v1.ResourcePods: resource.MustParse("110")}}}, nil
}

func cpuPod(name, cpu string) *v1.Pod {
	p := newPod(name, 30, v1.RestartPolicyAlways, nil)
	p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
	return p
}

// A pod the predicates refuse is never started: it ends Failed with the kubelet's
// reason and message, the other pods run, and once deleted its object goes.
func TestAdmitRefusesPodThatDoesNotFit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, nil, nil, envOpts{admit: []admission.Handler{admission.PredicateHandler(admission.PredicateConfig{Node: cpuNode})}})
		big := e.create(cpuPod("big", "2"))
		e.waitPhase("big", v1.PodFailed)
		small := e.create(cpuPod("small", "500m"))
		e.waitPhase("small", v1.PodRunning)
		time.Sleep(time.Minute) // housekeeping rounds: the refused pod is not restarted
		got, _ := e.api.Pod("default", "big")
		want := v1.PodStatus{Phase: v1.PodFailed, Reason: "OutOfcpu", QOSClass: v1.PodQOSBurstable,
			Message: "Pod was rejected: Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000"}
		if diff := cmp.Diff(want, v1.PodStatus{Phase: got.Status.Phase, Reason: got.Status.Reason, Message: got.Status.Message, QOSClass: got.Status.QOSClass}); diff != "" {
			t.Errorf("refused pod's status (-want +got):\n%s", diff)
		}
		if err := e.api.Delete("default", "big", nil); err != nil {
			t.Fatal(err)
		}
		e.waitGone("big")
		e.stop()
		if n := e.rt.Count(nodetest.VerbSyncPod, big.UID); n != 0 {
			t.Errorf("%d SyncPod calls for the refused pod, want none", n)
		}
		if n := e.rt.Count(nodetest.VerbSyncPod, small.UID); n == 0 {
			t.Error("the pod that fits was never synced")
		}
		if slices.Contains(e.reasons(node.EventHousekeeping), node.ReasonRestarted) {
			t.Error("housekeeping restarted the refused pod")
		}
		if !slices.Contains(e.reasons(node.EventConfig), node.ReasonRejected) {
			t.Errorf("config events %q, want %s", e.reasons(node.EventConfig), node.ReasonRejected)
		}
	})
}

// The pods of one ADD are admitted oldest first, each against those admitted before
// it: of two pods that fit only one at a time, the older runs.
func TestAdmitOldestFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := statusmgrtest.NewFakeAPI()
		if _, err := api.Create(cpuPod("first", "600m")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if _, err := api.Create(cpuPod("second", "600m")); err != nil {
			t.Fatal(err)
		}
		var seen [][]string
		record := admission.HandlerFunc(func(_ context.Context, a *admission.Attributes) admission.Result {
			names := []string{a.Pod.Name}
			for _, p := range a.OtherPods {
				names = append(names, p.Name)
			}
			seen = append(seen, names)
			return admission.Result{Admit: true}
		})
		e := start(t, api, nil, envOpts{admit: []admission.Handler{record, admission.PredicateHandler(admission.PredicateConfig{Node: cpuNode})}})
		e.waitPhase("first", v1.PodRunning)
		e.waitPhase("second", v1.PodFailed)
		e.stop()
		if diff := cmp.Diff([][]string{{"first"}, {"second", "first"}}, seen); diff != "" {
			t.Errorf("admitted pod, other pods (-want +got):\n%s", diff)
		}
		p, _ := api.Pod("default", "second")
		if want := "Pod was rejected: Node didn't have enough resource: cpu, requested: 600, used: 600, capacity: 1000"; p.Status.Message != want {
			t.Errorf("message %q, want %q", p.Status.Message, want)
		}
	})
}
