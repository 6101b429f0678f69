// Package apitest is an in-memory API server for pods that behaves like kube-apiserver for
// the calls a node agent and the pod garbage collector make. It is the one fake behind
// statusmgr/statusmgrtest.FakeAPI (the status manager's StatusPatcher) and
// podgc/podgctest.Server (the garbage collector's Lister and PodWriter); use those for
// their calls, and this package for the server's own rules.
//
// What it does as the API server does (examples/e2e checks the same against a real
// kube-apiserver):
//
//   - Every change bumps the pod's resourceVersion, from one counter for the whole server.
//   - Create defaults the pod as kube-apiserver 1.37 does (DefaultPod: restartPolicy
//     Always, terminationGracePeriodSeconds 30, dnsPolicy ClusterFirst, imagePullPolicy,
//     probes, ports, volumes, ...), gives a pod without a UID a new one, stamps
//     creationTimestamp, sets generation 1 and resets the status to phase Pending with
//     the QoS class (and the SchedulingGated condition of a gated pod); a taken name is
//     AlreadyExists.
//   - PatchStatus applies a strategic merge patch through the status subresource: the
//     spec, deletionTimestamp, deletionGracePeriodSeconds, ownerReferences, name,
//     namespace, UID, creationTimestamp and generation stay as they were; labels,
//     annotations, finalizers and the status change. A metadata.uid or
//     metadata.resourceVersion in the patch is a precondition: Conflict when the pod's
//     differs. A missing pod is NotFound, a malformed patch BadRequest.
//   - Delete takes metav1.DeleteOptions: UID and resourceVersion preconditions
//     (Conflict); the grace period is the options', else the spec's, else 30 s (the
//     default the server sets on create); a negative one counts as 1 s; a pod not bound
//     to a node or in a terminal phase goes at once. A positive grace keeps the object
//     with deletionTimestamp (now + grace) and deletionGracePeriodSeconds, to be removed
//     by the node's final delete (grace 0); a later delete may only shorten the grace
//     period (moving the timestamp back, never into the past). Grace 0 removes the
//     object. A missing pod is NotFound.
//   - Watch lists a node's pods and then streams ADDED, MODIFIED and DELETED events of
//     the pods bound to it, in the order of the changes.
//
// What it adds for tests: Put and MarkDeleted store a pod as given (fixtures: not
// defaulted; DefaultPod makes one look like a stored object); Pod, Pods
// and WaitForPods read the store without polling; FinalDelete is the node agent's final
// delete, listed by FinalDeleted; SetObserver hears of every change.
//
// Guarantees:
//
//   - A Server is safe for concurrent use; the zero value is not usable (NewServer).
//   - No user code (the observer, a WaitForPods condition) runs under the Server's
//     lock. The observer hears of every change in the order the Server made them, after
//     the lock is released, before any watcher does and before WaitForPods wakes for it.
//     It may call the Server (a change it makes is delivered after it returns) and it
//     may block (other calls go on; their changes queue up). A call returns once its
//     changes are delivered, unless another goroutine is delivering at that moment: that
//     one delivers them, in order.
//   - Stored pods are never modified in place; everything handed out is a deep copy,
//     but the removed pod Delete and FinalDelete return (read it, do not modify it).
//   - Times come from the Server's clock (SetClock; the real clock by default).
package apitest
