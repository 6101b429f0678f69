// Package e2e is the end-to-end suite of the node agent against a real kube-apiserver backed by
// a real etcd: the agent runs as the node identity system:node:node1 through the client-go
// adapters of package kube, on the in-memory runtime (a virtual node), while the tests act as
// an admin user and watch the pods on the server.
//
// The CRI tests (TestE2ECRI*) run the agent on real containers instead: package
// examples/cri over a containerd whose endpoint PODLIFE_E2E_CRI names, with the test image
// PODLIFE_E2E_IMAGE (hack/containerd.sh starts one and imports the image); they skip
// without it. TestE2ECRIMeasure (50 pods, docs/PERFORMANCE.md) also needs
// PODLIFE_E2E_CRI_BENCH=1. TestE2ECRIStartLatency (with PODLIFE_E2E_LATENCY=1) logs where
// a new pod's time goes until the server shows it Running (the node's steps, the runtime's
// calls); with PODLIFE_E2E_KUBELET=1 it measures the real kubelet the same way.
//
// The tests skip unless PODLIFE_E2E_APISERVER names a directory holding admin.kubeconfig and
// node1.kubeconfig for a running server; hack/e2e.sh builds and starts one and runs them:
//
//	hack/e2e.sh                  # from the repository root
//
// Without the variable, `go test ./...` passes offline and quickly.
package e2e
