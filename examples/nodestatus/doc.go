// Package nodestatus makes a node agent a node the cluster can use, as the kubelet does
// (pkg/kubelet/kubelet_node_status.go, nodestatus/setters.go and nodelease in
// k8s.io/kubernetes v1.37.2): it registers the Node object, posts its status and renews
// its Lease, all as the node's own identity (system:node:<name> in system:nodes, under
// the Node authorizer and the NodeRestriction admission).
//
// # Contract
//
// Registration. Run first registers the node: it creates Config.Node (its name, labels,
// annotations, taints and status as Status below). If the Node exists (AlreadyExists),
// it adopts it: it reads it and reconciles the labels the kubelet reconciles
// (kubernetes.io/hostname, the topology zone and region and their failure-domain beta
// forms, node.kubernetes.io/instance-type and its beta form, kubernetes.io/os and
// kubernetes.io/arch, the beta os and arch, node.kubernetes.io/windows-build): each one
// Config.Node carries replaces the existing value (an empty value removes it), every
// other label of the existing Node is kept; when something changed it patches the Node
// (a strategic merge patch of the status subresource, as the kubelet's PatchNodeStatus).
// Any other error is retried with the kubelet's backoff (100 ms doubling to 7 s) until
// it succeeds or the context ends. New refuses a label NodeRestriction does not let a
// node set on itself (AllowedLabel): the API server would refuse the whole Node.
//
// Status. Every Config.UpdateFrequency (10 s, the kubelet's nodeStatusUpdateFrequency)
// Run reads the Node and computes its status: addresses (Config.Addresses, then a
// Hostname address with the node's name when none is given), capacity and allocatable
// (Config.Node's), nodeInfo (Config.Node's, with KubeletVersion and
// Config.RuntimeVersion), daemonEndpoints.kubeletEndpoint.Port (Config.KubeletPort,
// 10250) and four conditions in the kubelet's order and wording: MemoryPressure,
// DiskPressure and PIDPressure False (KubeletHasSufficientMemory,
// KubeletHasNoDiskPressure, KubeletHasSufficientPID), then Ready: True, KubeletReady,
// "kubelet is posting ready status", or False, KubeletNotReady, with Config.Health's
// error (e.g. "PLEG is not healthy: ...") and any missing capacity of cpu, memory, pods
// and ephemeral-storage as its message (several errors as "[a, b]", as the kubelet's
// aggregate). A condition's lastTransitionTime changes only when its status does; its
// lastHeartbeatTime is the time of the update. The status is patched (strategic merge
// patch of the status subresource, as the kubelet's PatchNodeStatus) when it changed
// (heartbeat times aside) or kubernetes.io/os or arch is missing, and otherwise once
// Config.ReportFrequency (5 min, nodeStatusReportFrequency) has passed since the last
// patch; the first update comes right after registration. Unlike the kubelet, no random
// delay is added to the report frequency. A failed update is retried up to 5 times
// (nodeStatusUpdateRetry), then on the next period.
//
// Re-registration. When reading the Node for a status update answers NotFound (the
// Node object was deleted), Run registers it again as at start, then posts its status.
// (The v1.37.2 kubelet itself only registers once per process; the node lifecycle
// controller's users expect a deleted node to come back, as virtual-kubelet's does.)
//
// Lease. Run renews the Lease kube-node-lease/<node name> with
// k8s.io/component-helpers/apimachinery/lease's controller, as the kubelet's node lease:
// holderIdentity the node's name, leaseDurationSeconds Config.LeaseDurationSeconds (40),
// renewed every Config.RenewInterval (10 s, a quarter of the duration), with an owner
// reference to the Node (kind Node, its name and UID; set again when the Node was
// registered anew with another UID). The Lease is not deleted when Run ends (the
// kubelet leaves it to expire).
//
// Time is Config.Clock's (k8s.io/utils/clock), except the lease controller's renew
// period and backoff, which are real time (the controller's own wait loop); the lease's
// renewTime is Config.Clock's. Run returns once its context has ended and every
// goroutine it started has returned.
package nodestatus
