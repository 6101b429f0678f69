// Package order has the kubelet's container ordering rules as pure decisions a runtime
// calls (in the style of pleg.Events and package backoff): which init containers to start
// while a pod starts, when its main containers may start, which sidecars to restart, and in
// which order and with what grace the containers of a stopping pod are stopped.
//
// A sidecar is a restartable init container (an init container with restartPolicy
// Always). The kubelet v1.37 starts a pod's init containers one by one in their order: a
// regular init container is done once it exited 0, a sidecar once it started (once its
// startup probe succeeded when it has one) and it keeps running next to the main
// containers, restarted whenever it exits. A regular init container that fails is run
// again, unless the pod's restartPolicy is Never: then the pod fails. Init is that
// decision (the kubelet's computeInitContainerActions).
//
// A stopping pod's main containers are stopped first, in parallel, then its sidecars in
// the reverse order of their declaration, each once the containers before it stopped.
// Every container's preStop hook runs at once; its wait for its turn and its stop share
// the pod's grace period, and the StopContainer timeout is what is left, at least
// grace.MinContainerStopSeconds. Termination gives each running container what it waits
// for, TurnBudget how long it may wait, and StopGrace its StopContainer timeout (the
// kubelet's terminationOrdering and killContainer).
//
// Known simplifications: the decisions read the newest instance of each container
// (pleg.PodStatus.FindContainerStatusByName) as the kubelet's active containers of the
// current sandbox; changed container definitions, liveness probes and in-place resizes
// of sidecars are left to the runtime.
package order
