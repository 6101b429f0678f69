package kubelet

// NetworkNotReadyErrorMsg is the constant of the kubelet's pkg/kubelet/errors.go that
// pod_workers.go uses (the same value); written here rather than copying errors.go.
const NetworkNotReadyErrorMsg = "network is not ready"
