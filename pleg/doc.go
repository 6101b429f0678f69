// Package pleg is podlife's view of the caller's container runtime: the runtime's pod and
// container types, the pod status cache, and the pod lifecycle event generator (PLEG), a
// relister that turns runtime changes into events for the pod workers.
//
// Everything podlife knows about containers comes through here. The caller implements
// RuntimeService (two calls: list every pod with its containers and sandboxes, and get one
// pod's detailed status); the relister calls it, fills the Cache and sends
// PodLifecycleEvents; the pod workers read the events and the cache.
//
// # Guarantees
//
//   - Every container transition between two relists produces the kubelet's events
//     (Events, with generateEvents' table), delivered once the pod's fresh status is in the
//     cache, so a worker woken by an event always reads a status at least that new. (A pod
//     that vanished has its entry deleted before its events are sent; GetNewerThan then
//     answers an empty status once the relist ends.)
//   - A relist never blocks on the event channel: when it is full, events are dropped and
//     counted (DroppedEvents), as the kubelet does.
//   - A pod whose status fetch fails loses no transition: its events are withheld, its old
//     record kept, and the next relist inspects it again (then emitting the events, or
//     PodSync if the runtime went back to the recorded state).
//   - After every successful relist, the cache's global timestamp is the relist's start,
//     so every blocked GetNewerThan with an older minTime returns.
//   - Every goroutine stops when its context ends; the relister starts none of its own
//     (Run is the caller's goroutine) and the cache leaves no waiter behind.
//
// # One relist
//
//	start := now
//	ListPods(all)                     fails -> nothing else happens, error returned
//	relist time := start              (Healthy looks at it)
//	for each listed pod:              diff its containers and sandboxes against its record
//	    no change, not re-inspected:  nothing (no allocation, no runtime call)
//	    else: t := now; PodStatus     fails -> cache (nil, err, t); events withheld;
//	                                           record kept; re-inspect next relist
//	          cache (status, t); record := listed pod
//	          send events (ContainerChanged only if configured), or PodSync if none
//	for each recorded pod not listed: delete cache entry; send Died/Removed events; delete record
//	cache.UpdateTime(start)
//
// The diff covers the union of a pod's containers and sandboxes in its record and in the
// list; "created" and unknown states are "unknown"; a container missing from a side is
// "non-existent". The relister keeps each pod's IDs and states (the runtime's strings),
// compares pods position by position when their layout did not change, and allocates only
// for changes.
//
// # Who calls what
//
//   - The caller runs Run(ctx) in a goroutine: it relists at once, then RelistPeriod after
//     the end of each relist, until ctx ends. Relist does one relist synchronously (tests,
//     benchmarks, or a caller with its own loop).
//   - The pod workers read Events() and call Cache.GetNewerThan(uid, lastSyncStart), which
//     blocks until the cache holds a status newer than their last sync.
//   - After starting or stopping a pod's containers, the pod workers call
//     RequestRefresh(uid): it never blocks, and Run re-inspects that pod at once (cache
//     entry with timestamp now, events of its changes), so a transition need not wait for
//     the next periodic relist.
//   - A runtime with an event stream (CRI's container events carry the pod's status) can
//     feed statuses to PushStatus; the periodic relist stays as the fallback and finds
//     nothing new when the pushes were complete.
//   - Healthy is polled by the node's health check: false before the first successful
//     relist and when the last one started more than RelistThreshold ago.
//
// Relists run one at a time. No lock is held across a runtime call: a Refresh or push
// during a relist waits only for one pod's bookkeeping, not for the relist; the cache keeps
// the newer of two observations of a pod, and a pod observed by a refresh or push while a
// relist runs is compared with the list again by the next relist. Healthy, RequestRefresh,
// Events and DroppedEvents never wait. Runtime calls get the context of Run (or of Relist,
// or of Refresh) and should return when it ends; they must not call Relist themselves.
//
// # Cache
//
// Cache maps pod UIDs to (status, error, observation time) plus a global timestamp.
// Set ignores an observation older than the one held. GetNewerThan uses the kubelet's
// comparisons: it answers at once when the entry or the global timestamp is strictly after
// minTime, and a later Set or UpdateTime at or after minTime wakes it. Cancelled waits
// are removed. Statuses are shared, not copied: nobody may modify one after handing it
// over.
//
// # Differences from the kubelet
//
//   - A pod that disappears always has its record and cache entry deleted, even when it had
//     no container left to report (the kubelet keeps both until an event occurs).
//   - Unknown runtime states count as "unknown" instead of panicking; nil pods, pods
//     without UID and duplicate UIDs in a list are skipped and logged.
//   - RequestRefresh and PushStatus do not exist in the kubelet's generic PLEG.
//
// # Observing it
//
// Config.Hooks.Relisted gets every relist (start, duration, the interval since the
// previous successful relist, the last successful start and the health right after it),
// Config.Hooks.EventsDropped the number of events each relist, refresh or push dropped
// for a full channel: the kubelet's kubelet_pleg_relist_duration_seconds,
// kubelet_pleg_relist_interval_seconds, kubelet_pleg_last_seen_seconds and
// kubelet_pleg_discard_events (package examples/metrics). Both are called after the
// relister's locks are released. Healthy is the kubelet's PLEG health check (a node
// agent's /healthz). Logs use the keys pod (namespace/name) and podUID.
package pleg
