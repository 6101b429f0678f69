package statusmgrtest

import (
	"context"
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

func ptr[T any](v T) *T { return &v }

func newPod(name, node string, grace *int64, phase v1.PodPhase) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: v1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: grace}, Status: v1.PodStatus{Phase: phase}}
}

func TestCreate(t *testing.T) {
	f := NewFakeAPI()
	f.SetClock(clocktesting.NewFakePassiveClock(t0))
	p, err := f.Create(newPod("a", "n1", nil, ""))
	if err != nil {
		t.Fatal(err)
	}
	if p.UID != "uid-0001" || p.Status.Phase != v1.PodPending || !p.CreationTimestamp.Time.Equal(t0) || p.ResourceVersion == "" {
		t.Errorf("created pod = uid %q phase %q created %v rv %q", p.UID, p.Status.Phase, p.CreationTimestamp, p.ResourceVersion)
	}
	if _, err := f.Create(newPod("a", "n1", nil, "")); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create = %v, want AlreadyExists", err)
	}
	if _, err := f.Create(nil); !apierrors.IsBadRequest(err) {
		t.Errorf("create nil = %v, want BadRequest", err)
	}
	// A given UID is kept (a test's convenience); the status is reset, as the API server
	// does.
	keep := newPod("b", "n1", nil, v1.PodRunning)
	keep.UID = "mine"
	if p, _ := f.Create(keep); p.UID != "mine" || p.Status.Phase != v1.PodPending {
		t.Errorf("create kept uid %q phase %q", p.UID, p.Status.Phase)
	}
}

