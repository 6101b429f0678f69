package statusmgr_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

func TestManagerPatchFailureIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := testPod("p", "u1")
		api := statusmgrtest.NewFakeAPI(pod)
		fail := true
		api.SetReactor(func(verb statusmgrtest.Verb, ns, name string) error {
			if fail && verb == statusmgrtest.Patch {
				return apierrors.NewInternalError(errors.New("etcd down"))
			}
			return nil
		})
		h := start(t, api, nil)
		must(t, h.m.SetPodStatus(pod, runningStatus(true)))
		synctest.Wait()
		if got := mustPod(t, api, "p"); got.Status.Phase != v1.PodPending {
			t.Fatalf("phase = %s", got.Status.Phase)
		}
		if s := h.m.Stats(); s.Errors != 1 {
			t.Errorf("Errors = %d, want 1", s.Errors)
		}
		if _, ok := h.m.GetPodStatus("u1"); !ok {
			t.Fatal("status lost after a failed patch")
		}
		h.period() // still failing: retried, counted again
		if s := h.m.Stats(); s.Errors != 2 {
			t.Errorf("Errors = %d, want 2", s.Errors)
		}
		fail = false
		h.period()
		if got := mustPod(t, api, "p"); got.Status.Phase != v1.PodRunning {
			t.Fatalf("phase after recovery = %s", got.Status.Phase)
		}
		// After an error the server's copy is unknown: each retry re-reads it.
		h.counts(statusmgrtest.Counts{Gets: 3, Patches: 3})
	})
}

func TestManagerSyncReturnsErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := testPod("p", "u1")
		api := statusmgrtest.NewFakeAPI(pod)
		api.SetReactor(func(verb statusmgrtest.Verb, ns, name string) error {
			return apierrors.NewServiceUnavailable("down")
		})
		m, err := statusmgr.New(statusmgr.Config{Patcher: api})
		must(t, err)
		must(t, m.SetPodStatus(pod, runningStatus(true)))
		err = m.Sync(t.Context())
		if !apierrors.IsServiceUnavailable(err) || !errors.Is(err, statusmgr.ErrAPI) {
			t.Fatalf("Sync error = %v, want ServiceUnavailable wrapped in ErrAPI", err)
		}
		api.SetReactor(nil)
		must(t, m.Sync(t.Context()))
		if got := mustPod(t, api, "p"); got.Status.Phase != v1.PodRunning {
			t.Fatalf("phase = %s", got.Status.Phase)
		}
	})
}

func TestManagerConflictRereadsAndRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := testPod("p", "u1")
		api := statusmgrtest.NewFakeAPI(pod)
		conflicts := 1
		api.SetReactor(func(verb statusmgrtest.Verb, ns, name string) error {
			if verb == statusmgrtest.Patch && conflicts > 0 {
				conflicts--
				return apierrors.NewConflict(v1.Resource("pods"), name, errors.New("changed"))
			}
			return nil
		})
		h := start(t, api, nil)
		must(t, h.m.SetPodStatus(pod, runningStatus(true)))
		synctest.Wait()
		if got := mustPod(t, api, "p"); got.Status.Phase != v1.PodRunning {
			t.Fatalf("phase = %s", got.Status.Phase)
		}
		h.counts(statusmgrtest.Counts{Gets: 2, Patches: 2})
		if s := h.m.Stats(); s.Conflicts != 1 || s.Errors != 0 {
			t.Errorf("stats = %+v", s)
		}
	})
}

func TestManagerNotFoundForgets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := statusmgrtest.NewFakeAPI()
		h := start(t, api, nil)
		pod := testPod("p", "u1")
		must(t, h.m.SetPodStatus(pod, runningStatus(true)))
		synctest.Wait()
		if _, ok := h.m.GetPodStatus("u1"); ok {
			t.Error("status of a pod missing on the server kept")
		}
		if s := h.m.Stats(); s.Gone != 1 || s.NotFounds != 1 {
			t.Errorf("stats = %+v", s)
		}
		h.period()
		h.counts(statusmgrtest.Counts{Gets: 1})
	})
}

