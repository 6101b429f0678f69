package podgc

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Deletion is one pod the garbage collector deletes, and why.
type Deletion struct {
	// Pod is the pod to delete, as listed; it is not modified.
	Pod *v1.Pod
	// Reason is the first pass of the cycle that selected the pod.
	Reason Reason
	// Status, when non-nil, is written (see StatusPatch) before the pod is deleted: the pod
	// was not in a terminal phase and is marked Failed first (see FailedStatus). A failed
	// write means no delete this cycle.
	Status *v1.PodStatus
}

// Input is everything one cycle's decision depends on.
type Input struct {
	// Pods are all pods of the cluster (or of the part the caller collects).
	Pods []*v1.Pod
	// Nodes are all nodes known now.
	Nodes []*v1.Node
	// GoneNodes are the names of nodes confirmed gone: missing for longer than the
	// quarantine period (see Quarantine) and, when the caller can, checked once more. A name
	// that is also in Nodes is not gone.
	GoneNodes []string
	// TerminatedPodThreshold is how many terminated pods may remain; at or below 0 the
	// terminated pass is disabled.
	TerminatedPodThreshold int
	// Now stamps the DisruptionTarget condition of orphaned pods.
	Now time.Time
}

// Plan is the outcome of Decide.
type Plan struct {
	// Deletions lists each pod to delete once, in the order of the passes (terminated,
	// terminating on out-of-service nodes, orphaned, unscheduled terminating) and within a
	// pass in that pass's order.
	Deletions []Deletion
	// Skipped has one error per input entry that was left out: nil pods (ErrNilPod), pods
	// without name or UID (ErrInvalidPod), nil nodes (ErrNilNode), nodes without a name
	// (ErrInvalidNode). Skipped pods neither count toward the threshold nor get deleted.
	Skipped []error
}

// Decide returns what one garbage-collection cycle deletes. It runs the controller's four
// passes over the same snapshot:
//
//  1. TerminatedOverThreshold, when in.TerminatedPodThreshold > 0;
//  2. TerminatingOnOutOfServiceNodes;
//  3. Orphaned, for the pods bound to in.GoneNodes;
//  4. UnscheduledTerminating.
//
// A pod selected by several passes is deleted once, for the first reason (the controller
// would issue a second delete that finds nothing). Each deletion of a pod not in a terminal
// phase carries the Failed status to write first; only orphaned pods also get the
// DisruptionTarget condition (ConditionFor). Decide never modifies its input and never
// panics; invalid entries are reported in Plan.Skipped.
func Decide(in Input) Plan {
	var plan Plan
	pods := make([]*v1.Pod, 0, len(in.Pods))
	for _, p := range in.Pods {
		if err := checkPod(p); err != nil {
			plan.Skipped = append(plan.Skipped, err)
			continue
		}
		pods = append(pods, p)
	}
	nodes := make([]*v1.Node, 0, len(in.Nodes))
	for _, n := range in.Nodes {
		if err := checkNode(n); err != nil {
			plan.Skipped = append(plan.Skipped, err)
			continue
		}
		nodes = append(nodes, n)
	}

	passes := [numReasons][]*v1.Pod{
		ReasonTerminated:              TerminatedOverThreshold(pods, in.TerminatedPodThreshold),
		ReasonTerminatingOutOfService: TerminatingOnOutOfServiceNodes(pods, nodes),
		ReasonOrphaned:                Orphaned(pods, nodes, in.GoneNodes),
		ReasonTerminatingUnscheduled:  UnscheduledTerminating(pods),
	}
	total := 0
	for _, selected := range passes {
		total += len(selected)
	}
	type podKey struct {
		namespace, name string
		uid             types.UID
	}
	seen := make(map[podKey]struct{}, total)
	plan.Deletions = make([]Deletion, 0, total)
	for r, selected := range passes {
		reason := Reason(r)
		cond := ConditionFor(reason)
		for _, p := range selected {
			k := podKey{p.Namespace, p.Name, p.UID}
			if _, dup := seen[k]; dup {
				continue
			}
			seen[k] = struct{}{}
			d := Deletion{Pod: p, Reason: reason}
			if st, ok := FailedStatus(p, cond, in.Now); ok {
				d.Status = &st
			}
			plan.Deletions = append(plan.Deletions, d)
		}
	}
	return plan
}

