package admission

import (
	"context"
	"fmt"
	"math"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/podfacts"
	"github.com/podlife/podlife/internal/podres"
)

// SystemCriticalPriority is the lowest priority of a critical pod (the API's
// scheduling.SystemCriticalPriority: 2 * 10^9).
const SystemCriticalPriority int32 = 2 * 1000000000

// The kubelet's preemption reason and messages (pkg/kubelet/preemption).
const (
	// ReasonPreempting is the status reason (and event reason) of a preempted pod.
	ReasonPreempting = "Preempting"
	// MessagePreempted is the status message (and event message) of a preempted pod.
	MessagePreempted = "Preempted in order to admit critical pod"
	// MessagePreemptedCondition is the DisruptionTarget condition's message.
	MessagePreemptedCondition = "Pod was preempted by Kubelet to accommodate a critical pod."
)

// IsCriticalPod reports whether the pod is critical (the kubelet's IsCriticalPod): a
// static pod, a mirror pod, or a priority of at least SystemCriticalPriority.
func IsCriticalPod(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	if podfacts.IsStatic(pod) || podfacts.IsMirror(pod) {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}

// Preemptable reports whether preemptor may preempt preemptee (the kubelet's
// Preemptable): a critical pod preempts any pod that is not, and a pod with a priority
// preempts a pod with a lower one.
func Preemptable(preemptor, preemptee *v1.Pod) bool {
	if IsCriticalPod(preemptor) && !IsCriticalPod(preemptee) {
		return true
	}
	if preemptor != nil && preemptor.Spec.Priority != nil && preemptee != nil && preemptee.Spec.Priority != nil {
		return *preemptor.Spec.Priority > *preemptee.Spec.Priority
	}
	return false
}

// Requirement is an amount of a resource to free (millicores for cpu, 1 per pod for
// pods).
type Requirement struct {
	Resource v1.ResourceName
	Quantity int64
}

// Requirements are the amounts the insufficient resources among failures miss
// (Failure.Insufficient each).
func Requirements(failures []Failure) []Requirement {
	var rs []Requirement
	for _, f := range failures {
		if f.IsInsufficientResource() {
			rs = append(rs, Requirement{Resource: f.Resource, Quantity: f.Insufficient()})
		}
	}
	return rs
}

func requirementsString(rs []Requirement) string {
	var b strings.Builder
	b.WriteString("[")
	for _, r := range rs {
		fmt.Fprintf(&b, "(res: %v, q: %d), ", r.Resource, r.Quantity)
	}
	return b.String() + "]"
}

// NoPreemptionError is PodsToPreempt's error: what even the pods it may preempt leave
// missing. Its text is the kubelet's; it wraps ErrNoPreemption.
type NoPreemptionError struct{ Left []Requirement }

func (e *NoPreemptionError) Error() string {
	return "no set of running pods found to reclaim resources: " + requirementsString(e.Left)
}

func (e *NoPreemptionError) Unwrap() error { return ErrNoPreemption }

// distance is how far evicting pod leaves each requirement from being met.
func distance(rs []Requirement, pod *v1.Pod) float64 {
	d := 0.0
	for _, r := range rs {
		if remaining := float64(r.Quantity - podres.Request(pod, r.Resource)); remaining > 0 {
			d += math.Pow(remaining/float64(r.Quantity), 2)
		}
	}
	return d
}

// subtract is what remains of rs once pods are evicted.
func subtract(rs []Requirement, pods ...*v1.Pod) []Requirement {
	var out []Requirement
	for _, r := range rs {
		q := r.Quantity
		for _, p := range pods {
			q -= podres.Request(p, r.Resource)
			if q <= 0 {
				break
			}
		}
		if q > 0 {
			out = append(out, Requirement{Resource: r.Resource, Quantity: q})
		}
	}
	return out
}

// smallerRequest: memory first, then cpu; equal requests count as smaller.
func smallerRequest(a, b *v1.Pod) bool {
	for _, name := range []v1.ResourceName{v1.ResourceMemory, v1.ResourceCPU} {
		ra, rb := podres.Request(a, name), podres.Request(b, name)
		if ra != rb {
			return ra < rb
		}
	}
	return true
}

// PodsToPreempt is the kubelet's getPodsToPreempt: which of the active pods to evict so
// that the critical pod fits. Only pods the pod may preempt (Preemptable) count, by QoS
// class. As few Guaranteed pods as the requirements need once every BestEffort and
// Burstable pod is counted, then as few Burstable pods as they need with every
// BestEffort pod and the Guaranteed pods chosen, then the BestEffort pods the rest
// needs; within a class, repeatedly the pod that comes closest to meeting what remains
// (ties: the smaller memory, then cpu, request). The result lists BestEffort, then
// Burstable, then Guaranteed pods. It fails (ErrNoPreemption) when even all of them
// would not be enough. Requests are the kubelet's GetResourceRequest (overhead counted
// only with a non-zero request; 1 per pod for "pods").
func PodsToPreempt(pod *v1.Pod, activePods []*v1.Pod, requirements []Requirement) ([]*v1.Pod, error) {
	var bestEffort, burstable, guaranteed []*v1.Pod
	for _, p := range activePods {
		if p == nil || !Preemptable(pod, p) {
			continue
		}
		switch podfacts.QOSClass(p) {
		case v1.PodQOSBestEffort:
			bestEffort = append(bestEffort, p)
		case v1.PodQOSBurstable:
			burstable = append(burstable, p)
		case v1.PodQOSGuaranteed:
			guaranteed = append(guaranteed, p)
		}
	}
	all := append(append(append([]*v1.Pod{}, bestEffort...), burstable...), guaranteed...)
	if left := subtract(requirements, all...); len(left) > 0 {
		return nil, &NoPreemptionError{Left: left}
	}
	g, err := byDistance(guaranteed, subtract(requirements, append(append([]*v1.Pod{}, bestEffort...), burstable...)...))
	if err != nil {
		return nil, err
	}
	b, err := byDistance(burstable, subtract(requirements, append(append([]*v1.Pod{}, bestEffort...), g...)...))
	if err != nil {
		return nil, err
	}
	be, err := byDistance(bestEffort, subtract(requirements, append(append([]*v1.Pod{}, b...), g...)...))
	if err != nil {
		return nil, err
	}
	return append(append(be, b...), g...), nil
}

// byDistance is the kubelet's getPodsToPreemptByDistance (on a copy of pods).
func byDistance(pods []*v1.Pod, rs []Requirement) ([]*v1.Pod, error) {
	pods = append([]*v1.Pod(nil), pods...)
	evict := []*v1.Pod{}
	for len(rs) > 0 {
		if len(pods) == 0 {
			return nil, &NoPreemptionError{Left: rs}
		}
		best, bestDist := 0, float64(len(rs)+1)
		for i, p := range pods {
			d := distance(rs, p)
			if d < bestDist || (d == bestDist && smallerRequest(p, pods[best])) {
				best, bestDist = i, d
			}
		}
		rs = subtract(rs, pods[best])
		evict = append(evict, pods[best])
		pods[best] = pods[len(pods)-1]
		pods = pods[:len(pods)-1]
	}
	return evict, nil
}

// PreemptedStatus is the kubelet's status function for a pod it preempts (the kill's
// status function): phase Failed, reason Preempting, MessagePreempted, and the
// DisruptionTarget condition (True, TerminationByKubelet, MessagePreemptedCondition)
// added or replaced, its observedGeneration the pod's generation.
func PreemptedStatus(pod *v1.Pod) func(*v1.PodStatus) {
	return func(s *v1.PodStatus) {
		s.Phase = v1.PodFailed
		s.Reason = ReasonPreempting
		s.Message = MessagePreempted
		var gen int64
		if pod != nil {
			gen = pod.Generation
		}
		SetCondition(s, v1.PodCondition{Type: v1.DisruptionTarget, ObservedGeneration: gen, Status: v1.ConditionTrue,
			Reason: v1.PodReasonTerminationByKubelet, Message: MessagePreemptedCondition})
	}
}

// SetCondition adds c to the status or replaces the condition of its type (the
// kubelet's UpdatePodCondition without the transition time, which the status manager
// stamps).
func SetCondition(s *v1.PodStatus, c v1.PodCondition) {
	for i := range s.Conditions {
		if s.Conditions[i].Type == c.Type {
			if s.Conditions[i].Status == c.Status {
				c.LastTransitionTime = s.Conditions[i].LastTransitionTime
			}
			s.Conditions[i] = c
			return
		}
	}
	s.Conditions = append(s.Conditions, c)
}

// KillFunc kills a pod with a status function applied to its final status (a node's
// KillPod): the kubelet's killPodFunc with evict true and no grace-period override.
type KillFunc func(ctx context.Context, pod *v1.Pod, status func(*v1.PodStatus)) error

// CriticalPodPreemption is the kubelet's CriticalPodAdmissionHandler as a FailureHandler:
// for a critical pod (IsCriticalPod) whose every failure is an insufficient resource, it
// kills the pods PodsToPreempt picks among attrs.OtherPods, each through kill with
// PreemptedStatus, and returns no failure: the pod is admitted while they stop. Other
// pods and other failures are returned as they are; no set of pods to preempt is an
// error (the pod is refused with UnexpectedAdmissionError). A failed kill does not stop
// the others nor the admission (the kubelet logs it and goes on); onKillError, if set,
// gets it.
func CriticalPodPreemption(kill KillFunc, onKillError func(pod *v1.Pod, err error)) FailureHandler {
	return func(ctx context.Context, attrs *Attributes, failures []Failure) ([]Failure, error) {
		if attrs == nil || !IsCriticalPod(attrs.Pod) {
			return failures, nil
		}
		var others []Failure
		for _, f := range failures {
			if !f.IsInsufficientResource() {
				others = append(others, f)
			}
		}
		if len(others) > 0 {
			return others, nil
		}
		victims, err := PodsToPreempt(attrs.Pod, attrs.OtherPods, Requirements(failures))
		if err != nil {
			return nil, fmt.Errorf("preemption: error finding a set of pods to preempt: %w", err)
		}
		for _, p := range victims {
			if kill == nil {
				continue
			}
			if err := kill(ctx, p, PreemptedStatus(p)); err != nil && onKillError != nil {
				onKillError(p, err)
			}
		}
		return nil, nil
	}
}
