package config

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

// keptPods are pods a store returned, each with a deep copy of it taken when it was first
// returned: with shared pods, the store must never write to them again.
type keptPods struct {
	snaps map[*v1.Pod]*v1.Pod
	order []*v1.Pod
}

// keep records pods not kept yet, with their snapshots.
func (k *keptPods) keep(pods ...*v1.Pod) {
	if k.snaps == nil {
		k.snaps = map[*v1.Pod]*v1.Pod{}
	}
	for _, p := range pods {
		if _, ok := k.snaps[p]; !ok {
			k.snaps[p] = p.DeepCopy()
			k.order = append(k.order, p)
		}
	}
}

// changed describes the first kept pod that differs from its snapshot ("" if none).
func (k *keptPods) changed() string {
	for i, p := range k.order {
		if snap := k.snaps[p]; !reflect.DeepEqual(snap, p) {
			return fmt.Sprintf("%s %s (kept as #%d) (-then +now):\n%s", p.Name, p.UID, i, cmp.Diff(snap, p))
		}
	}
	return ""
}

// TestSharedPodsNeverWritten keeps every pod a sharing store returns (changes and Pods)
// while a script goes through every kind of change, op and path of the store (the same
// pod changed again and again, annotations replaced, removals by Set and by Remove), and
// checks after every step that none of them was modified.
func TestSharedPodsNeverWritten(t *testing.T) {
	s := newTestStore(true)
	a, b, c, d := newPod("a", "uid-a"), newPod("b", "uid-b"), newPod("c", "uid-c"), newPod("d", "uid-d")
	a.Annotations = map[string]string{"team": "x"}
	edit := func(p *v1.Pod, f func(*v1.Pod)) *v1.Pod { p = p.DeepCopy(); f(p); return p }
	relabel := func(v string) func(*v1.Pod) { return func(p *v1.Pod) { p.Labels = map[string]string{"v": v} } }
	phase := func(ph v1.PodPhase) func(*v1.Pod) { return func(p *v1.Pod) { p.Status.Phase = ph } }
	deleting := func(grace int64) func(*v1.Pod) {
		return func(p *v1.Pod) { p.DeletionTimestamp, p.DeletionGracePeriodSeconds = ts(9), i64(grace) }
	}
	a2 := edit(a, relabel("2"))
	a3 := edit(a2, func(p *v1.Pod) { p.Annotations = map[string]string{"team": "y"} })
	a4 := edit(a3, phase(v1.PodSucceeded))
	b2 := edit(b, phase(v1.PodFailed))
	b3 := edit(b2, phase(v1.PodSucceeded))
	c2 := edit(c, deleting(30))
	c3 := edit(c2, deleting(0))
	e := newPod("e", "uid-e")
	e2 := edit(e, phase(v1.PodPending))
	f, g := newPod("f", "uid-f"), newPod("g", "uid-g")
	steps := []struct {
		u PodUpdate
		// want is the number of changes by category: adds, updates, deletes, removes,
		// reconciles.
		want [5]int
	}{
		{set(a, b, c, d), [5]int{4, 0, 0, 0, 0}},
		{set(a2, b2, c2, e), [5]int{1, 1, 1, 1, 1}},
		{set(a3, b3, c3, e2), [5]int{0, 1, 1, 0, 2}},
		{set(a4, b3, c3, e2), [5]int{0, 0, 0, 0, 1}},
		{PodUpdate{Op: Add, Source: "file", Pods: []*v1.Pod{f, g}}, [5]int{2, 0, 0, 0, 0}},
		{PodUpdate{Op: Update, Source: "file", Pods: []*v1.Pod{edit(f, relabel("2"))}}, [5]int{0, 1, 0, 0, 0}},
		{PodUpdate{Op: Delete, Source: "file", Pods: []*v1.Pod{edit(g, deleting(5))}}, [5]int{0, 0, 1, 0, 0}},
		{PodUpdate{Op: Add, Source: "file", Pods: []*v1.Pod{edit(f, phase(v1.PodFailed))}}, [5]int{0, 1, 0, 0, 0}},
		{PodUpdate{Op: Remove, Source: "file", Pods: []*v1.Pod{f}}, [5]int{0, 0, 0, 1, 0}},
		{set(), [5]int{0, 0, 0, 4, 0}},
	}
	var kept keptPods
	for i, step := range steps {
		got := s.Merge(step.u)
		counts := [5]int{len(got.Adds), len(got.Updates), len(got.Deletes), len(got.Removes), len(got.Reconciles)}
		if counts != step.want {
			t.Fatalf("step %d: %v changes (adds, updates, deletes, removes, reconciles), want %v", i, counts, step.want)
		}
		kept.keep(got.Adds...)
		kept.keep(got.Updates...)
		kept.keep(got.Deletes...)
		kept.keep(got.Removes...)
		kept.keep(got.Reconciles...)
		kept.keep(s.Pods("api")...)
		kept.keep(s.Pods("file")...)
		if msg := kept.changed(); msg != "" {
			t.Fatalf("step %d: a pod the store returned was modified: %s", i, msg)
		}
	}
	// Every change is a new object and every unchanged pod the same one: 4 adds, 4 pods
	// of the second step, 4 of the third, a4, f and g, and 3 changes of file's pods.
	if len(kept.order) != 18 {
		t.Fatalf("%d distinct pods returned, want 18 versions", len(kept.order))
	}
}

