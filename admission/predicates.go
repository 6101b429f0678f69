package admission

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/podlife/podlife/internal/podfacts"
	"github.com/podlife/podlife/internal/podres"
)

// The kubelet's admission reasons (pkg/kubelet/lifecycle/predicate.go) and the
// scheduler's predicate names and descriptions it reports.
const (
	PodOSSelectorNodeLabelDoesNotMatch   = "PodOSSelectorNodeLabelDoesNotMatch"
	PodOSNotSupported                    = "PodOSNotSupported"
	InvalidNodeInfo                      = "InvalidNodeInfo"
	SupplementalGroupsPolicyNotSupported = "SupplementalGroupsPolicyNotSupported"
	UnexpectedAdmissionError             = "UnexpectedAdmissionError"
	UnknownReason                        = "UnknownReason"
	// InsufficientResourcePrefix + a resource name is the reason of a resource that
	// does not fit ("OutOfexample.com/gpu").
	InsufficientResourcePrefix = "OutOf"
	OutOfCPU                   = "OutOfcpu"
	OutOfMemory                = "OutOfmemory"
	OutOfEphemeralStorage      = "OutOfephemeral-storage"
	OutOfPods                  = "OutOfpods"

	// PredicateNodeAffinity and the others are the predicate names, each the reason of
	// its refusal; the Desc* constants are their descriptions in the message
	// ("Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector").
	PredicateNodeAffinity    = "NodeAffinity"
	PredicateNodeName        = "NodeName"
	PredicateNodePorts       = "NodePorts"
	PredicateTaintToleration = "TaintToleration"
	DescNodeAffinity         = "node(s) didn't match Pod's node affinity/selector"
	DescNodeName             = "node(s) didn't match the requested node name"
	DescNodePorts            = "node(s) didn't have free ports for the requested pod ports"
	DescTaintToleration      = "node(s) had taints that the pod didn't tolerate"
)

// Failure is one predicate that failed: either a resource the node has not enough of
// (Resource set: the kubelet's InsufficientResourceError) or another predicate
// (Predicate and Desc: its PredicateFailureError).
type Failure struct {
	Predicate string
	Desc      string

	Resource  v1.ResourceName
	Requested int64 // millicores for cpu
	Used      int64 // by the other pods
	Capacity  int64 // the node's allocatable
}

// IsInsufficientResource reports whether f is a resource that does not fit.
func (f Failure) IsInsufficientResource() bool { return f.Resource != "" }

// Insufficient is how much of Resource is missing: Requested - (Capacity - Used).
func (f Failure) Insufficient() int64 { return f.Requested - (f.Capacity - f.Used) }

// Reason is the kubelet's admission reason for f: OutOfcpu, OutOfmemory,
// OutOfephemeral-storage, OutOfpods, "OutOf" + another resource, or the predicate's name.
func (f Failure) Reason() string {
	if !f.IsInsufficientResource() {
		return f.Predicate
	}
	return InsufficientResourcePrefix + string(f.Resource)
}

// Error is the kubelet's admission message for f.
func (f Failure) Error() string {
	if !f.IsInsufficientResource() {
		return fmt.Sprintf("Predicate %s failed: %s", f.Predicate, f.Desc)
	}
	return fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
		f.Resource, f.Requested, f.Used, f.Capacity)
}

