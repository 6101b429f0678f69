package podfacts

import (
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/podres"
)

// QOSClass computes the pod's QoS class from its spec, as the API server does on create
// and the kubelet's qos.ComputePodQOS does with the 1.37 feature gates
// (PodLevelResources and PodLevelResourcesFixKubeletQOSClass on):
//
//   - When pod-level resources (spec.resources) name cpu, memory or a hugepages size,
//     they alone decide.
//   - Otherwise every init container and every regular container is classified on its
//     own (ephemeral containers never count) and the pod is BestEffort when all are,
//     Guaranteed when all are, and Burstable in every other case.
//   - One set of requirements is BestEffort when it has no requests and no limits at
//     all; else cpu and memory are each looked at: a request that differs from the
//     limit is Burstable, both zero (or missing) is BestEffort, equal and non-zero is
//     Guaranteed, and the two resources must agree or the result is Burstable.
//     Other resources (ephemeral-storage, extended resources) never count.
//
// A container's limit without a request counts as that request, as the API server
// defaults it (SetDefaults_Pod); pod-level resources are read as they are. A pod without
// containers, and a nil pod, is BestEffort. It never reads pod.Status.
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
	if pod == nil {
		return v1.PodQOSBestEffort
	}
	if podres.IsPodLevelResourcesSet(pod) {
		return requirementsQOS(pod.Spec.Resources, false)
	}
	var class v1.PodQOSClass
	merge := func(c *v1.Container) bool {
		cq := requirementsQOS(&c.Resources, true)
		switch {
		case cq == v1.PodQOSBurstable:
			class = v1.PodQOSBurstable
			return false
		case class == "":
			class = cq
		case class != cq:
			class = v1.PodQOSBurstable
			return false
		}
		return true
	}
	for i := range pod.Spec.InitContainers {
		if !merge(&pod.Spec.InitContainers[i]) {
			return class
		}
	}
	for i := range pod.Spec.Containers {
		if !merge(&pod.Spec.Containers[i]) {
			return class
		}
	}
	if class == "" {
		return v1.PodQOSBestEffort
	}
	return class
}

// requirementsQOS classifies one set of requirements (see QOSClass); requestFromLimit
// reads a missing request as the limit (a container's requirements).
func requirementsQOS(r *v1.ResourceRequirements, requestFromLimit bool) v1.PodQOSClass {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return v1.PodQOSBestEffort
	}
	cpu := resourceQOS(r, v1.ResourceCPU, requestFromLimit)
	mem := resourceQOS(r, v1.ResourceMemory, requestFromLimit)
	if cpu != mem {
		return v1.PodQOSBurstable
	}
	return cpu
}

// resourceQOS classifies one resource of a set of requirements.
func resourceQOS(r *v1.ResourceRequirements, name v1.ResourceName, requestFromLimit bool) v1.PodQOSClass {
	req, ok := r.Requests[name]
	lim := r.Limits[name]
	if !ok && requestFromLimit {
		req = lim
	}
	switch {
	case !req.Equal(lim):
		return v1.PodQOSBurstable
	case req.IsZero():
		return v1.PodQOSBestEffort
	default:
		return v1.PodQOSGuaranteed
	}
}
