package statusmgr

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// scheduleCache returns a cache with the bounds of MaxConcurrentWrites maxWrites, the
// writes of inFlight in flight and the pods of queued queued, in that order. A name ending
// in "!" is a finished pod (TerminatePod ran; laneFinal), any other a pod not finished
// (laneStatus); the UID is the name without the "!". A pod both in flight and queued was
// set again during its write.
func scheduleCache(t *testing.T, maxWrites int, inFlight, queued []string) *cache {
	t.Helper()
	c := newCache()
	c.bounds = newWriteBounds(maxWrites)
	set := func(name string) (types.UID, lane) {
		uid, finished := strings.CutSuffix(name, "!")
		p := podWith(func(p *v1.Pod) { p.Name, p.UID = uid, types.UID(uid) })
		status, mode := v1.PodStatus{Phase: v1.PodRunning}, setForced
		if finished {
			status.Phase, mode = v1.PodFailed, setFinished
		}
		if changed, err := c.set(p, status, nil, mode, t0); err != nil || !changed {
			t.Fatalf("set %s: changed %v, %v", name, changed, err)
		}
		return types.UID(uid), laneOf(finished)
	}
	for _, name := range inFlight {
		uid, l := set(name)
		if s, ok := c.next(l); !ok || s.uid != uid {
			t.Fatalf("%s not taken for its write: %v %v", name, s.uid, ok)
		}
	}
	for _, name := range queued {
		set(name)
	}
	return c
}

// drain takes the writes nextWrite grants until it grants none, as "uid" (laneStatus) or
// "uid!" (laneFinal).
func drain(c *cache) []string {
	got := []string{}
	for {
		s, l, ok := c.nextWrite()
		if !ok {
			return got
		}
		if laneOf(s.finished) != l {
			return append(got, "snapshot of the other lane: "+string(s.uid))
		}
		name := string(s.uid)
		if l == laneFinal {
			name += "!"
		}
		got = append(got, name)
	}
}

// TestWritePolicy is the write policy's decision (nextWrite, done): the writes that may
// start given the bounds, the writes in flight and the queues, in the order they start.
func TestWritePolicy(t *testing.T) {
	tests := []struct {
		name      string
		maxWrites int
		inFlight  []string
		queued    []string
		want      []string
		// thenDone ends these writes, after which the policy grants wantAfter.
		thenDone  []string
		wantAfter []string
	}{
		{name: "nothing queued", maxWrites: 4, want: []string{}},
		{name: "the status lane first, MaxConcurrentStatusWrites at a time, finished pods take the other slots",
			maxWrites: 4, queued: []string{"a", "b", "x!", "y!"}, want: []string{"a", "x!", "y!"},
			thenDone: []string{"a"}, wantAfter: []string{"b"}},
		{name: "finished pods take every slot",
			maxWrites: 3, queued: []string{"x!", "y!", "z!", "w!"}, want: []string{"x!", "y!", "z!"},
			thenDone: []string{"y"}, wantAfter: []string{"w!"}},
		{name: "each lane in arrival order",
			maxWrites: 64, queued: []string{"b", "x!", "a", "y!"}, want: []string{"b", "x!", "y!"},
			thenDone: []string{"b"}, wantAfter: []string{"a"}},
		{name: "MaxConcurrentWrites 1: one write in all, the status lane first",
			maxWrites: 1, queued: []string{"x!", "a"}, want: []string{"a"},
			thenDone: []string{"a"}, wantAfter: []string{"x!"}},
		{name: "MaxConcurrentWrites 1 with a finished pod's write in flight",
			maxWrites: 1, inFlight: []string{"x!"}, queued: []string{"a", "y!"}, want: []string{}},
		{name: "a status write in flight leaves the other slots to finished pods",
			maxWrites: 64, inFlight: []string{"a"}, queued: []string{"b", "x!"}, want: []string{"x!"}},
		{name: "every slot taken",
			maxWrites: 2, inFlight: []string{"x!", "y!"}, queued: []string{"a", "z!"}, want: []string{},
			thenDone: []string{"x"}, wantAfter: []string{"a"}},
		{name: "a freed slot goes to the status lane first",
			maxWrites: 2, inFlight: []string{"a", "x!"}, queued: []string{"b", "y!"}, want: []string{},
			thenDone: []string{"a"}, wantAfter: []string{"b"}},
		{name: "a pod whose write is in flight is not written twice; it is written again after",
			maxWrites: 4, inFlight: []string{"x!"}, queued: []string{"x!", "y!"}, want: []string{"y!"},
			thenDone: []string{"x"}, wantAfter: []string{"x!"}},
		{name: "a pod that finished during its status write is written again in the final lane",
			maxWrites: 4, inFlight: []string{"a"}, queued: []string{"a!", "b"}, want: []string{},
			thenDone: []string{"a"}, wantAfter: []string{"b", "a!"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := scheduleCache(t, tc.maxWrites, tc.inFlight, tc.queued)
			if diff := cmp.Diff(tc.want, drain(c)); diff != "" {
				t.Errorf("writes started (-want +got):\n%s", diff)
			}
			for _, uid := range tc.thenDone {
				c.done(types.UID(uid))
			}
			if tc.thenDone != nil {
				if diff := cmp.Diff(tc.wantAfter, drain(c)); diff != "" {
					t.Errorf("writes started after done %v (-want +got):\n%s", tc.thenDone, diff)
				}
			}
			if n := c.inFlight[laneStatus] + c.inFlight[laneFinal]; n > c.bounds.max || c.inFlight[laneStatus] > c.bounds.maxStatus {
				t.Errorf("in flight %v beyond the bounds %+v", c.inFlight, c.bounds)
			}
		})
	}
}

// TestWritePolicyClaim is Sync's way in (claim): a pod is claimed when it needs a sync,
// has no write in flight and its lane has a free slot, which its write then holds.
func TestWritePolicyClaim(t *testing.T) {
	tests := []struct {
		name      string
		maxWrites int
		inFlight  []string
		queued    []string
		claim     string
		want      claimResult
	}{
		{name: "a free slot", maxWrites: 4, queued: []string{"a"}, claim: "a", want: claimed},
		{name: "the status lane full", maxWrites: 4, inFlight: []string{"a"}, queued: []string{"b"}, claim: "b", want: claimBusy},
		{name: "the status lane full, a finished pod", maxWrites: 4, inFlight: []string{"a"}, queued: []string{"x!"}, claim: "x", want: claimed},
		{name: "every slot taken", maxWrites: 2, inFlight: []string{"x!", "y!"}, queued: []string{"z!"}, claim: "z", want: claimBusy},
		{name: "the pod's write in flight", maxWrites: 4, inFlight: []string{"x!"}, queued: []string{"x!"}, claim: "x", want: claimBusy},
		{name: "an unknown pod", maxWrites: 4, claim: "nope", want: claimNone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := scheduleCache(t, tc.maxWrites, tc.inFlight, tc.queued)
			before := c.inFlight
			_, got := c.claim(types.UID(tc.claim))
			if got != tc.want {
				t.Errorf("claim = %v, want %v", got, tc.want)
			}
			holds := got == claimed
			if after := c.inFlight[laneStatus] + c.inFlight[laneFinal]; (after == before[laneStatus]+before[laneFinal]+1) != holds {
				t.Errorf("in flight %v -> %v: a slot held %v", before, c.inFlight, !holds)
			}
			if got == claimed && !c.done(types.UID(tc.claim)) && c.inFlight != before {
				t.Errorf("done did not free the slot: %v, want %v", c.inFlight, before)
			}
		})
	}
}
