// Package statusmgr is the kubelet's status manager as a library: it keeps the pod statuses
// a node agent computes as numbered versions, writes them to the API server as minimal
// status patches, and deletes a pod object once the pod has finished — never earlier,
// never twice, never a pod recreated under the same name.
//
// # Guarantees
//
//   - A status set with SetPodStatus or TerminatePod is written to the server or explicitly
//     superseded (a newer version, the pod gone, the pod recreated, RemoveOrphanedStatuses):
//     a failing API call leaves it pending and it is retried.
//   - Only the newest version of a pod's status is sent; versions set while a sync runs are
//     coalesced. A status the server already has is not sent again (versioned needsUpdate).
//   - Conditions the kubelet does not own (readiness gates and the like) are never
//     overwritten, nor are conditions another client wrote since the manager last read the
//     pod: the patch names only the conditions that changed.
//   - A terminal phase (Succeeded, Failed) on the server is never left, and is not written
//     while the pod's containers could still run.
//   - Every patch carries metadata.uid and every delete a UID precondition: a pod deleted and
//     recreated under the same name (another UID) is never patched or deleted; its old
//     status is forgotten. A failed delete (even a Conflict) keeps the status until a
//     fresh read shows the pod gone or recreated, or a delete succeeds.
//   - A pod is deleted (grace 0) only when CanBeDeleted holds on the server's copy: it has a
//     deletionTimestamp, it is not a mirror pod, its phase on the server is terminal, and
//     TerminatePod has run for it. Then its status is forgotten.
//   - The StatusPatcher is never called while the manager holds its lock. Up to
//     Config.MaxConcurrentWrites pods (default 64) are written at once, never two calls
//     of one pod at a time: a pod's newer version is written after the call writing its
//     older one has returned, so each pod's writes reach the server in order. Of those,
//     at most MaxConcurrentStatusWrites (1) write pods not finished, so that bursts of
//     status changes coalesce; finished pods (their terminal status and final delete) may
//     use every slot, so that many pods finishing at once are deleted fast.
//
// # Where it sits in the lifecycle
//
// The pod worker (package podworker) drives a pod through sync, terminating and terminated;
// its sync functions compute the pod's status and hand it here:
//
//	pod worker:   SyncPod ...... SyncPod | SyncTerminatingPod ...... | SyncTerminatedPod
//	statusmgr:    SetPodStatus (each sync)  SetPodStatus              TerminatePod
//	server:       status patched ....................... terminal phase patched -> DELETE
//	                                                     (once containers stopped)
//	predicates:   CouldHaveRunningContainers true ..................| false
//	              podIsFinished false ...................................| true
//	              CanBeDeleted false ........................................| true -> forgotten
//
// SetPodStatus is forced (a new version even when nothing changed) once the pod has a
// deletionTimestamp, so a deleting pod always reaches the server. TerminatePod turns every
// container without a terminated state into a failed one (exit code 137), makes the phase
// terminal (Failed unless already Succeeded; static pods keep theirs) and marks the pod
// finished. CouldHaveRunningContainers (from the pod worker, Config) keeps MergePodStatus
// from writing a terminal phase early.
//
// # The Machine and the Manager
//
// The decisions are pure functions, exported so that callers can test with them:
// MergePodStatus / MergePodStatusAt (server status + node status -> status to write),
// CanBeDeleted, TerminatedStatus, CheckContainerStateTransition, NormalizeStatus,
// ContainersReadyCondition and PodReadyCondition.
//
// Machine holds all the state and makes every other decision, the way podworker's Machine
// does: not safe for concurrent use, no goroutine, no clock read (the time is an
// argument), no IO, no call of its caller's code. It takes
//
//   - the setters' inputs (SetPodStatus, TerminatePod, SetContainerReadiness,
//     SetContainerStartup, RefreshPod, RemoveOrphanedStatuses) into the versioned cache:
//     the versions, needsUpdate;
//   - QueueAll, the full sync;
//   - the runner's Facts when a write starts (what the PodLookup and
//     CouldHaveRunningContainers answer) and the API's Answers,
//
// and returns what to do: NextWrite, the write policy's next write (two queues, each in
// arrival order: the pods not finished, and the finished pods, which a pod moves to when
// it finishes while queued; at most MaxConcurrentWrites writes in flight, of which at
// most MaxConcurrentStatusWrites of pods not finished, which go first when they have a
// slot, the finished pods taking every other slot; never two writes of one pod, a pod
// set during its write queued again when that write is done); then, from StartWrite and
// each Answer, a Ready: the write's next StatusPatcher call (GET, PATCH or DELETE; the
// runner's until it answers) or its End (the version written, kept for the next full
// sync, or forgotten, with the reason and error). statusmgrtest's scenario harness drives
// a Machine this way; its scripts run against that and the Manager alike.
//
// The status patch (a strategic merge patch of the status only, built field by field) and
// the comparisons it rests on are internal; the cache compares statuses field by field
// with the patch's own comparisons, without encoding them.
//
// The Manager is the Machine's runner, safe for concurrent use. Its setters
// (SetPodStatus, TerminatePod, SetContainerReadiness, SetContainerStartup) never block on
// the API: they store a version and wake the loop. They prepare the version (copy,
// compare, normalize) without the manager's lock and take it only to read the pod's entry
// and to store the result. SetPodStatusNoCopy is SetPodStatus for a status built for the
// call alone (a node agent's freshly generated one): the manager takes it over instead of
// copying it. Run is the loop: it syncs changed pods at once and, every SyncPeriod
// (default 10 s), every pod that still needs it, running the writes the Machine grants on
// writer goroutines it starts as needed (at most MaxConcurrentWrites; an idle one stays
// parked for the next write, and all end with Run's context); it calls the
// StatusPatcher, the PodLookup and CouldHaveRunningContainers without its lock. A pod's
// versions set while it waits are sent as one; a pod changed while its write is in
// flight is written again once that write returns, with its newest version. Sync does
// one full pass synchronously, the finished pods first, within the same bounds (shared
// with Run's writes: it waits for a free slot of the pod's lane), and returns the errors.
//
// A sync of one pod:
//
//  1. uses the server's pod from the last answer or, before any, the node agent's current
//     copy of the pod (the PodLookup's, when it came from the API server: it has a
//     resourceVersion); GET only when it has neither (always without a PodLookup: a pod a
//     caller kept may be long stale), after an error, after a Conflict, or when the
//     source's copy shows nothing to write; and forgets the status if the server's UID is
//     another (read, never guessed from the source's copy);
//  2. merges (MergePodStatusAt) and, if anything changed, sends the status patch; the
//     patched pod in the answer becomes the new copy, and when its status is exactly the
//     cached one the manager keeps that status for both (one status per pod in memory).
//     A patch against the source's copy carries its metadata.resourceVersion as well: the
//     server refuses it (Conflict) if the pod changed since, and the sync reads the pod and
//     tries again (that Conflict does not count against MaxConflictRetries). With
//     Config.UpdateStatus (opt-in: virtual-kubelet's call), that first write against the
//     source's copy is a status update of the copy with the merged status instead, under
//     the same precondition and with the same Conflict handling;
//  3. deletes the pod with grace 0 and a UID precondition when CanBeDeleted holds.
//
// With a PodLookup, each full sync also reconciles: a status already sent that would still
// change the server's copy as the lookup sees it (someone overwrote it) is sent again,
// patched against the lookup's copy (its resourceVersion the precondition), and a
// deletionTimestamp the lookup shows is noticed without a new status.
// RefreshPod hands the manager the node agent's newer pod object at once (a change of its
// status only), so that it does not keep the older one until then.
//
// NotFound forgets the status (the pod is gone), unless the PodLookup still has the pod:
// then, as the kubelet does, the status is kept for the next full sync (the answer may
// predate the pod, e.g. a node authorizer that has not seen a just-bound pod yet) until
// RemoveOrphanedStatuses drops it. Conflict re-reads the pod and retries (at
// most MaxConflictRetries times per sync). Any other error is logged, counted
// (Stats.Errors), returned by Sync, and retried on the next full sync.
//
// A failed final delete, whatever the error (a Conflict included), never forgets the
// status by itself, as in the kubelet: the pod is read again (at once after a Conflict,
// within the sync's MaxConflictRetries; else at the next full sync) and that GET decides.
// NotFound: the pod is gone, the status is forgotten. Another UID: the name belongs to a
// new pod, the status is forgotten and the new pod is never touched. The same UID: the pod
// is deleted again, until it is deleted. Run returns when its context ends, once the
// writes in flight have returned (their calls see the context end); the pods not written
// stay queued.
//
// # Errors
//
// Every error the package returns wraps one of its sentinels (errors.go), tested with
// errors.Is: a failed StatusPatcher call wraps ErrAPI and the call's own error (test it
// with apierrors.IsConflict and the like), a patch that cannot be encoded ErrEncode, a Sync
// whose context ended ErrInterrupted and the context's error.
//
// # Static pods
//
// A static pod's status (its source annotation is not "api") is written to its mirror pod,
// found with Config.Lookup (else any mirror pod of that name is accepted). Mirror pods are
// never deleted here. GetPodStatus (and PodStatusView) answers for a mirror pod's UID with
// its static pod's status, as the kubelet does: through the Lookup if it implements
// PodUIDTranslator, else once a sync has seen the mirror pod on the server.
//
// # Implementing StatusPatcher with client-go
//
//	GetPod:         c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
//	PatchPodStatus: c.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, patch,
//	                    metav1.PatchOptions{}, "status")
//	DeletePod:      c.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{
//	                    GracePeriodSeconds: ptr.To[int64](0),
//	                    Preconditions: metav1.NewUIDPreconditions(string(uid))})
//
// statusmgrtest.FakeAPI is an in-memory implementation for tests.
package statusmgr
