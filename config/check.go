package config

import (
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/podfacts"
)

// The annotations the kubelet keeps for itself. They are ignored when two versions of a pod
// are compared, and the stored pod's values of them survive every update. These are the
// public names of the keys; other packages' copies equal them.
const (
	// ConfigSourceAnnotationKey names the pod's source ("api", "file", ...). Merge sets it.
	ConfigSourceAnnotationKey = podfacts.SourceAnnotationKey
	// ConfigMirrorAnnotationKey marks a mirror pod (the API copy of a static pod).
	ConfigMirrorAnnotationKey = podfacts.MirrorAnnotationKey
	// ConfigFirstSeenAnnotationKey holds when the store first saw the pod, formatted with
	// SeenTimeLayout. Merge sets it on every added pod.
	ConfigFirstSeenAnnotationKey = podfacts.SeenAnnotationKey
	// ConfigHashAnnotationKey is the hash of a static pod's manifest. It is not a local
	// key: a change of it is a change of the pod.
	ConfigHashAnnotationKey = podfacts.HashAnnotationKey
)

// SeenTimeLayout is the time layout of the ConfigFirstSeenAnnotationKey annotation: RFC 3339
// with exactly nine digits of nanoseconds.
const SeenTimeLayout = podfacts.SeenTimeLayout

// localAnnotationKeys returns the kubelet-local annotation keys: the one list every
// comparison and merge of annotations uses.
func localAnnotationKeys() [3]string {
	return [3]string{ConfigSourceAnnotationKey, ConfigMirrorAnnotationKey, ConfigFirstSeenAnnotationKey}
}

// isLocalAnnotation reports whether key is one of the kubelet-local annotation keys.
func isLocalAnnotation(key string) bool {
	for _, k := range localAnnotationKeys() {
		if key == k {
			return true
		}
	}
	return false
}

// annotationsEqual reports whether existing and ref carry the same annotations apart from
// the local keys: every non-local key of ref is in existing with the same value and
// existing has no non-local key that ref lacks. Nil maps count as empty.
func annotationsEqual(existing, ref map[string]string) bool {
	n := 0
	for k, v := range ref {
		if isLocalAnnotation(k) {
			continue
		}
		if ev, ok := existing[k]; !ok || ev != v {
			return false
		}
		n++
	}
	// Every non-local key of ref is in existing; existing has no other non-local key
	// exactly when it has n of them.
	m := len(existing)
	for _, k := range localAnnotationKeys() {
		if _, ok := existing[k]; ok {
			m--
		}
	}
	return m == n
}

// semanticallyEqual reports whether the kubelet sees no meaningful difference between the
// two versions of a pod: spec, labels, deletion timestamp, deletion grace and the non-local
// annotations are all deeply equal.
// annKnownEqual says the caller already knows the annotations to be equal.
func semanticallyEqual(existing, ref *v1.Pod, tmp *scratch, annKnownEqual bool) bool {
	return stringMapEqual(existing.Labels, ref.Labels) &&
		int64PtrEqual(existing.DeletionGracePeriodSeconds, ref.DeletionGracePeriodSeconds) &&
		deletionTimestampEqual(existing, ref) &&
		(annKnownEqual || annotationsEqual(existing.Annotations, ref.Annotations)) &&
		specEqual(existing, ref, tmp)
}

// mergedAnnotations returns the annotations an existing pod gets when it takes a
// semantically different ref: a new map with all of ref's annotations, the first-seen key
// set to existing's value ("" if it has none), and every local key of existing overlaid
// with existing's value. Neither map is modified.
func mergedAnnotations(existing, ref map[string]string) map[string]string {
	out := make(map[string]string, len(ref)+3)
	for k, v := range ref {
		out[k] = v
	}
	out[ConfigFirstSeenAnnotationKey] = existing[ConfigFirstSeenAnnotationKey]
	for _, k := range localAnnotationKeys() {
		if v, ok := existing[k]; ok {
			out[k] = v
		}
	}
	return out
}

// CheckAndUpdatePod compares a stored pod (existing) with a new version of it from the same
// source (ref), updates existing in place, and says what kind of change it was. At most
// one result is true.
//
//   - No meaningful difference (spec, labels, deletionTimestamp, deletionGracePeriodSeconds
//     and annotations other than the local config.source, config.mirror and config.seen
//     keys are all deeply equal; nil and empty maps differ, except that nil annotations
//     count as empty): if the status differs, existing takes ref's status and
//     needReconcile is true; otherwise nothing changes and all three are false.
//   - A meaningful difference: ref's config.seen annotation is overwritten with existing's
//     ("" if existing has none; a nil ref map is created first), then existing takes ref's
//     spec, labels, deletionTimestamp, deletionGracePeriodSeconds, generation and status,
//     and a new annotation map holding ref's annotations with existing's local keys laid
//     over them. needGracefulDelete is true if ref has a deletionTimestamp, else
//     needUpdate is true.
//
// Nothing else is copied (name, UID, resourceVersion, finalizers, owner references...).
// existing shares the copied fields' memory with ref afterwards (as in the kubelet), so
// neither should be modified later. A nil existing or ref gives three false results and
// changes nothing.
func CheckAndUpdatePod(existing, ref *v1.Pod) (needUpdate, needReconcile, needGracefulDelete bool) {
	if existing == nil || ref == nil {
		return false, false, false
	}
	op, changed := classify(existing, ref, nil, false)
	if !changed {
		return false, false, false
	}
	if op != Reconcile {
		if ref.Annotations == nil {
			ref.Annotations = map[string]string{}
		}
		ref.Annotations[ConfigFirstSeenAnnotationKey] = existing.Annotations[ConfigFirstSeenAnnotationKey]
	}
	take(existing, ref, op)
	return op == Update, op == Reconcile, op == Delete
}

// takeMeaningful copies into existing what a meaningful change carries: spec, labels,
// deletion timestamp and grace, generation, status, and the merged annotations. ref is
// not modified.
func takeMeaningful(existing, ref *v1.Pod) {
	existing.Spec = ref.Spec
	existing.Labels = ref.Labels
	existing.DeletionTimestamp = ref.DeletionTimestamp
	existing.DeletionGracePeriodSeconds = ref.DeletionGracePeriodSeconds
	existing.Generation = ref.Generation
	existing.Status = ref.Status
	existing.Annotations = mergedAnnotations(existing.Annotations, ref.Annotations)
}

// classify is CheckAndUpdatePod's decision without its effects: the category of the
// change from existing to ref (Update, Delete or Reconcile), and false if nothing
// changed. Neither pod is modified. annKnownEqual is as for semanticallyEqual.
func classify(existing, ref *v1.Pod, tmp *scratch, annKnownEqual bool) (Op, bool) {
	if semanticallyEqual(existing, ref, tmp, annKnownEqual) {
		if statusEqual(existing, ref, tmp) {
			return 0, false
		}
		return Reconcile, true
	}
	if ref.DeletionTimestamp != nil {
		return Delete, true
	}
	return Update, true
}

// take makes existing the new version ref, a change classify found to be op: ref's status
// for a Reconcile, what takeMeaningful copies otherwise. ref is not modified, and neither
// is existing's annotation map (it gets a new one).
func take(existing, ref *v1.Pod, op Op) {
	if op == Reconcile {
		existing.Status = ref.Status
		return
	}
	takeMeaningful(existing, ref)
}