// TerminatedOverThreshold returns the terminated pods (see IsTerminated) to delete so that at
// most threshold remain: none when threshold <= 0 (the pass is disabled) or when there are
// not more than threshold; otherwise the first len-threshold of them in deletion order
// (SortForDeletion: evicted first, then oldest). Nil pods and pods without name or UID are
// ignored. pods is not reordered.
func TerminatedOverThreshold(pods []*v1.Pod, threshold int) []*v1.Pod {
	if threshold <= 0 {
		return nil
	}
	var terminated []*v1.Pod
	for _, p := range pods {
		if checkPod(p) == nil && IsTerminated(p) {
			terminated = append(terminated, p)
		}
	}
	excess := len(terminated) - threshold
	if excess <= 0 {
		return nil
	}
	SortForDeletion(terminated)
	return terminated[:excess:excess]
}

// TerminatingOnOutOfServiceNodes returns the terminating pods (with a deletionTimestamp)
// bound to a listed node that is out of service (see IsNodeOutOfService), in deletion order.
// Pods bound to a node that is not listed are left to the orphan pass; pods without a node to
// UnscheduledTerminating. Invalid pods and nodes are ignored; for a name listed twice, the
// first node counts.
func TerminatingOnOutOfServiceNodes(pods []*v1.Pod, nodes []*v1.Node) []*v1.Pod {
	var byName map[string]*v1.Node
	var out []*v1.Pod
	for _, p := range pods {
		if checkPod(p) != nil || !IsTerminating(p) || p.Spec.NodeName == "" {
			continue
		}
		if byName == nil {
			byName = nodesByName(nodes)
		}
		if n, ok := byName[p.Spec.NodeName]; ok && IsNodeOutOfService(n) {
			out = append(out, p)
		}
	}
	SortForDeletion(out)
	return out
}

// Orphaned returns the pods bound to a node named in gone and absent from nodes, in the order
// of pods. A pod is never orphaned merely because its node is missing: the name must have
// gone through the quarantine first (see Quarantine), since a node that was just created may
// not be listed yet. Invalid pods and nodes are ignored.
func Orphaned(pods []*v1.Pod, nodes []*v1.Node, gone []string) []*v1.Pod {
	if len(gone) == 0 {
		return nil
	}
	existing := nodesByName(nodes)
	goneSet := make(map[string]bool, len(gone))
	for _, name := range gone {
		if _, ok := existing[name]; !ok && name != "" {
			goneSet[name] = true
		}
	}
	var out []*v1.Pod
	for _, p := range pods {
		if checkPod(p) == nil && goneSet[p.Spec.NodeName] {
			out = append(out, p)
		}
	}
	return out
}

// UnscheduledTerminating returns the pods that are terminating and bound to no node, in the
// order of pods: no kubelet will ever confirm their termination, so they are deleted at
// once. Invalid pods are ignored.
func UnscheduledTerminating(pods []*v1.Pod) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods {
		if checkPod(p) == nil && IsTerminating(p) && p.Spec.NodeName == "" {
			out = append(out, p)
		}
	}
	return out
}

// MissingNodes returns, sorted and without repeats, the node names that some pod is bound to
// but that no listed node has. They are the input of Quarantine.Observe. Invalid pods and
// nodes are ignored.
func MissingNodes(pods []*v1.Pod, nodes []*v1.Node) []string {
	var existing map[string]*v1.Node
	missing := make(map[string]bool)
	for _, p := range pods {
		if checkPod(p) != nil || p.Spec.NodeName == "" || missing[p.Spec.NodeName] {
			continue
		}
		if existing == nil {
			existing = nodesByName(nodes)
		}
		if _, ok := existing[p.Spec.NodeName]; !ok {
			missing[p.Spec.NodeName] = true
		}
	}
	return sortedKeys(missing)
}

// nodesByName indexes the valid nodes by name; the first node of a name wins.
func nodesByName(nodes []*v1.Node) map[string]*v1.Node {
	m := make(map[string]*v1.Node, len(nodes))
	for _, n := range nodes {
		if checkNode(n) != nil {
			continue
		}
		if _, dup := m[n.Name]; !dup {
			m[n.Name] = n
		}
	}
	return m
}
