// Package podworker is the per-pod lifecycle state machine of podlife: the kubelet's pod
// workers as a library. Every pod UID gets one serialized lifecycle,
//
//	syncing -> terminating -> terminated -> finished -> (forgotten)
//
// driven by UpdatePod and SyncKnownPods and carried out by calling the caller's
// PodSyncer: SyncPod while the pod should run, SyncTerminatingPod until its containers
// are stopped, SyncTerminatedPod to clean up. The transitions only go forward.
//
// # Shape
//
// Machine is pure and single-threaded: UpdatePod, Complete, Tick and SyncKnownPods take
// the time as an argument and return a Ready listing the stage transitions, the
// contexts to cancel, the completion channels to close, the work to start and the
// resync delays. It never blocks, reads no clock and starts no goroutine, so every
// decision can be tested step by step (see podworkertest). Runner wraps a Machine with a
// mutex, worker goroutines only while works are in flight, at most one per work (at most
// MaxConcurrentSyncs PodSyncer calls at once, DefaultMaxConcurrentSyncs unless set; a
// burst of short syncs is run by a few workers, and a few idle ones are kept for the
// next burst), and one timer goroutine for resyncs and retries; it calls the
// PodSyncer and the status cache outside its lock. No goroutine is parked per known pod.
//
// # Guarantees
//
//   - At most one PodSyncer call is in flight per pod UID; calls for different pods run
//     concurrently (bounded by MaxConcurrentSyncs, 1,024 by default, in arrival order beyond it).
//   - Updates coalesce: while a call is in flight, only the latest configuration is kept,
//     and exactly one further call follows (the kubelet's pendingUpdate). RefreshPod
//     replaces the configuration held by a newer object that changed only in its status,
//     without an update, so the next call (a resync, a retry, the next stage) gets the
//     newest pod, as the kubelet's resyncs take the pod manager's.
//   - The WorkType of the next call is decided when it starts: SyncPod until termination
//     is requested, TerminatingPod until SyncTerminatingPod returned nil, TerminatedPod
//     until SyncTerminatedPod returned nil. A pod whose termination is requested before
//     its first sync never runs SyncPod.
//   - Termination is requested by a deletionTimestamp, a terminal phase (Succeeded,
//     Failed), a kill update, a runtime-only pod (always a kill), SyncKnownPods not
//     listing the pod, or SyncPod reporting the pod terminal. It cancels a running
//     SyncPod at once.
//   - The grace period is grace.Effective on every termination request; it only ever
//     decreases. A shorter one cancels the running SyncTerminatingPod, which then runs
//     again with the shorter period. Runtime-only pods are killed with grace 1.
//   - Each call reads the runtime status observed after the end of the pod's previous
//     call (RuntimeView.StatusAfter), so it never acts on stale state. The view
//     re-inspects the pod when it holds no status newer than the previous call (one
//     observed while that call ran, e.g. pushed by the runtime), so a transition does not
//     wait for the next relist (the kubelet loses up to a relist period, ~1 s, per
//     transition here).
//   - A failed call is retried after a backoff (doubling from BackoffInitial to
//     BackoffMax, jittered downwards); a successful SyncPod is resynced after
//     ResyncInterval; a transition runs the next stage at once. A call cancelled because
//     it was superseded is not an error: its successor runs at once.
//   - Kill completions (KillPodOptions.Completion) are closed once the pod is
//     terminated (at once if it already is, or if it already finished); each exactly
//     once, whatever the caller passes: a Completion given to several kills (of one pod
//     or several pods) is closed when the last of those pods is terminated, and never
//     again, even if given again after those pods were forgotten (it records that it
//     was listed).
//   - Static pods (config source other than "api"): two UIDs with the same full name
//     (name_namespace) are never started at once; waiting ones start in arrival order
//     when the holder finishes; one whose termination is requested before it started is
//     finished at once (no PodSyncer call) and never blocks the next.
//   - Config.SerializeByName extends the full-name rule to every pod (for runtimes that
//     key pods by name, like virtual-kubelet providers), except that a pod deleted before
//     it started still gets SyncTerminatingPod and SyncTerminatedPod, once the name is
//     free and before any live waiter starts — unless SyncKnownPods finds it no longer
//     desired first (see below).
//   - A pod that never started (no work ever ran, e.g. waiting for its full name) and
//     was never seen in the runtime is forgotten by the first SyncKnownPods that no
//     longer lists it, without any PodSyncer call (the kubelet's rule): a runtime kill of
//     its UID in the same housekeeping round then starts afresh and is carried out.
//   - A pod first seen in a terminal phase whose runtime status shows nothing running (an
//     agent restart) goes straight to terminated: SyncTerminatingPod is skipped,
//     SyncTerminatedPod still runs, and the pod never counts as active.
//   - A finished pod ignores updates until SyncKnownPods forgets it (when it is no longer
//     desired, or a create arrived for its UID while it was terminating); a forgotten pod
//     leaves nothing behind.
//   - Bad input (nil pod, empty UID, runtime-only pod not killed, kill options on another
//     update type, negative grace, unknown update type) returns an error wrapping a
//     sentinel and changes nothing; nothing panics.
//
// # When the predicates flip
//
// A pod is created, synced, deleted gracefully, stopped, cleaned up and forgotten. The
// columns are the moments: (1) after UpdatePod(create); (2) after UpdatePod(deleted)
// while the cancelled SyncPod has not returned yet (an idle pod skips this column: its
// SyncTerminatingPod starts within UpdatePod); (3) SyncTerminatingPod running; (4) it
// returned nil, SyncTerminatedPod running; (5) that returned nil; (6) SyncKnownPods
// without the pod forgot it.
//
//	                                  (1)      (2)          (3)          (4)         (5)       (6)
//	stage                             syncing  terminating  terminating  terminated  finished  none
//	IsPodTerminationRequested         false    true         true         true        true      false
//	ShouldPodContainersBeTerminating  false    false        true         true        true      true
//	IsPodKnownTerminated              false    false        false        true        true      false
//	ShouldPodRuntimeBeRemoved         false    false        false        true        true      true
//	CouldHaveRunningContainers        true     true         true         false       false     false
//	ShouldPodContentBeRemoved         false    false        false        true        true      true
//	ShouldPodBeFinished               false    false        false        false       true      true
//
// ShouldPodContentBeRemoved needs the pod deleted (or orphaned) or evicted; an evicted
// pod answers true from the kill on. In column (6) the answers are those for any pod the
// workers do not know once SyncKnownPods has run; before its first run, an unknown pod
// could have running containers and nothing of it may be removed.
//
// # Who calls what
//
// The node agent calls UpdatePod for every configuration change (create, update, the
// deletion), kill for evictions and orphaned runtime pods, and SyncKnownPods
// periodically with the pods it still has configurations for (housekeeping). UpdatePod
// and SyncKnownPods never block on a sync. The PodSyncer methods are called from the
// runner's goroutines, never under its lock; they should honour their context. Run
// blocks until its context ends, then cancels every call in flight and waits for them.
//
// # Observing it
//
// Config.Hooks (see Hooks) are called outside the runner's lock: SyncStarted and
// SyncFinished around every work (its WorkType, the kubelet's operation_type label, its
// duration, error and whether it was cancelled; kubelet_pod_worker_duration_seconds and
// kubelet_pod_worker_start_duration_seconds), and Transition for every stage change with
// the pod's namespace/name and the time, delivered in the Machine's order after the lock
// is released. Config.OnTransition gets the same, just before it. Logs use
// the keys pod (namespace/name) and podUID; transitions and cancellations are Debug,
// failed syncs Error.
//
// # Ruling out the fast path
//
// A work's context is package internal/workctx's hand-written one, which costs no
// registration with Run's context and lets contexts derived from it start no goroutine.
// Building with the tag podlife_simple (go build -tags podlife_simple ./...) gives every
// work context.WithCancel of Run's context instead, with the same behaviour; use it to
// rule the fast path out while debugging.
package podworker
