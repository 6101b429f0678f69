package pleg

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// Parity tests: every rule of KUBELET-BEHAVIOR.md §3 (pleg.Events ⇔ generateEvents and
// convertState, and the relist context) and DESIGN.md's pleg decision, one named case each.

// parityEvent is a PodLifecycleEvent with Data kept as written, so cmp.Diff also checks its
// dynamic type (a container ID must be a string, not a *string or a named type).
type parityEvent struct {
	ID       types.UID
	Type     EventType
	Data     any
	DataType string
}

func parityEvents(es []*PodLifecycleEvent) []parityEvent {
	if es == nil {
		return nil
	}
	out := make([]parityEvent, 0, len(es))
	for _, e := range es {
		if e == nil {
			out = append(out, parityEvent{Type: "<nil event>"})
			continue
		}
		out = append(out, parityEvent{ID: e.ID, Type: e.Type, Data: e.Data, DataType: fmt.Sprintf("%T", e.Data)})
	}
	return out
}

func TestParityEvents(t *testing.T) {
	const (
		pod = types.UID("pod-uid")
		cid = "containerd://abc"

		created = ContainerStateCreated
		running = ContainerStateRunning
		exited  = ContainerStateExited
		unknown = ContainerStateUnknown
		gone    = ContainerStateNonExistent
	)
	ev := func(ts ...EventType) []parityEvent {
		out := make([]parityEvent, 0, len(ts))
		for _, t := range ts {
			out = append(out, parityEvent{ID: pod, Type: t, Data: cid, DataType: "string"})
		}
		return out
	}
	S, D, R, C := ContainerStarted, ContainerDied, ContainerRemoved, ContainerChanged
	for _, tc := range []struct {
		name     string
		old, new ContainerState
		want     []parityEvent
	}{
		// §3 rule 1: convertState.
		{"§3 rule 1: created converts to unknown (created -> unknown is no change)", created, unknown, nil},
		{"§3 rule 1: created converts to unknown (unknown -> created is no change)", unknown, created, nil},
		{"§3 rule 1: running converts to itself (running -> created is a change)", running, created, ev(C)},
		{"§3 rule 1: exited converts to itself (exited -> created is a change)", exited, created, ev(C)},
		{"§3 rule 1: a container the runtime no longer lists is non-existent", running, gone, ev(D, R)},

		// §3 rule 2: equal states after conversion give nil.
		{"§3 rule 2: non-existent -> non-existent gives nil", gone, gone, nil},
		{"§3 rule 2: running -> running gives nil", running, running, nil},
		{"§3 rule 2: exited -> exited gives nil", exited, exited, nil},
		{"§3 rule 2: unknown -> unknown gives nil", unknown, unknown, nil},
		{"§3 rule 2: created -> created gives nil", created, created, nil},
		{"§3 rule 2: created -> unknown gives nil", created, unknown, nil},
		{"§3 rule 2: unknown -> created gives nil", unknown, created, nil},

		// §3 rule 3: the new state decides.
		{"§3 rule 3: new running gives [ContainerStarted]", exited, running, ev(S)},
		{"§3 rule 3: new exited gives [ContainerDied]", running, exited, ev(D)},
		{"§3 rule 3: new unknown gives [ContainerChanged]", running, unknown, ev(C)},
		{"§3 rule 3: new non-existent after exited gives [ContainerRemoved]", exited, gone, ev(R)},
		{"§3 rule 3: new non-existent after anything else gives [ContainerDied, ContainerRemoved] in that order", unknown, gone, ev(D, R)},

		// §3 rule 5: the full table, old -> new.
		{"§3 table: non-existent -> running S", gone, running, ev(S)},
		{"§3 table: non-existent -> exited D", gone, exited, ev(D)},
		{"§3 table: non-existent -> unknown C", gone, unknown, ev(C)},
		{"§3 table: non-existent -> created C", gone, created, ev(C)},
		{"§3 table: running -> exited D", running, exited, ev(D)},
		{"§3 table: running -> unknown C", running, unknown, ev(C)},
		{"§3 table: running -> created C", running, created, ev(C)},
		{"§3 table: running -> gone D+R", running, gone, ev(D, R)},
		{"§3 table: exited -> running S", exited, running, ev(S)},
		{"§3 table: exited -> unknown C", exited, unknown, ev(C)},
		{"§3 table: exited -> created C", exited, created, ev(C)},
		{"§3 table: exited -> gone R", exited, gone, ev(R)},
		{"§3 table: unknown -> running S", unknown, running, ev(S)},
		{"§3 table: unknown -> exited D", unknown, exited, ev(D)},
		{"§3 table: unknown -> gone D+R", unknown, gone, ev(D, R)},
		{"§3 table: created -> running S", created, running, ev(S)},
		{"§3 table: created -> exited D", created, exited, ev(D)},
		{"§3 table: created -> gone D+R", created, gone, ev(D, R)},

		// §3 rule 1 (podlife): a value outside the runtime states panics in the kubelet;
		// podlife treats it as unknown (DESIGN.md: nothing panics).
		{"§3 rule 1 (podlife): an undefined runtime state is unknown, never a panic (running -> paused)", running, ContainerState("paused"), ev(C)},
		{"§3 rule 1 (podlife): an undefined runtime state equals unknown (paused -> unknown gives nil)", ContainerState("paused"), unknown, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parityEvents(Events(pod, cid, tc.old, tc.new))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Events(%q -> %q) mismatch (-want +got):\n%s", tc.old, tc.new, diff)
			}
		})
	}
}

