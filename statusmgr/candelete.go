package statusmgr

import (
	v1 "k8s.io/api/core/v1"
)

// Annotations the node agent's pod sources set (the kubelet's config package).
const (
	// ConfigMirrorAnnotationKey marks a mirror pod: the API server's copy of a static pod.
	ConfigMirrorAnnotationKey = "kubernetes.io/config.mirror"
	// ConfigSourceAnnotationKey names the source a pod came from; "api" for the API server.
	ConfigSourceAnnotationKey = "kubernetes.io/config.source"
	// ConfigHashAnnotationKey carries a static pod's hash; its mirror pod's mirror
	// annotation has the same value.
	ConfigHashAnnotationKey = "kubernetes.io/config.hash"
	// APISource is the value of the source annotation for pods from the API server.
	APISource = "api"
)

// IsMirrorPod reports whether pod carries the mirror annotation (any value, "" included).
func IsMirrorPod(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	_, ok := pod.Annotations[ConfigMirrorAnnotationKey]
	return ok
}

// IsStaticPod reports whether pod came from a source other than the API server (its source
// annotation is set and is not "api").
func IsStaticPod(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	src, ok := pod.Annotations[ConfigSourceAnnotationKey]
	return ok && src != APISource
}

// CanBeDeleted reports whether the pod object may now be deleted from the API server (with
// grace 0 and a UID precondition): it has a deletionTimestamp, it is not a mirror pod, its
// phase on the server (pod.Status.Phase, not status) is Succeeded or Failed, and termination
// has finished (podIsFinished: TerminatePod ran for it). status, the node agent's own
// status, is not consulted (the kubelet only logs it). A nil pod gives false.
func CanBeDeleted(pod *v1.Pod, status v1.PodStatus, podIsFinished bool) bool {
	_ = status
	if pod == nil || pod.DeletionTimestamp == nil || IsMirrorPod(pod) {
		return false
	}
	if !IsTerminalPhase(pod.Status.Phase) {
		return false
	}
	return podIsFinished
}
