// Package podres computes a pod's resource requests and limits as Kubernetes 1.37 does
// (component-helpers' resource.PodRequests and PodLimits from the spec, with
// PodLevelResources on): the regular containers and the restartable init containers
// (sidecars) add up, each other init container counts with the sidecars started before
// it, the larger of the two wins per resource; pod-level requests (cpu, memory,
// hugepages-*) replace the containers' sum; the overhead is added. A container's limit
// without a request counts as that request (the API server's default).
package podres

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// IsRestartableInitContainer reports whether an init container is a sidecar
// (restartPolicy Always).
func IsRestartableInitContainer(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// IsSupportedPodLevelResource: cpu, memory and the hugepages sizes.
func IsSupportedPodLevelResource(name v1.ResourceName) bool {
	return name == v1.ResourceCPU || name == v1.ResourceMemory || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

func podLevelSet(rl v1.ResourceList) bool {
	for name := range rl {
		if IsSupportedPodLevelResource(name) {
			return true
		}
	}
	return false
}

// IsPodLevelRequestsSet reports whether spec.resources.requests names a supported resource.
func IsPodLevelRequestsSet(pod *v1.Pod) bool {
	return pod.Spec.Resources != nil && podLevelSet(pod.Spec.Resources.Requests)
}

// IsPodLevelResourcesSet reports whether spec.resources names a supported resource in
// its requests or limits.
func IsPodLevelResourcesSet(pod *v1.Pod) bool {
	return pod.Spec.Resources != nil && (podLevelSet(pod.Spec.Resources.Requests) || podLevelSet(pod.Spec.Resources.Limits))
}

// containerRequests is a container's requests with each limit that has no request
// taken as the request.
func containerRequests(c *v1.Container) v1.ResourceList {
	if len(c.Resources.Limits) == 0 {
		return c.Resources.Requests
	}
	out := make(v1.ResourceList, len(c.Resources.Requests)+len(c.Resources.Limits))
	for name, q := range c.Resources.Requests {
		out[name] = q
	}
	for name, q := range c.Resources.Limits {
		if _, ok := out[name]; !ok {
			out[name] = q
		}
	}
	return out
}

func containerLimits(c *v1.Container) v1.ResourceList { return c.Resources.Limits }

// aggregate is the containers' total of one list per container, as the kubelet
// aggregates it (see the package doc).
func aggregate(pod *v1.Pod, get func(*v1.Container) v1.ResourceList) v1.ResourceList {
	result := v1.ResourceList{}
	for i := range pod.Spec.Containers {
		add(result, get(&pod.Spec.Containers[i]))
	}
	sidecars := v1.ResourceList{}
	inits := v1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		rl := get(c)
		if IsRestartableInitContainer(c) {
			add(result, rl)
			add(sidecars, rl)
			rl = sidecars
		} else {
			combined := v1.ResourceList{}
			add(combined, rl)
			add(combined, sidecars)
			rl = combined
		}
		maxInto(inits, rl)
	}
	maxInto(result, inits)
	return result
}

// Requests is the pod's requests (PodRequests: containers, pod level, overhead).
func Requests(pod *v1.Pod) v1.ResourceList {
	reqs := aggregate(pod, containerRequests)
	if IsPodLevelRequestsSet(pod) {
		for name, q := range pod.Spec.Resources.Requests {
			if IsSupportedPodLevelResource(name) {
				reqs[name] = q.DeepCopy()
			}
		}
	}
	if pod.Spec.Overhead != nil {
		add(reqs, pod.Spec.Overhead)
	}
	return reqs
}

// Limits is the pod's limits (PodLimits: containers, pod level, the overhead added to a
// non-zero limit).
func Limits(pod *v1.Pod) v1.ResourceList {
	limits := aggregate(pod, containerLimits)
	if IsPodLevelResourcesSet(pod) {
		for name, q := range pod.Spec.Resources.Limits {
			if IsSupportedPodLevelResource(name) {
				limits[name] = q.DeepCopy()
			}
		}
	}
	for name, q := range pod.Spec.Overhead {
		if v, ok := limits[name]; ok && !v.IsZero() {
			v.Add(q)
			limits[name] = v
		}
	}
	return limits
}

// RequestQuantity is the kubelet's GetResourceRequestQuantity (pkg/api/v1/resource),
// what preemption and eviction compare: the containers' requests (only the pod-level
// ones when pod-level resources are set), plus the overhead only when that is not zero.
func RequestQuantity(pod *v1.Pod, name v1.ResourceName) resource.Quantity {
	q := resource.Quantity{Format: resource.DecimalSI}
	switch name {
	case v1.ResourceMemory, v1.ResourceStorage, v1.ResourceEphemeralStorage:
		q = resource.Quantity{Format: resource.BinarySI}
	}
	var reqs v1.ResourceList
	if IsPodLevelResourcesSet(pod) {
		reqs = v1.ResourceList{}
		if IsPodLevelRequestsSet(pod) {
			for n, v := range pod.Spec.Resources.Requests {
				if IsSupportedPodLevelResource(n) {
					reqs[n] = v
				}
			}
		}
	} else {
		reqs = aggregate(pod, containerRequests)
	}
	if v, ok := reqs[name]; ok {
		q.Add(v)
	}
	if o, ok := pod.Spec.Overhead[name]; ok && !q.IsZero() {
		q.Add(o)
	}
	return q
}

// Request is RequestQuantity as an integer: millicores for cpu, 1 for pods, else the
// value.
func Request(pod *v1.Pod, name v1.ResourceName) int64 {
	if name == v1.ResourcePods {
		return 1
	}
	q := RequestQuantity(pod, name)
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func add(list, more v1.ResourceList) {
	for name, q := range more {
		if v, ok := list[name]; ok {
			v.Add(q)
			list[name] = v
		} else {
			list[name] = q.DeepCopy()
		}
	}
}

func maxInto(list, other v1.ResourceList) {
	for name, q := range other {
		if v, ok := list[name]; !ok || q.Cmp(v) > 0 {
			list[name] = q.DeepCopy()
		}
	}
}