// TestParityEventsIdentity checks §3 rule 4 on its own: ID is the pod UID and Data is the
// container ID as a plain string, whatever the IDs are (empty ones included), and every
// call returns fresh events (a caller may keep or modify them).
func TestParityEventsIdentity(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  types.UID
		cid  string
	}{
		{"§3 rule 4: ID is the pod UID and Data the container ID string", "uid-1", "docker://1"},
		{"§3 rule 4: an empty container ID is still a string Data", "uid-2", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := Events(tc.pod, tc.cid, ContainerStateRunning, ContainerStateNonExistent)
			want := []parityEvent{
				{ID: tc.pod, Type: ContainerDied, Data: tc.cid, DataType: "string"},
				{ID: tc.pod, Type: ContainerRemoved, Data: tc.cid, DataType: "string"},
			}
			if diff := cmp.Diff(want, parityEvents(es)); diff != "" {
				t.Fatalf("mismatch (-want +got):\n%s", diff)
			}
			if _, ok := es[0].Data.(string); !ok {
				t.Fatalf("Data is %T, want string", es[0].Data)
			}
			es[0].Type = PodSync
			again := Events(tc.pod, tc.cid, ContainerStateRunning, ContainerStateNonExistent)
			if again[0].Type != ContainerDied || es[0] == again[0] {
				t.Fatalf("Events returned shared events: %v", again[0])
			}
		})
	}
}