// GeneralPredicates are the kubelet's generic admission predicates (the scheduler's
// AdmissionCheck with every failure, then the taints), in its order:
//
//   - resources: one more pod than allocatable "pods" allows (a node without a "pods"
//     allocatable takes none); then cpu, memory, ephemeral-storage and the scalar
//     resources (extended, hugepages-*, attachable-volumes-*, kubernetes.io/-prefixed;
//     sorted by name) the pod requests (PodRequests) beyond allocatable minus the
//     other pods' requests. An extended resource the node does not have at all is
//     ignored, as the kubelet leaves it to device plugins;
//   - NodeAffinity: spec.nodeSelector and the required node affinity against the
//     node's labels (and metadata.name for matchFields);
//   - NodeName: spec.nodeName set to another node;
//   - NodePorts: a host port (of a container or a sidecar) another pod holds, on the
//     same IP or 0.0.0.0, protocol TCP when empty;
//   - TaintToleration: a NoExecute taint of the node the pod does not tolerate, for
//     pods that are not static (the kubelet admits static pods whatever the taints;
//     NoSchedule taints are the scheduler's business). The alpha toleration operators
//     Lt and Gt (off in 1.37) tolerate nothing.
//
// A nil node or pod fails every resource check; nil other pods are skipped.
func GeneralPredicates(node *v1.Node, pod *v1.Pod, otherPods []*v1.Pod) []Failure {
	if node == nil {
		node = &v1.Node{}
	}
	if pod == nil {
		pod = &v1.Pod{}
	}
	others := make([]*v1.Pod, 0, len(otherPods))
	for _, p := range otherPods {
		if p != nil {
			others = append(others, p)
		}
	}
	failures := fitsResources(node, pod, others)
	if !matchesNodeAffinity(node, pod) {
		failures = append(failures, Failure{Predicate: PredicateNodeAffinity, Desc: DescNodeAffinity})
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		failures = append(failures, Failure{Predicate: PredicateNodeName, Desc: DescNodeName})
	}
	if !fitsPorts(pod, others) {
		failures = append(failures, Failure{Predicate: PredicateNodePorts, Desc: DescNodePorts})
	}
	if !podfacts.IsStatic(pod) {
		if _, untolerated := FindUntoleratedTaint(node.Spec.Taints, pod.Spec.Tolerations, v1.TaintEffectNoExecute); untolerated {
			failures = append(failures, Failure{Predicate: PredicateTaintToleration, Desc: DescTaintToleration})
		}
	}
	return failures
}

// amounts is a resource list as the scheduler counts it: millicores for cpu, values
// for the rest.
type amounts map[v1.ResourceName]int64

func amountsOf(rl v1.ResourceList) amounts {
	a := make(amounts, len(rl))
	for name, q := range rl {
		if name == v1.ResourceCPU {
			a[name] = q.MilliValue()
		} else if name == v1.ResourceMemory || name == v1.ResourceEphemeralStorage || isScalarResourceName(name) {
			a[name] = q.Value()
		}
	}
	return a
}

func fitsResources(node *v1.Node, pod *v1.Pod, others []*v1.Pod) []Failure {
	var failures []Failure
	alloc := node.Status.Allocatable
	allowed := int64(0)
	if q, ok := alloc[v1.ResourcePods]; ok {
		allowed = q.Value()
	}
	if int64(len(others))+1 > allowed {
		failures = append(failures, Failure{Resource: v1.ResourcePods, Requested: 1, Used: int64(len(others)), Capacity: allowed})
	}
	req := amountsOf(podres.Requests(pod))
	for name := range req {
		if isExtendedResourceName(name) {
			if _, ok := alloc[name]; !ok {
				delete(req, name) // the kubelet's removeMissingExtendedResources
			}
		}
	}
	if len(req) == 0 || (req[v1.ResourceCPU] == 0 && req[v1.ResourceMemory] == 0 && req[v1.ResourceEphemeralStorage] == 0 && !hasScalar(req)) {
		return failures
	}
	used := amounts{}
	for _, p := range others {
		for name, v := range amountsOf(podres.Requests(p)) {
			used[name] += v
		}
	}
	capacity := amountsOf(alloc)
	names := []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage}
	var scalars []v1.ResourceName
	for name := range req {
		if isScalarResourceName(name) {
			scalars = append(scalars, name)
		}
	}
	slices.Sort(scalars)
	for _, name := range append(names, scalars...) {
		if r := req[name]; r > 0 && r > capacity[name]-used[name] {
			failures = append(failures, Failure{Resource: name, Requested: r, Used: used[name], Capacity: capacity[name]})
		}
	}
	return failures
}

