package cri

import (
	"testing"
	"time"
)

// TestBackOff replays a container that keeps failing: the first restart is immediate,
// then 10 s, 20 s, 40 s ... at most 5 min, counted from each instance's finish; after more
// than 10 min without a restart it starts over.
func TestBackOff(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := NewBackOff(10*time.Second, 5*time.Minute)
	const key = "ns/p/u1/c"
	finish := t0
	type step struct {
		runFor   time.Duration // how long the instance ran before it finished
		wantWait time.Duration // the wait at its finish
	}
	for i, s := range []step{
		{time.Second, 0},
		{time.Second, 10 * time.Second},
		{time.Second, 20 * time.Second},
		{time.Second, 40 * time.Second},
		{time.Second, 80 * time.Second},
		{time.Second, 160 * time.Second},
		{time.Second, 5 * time.Minute},
		{time.Second, 5 * time.Minute},
		{11 * time.Minute, 0}, // ran long enough: starts over
		{time.Second, 10 * time.Second},
	} {
		finish = finish.Add(s.runFor)
		if got := b.Wait(key, finish, finish); got != s.wantWait {
			t.Fatalf("failure %d: wait %v, want %v", i, got, s.wantWait)
		}
		if s.wantWait > 0 {
			// Half-way it still waits; at the end it may restart.
			if got := b.Wait(key, finish, finish.Add(s.wantWait/2)); got != s.wantWait-s.wantWait/2 {
				t.Fatalf("failure %d: half-way wait %v", i, got)
			}
			if got := b.Wait(key, finish, finish.Add(s.wantWait)); got != 0 {
				t.Fatalf("failure %d: wait %v at the end", i, got)
			}
		}
		finish = finish.Add(s.wantWait)
		b.Restarted(key, finish.Add(-s.wantWait))
		b.Restarted(key, finish.Add(-s.wantWait)) // a retried sync does not double it
	}
	if b.Wait("ns/p/u1/other", finish, finish) != 0 {
		t.Error("another container shares the back-off")
	}
	b.Forget("u2")
	if b.Len() != 1 {
		t.Errorf("Forget of another pod dropped entries: %d left", b.Len())
	}
	b.Forget("u1")
	if b.Len() != 0 {
		t.Errorf("Forget left %d entries", b.Len())
	}
	b.Restarted(key, finish)
	b.GC(finish.Add(10 * time.Minute))
	if b.Len() != 1 {
		t.Error("GC dropped a live entry")
	}
	b.GC(finish.Add(11 * time.Minute))
	if b.Len() != 0 {
		t.Error("GC kept an expired entry")
	}
}
