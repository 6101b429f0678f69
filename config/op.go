package config

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// Op is the kind of a PodUpdate. As an input to Store.Merge it says how to fold the listed
// pods into the source's state; in the stream a Mux delivers it says which category of
// change the listed pods are.
type Op int

const (
	// Set lists every pod of the source: pods not listed are removed. The only op a
	// current kubelet source sends.
	Set Op = iota
	// Add upserts the listed pods, classified by content (input); pods new to the source
	// (output).
	Add
	// Update upserts the listed pods, classified by content (input); pods whose spec,
	// labels, annotations or deletion fields changed (output).
	Update
	// Delete upserts the listed pods, classified by content (input); pods that are being
	// deleted gracefully: deletionTimestamp is set and something meaningful changed (output).
	Delete
	// Remove drops the listed UIDs from the source (input); pods gone from the source
	// (output).
	Remove
	// Reconcile is invalid as an input; as an output it lists pods whose status alone
	// changed.
	Reconcile
)

// String returns the op's name in lower case ("set", "add", ...), or "Op(N)" for a value
// that is not one of the constants.
func (o Op) String() string {
	switch o {
	case Set:
		return "set"
	case Add:
		return "add"
	case Update:
		return "update"
	case Delete:
		return "delete"
	case Remove:
		return "remove"
	case Reconcile:
		return "reconcile"
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// valid reports whether o is one of the declared constants.
func (o Op) valid() bool { return o >= Set && o <= Reconcile }

// PodUpdate is one message from a pod source (as input) or one category of changes of one
// source (as a Mux's output).
type PodUpdate struct {
	// Pods are the pods concerned. As input they are read, never modified, and may be
	// referenced by the store afterwards: the caller must not modify them once passed
	// (the contract of an informer's objects). As output they are deep copies owned by the
	// receiver, or, with MuxConfig.SharedPods, the store's objects, read-only.
	Pods []*v1.Pod
	// Op is what the update means; see the constants.
	Op Op
	// Source names the pod source ("api", "file", "http", ...). Sources never affect each
	// other.
	Source string
}

// Changes is what one Store.Merge changed in one source, by category. A pod appears in at
// most one category. Adds, Updates, Deletes and Reconciles are in input order; Removes are
// in input order for a Remove and sorted by namespace, name and UID for a Set (whose
// removed pods are the ones not listed). Every pod is a deep copy that shares no memory with
// the store or with the input, unless the store shares its pods (StoreConfig.SharedPods):
// then every pod is the store's read-only object.
type Changes struct {
	Adds       []*v1.Pod
	Updates    []*v1.Pod
	Deletes    []*v1.Pod
	Removes    []*v1.Pod
	Reconciles []*v1.Pod
}

// Len returns the number of pods in all categories together.
func (c Changes) Len() int {
	return len(c.Adds) + len(c.Updates) + len(c.Deletes) + len(c.Removes) + len(c.Reconciles)
}
