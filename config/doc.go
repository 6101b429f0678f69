// Package config is the front door of the pod lifecycle: it turns what pod sources report
// (the API server, static manifests, an HTTP endpoint, a test) into a stream of changes
// for the pod workers, classified exactly as the kubelet's config package does.
//
// # Where it sits
//
//	source "api"  ─┐                         ┌─> Remove     (gone from the source)
//	source "file" ─┼─> Mux ─> Store.Merge ───┼─> Add        (new to the source)
//	source ...    ─┘   (lock, order,         ├─> Update     (spec/labels/annotations changed)
//	                    ready signals)       ├─> Delete     (being deleted gracefully)
//	                                         └─> Reconcile  (status alone changed)
//
// A node agent reads the Mux's Updates channel and hands each pod to the pod workers
// (podworker.UpdatePod with the matching update type) and the status manager.
//
// # The pure part: Store and CheckAndUpdatePod
//
// Store keeps, per source, the last version of every pod by UID. Merge folds one PodUpdate
// into it and returns Changes:
//
//   - Set (the only op a current kubelet source sends) lists the whole source: new UIDs are
//     Adds, known UIDs are compared by CheckAndUpdatePod, and stored UIDs not listed are
//     Removes. The first merged Set marks the source as seen (SeenSource).
//   - Add, Update and Delete (the legacy incremental ops, kept for non-API sources) upsert
//     the listed pods and classify them by content; they never remove anything.
//   - Remove drops the listed UIDs. Reconcile and unknown values are invalid input.
//
// CheckAndUpdatePod decides what kind of change a new version of a known pod is. Only spec,
// labels, deletionTimestamp, deletionGracePeriodSeconds and annotations (apart from the
// local config.source, config.mirror and config.seen keys) are meaningful; a meaningful
// change is a graceful Delete if the new version has a deletionTimestamp and an Update
// otherwise; a change of status alone is a Reconcile; anything else (resourceVersion,
// finalizers, owner references) is nothing. Comparisons have reflect.DeepEqual's exact
// semantics (nil and empty differ), without its cost: see equal_fast.go.
//
// By default (NewStore, the zero StoreConfig and the zero MuxConfig) every listed pod of
// a known UID is compared, as the kubelet compares it, whatever its resourceVersion: a
// test fixture that changes a pod's labels, deletionTimestamp or status under the same
// resourceVersion gets the kubelet's Update, Delete or Reconcile.
//
// The resourceVersion shortcut, an opt-in for a source that is the API server
// (StoreConfig.TrustResourceVersions, MuxConfig.TrustResourceVersions; package node turns
// it on for its "api" source): the API server changes a pod's resourceVersion on every
// write, so a pod of the "api" source (APISource) listed with a non-empty resourceVersion
// equal to that of the version of its UID last listed is unchanged: it costs a map lookup
// and a string comparison, not a walk through the pod, and the stored pod stays as it was.
// Pods of other sources (file, http) and pods without a resourceVersion are always
// compared. The trade: changed contents under an unchanged resourceVersion, which the API
// server never sends, are not seen.
//
// The pointer rule, part of the shortcut: an informer lists an unchanged pod as the same
// object every time, so an "api" pod at the address last listed for a UID, whose UID,
// name, namespace and resourceVersion are the very same strings in memory, is unchanged
// after reading its header alone: no lookup by UID, no hashing of its name for the
// duplicate-name filter (the name's hash is kept from the last listing). It trusts what
// the shortcut trusts and no more (see StoreConfig.TrustResourceVersions), keeps no input
// alive (addresses are kept as numbers), and a source that lists new objects every time
// does without it, 8 Sets at a time.
//
// The fast paths and their simple twin: the compiled, unsafe comparisons and the pointer
// rule (with its cache-warming loop) are the package's fast paths (equal_fast.go,
// listing.go). Building with the tag podlife_simple (go build -tags podlife_simple, go
// test -tags podlife_simple ./config/) swaps in their simple twin (equal_simple.go):
// reflect.DeepEqual for every comparison and no pointer rule (every listed pod is found
// by its UID). The results are the same, only the cost differs, so a user can rule the
// fast paths out while debugging; the package's tests, the parity tests against the
// kubelet's merge and the fuzz tests against the naive model among them, pass with
// either.
//
// Invariants of a Store:
//   - per source, at most one pod per UID; sources never affect each other;
//   - every stored pod carries config.source (its source) and config.seen (when the store
//     first saw it, from the injected clock, in SeenTimeLayout), and keeps both for life;
//   - within one update, a pod whose full name (name_namespace) or UID an earlier pod of
//     the update has is dropped and reported (the first wins), as are nil pods and pods
//     without a UID: Apply returns them as Drops; Merge, the pinned form, discards them;
//   - one merge puts a pod in at most one category.
//
// Memory: the store reads its inputs and keeps references into them, so a pod must not be
// modified after it is passed in (an informer's objects satisfy this). Returned pods are
// deep copies the receiver owns. Only changed pods are returned, so an update in which
// little changed costs little. The kubelet differs: it annotates the input objects in
// place and stores them.
//
// Shared pods (StoreConfig.SharedPods, MuxConfig.SharedPods): the store returns its own
// objects instead of deep copies, as the kubelet's config hands its stored pods on. They
// are shared with the store, with every other receiver and with the inputs, and must be
// treated as read-only. The store never writes to a pod it has returned: a change gives
// the stored pod a new Pod struct (copy on write: one shallow copy, plus a new annotation
// map when the annotations changed), and receivers of the old one keep an unchanging
// version. A node agent (package node) uses this mode: its pods are read-only everywhere,
// as in the kubelet.
//
// A Store is not safe for concurrent use, never blocks, never reads the wall clock except
// through its clock, and never panics on bad input.
//
// # The runner: Mux
//
// Mux is the kubelet's PodConfig: it wraps a Store with a lock and delivers each merge's
// changes on one channel, in the kubelet's order: Removes, Adds, Updates, Deletes, then
// Reconciles, each as a PodUpdate of that Op with only non-empty categories sent. The
// first Set of a source with no adds, updates or deletes sends an empty Add, as the kubelet
// does, so that a reader learns the source is ready. Sources feed it by calling Update
// (which returns ErrUnknownOp and the like to the caller) or through a channel from
// Channel, served by a goroutine that stops when the channel's context ends. SourceReady
// and SeenAllSources tell whether sources have sent their first Set.
//
// Before the store sees an update, the Mux drops its pods without a name (ErrEmptyName)
// and those MuxConfig.Accept refuses (a node agent's pods of another node), reported as
// the store's drops are; with MuxConfig.OnlySources, an update from a source not in
// MuxConfig.Sources fails (ErrUnknownSource). Close tells the sources that the reader is
// gone: later updates fail with ErrClosed.
//
// Delivery blocks while the output channel is full; every blocking point honours the
// caller's context. Changes of one merge are delivered together, and merges of all sources
// are delivered in the order they were merged.
package config
