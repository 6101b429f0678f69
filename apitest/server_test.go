package apitest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func bound(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name),
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "rs-uid"}}},
		Spec:   v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: "example.com/gate", Status: v1.ConditionTrue}}},
	}
}

func newServer(pods ...*v1.Pod) (*Server, *clocktesting.FakeClock) {
	s := NewServer(pods...)
	clk := clocktesting.NewFakeClock(t0)
	s.SetClock(clk)
	return s, clk
}

func TestPatchStatus(t *testing.T) {
	s, _ := newServer(bound("p"))
	before, _ := s.Pod("ns", "p")
	got, err := s.PatchStatus("ns", "p", []byte(`{"metadata":{"uid":"uid-p","labels":{"x":"y"},"ownerReferences":null,"deletionTimestamp":"2026-01-01T00:00:00Z"},`+
		`"spec":{"nodeName":"other"},"status":{"phase":"Failed","conditions":[{"type":"Ready","status":"False"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	// The status merges strategically (the gate's condition stays); labels change; the
	// spec, ownerReferences and deletionTimestamp are reset by the status subresource.
	if got.Status.Phase != v1.PodFailed || len(got.Status.Conditions) != 2 || got.Labels["x"] != "y" ||
		got.Spec.NodeName != "n1" || len(got.OwnerReferences) != 1 || got.DeletionTimestamp != nil {
		t.Errorf("patched pod = %+v", got)
	}
	if got.ResourceVersion == before.ResourceVersion {
		t.Error("the patch did not bump the resourceVersion")
	}
	stored, _ := s.Pod("ns", "p")
	if diff := cmp.Diff(got, stored); diff != "" {
		t.Errorf("stored pod differs from the answer (-answer +stored):\n%s", diff)
	}

	for _, tc := range []struct {
		name, pod, patch string
		is               func(error) bool
	}{
		{"other UID", "p", `{"metadata":{"uid":"other"},"status":{"phase":"Running"}}`, apierrors.IsConflict},
		{"stale resourceVersion", "p", `{"metadata":{"resourceVersion":"` + before.ResourceVersion + `"},"status":{"phase":"Running"}}`, apierrors.IsConflict},
		{"missing pod", "q", `{"status":{"phase":"Running"}}`, apierrors.IsNotFound},
		{"not JSON", "p", `nope`, apierrors.IsBadRequest},
		{"not a pod", "p", `{"status":{"phase":7}}`, apierrors.IsBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.PatchStatus("ns", tc.pod, []byte(tc.patch)); !tc.is(err) {
				t.Errorf("PatchStatus = %v", err)
			}
			if now, _ := s.Pod("ns", "p"); now.ResourceVersion != stored.ResourceVersion {
				t.Error("a refused patch changed the pod")
			}
		})
	}
	rv := `{"metadata":{"resourceVersion":"` + stored.ResourceVersion + `"},"status":{"phase":"Succeeded"}}`
	if got, err := s.PatchStatus("ns", "p", []byte(rv)); err != nil || got.Labels["x"] != "y" || len(got.OwnerReferences) != 1 {
		t.Errorf("patch with the current resourceVersion = %v, %v; want the labels and owners kept", got, err)
	}
}

func TestDelete(t *testing.T) {
	type want struct {
		gone  bool
		grace int64
		at    time.Duration // deletionTimestamp - t0
		err   func(error) bool
	}
	grace := func(g int64) *int64 { return &g }
	terminal := bound("p")
	terminal.Status.Phase = v1.PodSucceeded
	unbound := bound("p")
	unbound.Spec.NodeName = ""
	specGrace := bound("p")
	specGrace.Spec.TerminationGracePeriodSeconds = grace(20)
	uid := func(u types.UID) *metav1.Preconditions { return &metav1.Preconditions{UID: &u} }
	cases := []struct {
		name  string
		pod   *v1.Pod
		first *int64 // a first delete, after which the clock moves 10 s (nil: none)
		opts  metav1.DeleteOptions
		want  want
	}{
		{name: "default 30 s", pod: bound("p"), want: want{grace: 30, at: 30 * time.Second}},
		{name: "spec grace", pod: specGrace, want: want{grace: 20, at: 20 * time.Second}},
		{name: "explicit grace", pod: specGrace, opts: metav1.DeleteOptions{GracePeriodSeconds: grace(5)}, want: want{grace: 5, at: 5 * time.Second}},
		{name: "grace 0 removes", pod: bound("p"), opts: metav1.DeleteOptions{GracePeriodSeconds: grace(0)}, want: want{gone: true}},
		{name: "negative grace counts as 1 s", pod: bound("p"), opts: metav1.DeleteOptions{GracePeriodSeconds: grace(-5)}, want: want{grace: 1, at: time.Second}},
		{name: "unbound pod goes at once", pod: unbound, want: want{gone: true}},
		{name: "terminal pod goes at once", pod: terminal, want: want{gone: true}},
		{name: "UID precondition holds", pod: bound("p"), opts: metav1.DeleteOptions{GracePeriodSeconds: grace(0), Preconditions: uid("uid-p")}, want: want{gone: true}},
		{name: "UID precondition fails", pod: bound("p"), opts: metav1.DeleteOptions{Preconditions: uid("other")}, want: want{err: apierrors.IsConflict}},
		{name: "resourceVersion precondition fails", pod: bound("p"), opts: metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: new("0")}}, want: want{err: apierrors.IsConflict}},
		// A second delete, 10 s after a first one with grace 30 (deadline t0+30 s).
		{name: "shorter: the deadline moves back", pod: bound("p"), first: grace(30), opts: metav1.DeleteOptions{GracePeriodSeconds: grace(25)}, want: want{grace: 25, at: 25 * time.Second}},
		{name: "shorter, into the past: now, 1 s", pod: bound("p"), first: grace(30), opts: metav1.DeleteOptions{GracePeriodSeconds: grace(5)}, want: want{grace: 1, at: 10 * time.Second}},
		{name: "longer: nothing changes", pod: bound("p"), first: grace(30), opts: metav1.DeleteOptions{GracePeriodSeconds: grace(60)}, want: want{grace: 30, at: 30 * time.Second}},
		{name: "none given: nothing changes", pod: bound("p"), first: grace(30), want: want{grace: 30, at: 30 * time.Second}},
		{name: "grace 0 while deleting removes", pod: bound("p"), first: grace(30), opts: metav1.DeleteOptions{GracePeriodSeconds: grace(0)}, want: want{gone: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, clk := newServer(tc.pod)
			if tc.first != nil {
				if _, err := s.Delete("ns", "p", metav1.DeleteOptions{GracePeriodSeconds: tc.first}); err != nil {
					t.Fatal(err)
				}
				clk.Step(10 * time.Second)
			}
			before, _ := s.Pod("ns", "p")
			removed, err := s.Delete("ns", "p", tc.opts)
			if tc.want.err != nil {
				if !tc.want.err(err) {
					t.Fatalf("Delete = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p, ok := s.Pod("ns", "p")
			if ok == tc.want.gone || (removed != nil) != tc.want.gone {
				t.Fatalf("pod present = %t, removed %v; want gone %t", ok, removed != nil, tc.want.gone)
			}
			if tc.want.gone {
				if removed.UID != "uid-p" {
					t.Errorf("removed %v", removed)
				}
				return
			}
			if p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != tc.want.grace ||
				p.DeletionTimestamp == nil || p.DeletionTimestamp.Sub(t0) != tc.want.at {
				t.Errorf("deletion grace %v at %v, want %d s at t0+%v", p.DeletionGracePeriodSeconds, p.DeletionTimestamp, tc.want.grace, tc.want.at)
			}
			if unchanged := tc.first != nil && tc.want.grace == 30; unchanged != (p.ResourceVersion == before.ResourceVersion) {
				t.Errorf("resourceVersion %s -> %s", before.ResourceVersion, p.ResourceVersion)
			}
		})
	}
	s, _ := newServer()
	if _, err := s.Delete("ns", "missing", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("delete of a missing pod = %v, want NotFound", err)
	}
	if _, err := s.FinalDelete("ns", "missing", "u"); !apierrors.IsNotFound(err) {
		t.Errorf("final delete of a missing pod = %v, want NotFound", err)
	}
}

func TestCreateAndGet(t *testing.T) {
	s, _ := newServer()
	p, err := s.Create(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.UID != "uid-0001" || p.Status.Phase != v1.PodPending || !p.CreationTimestamp.Time.Equal(t0) || p.ResourceVersion != "1" {
		t.Errorf("created %+v", p.ObjectMeta)
	}
	if _, err := s.Create(p); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create = %v", err)
	}
	if _, err := s.Create(nil); !apierrors.IsBadRequest(err) {
		t.Errorf("nil create = %v", err)
	}
	if got, err := s.Get("ns", "a"); err != nil || got.UID != p.UID {
		t.Errorf("Get = %v, %v", got, err)
	}
	if _, err := s.Get("ns", "b"); !apierrors.IsNotFound(err) {
		t.Errorf("Get missing = %v", err)
	}
	s.Put(bound("b"))
	if ps := s.Pods(); len(ps) != 2 || ps[0].Name != "a" || ps[1].Name != "b" || s.Len() != 2 {
		t.Errorf("Pods = %v", ps)
	}
}

// TestObserverReenters: an observer that calls the Server (reads and a change of its own)
// neither deadlocks nor sees changes out of order: its own change comes after the one it
// is handling.
func TestObserverReenters(t *testing.T) {
	s, _ := newServer()
	var seen []string
	s.SetObserver(func(c Change) {
		seen = append(seen, c.Verb+" "+c.Pod.Name)
		if _, ok := s.Pod(c.Pod.Namespace, c.Pod.Name); !ok && c.Verb != "delete" {
			t.Errorf("observer cannot read %s", c.Pod.Name)
		}
		if c.Verb == "create" && c.Pod.Name == "a" {
			s.Put(bound("echo")) // a change made from the observer
		}
	})
	if _, err := s.Create(bound("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(bound("b")); err != nil {
		t.Fatal(err)
	}
	want := []string{"create a", "put echo", "create b"}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("observed (-want +got):\n%s", diff)
	}
}

// TestObserverBlocks: while the observer blocks, other calls go on (no lock is held), and
// their changes reach the observer, and then the watchers, in order once it returns.
func TestObserverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newServer()
		release := make(chan struct{})
		var mu sync.Mutex
		var seen []string
		s.SetObserver(func(c Change) {
			if c.Pod.Name == "a" {
				<-release
			}
			mu.Lock()
			seen = append(seen, c.Verb+" "+c.Pod.Name)
			mu.Unlock()
		})
		_, events := s.Watch(t.Context(), "n1")
		created := make(chan error)
		go func() {
			_, err := s.Create(bound("a"))
			created <- err
		}()
		synctest.Wait() // the observer blocks on a's creation
		for i := range 3 {
			if _, err := s.Create(bound(fmt.Sprint("p", i))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.PatchStatus("ns", "p0", []byte(`{"status":{"phase":"Failed"}}`)); err != nil {
			t.Fatal(err)
		}
		if s.Len() != 4 {
			t.Fatalf("%d pods stored while the observer blocks, want 4", s.Len())
		}
		select {
		case ev := <-events:
			t.Fatalf("a watcher heard of %s before the observer", ev.Pod.Name)
		default:
		}
		close(release)
		if err := <-created; err != nil {
			t.Fatal(err)
		}
		want := []string{"create a", "create p0", "create p1", "create p2", "patch p0"}
		var heard []string
		for range want {
			ev := <-events
			heard = append(heard, map[EventType]string{Added: "create", Modified: "patch"}[ev.Type]+" "+ev.Pod.Name)
		}
		mu.Lock()
		defer mu.Unlock()
		if diff := cmp.Diff(want, seen); diff != "" {
			t.Errorf("observed (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, heard); diff != "" {
			t.Errorf("watched (-want +got):\n%s", diff)
		}
	})
}

// TestWatch: the list, then only later changes of the node's pods, in order; the channel
// closes with the context.
func TestWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newServer(bound("before"))
		ctx, cancel := context.WithCancel(t.Context())
		initial, events := s.Watch(ctx, "n1")
		if len(initial) != 1 || initial[0].Name != "before" {
			t.Fatalf("initial = %v", initial)
		}
		other := bound("elsewhere")
		other.Spec.NodeName = "n2"
		s.Put(other)
		s.Put(bound("a"))
		if _, err := s.Delete("ns", "a", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.FinalDelete("ns", "a", "uid-a"); err != nil {
			t.Fatal(err)
		}
		if gone := s.FinalDeleted(); len(gone) != 1 || gone[0].Name != "a" || gone[0].DeletionTimestamp == nil || s.FinalDeletes() != 1 {
			t.Errorf("FinalDeleted = %v, want a as it was removed", gone)
		}
		var got []string
		for range 3 {
			ev := <-events
			got = append(got, fmt.Sprintf("%s %s deleting=%v", ev.Type, ev.Pod.Name, ev.Pod.DeletionTimestamp != nil))
		}
		want := []string{"ADDED a deleting=false", "MODIFIED a deleting=true", "DELETED a deleting=true"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		cancel()
		if _, ok := <-events; ok {
			t.Error("watch channel open after its context ended")
		}
		if err := s.WaitForPods(ctx, func(map[types.NamespacedName]*v1.Pod) bool { return false }); err == nil {
			t.Error("WaitForPods did not end with its context")
		}
	})
}

// Patches of one pod from many goroutines all land (each applied to the latest version).
func TestConcurrentPatches(t *testing.T) {
	s, _ := newServer(bound("p"))
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"example.com/c%d","status":"True"}]}}`, i)
			if _, err := s.PatchStatus("ns", "p", []byte(patch)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if p, _ := s.Pod("ns", "p"); len(p.Status.Conditions) != 21 {
		t.Errorf("%d conditions, want 21", len(p.Status.Conditions))
	}
}

// WaitForPods returns only once the observer has heard of the change that met the
// condition.
func TestWaitForPodsAfterObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := newServer()
		heard := false
		s.SetObserver(func(Change) { heard = true })
		done := make(chan bool)
		go func() {
			err := s.WaitForPods(t.Context(), func(p map[types.NamespacedName]*v1.Pod) bool { return len(p) == 1 })
			done <- err == nil && heard
		}()
		synctest.Wait()
		s.Put(bound("a"))
		if !<-done {
			t.Error("WaitForPods returned before the observer heard of the change")
		}
	})
}
