package pleg

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// TestEventsEveryPair checks Events for every old/new pair of the five states and an
// unknown string, against the kubelet's generateEvents table written out by hand.
func TestEventsEveryPair(t *testing.T) {
	const (
		created = ContainerStateCreated
		running = ContainerStateRunning
		exited  = ContainerStateExited
		unknown = ContainerStateUnknown
		gone    = ContainerStateNonExistent
		bogus   = ContainerState("paused")
	)
	var (
		S  = []EventType{ContainerStarted}
		D  = []EventType{ContainerDied}
		C  = []EventType{ContainerChanged}
		R  = []EventType{ContainerRemoved}
		DR = []EventType{ContainerDied, ContainerRemoved}
	)
	// want[old][new]; a missing entry means no events.
	want := map[ContainerState]map[ContainerState][]EventType{
		gone:    {running: S, exited: D, unknown: C, created: C, bogus: C},
		running: {exited: D, unknown: C, created: C, bogus: C, gone: DR},
		exited:  {running: S, unknown: C, created: C, bogus: C, gone: R},
		unknown: {running: S, exited: D, gone: DR},
		created: {running: S, exited: D, gone: DR},
		bogus:   {running: S, exited: D, gone: DR},
	}
	states := []ContainerState{created, running, exited, unknown, gone, bogus}
	if len(want) != len(states) {
		t.Fatalf("table covers %d old states, want %d", len(want), len(states))
	}
	for _, old := range states {
		for _, new := range states {
			t.Run(fmt.Sprintf("%s->%s", old, new), func(t *testing.T) {
				var wantEvents []*PodLifecycleEvent
				for _, typ := range want[old][new] {
					wantEvents = append(wantEvents, &PodLifecycleEvent{ID: "pod-1", Type: typ, Data: "c-1"})
				}
				got := Events("pod-1", "c-1", old, new)
				if diff := cmp.Diff(wantEvents, got); diff != "" {
					t.Errorf("Events(%q, %q) mismatch (-want +got):\n%s", old, new, diff)
				}
				if got == nil && wantEvents == nil {
					return
				}
				for _, e := range got {
					if _, ok := e.Data.(string); !ok {
						t.Errorf("Data is %T, want string", e.Data)
					}
				}
			})
		}
	}
}

func TestEventsDistinctPointers(t *testing.T) {
	got := Events(types.UID("u"), "c", ContainerStateRunning, ContainerStateNonExistent)
	if len(got) != 2 || got[0] == got[1] {
		t.Fatalf("Events returned %v, want two distinct events", got)
	}
}
