// Package podlife is the kubelet's pod lifecycle state machine as an importable Go library.
//
// A node agent, a virtual-kubelet provider or a test imports podlife, plugs in its own
// container runtime and its own API client, and gets the kubelet's lifecycle semantics: a pod
// is synced until it must stop, then terminated within its grace period, then cleaned up, then
// its final status is written back and the pod object is deleted from the API server — never
// earlier, never twice, never lost.
//
// # The lifecycle
//
// One pod, as the pod worker (package podworker) drives it:
//
//	UpdatePod(create)
//	      |
//	      v
//	+-----------------------------+  deletionTimestamp set, terminal phase,
//	| syncing                     |  kill request, or orphaned runtime pod
//	| PodSyncer.SyncPod, again on |-----------------------------+
//	| every update and resync     |                             |
//	+-----------------------------+                             v
//	                                 +-------------------------------------+
//	                                 | terminating                         |
//	                                 | PodSyncer.SyncTerminatingPod with   |
//	                                 | the effective grace period, retried |
//	                                 | until nil; a shorter grace cancels  |
//	                                 | it and runs it again                |
//	                                 +-------------------------------------+
//	                                                    | returned nil
//	                                                    v
//	+-----------------------------+  returned nil  +-----------------------------+
//	| finished                    |<---------------| terminated                  |
//	| ignores every update until  |                | PodSyncer.SyncTerminatedPod |
//	| SyncKnownPods forgets it    |                | cleans up once nothing runs |
//	+-----------------------------+                +-----------------------------+
//
// Around it, the status manager (package statusmgr) writes each new status to the API server as
// a minimal patch; once the pod is terminal on the server, its deletion was requested and the
// pod worker has finished it, it deletes the object with grace 0 and a UID precondition.
//
// # The packages
//
//	grace      pure: the grace-period arithmetic, pod level (Effective) and container level
//	config     pure: what changed in a pod source (Add, Update, Delete, Remove, Reconcile),
//	           and a multi-source mux that turns source updates into a stream of changes
//	pleg       the runtime's view: runtime pod and container types, the pod status cache and
//	           the relisting event generator
//	podworker  one serialized worker per pod UID: sync → terminating → terminated → finished
//	statusmgr  versioned pod statuses, merge with the server's copy, patch, the final delete
//	podgc      the control plane's side: which pods the pod garbage collector deletes
//	prober     the kubelet's prober: when each startup, liveness and readiness probe is due
//	           and what its result is (a pure Machine), and a Runner with one timer
//	admission  pure: the kubelet's admit handlers, generic predicates and critical-pod
//	           preemption decision
//	eviction   pure: the eviction manager's pod-level decisions and the evicted status
//	backoff    pure: the kubelet's container restart and image-pull back-offs, for runtimes
//	node       the kubelet's sync loop around all of them: a node agent is node.New + Run
//
// Dependencies point one way: podworker uses grace and pleg; statusmgr uses grace; eviction
// uses admission; node uses config, grace, pleg, podworker, statusmgr, prober and admission;
// nothing in the library uses node, podworker, statusmgr or podgc but node. The decisions
// the kubelet hides are exported (grace.Effective, config.CheckAndUpdatePod, pleg.Events,
// statusmgr.MergePodStatus, statusmgr.CanBeDeleted, the admission predicates, the eviction
// ranking, node.ActiveDeadlineExceeded, the back-offs) so that users can test their own
// logic with them.
//
// # A node agent in 20 lines
//
// Package node is the kubelet's sync loop: the caller gives it a container runtime
// (node.Runtime: the runtime's view plus start, kill, clean up, remove) and an API client
// (statusmgr.StatusPatcher), feeds it the node's pods per source, and runs it:
//
//	n, err := node.New(node.Config{
//		NodeName: "node1",
//		Runtime:  myRuntime, // a node.Runtime: examples/cri drives containerd over the CRI
//		Patcher:  myAPI,     // a statusmgr.StatusPatcher: examples/kube wraps client-go
//	})
//	if err != nil {
//		return err
//	}
//	go func() {
//		// The API server's pods bound to node1: the list as a Set, then each watch event.
//		n.Update(ctx, config.PodUpdate{Op: config.Set, Source: node.SourceAPI, Pods: listed})
//		for ev := range watch {
//			n.Update(ctx, config.PodUpdate{Op: opOf(ev), Source: node.SourceAPI, Pods: []*v1.Pod{ev.Pod}})
//		}
//	}()
//	return n.Run(ctx) // until ctx ends; every goroutine it started has stopped when it returns
//
// node.Example runs this on the in-memory runtime and API server of node/nodetest and
// statusmgr/statusmgrtest.
//
// # The parts, for callers who wire them themselves
//
//   - podworker.PodSyncer: the runtime actions (start and update a pod, stop it within a grace
//     period, stop an orphaned runtime pod, clean up a stopped pod).
//   - pleg.RuntimeService: the runtime's view (list pods with their containers and sandboxes,
//     the detailed status of one pod).
//   - statusmgr.StatusPatcher: the API client (get a pod, patch its status, delete it with
//     grace 0 and a UID precondition).
//
// Each comes with a ...Funcs adapter. Everything that runs goroutines takes a context and stops
// with it; everything that tells time takes a k8s.io/utils/clock clock, so tests run on fake
// time.
//
// Every constructor that takes a Config (podworker.New, statusmgr.New, pleg.New, podgc.New,
// config.NewMux) validates it and returns an error wrapping its package's ErrInvalidConfig,
// never a value that crashes later: an interface field that is set but holds a nil pointer,
// map, func, chan or slice (a "typed nil", such as a nil *pleg.Cache as podworker's Cache)
// is such an error, like a missing required field or a negative duration.
package podlife
