package agent

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/admission"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// Config.Admit reaches the node: a pod requesting more cpu than the node has is Failed
// OutOfcpu on the server and never started; one that fits runs; the timeline says why.
func TestAdmitOutOfcpu(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: DefaultNodeName},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"),
				v1.ResourcePods: resource.MustParse("110")}}}
		server, runtime := statusmgrtest.NewFakeAPI(), plegtest.NewRuntime(nil)
		var steps []string
		stepsCh := make(chan Step, 100)
		a, err := New(Config{Server: server, Runtime: runtime, Observer: func(s Step) { stepsCh <- s },
			Admit: []admission.Handler{admission.PredicateHandler(admission.PredicateConfig{
				Node: func(context.Context) (*v1.Node, error) { return node, nil }})}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		h := &harness{t: t, server: server, runtime: runtime, agent: a}
		big := h.createRequesting("big", "2")
		h.waitPhase("big", v1.PodFailed)
		h.createRequesting("small", "500m")
		h.waitPhase("small", v1.PodRunning)
		time.Sleep(time.Minute)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		close(stepsCh)
		for s := range stepsCh {
			if s.Pod == "default/big" {
				steps = append(steps, string(s.Kind)+" "+s.Detail)
			}
		}
		got, err := server.GetPod(t.Context(), "default", "big")
		if err != nil {
			t.Fatal(err)
		}
		wantMsg := "Pod was rejected: Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000"
		if got.Status.Reason != "OutOfcpu" || got.Status.Message != wantMsg {
			t.Errorf("status reason %q message %q; want OutOfcpu, %q", got.Status.Reason, got.Status.Message, wantMsg)
		}
		if runtime.IsRunning(big.UID) {
			t.Errorf("the refused pod runs")
		}
		pods, _ := runtime.ListPods(t.Context(), true)
		if slices.ContainsFunc(pods, func(p *pleg.Pod) bool { return p.ID == big.UID }) {
			t.Errorf("the runtime has the refused pod")
		}
		if !slices.ContainsFunc(steps, func(l string) bool { return strings.HasPrefix(l, "config ADD rejected: OutOfcpu: ") }) {
			t.Errorf("no rejected ADD in the steps:\n  %s", strings.Join(steps, "\n  "))
		}
	})
}

// createRequesting creates a pod whose container requests cpu.
func (h *harness) createRequesting(name, cpu string) *v1.Pod {
	h.t.Helper()
	grace := int64(30)
	p, err := h.server.Create(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{NodeName: DefaultNodeName, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "app", Image: "busybox",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}},
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}