// TestParityRelistContext covers §3 rule 6 (what a relist does with the events) and
// DESIGN.md's decision that a relister does not deliver ContainerChanged unless asked.
func TestParityRelistContext(t *testing.T) {
	t.Run("§3 rule 6: relist looks at containers and sandboxes of the old and current records", func(t *testing.T) {
		runSteps(t, false, []step{
			{name: "sandbox and container start", pods: []*Pod{mkPod("a", "s:sb1:r", "c:c1:r")},
				want: []string{"a ContainerStarted c1", "a ContainerStarted sb1"}},
			{name: "the sandbox exits: an event for a sandbox", pods: []*Pod{mkPod("a", "s:sb1:e", "c:c1:r")},
				want: []string{"a ContainerDied sb1"}},
			{name: "both vanish: the old record's entries give events", pods: nil,
				want: []string{"a ContainerDied c1", "a ContainerRemoved c1", "a ContainerRemoved sb1"}},
		})
	})
	t.Run("§3 rule 6: a pod with an event gets its cache entry refreshed", func(t *testing.T) {
		runSteps(t, false, []step{
			{name: "start", pods: []*Pod{mkPod("a", "c:c1:r")}, want: []string{"a ContainerStarted c1"},
				wantCache: map[types.UID][]string{"a": {"c1 running"}}},
			{name: "exit", pods: []*Pod{mkPod("a", "c:c1:e")}, want: []string{"a ContainerDied c1"},
				wantCache: map[types.UID][]string{"a": {"c1 exited"}}},
		})
	})
	t.Run("§3 rule 6: failed inspection drops the events and re-inspects next relist with the old record", func(t *testing.T) {
		runSteps(t, false, []step{
			{name: "start", pods: []*Pod{mkPod("a", "c:c1:r")}, want: []string{"a ContainerStarted c1"}},
			{name: "exit, inspection fails: no event", pods: []*Pod{mkPod("a", "c:c1:e")}, failPods: []types.UID{"a"}, wantErr: ErrPodStatus},
			{name: "re-inspected: the kept old record gives the event", pods: []*Pod{mkPod("a", "c:c1:e")}, want: []string{"a ContainerDied c1"},
				wantCache: map[types.UID][]string{"a": {"c1 exited"}}},
		})
	})
	t.Run("§3 rule 6: a re-inspection with no events emits PodSync", func(t *testing.T) {
		runSteps(t, false, []step{
			{name: "start", pods: []*Pod{mkPod("a", "c:c1:r")}, want: []string{"a ContainerStarted c1"}},
			{name: "exit, inspection fails", pods: []*Pod{mkPod("a", "c:c1:e")}, failPods: []types.UID{"a"}, wantErr: ErrPodStatus},
			{name: "back to running: no container event, PodSync", pods: []*Pod{mkPod("a", "c:c1:r")}, want: []string{"a PodSync"}},
		})
	})
	t.Run("§3 rule 6: ContainerChanged is generated but not sent (running -> created, then -> unknown)", func(t *testing.T) {
		runSteps(t, false, []step{
			{name: "start", pods: []*Pod{mkPod("a", "c:c1:r")}, want: []string{"a ContainerStarted c1"}},
			{name: "created: nothing delivered, cache refreshed", pods: []*Pod{mkPod("a", "c:c1:c")},
				wantCache: map[types.UID][]string{"a": {"c1 created"}}},
			{name: "exited: Died", pods: []*Pod{mkPod("a", "c:c1:e")}, want: []string{"a ContainerDied c1"}},
			{name: "unknown: nothing delivered", pods: []*Pod{mkPod("a", "c:c1:u")},
				wantCache: map[types.UID][]string{"a": {"c1 unknown"}}},
		})
	})
	t.Run("DESIGN: a relister delivers ContainerChanged when the caller asks for it", func(t *testing.T) {
		runSteps(t, true, []step{
			{name: "start", pods: []*Pod{mkPod("a", "c:c1:r")}, want: []string{"a ContainerStarted c1"}},
			{name: "unknown: delivered", pods: []*Pod{mkPod("a", "c:c1:u")}, want: []string{"a ContainerChanged c1"}},
		})
	})
	t.Run("§3 rule 6: a full channel drops events and counts them", func(t *testing.T) {
		rt := newFakeRuntime(mkPod("a", "c:c1:r", "c:c2:r", "c:c3:r"))
		r, _, clk := newTestRelister(t, rt, func(c *Config) { c.EventChannelCapacity = 1 })
		clk.Step(time.Second)
		if err := r.Relist(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := struct {
			Delivered int
			Dropped   uint64
		}{len(drain(r.Events())), r.DroppedEvents()}
		want := struct {
			Delivered int
			Dropped   uint64
		}{1, 2}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})
}

// The pinned API (DESIGN.md): a changed signature fails to compile here.
var (
	_ func(types.UID, string, ContainerState, ContainerState) []*PodLifecycleEvent = Events
	_                                                                              = PodLifecycleEvent{ID: types.UID(""), Type: EventType(""), Data: any(nil)}
)

func TestParityPinnedValues(t *testing.T) {
	got := map[string]string{
		"ContainerStarted": string(ContainerStarted), "ContainerDied": string(ContainerDied),
		"ContainerRemoved": string(ContainerRemoved), "PodSync": string(PodSync), "ContainerChanged": string(ContainerChanged),
		"created": string(ContainerStateCreated), "running": string(ContainerStateRunning), "exited": string(ContainerStateExited),
		"unknown": string(ContainerStateUnknown), "non-existent": string(ContainerStateNonExistent),
	}
	for name, v := range got {
		t.Run("DESIGN pinned value: "+name, func(t *testing.T) {
			if diff := cmp.Diff(name, v); diff != "" {
				t.Errorf("value mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
