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
// the only list a node identity is allowed) with client-go's Reflector, and sends what it
// learns as config.PodUpdates of the source "api" (node.SourceAPI), typically to the
// node's Channel(ctx, node.SourceAPI): a config.Set of every pod after each list (the
// first, and every re-list), then a config.Add, Update or Remove for each watch event
// (Added, Modified, Deleted), so the cost of a change does not grow with the number of
// pods. The Source keeps no pods of its own: it is the Reflector's store, and config.Store
// downstream keeps them and derives what each update changed, a re-list's Set included
// (pods gone, new, changed; unchanged pods change nothing).
//
// The Reflector does the rest, as for every informer: it resumes a watch the server ends
// from the last resourceVersion; after a watch error (410 Gone once the server has
// compacted that version, or any other) it lists again; failed lists and watches are
// retried with its capped, jittered exponential backoff on the injected clock; against a
// server that streams lists (WatchListClient), the list is a watch with initial events,
// still delivered as one Set. Run returns once its context has ended; a list request then
// in flight, cancelled with the context, ends its goroutine when it returns.
//
// # Clients
//
// NewClient builds a clientset from a kubeconfig file, or from a server URL, CA file and
// bearer token, or, given neither, from the pod's in-cluster configuration
// (rest.InClusterConfig), with QPS and Burst raised above client-go's defaults (5 and 10), which
// would throttle a node's status patches.
package kube
