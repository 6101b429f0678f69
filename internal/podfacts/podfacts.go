// Package podfacts is the one definition of the facts about a pod that several podlife
// packages need: the kubelet's config annotation keys, the static and mirror predicates,
// the pod full name, the terminal phases, a container of a spec by its name, the QoS
// class, and the API server's defaults of the spec fields a decision reads
// (RestartPolicy, TerminationGracePeriodSeconds, ImagePullPolicy): an empty field is
// read through them, never compared directly. It keeps no state.
//
// Package config exports the annotation keys (config.ConfigSourceAnnotationKey, ...); the
// copies other packages export are aliases of these constants.
package podfacts

import (
	v1 "k8s.io/api/core/v1"
)

// The annotations the kubelet's config sources set on the pods they deliver.
const (
	// SourceAnnotationKey names the pod's source ("api", "file", "http", ...).
	SourceAnnotationKey = "kubernetes.io/config.source"
	// MirrorAnnotationKey marks a mirror pod (the API server's copy of a static pod); its
	// value is the static pod's hash.
	MirrorAnnotationKey = "kubernetes.io/config.mirror"
	// SeenAnnotationKey holds when the config first saw the pod, in SeenTimeLayout.
	SeenAnnotationKey = "kubernetes.io/config.seen"
	// HashAnnotationKey holds the hash of a static pod's manifest; its mirror pod's mirror
	// annotation has the same value.
	HashAnnotationKey = "kubernetes.io/config.hash"
)

// SeenTimeLayout is the time layout of the SeenAnnotationKey annotation: RFC 3339 with
// exactly nine digits of nanoseconds.
const SeenTimeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// APISource is the name of the API server's pod source and the value of its pods' source
// annotation (the kubelet's "api").
const APISource = "api"

// IsStatic reports whether pod came from a source other than the API server: its source
// annotation is set and is not APISource (the kubelet's IsStaticPod). A nil pod is not
// static.
func IsStatic(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	src, ok := pod.Annotations[SourceAnnotationKey]
	return ok && src != APISource
}

// IsMirror reports whether pod carries the mirror annotation, whatever its value ("" too).
// A nil pod is not a mirror pod.
func IsMirror(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	_, ok := pod.Annotations[MirrorAnnotationKey]
	return ok
}

// FullName is the kubelet's full name of the pod name in namespace: "name_namespace".
// Static pods and their mirror pods are matched by it.
func FullName(name, namespace string) string { return name + "_" + namespace }

// PodFullName is FullName of pod's name and namespace. pod must not be nil.
func PodFullName(pod *v1.Pod) string { return FullName(pod.Name, pod.Namespace) }

// IsTerminalPhase reports whether phase is Succeeded or Failed, the phases a pod never
// leaves.
func IsTerminalPhase(phase v1.PodPhase) bool {
	return phase == v1.PodSucceeded || phase == v1.PodFailed
}

// IsTerminal reports whether pod's phase is terminal. A nil pod is not.
func IsTerminal(pod *v1.Pod) bool {
	return pod != nil && IsTerminalPhase(pod.Status.Phase)
}

// ContainerByName returns the first of cs named name, nil if none. (A loop over the
// indexes: slices.IndexFunc would hand every v1.Container to its function by value.)
func ContainerByName(cs []v1.Container, name string) *v1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}