// TestManagerNotFoundKeptWhileDesired: a NotFound for a pod the lookup still has (the
// server's answer predates the pod) keeps the status for the next full sync, which writes
// it once the server has the pod; once the lookup no longer has the pod, a NotFound
// forgets it.
func TestManagerNotFoundKeptWhileDesired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := statusmgrtest.NewFakeAPI()
		pod := testPod("p", "u1")
		desired := true
		lookup := statusmgr.PodLookupFuncs{GetPodByUIDFunc: func(uid types.UID) (*v1.Pod, bool) {
			if desired && uid == pod.UID {
				return pod, true
			}
			return nil, false
		}}
		h := start(t, api, func(c *statusmgr.Config) { c.Lookup = lookup })
		must(t, h.m.SetPodStatus(pod, runningStatus(true)))
		synctest.Wait()
		if _, ok := h.m.GetPodStatus("u1"); !ok {
			t.Fatal("status of a desired pod forgotten on NotFound")
		}
		if s := h.m.Stats(); s.Gone != 0 || s.NotFounds != 1 {
			t.Errorf("stats = %+v", s)
		}
		api.Put(pod.DeepCopy()) // the server catches up
		h.period()
		got, ok := api.Pod("default", "p")
		if !ok || got.Status.Phase != v1.PodRunning {
			t.Fatalf("after the next full sync the server has %+v, want the kept Running status", got)
		}

		// The pod goes before the next status is set: set first, the loop could write it
		// before the pod is gone and nothing would sync it again.
		desired = false
		if err := api.DeletePod(context.Background(), "default", "p", pod.UID); err != nil {
			t.Fatal(err)
		}
		must(t, h.m.SetPodStatus(pod, runningStatus(false)))
		synctest.Wait()
		if _, ok := h.m.GetPodStatus("u1"); ok {
			t.Error("status of a pod neither desired nor on the server kept")
		}
		if s := h.m.Stats(); s.Gone != 1 {
			t.Errorf("stats = %+v, want Gone 1", s)
		}
	})
}

func TestManagerRecreatedPodIsNeverTouched(t *testing.T) {
	t.Run("before the first sync", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			newer := deleting(testPod("p", "u2"))
			newer.Status.Phase = v1.PodFailed
			api := statusmgrtest.NewFakeAPI(newer)
			h := start(t, api, nil)
			old := deleting(testPod("p", "u1"))
			must(t, h.m.SetPodStatus(old, runningStatus(true)))
			synctest.Wait()
			must(t, h.m.TerminatePod(old))
			synctest.Wait()
			h.period()
			// Each status of the old pod costs one GET, and is then forgotten.
			h.counts(statusmgrtest.Counts{Gets: 2})
			if s := h.m.Stats(); s.Recreated != 2 {
				t.Errorf("stats = %+v", s)
			}
			if got := mustPod(t, api, "p"); got.UID != "u2" || got.Status.Phase != v1.PodFailed {
				t.Errorf("new pod changed: %+v", got)
			}
		})
	})
	t.Run("after the first sync", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			old := testPod("p", "u1")
			api := statusmgrtest.NewFakeAPI(old)
			h := start(t, api, nil)
			must(t, h.m.SetPodStatus(old, runningStatus(true)))
			synctest.Wait()
			// The pod is deleted and recreated under the same name; the manager's copy of
			// the server's pod is stale, so its patch carries the old UID.
			api.Put(deleting(testPod("p", "u2")))
			must(t, h.m.TerminatePod(deleting(old)))
			synctest.Wait()
			h.period()
			// GET, PATCH; PATCH refused (Conflict), GET shows the new UID: forgotten.
			h.counts(statusmgrtest.Counts{Gets: 2, Patches: 2})
			if got := mustPod(t, api, "p"); got.UID != "u2" || got.Status.Phase != v1.PodPending {
				t.Errorf("new pod changed: %+v", got.Status)
			}
			if _, ok := h.m.GetPodStatus("u1"); ok {
				t.Error("status of the old pod kept")
			}
		})
	})
	t.Run("between patch and delete", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			old := deleting(testPod("p", "u1"))
			api := statusmgrtest.NewFakeAPI(old)
			var uids []types.UID
			recreate := func(int) { api.Put(testPod("p", "u2")) }
			h := start(t, api, func(c *statusmgr.Config) { c.Patcher = recordDeletes(api, &uids, recreate) })
			must(t, h.m.TerminatePod(old))
			synctest.Wait()
			h.period()
			// The delete's UID precondition fails; the GET shows the new UID: forgotten.
			h.counts(statusmgrtest.Counts{Gets: 2, Patches: 1, Deletes: 1})
			if _, ok := h.m.GetPodStatus("u1"); ok {
				t.Error("status kept after the pod was recreated")
			}
			if got := mustPod(t, api, "p"); got.UID != "u2" {
				t.Errorf("server's pod = %s, want u2", got.UID)
			}
		})
	})
}

func TestManagerDeleteFailureIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := deleting(testPod("p", "u1"))
		api := statusmgrtest.NewFakeAPI(pod)
		fail := true
		api.SetReactor(func(verb statusmgrtest.Verb, ns, name string) error {
			if fail && verb == statusmgrtest.Delete {
				return apierrors.NewTooManyRequests("slow down", 1)
			}
			return nil
		})
		h := start(t, api, nil)
		must(t, h.m.TerminatePod(pod))
		synctest.Wait()
		if api.Len() != 1 {
			t.Fatal("deleted despite the error")
		}
		fail = false
		h.period()
		if api.Len() != 0 {
			t.Fatal("delete not retried")
		}
		// The terminal status is not patched again: GET, PATCH, DELETE (failed), GET, DELETE.
		h.counts(statusmgrtest.Counts{Gets: 2, Patches: 1, Deletes: 2, Deleted: 1})
	})
}

func TestManagerReconcilesOverwrittenStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := testPod("p", "u1")
		api := statusmgrtest.NewFakeAPI(pod)
		lookup := statusmgr.PodLookupFuncs{GetPodByUIDFunc: func(uid types.UID) (*v1.Pod, bool) {
			return api.Pod("default", "p") // an informer that is always up to date
		}}
		h := start(t, api, func(c *statusmgr.Config) { c.Lookup = lookup })
		must(t, h.m.SetPodStatus(pod, runningStatus(true)))
		synctest.Wait()
		h.period() // in sync: nothing to reconcile
		// The lookup's copy (with its resourceVersion) stands in for the first GET.
		h.counts(statusmgrtest.Counts{Gets: 0, Patches: 1})

		// Someone else overwrites a kubelet-owned field.
		other := mustPod(t, api, "p")
		other.Status.PodIP = "192.0.2.1"
		api.Put(other)
		h.period()
		if got := mustPod(t, api, "p"); got.Status.PodIP != "10.1.0.1" {
			t.Errorf("podIP = %s, want it restored", got.Status.PodIP)
		}
		if s := h.m.Stats(); s.Reconciled != 1 {
			t.Errorf("Reconciled = %d", s.Reconciled)
		}
		// Sent again against the lookup's fresh copy, its resourceVersion the patch's
		// precondition: no GET.
		h.counts(statusmgrtest.Counts{Gets: 0, Patches: 2})
		h.period()
		h.counts(statusmgrtest.Counts{Gets: 0, Patches: 2})
	})
}

func TestManagerLookupDeletionTriggersDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := testPod("p", "u1")
		api := statusmgrtest.NewFakeAPI(pod)
		lookup := statusmgr.PodLookupFuncs{GetPodByUIDFunc: func(uid types.UID) (*v1.Pod, bool) {
			return api.Pod("default", "p")
		}}
		h := start(t, api, func(c *statusmgr.Config) { c.Lookup = lookup })
		must(t, h.m.TerminatePod(pod))
		synctest.Wait()
		if got := mustPod(t, api, "p"); got.Status.Phase != v1.PodFailed {
			t.Fatalf("phase = %s", got.Status.Phase)
		}
		// The pod is deleted on the server after it finished; no new status is set. The
		// next full sync learns it from the lookup and deletes the pod.
		api.MarkDeleted("default", "p", metav1.NewTime(epoch), 30)
		h.period()
		if api.Len() != 0 {
			t.Fatalf("pod not deleted: %+v", api.Counts())
		}
	})
}