func hasScalar(a amounts) bool {
	for name := range a {
		if isScalarResourceName(name) {
			return true
		}
	}
	return false
}

// isNativeResourceName: no domain, or a kubernetes.io/ one.
func isNativeResourceName(name v1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), "kubernetes.io/")
}

// isExtendedResourceName: a device plugin's resource (example.com/gpu).
func isExtendedResourceName(name v1.ResourceName) bool {
	if isNativeResourceName(name) || strings.HasPrefix(string(name), v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// isScalarResourceName: extended, hugepages, attachable volumes, kubernetes.io/-prefixed.
func isScalarResourceName(name v1.ResourceName) bool {
	s := string(name)
	return isExtendedResourceName(name) || strings.HasPrefix(s, v1.ResourceHugePagesPrefix) ||
		strings.HasPrefix(s, v1.ResourceAttachableVolumesPrefix) || strings.Contains(s, "kubernetes.io/")
}

// MatchesNodeSelector reports whether the pod's spec.nodeSelector and required node
// affinity (requiredDuringSchedulingIgnoredDuringExecution) select the node, as the
// scheduler's and the kubelet's NodeAffinity predicate: every nodeSelector label, and
// at least one non-empty term whose matchExpressions (In, NotIn, Exists, DoesNotExist,
// Gt, Lt on labels) and matchFields (In, NotIn on metadata.name) all hold. An invalid
// term matches nothing.
func MatchesNodeSelector(node *v1.Node, pod *v1.Pod) bool {
	if node == nil || pod == nil {
		return false
	}
	return matchesNodeAffinity(node, pod)
}

func matchesNodeAffinity(node *v1.Node, pod *v1.Pod) bool {
	if len(pod.Spec.NodeSelector) > 0 && !labels.SelectorFromSet(pod.Spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	nodeLabels := labels.Set(node.Labels)
	nodeFields := fields.Set{}
	if node.Name != "" {
		nodeFields["metadata.name"] = node.Name
	}
	for i := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		t := &a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i]
		if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
			continue
		}
		if termMatches(t, nodeLabels, nodeFields) {
			return true
		}
	}
	return false
}

func termMatches(t *v1.NodeSelectorTerm, nodeLabels labels.Set, nodeFields fields.Set) bool {
	if len(t.MatchExpressions) > 0 {
		sel := labels.NewSelector()
		for _, e := range t.MatchExpressions {
			var op selection.Operator
			switch e.Operator {
			case v1.NodeSelectorOpIn:
				op = selection.In
			case v1.NodeSelectorOpNotIn:
				op = selection.NotIn
			case v1.NodeSelectorOpExists:
				op = selection.Exists
			case v1.NodeSelectorOpDoesNotExist:
				op = selection.DoesNotExist
			case v1.NodeSelectorOpGt:
				op = selection.GreaterThan
			case v1.NodeSelectorOpLt:
				op = selection.LessThan
			default:
				return false
			}
			r, err := labels.NewRequirement(e.Key, op, e.Values)
			if err != nil {
				return false
			}
			sel = sel.Add(*r)
		}
		if !sel.Matches(nodeLabels) {
			return false
		}
	}
	if len(t.MatchFields) > 0 {
		var sels []fields.Selector
		for _, e := range t.MatchFields {
			if len(e.Values) != 1 {
				return false
			}
			switch e.Operator {
			case v1.NodeSelectorOpIn:
				sels = append(sels, fields.OneTermEqualSelector(e.Key, e.Values[0]))
			case v1.NodeSelectorOpNotIn:
				sels = append(sels, fields.OneTermNotEqualSelector(e.Key, e.Values[0]))
			default:
				return false
			}
		}
		// A node without a name matches every field requirement, as the scheduler's.
		if len(nodeFields) > 0 && !fields.AndSelectors(sels...).Matches(nodeFields) {
			return false
		}
	}
	return true
}