// TestSharedPodsAreTheStoredObjects: with shared pods, what Merge returns is what Pods
// returns, an unchanged pod stays the same object, a changed one is a new object that
// shares the input's memory (no deep copy), and the default store returns deep copies.
func TestSharedPodsAreTheStoredObjects(t *testing.T) {
	bothModes(t, func(t *testing.T, shared bool) {
		s := newTestStore(shared)
		a, b := newPod("a", "uid-a"), newPod("b", "uid-b")
		added := s.Merge(set(a, b)).Adds
		stored := s.Pods("api")
		if same := added[0] == stored[0] && added[1] == stored[1]; same != shared {
			t.Errorf("Merge's and Pods' pods are the same objects: %v, want %v", same, shared)
		}
		b2 := b.DeepCopy()
		b2.Status.Phase = v1.PodFailed
		rec := s.Merge(set(a, b2)).Reconciles
		if len(rec) != 1 {
			t.Fatalf("reconciles %v, want b", rec)
		}
		after := s.Pods("api")
		if unchanged := after[0] == stored[0]; unchanged != shared {
			t.Errorf("unchanged a is the same object as before: %v, want %v", unchanged, shared)
		}
		if after[1] == stored[1] {
			t.Error("changed b is the object returned before it changed")
		}
		if stored[1].Status.Phase != v1.PodRunning {
			t.Errorf("b returned before the change has phase %s, want Running", stored[1].Status.Phase)
		}
		if sharesInput := &rec[0].Spec.Containers[0] == &b.Spec.Containers[0]; sharesInput != shared {
			t.Errorf("reconciled b shares its spec with the input: %v, want %v", sharesInput, shared)
		}
	})
}

// TestSharedPodsConcurrentReaders reads every pod a sharing Mux delivers, from another
// goroutine and without synchronising with the merges after the delivery (the output
// buffer holds every update), while random updates of every op keep changing the same
// few pods: the race detector reports any write by the store to a delivered pod, and the
// final comparison any change of one.
func TestSharedPodsConcurrentReaders(t *testing.T) {
	const steps = 300
	// At most 5 categories plus the empty ready Add per merge: no send ever blocks, so
	// the reader never synchronises with a later merge.
	m := newTestMux(t, MuxConfig{SharedPods: true, UpdatesBufferLen: 6 * steps})
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg       sync.WaitGroup
		kept     keptPods
		received int
	)
	wg.Go(func() {
		take := func(u PodUpdate) {
			received += len(u.Pods)
			kept.keep(u.Pods...) // reads every byte of every pod
		}
		for {
			select {
			case u := <-m.Updates():
				take(u)
			case <-ctx.Done():
				for len(m.Updates()) > 0 {
					take(<-m.Updates())
				}
				return
			}
		}
	})
	r := newRand(7)
	data := make([]byte, 16*steps)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	in := &fuzzReader{b: data}
	sources := []string{"api", "file"}
	for range steps {
		u := PodUpdate{Op: Op(in.next() % 5), Source: sources[in.next()%2]}
		for range in.next() % 6 {
			u.Pods = append(u.Pods, fuzzPod(in))
		}
		if err := m.Update(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
	if received < steps {
		t.Fatalf("only %d pods delivered in %d merges", received, steps)
	}
	if msg := kept.changed(); msg != "" {
		t.Fatalf("a delivered pod was modified: %s", msg)
	}
}