func TestManagerStaticPodWaitsForItsMirror(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		static := testPod("s", "static-uid")
		static.Annotations[statusmgr.ConfigSourceAnnotationKey] = "file"
		api := statusmgrtest.NewFakeAPI()
		h := start(t, api, nil) // no Lookup: any mirror pod of that name is accepted
		must(t, h.m.SetPodStatus(static, runningStatus(true)))
		synctest.Wait()
		if _, ok := h.m.GetPodStatus("static-uid"); !ok {
			t.Fatal("static pod's status dropped while its mirror pod does not exist")
		}
		mirror := testPod("s", "mirror-uid")
		mirror.Annotations[statusmgr.ConfigMirrorAnnotationKey] = "h1"
		api.Put(mirror)
		h.period()
		if got := mustPod(t, api, "s"); got.Status.Phase != v1.PodRunning {
			t.Errorf("mirror phase = %s", got.Status.Phase)
		}
		if s := h.m.Stats(); s.NoMirror != 1 {
			t.Errorf("NoMirror = %d", s.NoMirror)
		}
	})
}

// The patcher may call back into the manager: it is never called under the manager's lock
// (a deadlock here would fail the synctest bubble).
func TestManagerPatcherCalledWithoutLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := deleting(testPod("p", "u1"))
		api := statusmgrtest.NewFakeAPI(pod)
		var m *statusmgr.Manager
		reentrant := statusmgr.StatusPatcherFuncs{
			GetPodFunc: func(ctx context.Context, ns, name string) (*v1.Pod, error) {
				m.GetPodStatus("u1")
				m.Stats()
				return api.GetPod(ctx, ns, name)
			},
			PatchPodStatusFunc: func(ctx context.Context, ns, name string, patch []byte) (*v1.Pod, error) {
				_ = m.SetContainerStartup("u1", "containerd://c1", true)
				return api.PatchPodStatus(ctx, ns, name, patch)
			},
			DeletePodFunc: func(ctx context.Context, ns, name string, uid types.UID) error {
				m.RemoveOrphanedStatuses(map[types.UID]bool{"u1": true})
				return api.DeletePod(ctx, ns, name, uid)
			},
		}
		h := start(t, api, func(c *statusmgr.Config) { c.Patcher = reentrant })
		m = h.m
		must(t, m.SetPodStatus(pod, runningStatus(true)))
		synctest.Wait()
		must(t, m.TerminatePod(pod))
		synctest.Wait()
		if api.Len() != 0 {
			t.Fatal("pod not deleted")
		}
	})
}

func TestManagerRunStopsMidSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := statusmgrtest.NewFakeAPI(testPod("a", "ua"), testPod("b", "ub"))
		blocking := statusmgr.StatusPatcherFuncs{
			GetPodFunc: func(ctx context.Context, ns, name string) (*v1.Pod, error) {
				<-ctx.Done() // a slow API server
				return nil, ctx.Err()
			},
		}
		h := start(t, api, func(c *statusmgr.Config) { c.Patcher = blocking })
		must(t, h.m.SetPodStatus(testPod("a", "ua"), runningStatus(true)))
		must(t, h.m.SetPodStatus(testPod("b", "ub"), runningStatus(true)))
		synctest.Wait() // the loop is blocked in GetPod
		h.stop()        // returns once the call gives up: no goroutine left behind
		for _, uid := range []types.UID{"ua", "ub"} {
			if _, ok := h.m.GetPodStatus(uid); !ok {
				t.Errorf("status %s lost on shutdown", uid)
			}
		}
		if s := h.m.Stats(); s.Gone != 0 || s.Deleted != 0 {
			t.Errorf("stats after shutdown = %+v", s)
		}
	})
}

func TestManagerObservesSyncLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := testPod("p", "u1")
		api := statusmgrtest.NewFakeAPI(pod)
		fail := true
		api.SetReactor(func(verb statusmgrtest.Verb, ns, name string) error {
			if fail && verb == statusmgrtest.Patch {
				return apierrors.NewInternalError(errors.New("down"))
			}
			return nil
		})
		var seen []time.Duration
		h := start(t, api, func(c *statusmgr.Config) {
			c.ObserveSyncLatency = func(d time.Duration) { seen = append(seen, d) }
		})
		must(t, h.m.SetPodStatus(pod, runningStatus(false)))
		synctest.Wait()
		h.clock.Step(time.Second)
		must(t, h.m.SetPodStatus(pod, runningStatus(true))) // coalesced with the first
		synctest.Wait()
		fail = false
		h.period()
		must(t, h.m.SetPodStatus(pod, runningStatus(false)))
		synctest.Wait()
		want := []time.Duration{statusmgr.DefaultSyncPeriod + time.Second, 0}
		if diff := cmp.Diff(want, seen); diff != "" {
			t.Errorf("latencies (-want +got):\n%s", diff)
		}
	})
}

// TestManagerFirstPatchWithoutGet: a pod the node agent holds as its source delivered it
// (its PodLookup's copy, with a resourceVersion) gets its first status patch without a
// GET, the resourceVersion its precondition; a stale copy costs a Conflict and a GET, and
// a pod recreated under the name is never patched (issue 33 item 5). Without a PodLookup
// the manager cannot tell a fresh copy from a kept one: it reads first.
func TestManagerFirstPatchWithoutGet(t *testing.T) {
	// source is a PodLookup holding pod as the node agent's copy.
	source := func(pod *v1.Pod) func(*statusmgr.Config) {
		return func(c *statusmgr.Config) {
			c.Lookup = statusmgr.PodLookupFuncs{GetPodByUIDFunc: func(uid types.UID) (*v1.Pod, bool) {
				return pod, uid == pod.UID
			}}
		}
	}
	t.Run("no lookup", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			api := statusmgrtest.NewFakeAPI(testPod("p", "u1"))
			pod := mustPod(t, api, "p")
			h := start(t, api, nil)
			must(t, h.m.SetPodStatus(pod, runningStatus(true)))
			synctest.Wait()
			h.counts(statusmgrtest.Counts{Gets: 1, Patches: 1})
		})
	})
	t.Run("fresh", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			api := statusmgrtest.NewFakeAPI(testPod("p", "u1"))
			pod := mustPod(t, api, "p") // the source's copy
			h := start(t, api, source(pod))
			must(t, h.m.SetPodStatus(pod, runningStatus(true)))
			synctest.Wait()
			h.counts(statusmgrtest.Counts{Gets: 0, Patches: 1})
			if got := mustPod(t, api, "p"); got.Status.Phase != v1.PodRunning {
				t.Errorf("phase %s", got.Status.Phase)
			}
		})
	})
	t.Run("stale", func(t *testing.T) {
		staleSource(t, source, statusmgrtest.Counts{Gets: 1, Patches: 2})
	})
	t.Run("recreated", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			api := statusmgrtest.NewFakeAPI(testPod("p", "u1"))
			pod := mustPod(t, api, "p")
			api.Put(testPod("p", "u2"))
			h := start(t, api, source(pod))
			must(t, h.m.SetPodStatus(pod, runningStatus(true)))
			synctest.Wait()
			h.counts(statusmgrtest.Counts{Gets: 1, Patches: 1})
			if got := mustPod(t, api, "p"); got.UID != "u2" || got.Status.Phase != v1.PodPending {
				t.Errorf("the new pod was written: %s %s", got.UID, got.Status.Phase)
			}
			if s := h.m.Stats(); s.Recreated != 1 {
				t.Errorf("stats %+v", s)
			}
		})
	})
}

