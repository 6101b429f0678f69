package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/internal/podfacts"
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
	step := func(n *Node) { n.dispatch(context.Background(), reconcile); n.handlePLEGRun(ev) }

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

// An Add admits its pods oldest first (pods created at the same time in their order),
// without reordering the update's own list, which belongs to the config merge.
func TestAddAdmitsOldestFirst(t *testing.T) {
	base := metav1.Now()
	for _, tc := range []struct {
		ages []int // creation time of pod i, in seconds after base
		want string
	}{
		{[]int{0, 1, 2}, "p0 p1 p2"},
		{[]int{2, 0, 1}, "p1 p2 p0"},
		{[]int{1, 0, 1, 0}, "p1 p3 p0 p2"},
	} {
		var pods []*v1.Pod
		for i, age := range tc.ages {
			// Mirror pods: the node records them and starts no worker.
			pods = append(pods, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default",
				UID: types.UID(fmt.Sprintf("uid-%d", i)), CreationTimestamp: metav1.NewTime(base.Add(time.Duration(age) * time.Second)),
				Annotations: map[string]string{podfacts.MirrorAnnotationKey: "x"}}})
		}
		given := slices.Clone(pods)
		var got []string
		n, err := New(Config{NodeName: "node1", Runtime: RuntimeFuncs{}, Patcher: statusmgrtest.NewFakeAPI(),
			OnEvent: func(e Event) {
				if e.Kind == EventConfig {
					got = append(got, e.Pod.Name)
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		n.dispatch(context.Background(), config.PodUpdate{Op: config.Add, Source: SourceAPI, Pods: pods})
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("ages %v: admitted %s, want %s", tc.ages, s, tc.want)
		}
		if !slices.Equal(pods, given) {
			t.Errorf("ages %v: the update's list was reordered", tc.ages)
		}
	}
}
