package node

import (
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/podfacts"
)

// PodQOSClass computes the pod's QoS class from its spec, as the kubelet's
// qos.ComputePodQOS does with the 1.37 feature gates (PodLevelResources and
// PodLevelResourcesFixKubeletQOSClass on):
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
// A container's limit without a request counts as that request: the API server
// defaults the request to the limit, so a hand-built pod gets the class the API server
// would store (apitest.DefaultPod). Pod-level resources are read as they are. A pod
// without containers is BestEffort. It never reads pod.Status (see GenerateAPIStatus for
// the class the API server already holds).
func PodQOSClass(pod *v1.Pod) v1.PodQOSClass { return podfacts.QOSClass(pod) }
