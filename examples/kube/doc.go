// Package kube connects podlife's node agent to a real Kubernetes API server through
// client-go. It lives in the examples module so the library itself never depends on
// client-go.
//
// # Patcher: the status manager's side
//
// Patcher is a statusmgr.StatusPatcher: the status manager calls GetPod before each patch,
// PatchPodStatus with the library's strategic merge patch (which carries metadata.uid, so the
// API server refuses it with Conflict when the name now belongs to another pod) on the
// "status" subresource, and DeletePod for the final delete with grace period 0 and a UID
// precondition. Every call blocks for one HTTP round trip at most and honours its context;
// the Patcher never retries: the status manager does (it re-reads on Conflict and retries
// failed syncs on its next period).
//
// Errors are mapped so that the status manager's rules apply unchanged:
//   - NotFound means the pod is gone;
//   - one Forbidden means gone: the Node authorizer answers a node identity's GET of a pod
//     its graph does not connect to the node (because the pod no longer exists) with 403
//     and "no relationship found between node '<node>' and this object", not 404. GetPod
//     then lists the node's pods of that name (fieldSelector metadata.name and
//     spec.nodeName, the one list a node may make): none, and the answer becomes an
//     apierrors NotFound (its message keeps the original) and the status manager forgets
//     the pod; the pod itself if the graph only lagged. PATCH of pods/status and DELETE
//     are not subject to the graph, so their Forbidden is never mapped;
//   - every other Forbidden (RBAC, admission: a configuration mistake) is returned as it
//     is, so the status manager reports and retries it, and counted (Patcher.Stats);
//   - Conflict is passed through (re-read and retry);
//   - every other error is returned as client-go gave it.
//
// # Source: the config side
//
// Source lists and watches the pods bound to one node (fieldSelector spec.nodeName=<node>,
// the only list a node identity is allowed). Watch returns the initial list, which the agent
// sends to config.Mux as a Set, and a channel of watch events, which it sends as incremental
// ops (Add, Update, Remove), so the cost of a change does not grow with the number of pods.
// One goroutine serves the channel until the context ends and then closes it.
//
// The watch resumes from the last resourceVersion seen when the server ends it (a watch
// timeout), so nothing is lost or repeated. When the server has compacted that version
// (410 Gone / Expired), the Source lists again and emits the difference between what it had
// sent and the new list: Deleted for pods that vanished (or whose name now has another UID),
// Added for new UIDs, Modified for pods whose resourceVersion moved; unchanged pods are not
// sent again. That is exactly what config.Mux would derive from a Set of the new list, so
// a re-list neither loses nor duplicates a change. Failed list and watch calls are retried
// with a capped exponential backoff on the injected clock, and counted (Stats); a watch the
// server ends without delivering anything is also reopened only after the backoff, so a
// misbehaving server cannot make the Source spin. The backoff resets once a watch delivers.
//
// # Clients
//
// NewClient builds a clientset from a kubeconfig file, or from a server URL, CA file and
// bearer token, or, given neither, from the pod's in-cluster configuration
// (rest.InClusterConfig), with QPS and Burst raised above client-go's defaults (5 and 10), which
// would throttle a node's status patches.
package kube