// HostPorts are the host ports the pod holds: its containers' and its sidecars' ports
// with a hostPort (the scheduler's GetHostPorts).
func HostPorts(pod *v1.Pod) []v1.ContainerPort {
	if pod == nil {
		return nil
	}
	var ports []v1.ContainerPort
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; podres.IsRestartableInitContainer(c) {
			for _, p := range c.Ports {
				if p.HostPort > 0 {
					ports = append(ports, p)
				}
			}
		}
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				ports = append(ports, p)
			}
		}
	}
	return ports
}

type protocolPort struct {
	protocol string
	port     int32
}

func sanitizePort(p v1.ContainerPort) (string, protocolPort) {
	ip, proto := p.HostIP, string(p.Protocol)
	if ip == "" {
		ip = "0.0.0.0"
	}
	if proto == "" {
		proto = string(v1.ProtocolTCP)
	}
	return ip, protocolPort{proto, p.HostPort}
}

func fitsPorts(pod *v1.Pod, others []*v1.Pod) bool {
	want := HostPorts(pod)
	if len(want) == 0 {
		return true
	}
	inUse := map[string]map[protocolPort]bool{}
	for _, o := range others {
		for _, p := range HostPorts(o) {
			ip, pp := sanitizePort(p)
			if inUse[ip] == nil {
				inUse[ip] = map[protocolPort]bool{}
			}
			inUse[ip][pp] = true
		}
	}
	for _, p := range want {
		ip, pp := sanitizePort(p)
		if ip == "0.0.0.0" {
			for _, m := range inUse {
				if m[pp] {
					return false
				}
			}
			continue
		}
		if inUse["0.0.0.0"][pp] || inUse[ip][pp] {
			return false
		}
	}
	return true
}

// ToleratesTaint reports whether the toleration tolerates the taint (core/v1's
// Toleration.ToleratesTaint with the alpha comparison operators off: Lt and Gt tolerate
// nothing).
func ToleratesTaint(t *v1.Toleration, taint *v1.Taint) bool {
	if t == nil || taint == nil {
		return false
	}
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case "", v1.TolerationOpEqual:
		return t.Value == taint.Value
	case v1.TolerationOpExists:
		return true
	}
	return false
}

// FindUntoleratedTaint returns the first taint with one of the effects (every effect
// when none is given) that no toleration tolerates.
func FindUntoleratedTaint(taints []v1.Taint, tolerations []v1.Toleration, effects ...v1.TaintEffect) (v1.Taint, bool) {
	for i := range taints {
		if len(effects) > 0 && !slices.Contains(effects, taints[i].Effect) {
			continue
		}
		tolerated := false
		for j := range tolerations {
			if ToleratesTaint(&tolerations[j], &taints[i]) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return taints[i], true
		}
	}
	return v1.Taint{}, false
}

// FailureResult maps the failures of GeneralPredicates to the kubelet's result: admitted
// when there are none, else refused with the first failure's Reason and message.
func FailureResult(failures []Failure) Result {
	if len(failures) == 0 {
		return Result{Admit: true}
	}
	return Result{Reason: failures[0].Reason(), Message: failures[0].Error()}
}

// nodeOS is the node's operating system: its kubernetes.io/os label, else the agent's
// runtime.GOOS.
func nodeOS(node *v1.Node) string {
	if os, ok := node.Labels[v1.LabelOSStable]; ok && os != "" {
		return os
	}
	return runtime.GOOS
}

