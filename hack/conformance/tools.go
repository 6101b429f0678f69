//go:build tools

// Package tools pins the agnhost test image's program of k8s.io/kubernetes v1.37.2
// (test/images/agnhost), which hack/conformance.sh builds into the agnhost image the tests
// name. Nothing imports it.
package tools

import _ "k8s.io/kubernetes/test/images/agnhost"
