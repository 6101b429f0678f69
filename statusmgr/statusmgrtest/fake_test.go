package statusmgrtest

import (
	"context"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(uid string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"},
		Spec:       v1.PodSpec{NodeName: "n1"},
		Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionTrue}, {Type: "example.com/gate", Status: v1.ConditionTrue}}},
	}
}

func TestFakeAPI(t *testing.T) {
	ctx := context.Background()
	f := NewFakeAPI(pod("u1"))
	if _, err := f.GetPod(ctx, "ns", "missing"); !apierrors.IsNotFound(err) {
		t.Errorf("get missing: %v", err)
	}
	// The patch changes the status, merged strategically, and the labels (as the status
	// subresource does), not the spec.
	got, err := f.PatchPodStatus(ctx, "ns", "p", []byte(`{"metadata":{"uid":"u1","labels":{"x":"y"}},"status":{"phase":"Failed","conditions":[{"type":"Ready","status":"False"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1.PodFailed || len(got.Status.Conditions) != 2 || got.Labels["x"] != "y" || got.Spec.NodeName != "n1" {
		t.Errorf("patched pod = %+v", got)
	}
	if _, err := f.PatchPodStatus(ctx, "ns", "p", []byte(`{"metadata":{"uid":"other"},"status":{"phase":"Running"}}`)); !apierrors.IsConflict(err) {
		t.Errorf("patch with another UID: %v", err)
	}
	if _, err := f.PatchPodStatus(ctx, "ns", "p", []byte(`not json`)); !apierrors.IsBadRequest(err) {
		t.Errorf("bad patch: %v", err)
	}
	if err := f.DeletePod(ctx, "ns", "p", "other"); !apierrors.IsConflict(err) {
		t.Errorf("delete with another UID: %v", err)
	}
	if !f.MarkDeleted("ns", "p", metav1.Now(), 30) {
		t.Fatal("MarkDeleted: pod missing")
	}
	if err := f.DeletePod(ctx, "ns", "p", "u1"); err != nil {
		t.Fatal(err)
	}
	if err := f.DeletePod(ctx, "ns", "p", "u1"); !apierrors.IsNotFound(err) {
		t.Errorf("second delete: %v", err)
	}
	del := f.DeletedPods()
	if len(del) != 1 || del[0].DeletionTimestamp == nil || del[0].Status.Phase != v1.PodFailed {
		t.Errorf("deleted pods = %+v", del)
	}
	want := Counts{Gets: 1, Patches: 3, Deletes: 3, Deleted: 1}
	c := f.Counts()
	c.PatchBytes = 0
	if c != want {
		t.Errorf("counts = %+v, want %+v", c, want)
	}
}

func TestFakeAPIReactorAndWaitFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := NewFakeAPI(pod("u1"))
		f.SetReactor(func(verb Verb, ns, name string) error {
			if verb == Get {
				return apierrors.NewServiceUnavailable("down")
			}
			return nil
		})
		done := make(chan error, 1)
		go func() { done <- f.WaitFor(t.Context(), func(c Counts) bool { return c.Gets == 2 }) }()
		for range 2 {
			if _, err := f.GetPod(t.Context(), "ns", "p"); !apierrors.IsServiceUnavailable(err) {
				t.Errorf("reactor error not returned: %v", err)
			}
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := f.WaitFor(ctx, func(Counts) bool { return false }); err == nil {
			t.Error("WaitFor ignored its context")
		}
	})
}
