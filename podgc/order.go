package podgc

import (
	"cmp"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// DeletionOrderLess reports whether pod a is deleted before pod b when only some pods of a
// list are deleted: evicted pods (see IsEvicted) first, so that terminated pods of
// controllers survive longer; then the oldest by creation time; then by name, namespace and
// UID. The first two keys and the name are the controller's; namespace and UID only make the
// order total. Nil pods sort last.
func DeletionOrderLess(a, b *v1.Pod) bool { return compareForDeletion(a, b) < 0 }

// SortForDeletion sorts pods in place into deletion order (see DeletionOrderLess). The sort
// is deterministic: equal keys are impossible for distinct pods with distinct UIDs.
func SortForDeletion(pods []*v1.Pod) {
	slices.SortStableFunc(pods, compareForDeletion)
}

func compareForDeletion(a, b *v1.Pod) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	if ea, eb := IsEvicted(a), IsEvicted(b); ea != eb {
		if ea {
			return -1
		}
		return 1
	}
	if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Or(
		cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.Namespace, b.Namespace),
		cmp.Compare(a.UID, b.UID),
	)
}
