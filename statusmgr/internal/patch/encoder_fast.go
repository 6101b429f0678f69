//go:build !podlife_simple

package patch

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// This file makes the typed encoder the package's; its simple twin, encoder_simple.go, is
// built instead with the tag podlife_simple (see the package documentation).

// Simple is false: Status and Append are the typed encoder's (build with -tags
// podlife_simple for Reference's).
const Simple = false

// Append appends Status's patch to b (statuses not nil) and returns it, in
// b's memory if it fits.
func Append(b []byte, uid types.UID, oldStatus, newStatus *v1.PodStatus) (patch []byte, unchanged bool, err error) {
	return appendTyped(b, uid, oldStatus, newStatus)
}
