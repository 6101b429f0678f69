package statusmgr

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/seedpod"
	"github.com/podlife/podlife/statusmgr/internal/patch"
	"github.com/podlife/podlife/statusmgr/internal/statustest"
)

// checkMatchesReference fails unless StatusPatch and the reflective reference give the same
// bytes and the same unchanged flag for old -> nw.
func checkMatchesReference(t *testing.T, old, nw *v1.PodStatus) []byte {
	t.Helper()
	got, gotUnchanged, err := statusPatch("uid-1", old, nw)
	if err != nil {
		t.Fatal(err)
	}
	want, wantUnchanged, err := patch.Reference("uid-1", old, nw)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) || gotUnchanged != wantUnchanged {
		t.Fatalf("StatusPatch differs from the reference:\n got %s (unchanged %v)\nwant %s (unchanged %v)\nold %+v\nnew %+v",
			got, gotUnchanged, want, wantUnchanged, old, nw)
	}
	return got
}

// realisticSteps are seedpod.Realistic's statuses of pod n (seed 1) and its terminal
// status, as the server stores them.
func realisticSteps(t testing.TB, n int) []v1.PodStatus {
	h := seedpod.Realistic(1, n, t0)
	steps := make([]v1.PodStatus, 0, len(h.Statuses)+1)
	for _, s := range h.Statuses {
		steps = append(steps, statustest.RoundTrip(t, s))
	}
	final, err := TerminatedStatus(h.Deleting, h.Statuses[len(h.Statuses)-1])
	if err != nil {
		t.Fatal(err)
	}
	return append(steps, statustest.RoundTrip(t, final))
}

// TestStatusPatchMatchesReference compares StatusPatch with the reflective reference on
// W4's realistic histories (every step to every later one), on the benchmark's statuses and
// on random statuses.
func TestStatusPatchMatchesReference(t *testing.T) {
	for n := range 20 {
		steps := realisticSteps(t, n)
		for i := range steps {
			for j := range steps {
				checkMatchesReference(t, &steps[i], &steps[j])
			}
		}
	}
	old, nw := benchStatuses()
	checkMatchesReference(t, &old, &nw)
	for seed := range uint64(500) {
		a, b := statustest.RandomStatus(seed), statustest.RandomStatus(seed+1)
		checkMatchesReference(t, &a, &b)
	}
}