// Config.UpdateStatus: a pod whose node agent holds its fresh copy from the API server gets
// its status in one status update guarded by that copy's resourceVersion (no GET, no
// patch); a stale copy is refused (Conflict) and the write reads the pod and patches, the
// other client's condition kept; its final status after TerminatePod is patched against the
// last answer's copy (the node's copy is of another version, maybe older: a real API
// server refused such updates). A Patcher that is no StatusUpdater is refused by New.
func TestManagerUpdateStatus(t *testing.T) {
	lookup := func(pod **v1.Pod) func(*statusmgr.Config) {
		return func(c *statusmgr.Config) {
			c.UpdateStatus = true
			c.Lookup = statusmgr.PodLookupFuncs{GetPodByUIDFunc: func(uid types.UID) (*v1.Pod, bool) {
				return *pod, uid == (*pod).UID
			}}
		}
	}
	t.Run("fresh", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			api := statusmgrtest.NewFakeAPI(testPod("p", "u1"))
			pod := mustPod(t, api, "p") // the source's copy
			h := start(t, api, lookup(&pod))
			must(t, h.m.SetPodStatus(pod, runningStatus(true)))
			synctest.Wait()
			h.counts(statusmgrtest.Counts{Updates: 1})
			got := mustPod(t, api, "p")
			if got.Status.Phase != v1.PodRunning || len(got.Spec.Containers) != 1 {
				t.Errorf("server's pod %+v", got)
			}
			// The user deletes the pod; the node's copy shows it; the pod finishes.
			api.MarkDeleted("default", "p", metav1.NewTime(epoch), 30)
			pod = mustPod(t, api, "p")
			must(t, h.m.TerminatePod(pod))
			synctest.Wait()
			h.counts(statusmgrtest.Counts{Updates: 1, Patches: 1, Deletes: 1, Deleted: 1})
			if s := h.m.Stats(); s.Updates != 1 || s.Patches != 1 || s.Gets != 0 {
				t.Errorf("stats %+v", s)
			}
		})
	})
	t.Run("stale", func(t *testing.T) {
		staleSource(t, func(p *v1.Pod) func(*statusmgr.Config) { return lookup(&p) },
			statusmgrtest.Counts{Updates: 1, Gets: 1, Patches: 1})
	})
	t.Run("no StatusUpdater", func(t *testing.T) {
		api := statusmgrtest.NewFakeAPI()
		_, err := statusmgr.New(statusmgr.Config{UpdateStatus: true, Patcher: statusmgr.StatusPatcherFuncs{
			GetPodFunc: api.GetPod, PatchPodStatusFunc: api.PatchPodStatus, DeletePodFunc: api.DeletePod}})
		if !errors.Is(err, statusmgr.ErrInvalidConfig) {
			t.Errorf("New = %v, want ErrInvalidConfig", err)
		}
	})
}

// staleSource: the server's pod changed (another client's condition) after the node agent
// took its copy, which the Config of withSource(copy) looks up: the first write against the
// copy is refused (one Conflict), the pod is read and the status patched, the other
// client's condition kept; the calls are want.
func staleSource(t *testing.T, withSource func(*v1.Pod) func(*statusmgr.Config), want statusmgrtest.Counts) {
	synctest.Test(t, func(t *testing.T) {
		api := statusmgrtest.NewFakeAPI(testPod("p", "u1"))
		pod := mustPod(t, api, "p")
		other := pod.DeepCopy()
		other.Status.Conditions = []v1.PodCondition{{Type: "example.com/gate", Status: v1.ConditionTrue}}
		api.Put(other) // changed since the source's copy
		h := start(t, api, withSource(pod))
		must(t, h.m.SetPodStatus(pod, runningStatus(true)))
		synctest.Wait()
		h.counts(want)
		got := mustPod(t, api, "p")
		if got.Status.Phase != v1.PodRunning || len(got.Status.Conditions) != 4 {
			t.Errorf("status %+v, want Running with the gate kept", got.Status)
		}
		if s := h.m.Stats(); s.Conflicts != 1 || s.Errors != 0 {
			t.Errorf("stats %+v", s)
		}
	})
}
