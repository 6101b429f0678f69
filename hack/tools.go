//go:build tools

// Package tools pins the binaries the end-to-end suite runs: kube-apiserver, kube-scheduler,
// kube-controller-manager and etcd. Nothing imports it; hack/build-apiserver.sh builds the
// four main packages with `go build`.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
