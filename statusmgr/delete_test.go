package statusmgr_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// recordDeletes wraps api in a patcher that records the UID precondition of every
// DeletePod call and runs before (if set) ahead of the call.
func recordDeletes(api *statusmgrtest.FakeAPI, uids *[]types.UID, before func(call int)) statusmgr.StatusPatcher {
	return statusmgr.StatusPatcherFuncs{
		GetPodFunc:         api.GetPod,
		PatchPodStatusFunc: api.PatchPodStatus,
		DeletePodFunc: func(ctx context.Context, ns, name string, uid types.UID) error {
			*uids = append(*uids, uid)
			if before != nil {
				before(len(*uids))
			}
			return api.DeletePod(ctx, ns, name, uid)
		},
	}
}

// failDeletes makes the next n DeletePod calls of api fail with err.
func failDeletes(api *statusmgrtest.FakeAPI, n int, err error) {
	api.SetReactor(func(verb statusmgrtest.Verb, ns, name string) error {
		if verb == statusmgrtest.Delete && n > 0 {
			n--
			return err
		}
		return nil
	})
}

func conflict(name string) error {
	return apierrors.NewConflict(v1.Resource("pods"), name, errors.New("the object has been modified"))
}

// A failed final delete (a Conflict included) keeps the status: the pod is re-read and
// deleted once it is still the same pod, and forgotten only when it is gone or another pod.
func TestManagerDeleteErrorKeepsStatus(t *testing.T) {
	// checkDeletedOnce checks that the pod was deleted exactly once, with its own UID as
	// the precondition of every delete, and that its status is forgotten.
	checkDeletedOnce := func(t *testing.T, h *harness, uids []types.UID) {
		t.Helper()
		if h.api.Len() != 0 {
			t.Fatalf("pod not deleted: calls %+v, stats %+v", h.api.Counts(), h.m.Stats())
		}
		del := h.api.DeletedPods()
		if len(del) != 1 || del[0].UID != "u1" {
			t.Errorf("deleted pods = %d (%v), want exactly u1 once", len(del), del)
		}
		if slices.ContainsFunc(uids, func(u types.UID) bool { return u != "u1" }) {
			t.Errorf("delete preconditions = %v, want u1 only", uids)
		}
		if _, ok := h.m.GetPodStatus("u1"); ok {
			t.Error("status kept after the pod was deleted")
		}
	}

	t.Run("one conflict: re-read and delete in the same sync", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			pod := deleting(testPod("p", "u1"))
			api := statusmgrtest.NewFakeAPI(pod)
			failDeletes(api, 1, conflict("p"))
			var uids []types.UID
			h := start(t, api, func(c *statusmgr.Config) { c.Patcher = recordDeletes(api, &uids, nil) })
			must(t, h.m.TerminatePod(pod))
			synctest.Wait()
			checkDeletedOnce(t, h, uids)
			// GET, PATCH, DELETE (Conflict), GET (same UID), DELETE.
			h.counts(statusmgrtest.Counts{Gets: 2, Patches: 1, Deletes: 2, Deleted: 1})
			if s := h.m.Stats(); s.Recreated != 0 || s.Deleted != 1 {
				t.Errorf("stats = %+v", s)
			}
		})
	})

	t.Run("conflicts past the retries of one sync: deleted by a later sync", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			pod := deleting(testPod("p", "u1"))
			api := statusmgrtest.NewFakeAPI(pod)
			failDeletes(api, 2*statusmgr.DefaultMaxConflictRetries+2, conflict("p"))
			var uids []types.UID
			h := start(t, api, func(c *statusmgr.Config) { c.Patcher = recordDeletes(api, &uids, nil) })
			must(t, h.m.TerminatePod(pod))
			synctest.Wait()
			if api.Len() != 1 {
				t.Fatal("pod gone while every delete failed")
			}
			if _, ok := h.m.GetPodStatus("u1"); !ok {
				t.Fatal("status forgotten after a Conflict on delete of the same pod")
			}
			for range 3 {
				h.period()
			}
			checkDeletedOnce(t, h, uids)
			h.period()
			if c := api.Counts(); c.Deletes != len(uids) || c.Deleted != 1 {
				t.Errorf("calls after the delete: %+v", c)
			}
		})
	})

	t.Run("other error, agent's pod without deletionTimestamp: retried", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			pod := testPod("p", "u1")
			api := statusmgrtest.NewFakeAPI(deleting(pod)) // only the server knows of the deletion
			failDeletes(api, 1, apierrors.NewInternalError(errors.New("etcd down")))
			var uids []types.UID
			h := start(t, api, func(c *statusmgr.Config) { c.Patcher = recordDeletes(api, &uids, nil) })
			must(t, h.m.TerminatePod(pod))
			synctest.Wait()
			if api.Len() != 1 {
				t.Fatal("deleted despite the error")
			}
			h.period()
			checkDeletedOnce(t, h, uids)
			// GET, PATCH, DELETE (error); next sync: GET, DELETE.
			h.counts(statusmgrtest.Counts{Gets: 2, Patches: 1, Deletes: 2, Deleted: 1})
		})
	})

	t.Run("recreated under a new UID before the delete: never deleted", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			old := deleting(testPod("p", "u1"))
			api := statusmgrtest.NewFakeAPI(old)
			var uids []types.UID
			recreate := func(call int) {
				if call == 1 { // the old pod goes away and a new one takes its name
					api.Put(testPod("p", "u2"))
				}
			}
			h := start(t, api, func(c *statusmgr.Config) { c.Patcher = recordDeletes(api, &uids, recreate) })
			must(t, h.m.TerminatePod(old))
			synctest.Wait()
			h.period()
			h.period()
			got := mustPod(t, api, "p")
			if got.UID != "u2" || got.Status.Phase != v1.PodPending {
				t.Errorf("new pod changed: uid %s phase %s", got.UID, got.Status.Phase)
			}
			if n := len(api.DeletedPods()); n != 0 {
				t.Errorf("%d pods deleted, want none", n)
			}
			if !slices.Equal(uids, []types.UID{"u1"}) {
				t.Errorf("delete preconditions = %v, want [u1]", uids)
			}
			if _, ok := h.m.GetPodStatus("u1"); ok {
				t.Error("status of the old pod kept")
			}
			if s := h.m.Stats(); s.Recreated != 1 || s.Deleted != 0 {
				t.Errorf("stats = %+v", s)
			}
			// GET, PATCH, DELETE (Conflict), GET (u2): forgotten; nothing after that.
			h.counts(statusmgrtest.Counts{Gets: 2, Patches: 1, Deletes: 1})
		})
	})

	t.Run("gone before the delete: forgotten", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			pod := deleting(testPod("p", "u1"))
			api := statusmgrtest.NewFakeAPI(pod)
			var uids []types.UID
			gone := func(call int) {
				if call == 1 { // another client deletes the pod; ours then conflicts
					_ = api.DeletePod(context.Background(), "default", "p", "u1")
					failDeletes(api, 1, conflict("p"))
				}
			}
			h := start(t, api, func(c *statusmgr.Config) { c.Patcher = recordDeletes(api, &uids, gone) })
			must(t, h.m.TerminatePod(pod))
			synctest.Wait()
			if _, ok := h.m.GetPodStatus("u1"); ok {
				t.Error("status kept after the pod was gone")
			}
			if s := h.m.Stats(); s.Gone != 1 || s.Deleted != 0 {
				t.Errorf("stats = %+v", s)
			}
			h.period()
			// GET, PATCH, DELETE (Conflict), GET (NotFound); the other client's DELETE.
			h.counts(statusmgrtest.Counts{Gets: 2, Patches: 1, Deletes: 2, Deleted: 1})
			if !slices.Equal(uids, []types.UID{"u1"}) {
				t.Errorf("delete preconditions = %v, want [u1]", uids)
			}
		})
	})
}
