// Package podgc is the control plane's side of pod deletion: the decisions of the pod
// garbage collector (kube-controller-manager's podgc controller) as pure functions, and a
// thin periodic Runner that applies them through interfaces the caller implements.
//
// A pod object normally leaves the API server because its kubelet, once the containers are
// stopped, deletes it with grace 0. The garbage collector handles the pods no kubelet will
// ever finish: pods bound to a node that is gone, pods deleted before they were scheduled,
// terminating pods on a node declared out of service, and, beyond a threshold, pods that
// finished long ago.
//
// # One cycle
//
// Every cycle works on one snapshot of all pods and all nodes and runs four passes, in the
// controller's order (Decide):
//
//  1. terminated (TerminatedOverThreshold): when more than TerminatedPodThreshold pods are
//     terminated (phase neither Pending, Running nor Unknown), the excess is deleted,
//     evicted pods first, then the oldest by creation time (SortForDeletion). A threshold
//     <= 0 disables this pass.
//  2. out-of-service (TerminatingOnOutOfServiceNodes): terminating pods (deletionTimestamp
//     set) on a node that is not Ready and carries the node.kubernetes.io/out-of-service
//     taint. A node without conditions is not Ready.
//  3. orphaned (Orphaned): pods bound to a node that has been missing from the node list
//     for the quarantine period (Quarantine, 40 s by default) and, with a NodeChecker,
//     confirmed gone by a second look.
//  4. unscheduled (UnscheduledTerminating): terminating pods bound to no node.
//
// A pod selected twice is deleted once, for the first reason. Pods and nodes that cannot be
// handled safely (nil, no name, a pod without UID) are left out and reported, never a panic.
//
// # Deleting a pod
//
// A pod not in a terminal phase (Succeeded or Failed) is first marked Failed (FailedStatus,
// written as the strategic merge patch StatusPatch, which carries the pod's UID as a
// precondition): with no kubelet left to do it, an orphaned pod would otherwise stay Running
// forever for the controllers that watch it. Orphaned pods also get the DisruptionTarget
// condition with reason DeletionByPodGC (OrphanedCondition); the other reasons add no
// condition, as in the controller. Then the pod is deleted with grace period 0 and a UID
// precondition (DeleteOptions), so a pod recreated under the same name is never touched.
// NotFound from either write means the pod is gone: success. A failed patch means no delete.
//
// # The quarantine timeline
//
// The node list may lag: a node just registered, an informer not yet caught up. A pod is
// therefore never orphaned the first time its node is missed:
//
//	t=0   node n missing from the list      Observe: n enters quarantine (since 0)
//	t=20  still missing                     nothing deleted
//	t=40  still missing, 40 s >= period     n expired -> NodeChecker? -> pods on n orphaned
//	t=60  still missing                     still expired: pods whose delete failed retried
//	      (n listed again at any point)     n forgotten; a later miss starts again at 0
//	      (NodeChecker finds n)             quarantine restarts at the check's time
//
// # The Runner
//
// New(Config) validates and returns a Runner. Run(ctx) blocks: it runs a cycle at once and
// then CheckPeriod (20 s by default, measured on Config.Clock) after the end of each cycle,
// until ctx ends; it starts goroutines only inside a cycle (at most MaxConcurrentDeletes
// writes at once) and waits for them before the cycle returns. RunOnce(ctx) runs one cycle
// and returns its Report. Guarantees:
//
//   - One cycle at a time per Runner; RunOnce during a cycle returns ErrCycleInProgress.
//   - No lock is held while the caller's Lister, PodWriter or NodeChecker runs.
//   - Nothing is swallowed: a failed list abandons the cycle; a failed node check keeps that
//     node's pods; a failed patch or delete is a Failure in the Report. Each is logged,
//     counted in Stats, returned by RunOnce (joined, wrapping ErrList, ErrNodeCheck, ErrPatch
//     or ErrDelete and the caller's error) and retried at the next cycle, which decides
//     afresh from a new snapshot.
//   - Once ctx ends no new write starts; Run returns after the cycle under way returns.
//
// Package podgctest has an in-memory API server implementing the interfaces, and a runner
// for text scenario scripts (testdata/scenarios holds this package's).
//
// Nothing in this package keeps package-level state or reads the wall clock outside
// Config.Clock; the decision functions take their time as an argument.
package podgc
