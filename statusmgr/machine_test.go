package statusmgr_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// TestMachineRandomWrites drives a Machine the way a runner with several writers does, in a
// seeded random order: statuses set and pods terminated at any time, writes granted,
// started and answered out of order, a fifth of the calls failing (an internal error or a
// Conflict). After every step the write policy's bounds hold (at most MaxConcurrentWrites
// writes in flight, at most MaxConcurrentStatusWrites of pods not finished, never two of
// one pod); once the failures stop and full syncs run until nothing is left to write, the
// server has every pod's last status and every finished pod is deleted.
func TestMachineRandomWrites(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { machineRandomWrites(t, seed) })
	}
}

func machineRandomWrites(t *testing.T, seed uint64) {
	const pods, maxWrites = 8, 3
	rng := rand.New(rand.NewPCG(seed, 33))
	var list []*v1.Pod
	for i := range pods {
		list = append(list, testPod(fmt.Sprintf("p%d", i), types.UID(fmt.Sprintf("u%d", i))))
	}
	api := statusmgrtest.NewFakeAPI(list...)
	m, err := statusmgr.NewMachine(statusmgr.MachineConfig{MaxConcurrentWrites: maxWrites})
	must(t, err)

	now := epoch
	ready := map[types.UID]bool{}      // the last status set, of the pods not terminated
	terminated := map[types.UID]bool{} // TerminatePod ran
	type write struct {
		w       statusmgr.Write
		started bool
		r       statusmgr.Ready
	}
	inFlight := map[types.UID]*write{}
	failing := true

	answer := func(c statusmgr.Call) statusmgr.Answer {
		if failing && rng.IntN(5) == 0 {
			if rng.IntN(2) == 0 {
				return statusmgr.Answer{Err: apierrors.NewInternalError(errors.New("injected"))}
			}
			return statusmgr.Answer{Err: apierrors.NewConflict(v1.Resource("pods"), c.Name, errors.New("injected"))}
		}
		var a statusmgr.Answer
		switch c.Verb {
		case statusmgr.VerbGet:
			a.Pod, a.Err = api.GetPod(t.Context(), c.Namespace, c.Name)
		case statusmgr.VerbPatch:
			a.Pod, a.Err = api.PatchPodStatus(t.Context(), c.Namespace, c.Name, c.Patch)
		case statusmgr.VerbDelete:
			a.Err = api.DeletePod(t.Context(), c.Namespace, c.Name, c.UID)
		}
		return a
	}
	// advance starts or answers the write w once.
	advance := func(w *write) {
		var err error
		if !w.started {
			w.started = true
			w.r, err = m.StartWrite(now, w.w.UID, statusmgr.Facts{CouldRunContainers: !w.w.Finished})
		} else {
			w.r, err = m.Answer(now, w.w.UID, answer(w.r.Call))
		}
		if err != nil {
			t.Fatalf("write of %s: %v", w.w.UID, err)
		}
		if w.r.Done() {
			delete(inFlight, w.w.UID)
		}
	}
	grant := func() bool {
		w, ok := m.NextWrite()
		if !ok {
			return false
		}
		if inFlight[w.UID] != nil {
			t.Fatalf("a second write of %s granted while one is in flight", w.UID)
		}
		inFlight[w.UID] = &write{w: w}
		return true
	}
	check := func(step int) {
		status := 0
		for _, w := range inFlight {
			if !w.w.Finished {
				status++
			}
		}
		if len(inFlight) > maxWrites || status > statusmgr.MaxConcurrentStatusWrites {
			t.Fatalf("step %d: %d writes in flight, %d of pods not finished", step, len(inFlight), status)
		}
	}

	for step := range 400 {
		now = now.Add(time.Millisecond)
		p := list[rng.IntN(pods)]
		switch k := rng.IntN(10); {
		case k < 3 && !terminated[p.UID]:
			r := rng.IntN(2) == 0
			if _, err := m.SetPodStatus(now, p, runningStatus(r), nil); err != nil {
				t.Fatalf("step %d: SetPodStatus: %v", step, err)
			}
			ready[p.UID] = r
		case k == 3 && !terminated[p.UID] && rng.IntN(4) == 0:
			d := deleting(p)
			api.MarkDeleted(d.Namespace, d.Name, *d.DeletionTimestamp, 30)
			if _, err := m.TerminatePod(now, d, nil); err != nil {
				t.Fatalf("step %d: TerminatePod: %v", step, err)
			}
			terminated[p.UID] = true
			delete(ready, p.UID)
		case k < 6:
			grant()
		case k < 9:
			for _, w := range inFlight { // one write, whichever the map gives first
				advance(w)
				break
			}
		default:
			m.QueueAll()
		}
		check(step)
	}

	// No more failures: finish the writes in flight, then full syncs until nothing is left.
	failing = false
	for len(inFlight) > 0 {
		for _, w := range inFlight {
			advance(w)
		}
	}
	for round := 0; ; round++ {
		if round > 10 {
			t.Fatal("still writing after 10 full syncs")
		}
		m.QueueAll()
		if !grant() {
			break
		}
		for len(inFlight) > 0 || grant() {
			for _, w := range inFlight {
				advance(w)
			}
		}
	}
	for _, p := range list {
		got, ok := api.Pod(p.Namespace, p.Name)
		switch {
		case terminated[p.UID]:
			if ok {
				t.Errorf("%s finished but still on the server (phase %s)", p.Name, got.Status.Phase)
			}
		case !ok:
			t.Errorf("%s not on the server", p.Name)
		default:
			want, set := ready[p.UID]
			if !set {
				continue // never set: nothing written
			}
			if len(got.Status.ContainerStatuses) != 1 || got.Status.ContainerStatuses[0].Ready != want {
				t.Errorf("%s on the server: %+v, want its last status (ready %v)", p.Name, got.Status.ContainerStatuses, want)
			}
		}
	}
}