func TestDelete(t *testing.T) {
	type want struct {
		gone  bool
		grace *int64
		at    time.Duration // deletionTimestamp - t0
	}
	cases := []struct {
		name  string
		pod   *v1.Pod
		first *int64 // a first delete (nil: none)
		grace *int64
		want  want
	}{
		{name: "spec grace", pod: newPod("p", "n1", ptr(int64(20)), v1.PodRunning), want: want{grace: ptr(int64(20)), at: 20 * time.Second}},
		{name: "default 30 s", pod: newPod("p", "n1", nil, v1.PodRunning), want: want{grace: ptr(int64(30)), at: 30 * time.Second}},
		{name: "explicit grace", pod: newPod("p", "n1", ptr(int64(20)), v1.PodRunning), grace: ptr(int64(5)), want: want{grace: ptr(int64(5)), at: 5 * time.Second}},
		{name: "grace 0 removes", pod: newPod("p", "n1", ptr(int64(20)), v1.PodRunning), grace: ptr(int64(0)), want: want{gone: true}},
		{name: "negative grace counts as 1 s", pod: newPod("p", "n1", nil, v1.PodRunning), grace: ptr(int64(-1)), want: want{grace: ptr(int64(1)), at: time.Second}},
		{name: "unscheduled pod goes at once", pod: newPod("p", "", ptr(int64(20)), v1.PodPending), want: want{gone: true}},
		{name: "succeeded pod goes at once", pod: newPod("p", "n1", ptr(int64(20)), v1.PodSucceeded), want: want{gone: true}},
		{name: "failed pod goes at once", pod: newPod("p", "n1", ptr(int64(20)), v1.PodFailed), want: want{gone: true}},
		{name: "a second, shorter delete shortens", pod: newPod("p", "n1", nil, v1.PodRunning), first: ptr(int64(30)), grace: ptr(int64(3)), want: want{grace: ptr(int64(3)), at: 3 * time.Second}},
		{name: "a second, longer delete changes nothing", pod: newPod("p", "n1", nil, v1.PodRunning), first: ptr(int64(10)), grace: ptr(int64(60)), want: want{grace: ptr(int64(10)), at: 10 * time.Second}},
		{name: "a second delete with grace 0 removes", pod: newPod("p", "n1", nil, v1.PodRunning), first: ptr(int64(10)), grace: ptr(int64(0)), want: want{gone: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFakeAPI()
			f.SetClock(clocktesting.NewFakePassiveClock(t0))
			if _, err := f.Create(tc.pod); err != nil {
				t.Fatal(err)
			}
			if ph := tc.pod.Status.Phase; ph != "" && ph != v1.PodPending {
				// Create resets the status: the node writes the phase.
				if _, err := f.PatchPodStatus(context.Background(), "ns", "p", []byte(`{"status":{"phase":"`+string(ph)+`"}}`)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.first != nil {
				if err := f.Delete("ns", "p", tc.first); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.Delete("ns", "p", tc.grace); err != nil {
				t.Fatal(err)
			}
			p, ok := f.Pod("ns", "p")
			if ok == tc.want.gone {
				t.Fatalf("pod present = %t, want %t", ok, !tc.want.gone)
			}
			if tc.want.gone {
				return
			}
			if diff := cmp.Diff(tc.want.grace, p.DeletionGracePeriodSeconds); diff != "" || p.DeletionTimestamp == nil ||
				p.DeletionTimestamp.Sub(t0) != tc.want.at {
				t.Errorf("deletion grace (-want +got):\n%s deletionTimestamp %v, want t0+%v", diff, p.DeletionTimestamp, tc.want.at)
			}
		})
	}
	if err := NewFakeAPI().Delete("ns", "missing", nil); !apierrors.IsNotFound(err) {
		t.Errorf("delete of a missing pod = %v, want NotFound", err)
	}
	if c := NewFakeAPI().Counts(); c != (Counts{}) {
		t.Errorf("counts %+v", c)
	}
}

// TestWatchAndObserver: a watch sees its node's pods, then every change of them in order,
// after the observer; it ends with its context.
func TestWatchAndObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := NewFakeAPI()
		var seen []string
		f.SetObserver(func(c Change) { seen = append(seen, c.Verb+" "+c.Pod.Name+": "+c.Detail) })
		if _, err := f.Create(newPod("before", "n1", nil, v1.PodRunning)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		initial, events := f.Watch(ctx, "n1")
		if len(initial) != 1 || initial[0].Name != "before" {
			t.Fatalf("initial = %v", initial)
		}
		if _, err := f.Create(newPod("other-node", "n2", nil, "")); err != nil {
			t.Fatal(err)
		}
		p, _ := f.Create(newPod("a", "n1", ptr(int64(5)), ""))
		if _, err := f.PatchPodStatus(ctx, "ns", "a", []byte(`{"metadata":{"uid":"`+string(p.UID)+`"},"status":{"phase":"Running"}}`)); err != nil {
			t.Fatal(err)
		}
		if err := f.Delete("ns", "a", nil); err != nil {
			t.Fatal(err)
		}
		if err := f.DeletePod(ctx, "ns", "a", p.UID); err != nil {
			t.Fatal(err)
		}
		var got []string
		for range 4 {
			ev := <-events
			got = append(got, string(ev.Type)+" "+ev.Pod.Name+" "+string(ev.Pod.Status.Phase))
		}
		want := []string{"ADDED a Pending", "MODIFIED a Running", "MODIFIED a Running", "DELETED a Running"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		wantSeen := []string{
			"create before: created", "create other-node: created", "create a: created",
			"patch a: patched status: phase Running (60 bytes)",
			"delete a: graceful delete: deletionTimestamp set, grace 5s",
			"final-delete a: deleted from the API (grace 0, UID precondition uid-0003)",
		}
		if diff := cmp.Diff(wantSeen, seen); diff != "" {
			t.Errorf("observed (-want +got):\n%s", diff)
		}
		if err := f.WaitForPods(ctx, func(p map[types.NamespacedName]*v1.Pod) bool { return len(p) == 2 }); err != nil {
			t.Fatal(err)
		}
		cancel()
		if _, ok := <-events; ok {
			t.Error("watch channel still open after its context ended")
		}
		if err := f.WaitForPods(ctx, func(map[types.NamespacedName]*v1.Pod) bool { return false }); err == nil {
			t.Error("WaitForPods did not end with its context")
		}
	})
}
