package node

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// Without an OnEvent hook the loop's hot paths format no event messages: a status-only
// change (RECONCILE) of a pod with no worker and a PLEG event of an unknown pod allocate
// nothing; with a hook, both are reported with their messages.
func TestEventsFormattedOnlyWhenObserved(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"}}
	reconcile := config.PodUpdate{Op: config.Reconcile, Source: SourceAPI, Pods: []*v1.Pod{pod}}
	ev := &pleg.PodLifecycleEvent{ID: "uid-unknown", Type: pleg.ContainerStarted, Data: "c1"}
	step := func(n *Node) { n.dispatch(reconcile); n.handlePLEG(ev) }

	var got []Event
	for _, observed := range []bool{false, true} {
		cfg := Config{NodeName: "node1", Runtime: RuntimeFuncs{}, Patcher: statusmgrtest.NewFakeAPI()}
		if observed {
			cfg.OnEvent = func(e Event) { got = append(got, e) }
		}
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		step(n) // records the pod
		if !observed {
			if allocs := testing.AllocsPerRun(100, func() { step(n) }); allocs != 0 {
				t.Errorf("without OnEvent: %v allocations per reconcile and PLEG event, want 0", allocs)
			}
		}
	}
	want := []string{"reconcile from api", "ContainerStarted c1 (pod unknown)"}
	if len(got) != len(want) {
		t.Fatalf("with OnEvent: %d events %+v, want %d", len(got), got, len(want))
	}
	for i, e := range got {
		if e.Message != want[i] {
			t.Errorf("event %d: message %q, want %q", i, e.Message, want[i])
		}
	}
}
