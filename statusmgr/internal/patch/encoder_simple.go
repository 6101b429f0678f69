//go:build podlife_simple

package patch

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// This file is the simple twin of encoder_fast.go, built with the tag podlife_simple (go
// build -tags podlife_simple, go test -tags podlife_simple): Status and Append are
// Reference's, the same bytes at a higher cost (see the package documentation).

// Simple is true: this build (tag podlife_simple) encodes with Reference.
const Simple = true

// Append appends Status's patch, Reference's here, to b (statuses not nil) and returns
// it, in b's memory if it fits.
func Append(b []byte, uid types.UID, oldStatus, newStatus *v1.PodStatus) (patch []byte, unchanged bool, err error) {
	p, unchanged, err := Reference(uid, oldStatus, newStatus)
	if err != nil {
		return nil, false, err
	}
	return append(b, p...), unchanged, nil
}