// checkPodOS is the kubelet's OS and supplemental-groups checks, done before the
// predicates: the pod's kubernetes.io/os label and spec.os must name the node's OS
// (its kubernetes.io/os label, else runtime.GOOS: a virtual node may run pods of
// another OS than the agent's, where the kubelet always takes its own), and
// supplementalGroupsPolicy Strict needs node.status.features.supplementalGroupsPolicy.
func checkPodOS(node *v1.Node, pod *v1.Pod) (Result, bool) {
	os := nodeOS(node)
	if want, ok := pod.Labels[v1.LabelOSStable]; ok && want != os {
		return Result{Reason: PodOSSelectorNodeLabelDoesNotMatch,
			Message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}, false
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != os {
		return Result{Reason: PodOSNotSupported, Message: "Failed to admit pod as the OS field doesn't match node OS"}, false
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SupplementalGroupsPolicy != nil &&
		*sc.SupplementalGroupsPolicy == v1.SupplementalGroupsPolicyStrict {
		f := node.Status.Features
		if f == nil || f.SupplementalGroupsPolicy == nil || !*f.SupplementalGroupsPolicy {
			return Result{Reason: SupplementalGroupsPolicyNotSupported,
				Message: fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", v1.SupplementalGroupsPolicyStrict)}, false
		}
	}
	return Result{Admit: true}, true
}

// Predicates is the kubelet's predicate admit handler as a pure decision, without
// recovery (see PredicateHandler): the OS and supplemental-groups checks, then
// GeneralPredicates, the first failure the result.
func Predicates(node *v1.Node, attrs *Attributes) Result {
	if node == nil {
		return Result{Reason: InvalidNodeInfo, Message: "Kubelet cannot get node info."}
	}
	if attrs == nil || attrs.Pod == nil {
		return Result{Reason: UnexpectedAdmissionError, Message: "no pod to admit"}
	}
	if r, ok := checkPodOS(node, attrs.Pod); !ok {
		return r
	}
	return FailureResult(GeneralPredicates(node, attrs.Pod, attrs.OtherPods))
}

// FailureHandler tries to recover from failed predicates (the kubelet's
// AdmissionFailureHandler): it returns the failures that remain (none: the pod is
// admitted) or an error (the pod is refused with UnexpectedAdmissionError).
// CriticalPodPreemption is the kubelet's.
type FailureHandler func(ctx context.Context, attrs *Attributes, failures []Failure) ([]Failure, error)

// PredicateConfig configures PredicateHandler.
type PredicateConfig struct {
	// Node returns the node: its name, labels, taints, allocatable and
	// status.features. Required. An error refuses the pod with InvalidNodeInfo.
	Node func(ctx context.Context) (*v1.Node, error)
	// OnFailure, if set, may recover from failed predicates (CriticalPodPreemption).
	OnFailure FailureHandler
}

// PredicateHandler returns the kubelet's predicate admit handler: Predicates on the node
// cfg.Node returns, and, when GeneralPredicates fail, cfg.OnFailure's chance to recover
// (the failures it leaves, the first one the refusal; an error refuses the pod with
// UnexpectedAdmissionError). The kubelet reads the node from its informer and, when
// node affinity alone fails, once more from the API server; here cfg.Node is called
// once per pod and should return the freshest node it has.
func PredicateHandler(cfg PredicateConfig) Handler {
	return HandlerFunc(func(ctx context.Context, attrs *Attributes) Result {
		if attrs == nil || attrs.Pod == nil {
			return Result{Reason: UnexpectedAdmissionError, Message: "no pod to admit"}
		}
		if cfg.Node == nil {
			return Result{Reason: InvalidNodeInfo, Message: "Kubelet cannot get node info."}
		}
		node, err := cfg.Node(ctx)
		if err != nil || node == nil {
			return Result{Reason: InvalidNodeInfo, Message: "Kubelet cannot get node info."}
		}
		if r, ok := checkPodOS(node, attrs.Pod); !ok {
			return r
		}
		failures := GeneralPredicates(node, attrs.Pod, attrs.OtherPods)
		if len(failures) > 0 && cfg.OnFailure != nil {
			failures, err = cfg.OnFailure(ctx, attrs, failures)
			if err != nil {
				return Result{Reason: UnexpectedAdmissionError,
					Message: fmt.Sprintf("Unexpected error while attempting to recover from admission failure: %v", err)}
			}
		}
		return FailureResult(failures)
	})
}
