package admission

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/podfacts"
	"github.com/podlife/podlife/internal/podres"
)

// Errors of the package.
var (
	// ErrNoPreemption is wrapped by PodsToPreempt's error (a *NoPreemptionError) when the pods that may be
	// preempted cannot free what the critical pod needs.
	ErrNoPreemption = errors.New("admission: no set of pods to preempt")
)

// Attributes are what an admit handler decides on: the new pod, and the other pods
// admitted to the node and still active (not terminal, or terminal but still
// terminating), the kubelet's PodAdmitAttributes for an ADD.
type Attributes struct {
	Pod       *v1.Pod
	OtherPods []*v1.Pod
}

// Result is an admit handler's verdict, the kubelet's PodAdmitResult. A refused pod
// (Admit false) ends Failed with Reason and "Pod was rejected: " + Message.
type Result struct {
	Admit   bool
	Reason  string
	Message string
}

// Handler decides whether a new pod may run on the node (the kubelet's PodAdmitHandler).
// node calls each handler of Config.Admit in order, from its loop goroutine, outside
// every lock; a handler must be quick (the loop waits) and must not modify the pods.
type Handler interface {
	Admit(ctx context.Context, attrs *Attributes) Result
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, attrs *Attributes) Result

var _ Handler = HandlerFunc(nil)

// Admit calls f; a nil f admits.
func (f HandlerFunc) Admit(ctx context.Context, attrs *Attributes) Result {
	if f == nil {
		return Result{Admit: true}
	}
	return f(ctx, attrs)
}

// Admit runs the handlers in order, as the kubelet's canAdmitPod: the first refusal is
// the result (the later handlers are not called); with none, the pod is admitted. The
// pod itself is removed from attrs.OtherPods first (by UID). nil handlers are skipped; a
// nil attrs or pod is refused with UnexpectedAdmissionError.
func Admit(ctx context.Context, handlers []Handler, attrs *Attributes) Result {
	if attrs == nil || attrs.Pod == nil {
		return Result{Reason: UnexpectedAdmissionError, Message: "no pod to admit"}
	}
	a := *attrs
	a.OtherPods = make([]*v1.Pod, 0, len(attrs.OtherPods))
	for _, p := range attrs.OtherPods {
		if p != nil && p.UID != attrs.Pod.UID {
			a.OtherPods = append(a.OtherPods, p)
		}
	}
	for _, h := range handlers {
		if h == nil {
			continue
		}
		if r := h.Admit(ctx, &a); !r.Admit {
			return r
		}
	}
	return Result{Admit: true}
}

// RejectedStatus is the status the kubelet's rejectPod writes for a refused pod: phase
// Failed, the handler's reason, "Pod was rejected: " and its message, and the pod's QoS
// class (the one in its status, else computed from its spec). Nothing else: no container
// statuses, no conditions.
func RejectedStatus(pod *v1.Pod, reason, message string) v1.PodStatus {
	qos := pod.Status.QOSClass
	if qos == "" {
		qos = podfacts.QOSClass(pod)
	}
	return v1.PodStatus{QOSClass: qos, Phase: v1.PodFailed, Reason: reason, Message: "Pod was rejected: " + message}
}

// PodRequests is the pod's resource requests as Kubernetes 1.37 computes them for
// admission (component-helpers' resource.PodRequests, from the spec): the regular
// containers and the sidecars (restartable init containers) add up; each other init
// container counts together with the sidecars started before it; per resource the larger
// of the two wins. Pod-level requests (spec.resources: cpu, memory, hugepages-*) replace
// the containers' total for what they name, and spec.overhead is added. A container's
// limit without a request counts as that request, as the API server defaults it.
func PodRequests(pod *v1.Pod) v1.ResourceList {
	if pod == nil {
		return v1.ResourceList{}
	}
	return podres.Requests(pod)
}

// podName is namespace/name for messages.
func podName(p *v1.Pod) string { return fmt.Sprintf("%s/%s", p.Namespace, p.Name) }
