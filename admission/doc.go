// Package admission is the kubelet's pod admission (pkg/kubelet/lifecycle and
// pkg/kubelet/preemption, 1.37) as pure decisions and small handlers: whether a new pod
// may run on the node, given the pods already admitted there.
//
//   - Handler / HandlerFunc: an admit handler (the kubelet's PodAdmitHandler); Admit
//     runs a chain in order, the first refusal deciding. node.Config.Admit takes a chain
//     and calls it for each new pod of a config ADD, oldest first, against the active
//     admitted pods, outside every lock; a refused pod is never started and ends with
//     RejectedStatus (phase Failed, the handler's reason, "Pod was rejected: " + message).
//   - GeneralPredicates: the kubelet's generic predicates (resources against
//     allocatable with PodRequests, node selector and required node affinity, node name,
//     host ports, NoExecute taints for pods that are not static), each failure with the
//     kubelet's reason and message (Failure.Reason, Failure.Error: "OutOfcpu", "Node
//     didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000").
//     Predicates adds the OS and supplemental-groups checks; PredicateHandler is the
//     kubelet's predicate admit handler over a func returning the node.
//   - PodsToPreempt: the critical-pod preemption decision (which pods to evict, fewest
//     Guaranteed first, then Burstable, then BestEffort); CriticalPodPreemption is the
//     kubelet's failure handler that kills them (through a KillFunc, e.g. a node's
//     KillPod) with PreemptedStatus and admits the critical pod. In node.Config.Admit,
//     CriticalPodPreemption(node.Preempt, nil) kills through the node whose loop calls
//     the handler, waiting (the loop blocked) until each victim is stopped.
//
// Everything here is pure except the handlers' calls to the funcs they are given; nil
// inputs are refused or skipped, never a panic. Pods are read, never modified.
// Request arithmetic follows component-helpers' resource.PodRequests from the spec
// (sidecars, init containers, pod-level requests, overhead), reading a limit without a
// request as that request, as the API server defaults it. Not covered: the kubelet's
// other admit handlers (sysctls, AppArmor, the eviction manager's refusal under
// pressure, the device, CPU, memory and topology managers), the allocated resources of
// in-place resize, DRA.
package admission
