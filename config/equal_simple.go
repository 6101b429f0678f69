//go:build podlife_simple

package config

import (
	"reflect"

	v1 "k8s.io/api/core/v1"
)

// This file is the simple twin of equal_fast.go, built with the build tag podlife_simple
// (go build -tags podlife_simple, go test -tags podlife_simple): the comparisons are
// reflect.DeepEqual, as the kubelet's, and the pointer rule is off (fastPaths false), so
// every listed pod is found by its UID. The merge's results are the same; only its cost
// differs. It is there to rule the fast paths out while debugging, and the package's
// tests (parity with the kubelet's merge, the fuzz tests against the naive model) run
// against it too.

// fastPaths: the pointer rule and its cache-warming loop are not used.
const fastPaths = false

// scratch is the fast comparisons' scratch space; the simple twin needs none.
type scratch struct{}

// specEqual reports whether reflect.DeepEqual(a.Spec, b.Spec) holds.
func specEqual(a, b *v1.Pod, _ *scratch) bool { return reflect.DeepEqual(a.Spec, b.Spec) }

// statusEqual reports whether reflect.DeepEqual(a.Status, b.Status) holds.
func statusEqual(a, b *v1.Pod, _ *scratch) bool { return reflect.DeepEqual(a.Status, b.Status) }

// deletionTimestampEqual reports whether reflect.DeepEqual(a.DeletionTimestamp,
// b.DeletionTimestamp) holds.
func deletionTimestampEqual(a, b *v1.Pod) bool {
	return reflect.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp)
}

// int64PtrEqual is reflect.DeepEqual on two *int64.
func int64PtrEqual(a, b *int64) bool { return reflect.DeepEqual(a, b) }

// stringMapEqual is reflect.DeepEqual on two map[string]string.
func stringMapEqual(a, b map[string]string) bool { return reflect.DeepEqual(a, b) }
