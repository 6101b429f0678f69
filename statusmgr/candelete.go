package statusmgr

import (
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/podfacts"
)

// The kubelet's config annotations and source name, the same as package config's
// (config.ConfigMirrorAnnotationKey, ...), which is their public home.
const (
	// ConfigMirrorAnnotationKey marks a mirror pod: the API server's copy of a static pod.
	// It equals config.ConfigMirrorAnnotationKey.
	ConfigMirrorAnnotationKey = podfacts.MirrorAnnotationKey
	// ConfigSourceAnnotationKey names the source a pod came from; "api" for the API server.
	// It equals config.ConfigSourceAnnotationKey.
	ConfigSourceAnnotationKey = podfacts.SourceAnnotationKey
	// APISource is the value of the source annotation for pods from the API server.
	APISource = podfacts.APISource
)

// IsMirrorPod reports whether pod carries the mirror annotation (any value, "" included).
// A nil pod is not a mirror pod.
func IsMirrorPod(pod *v1.Pod) bool { return podfacts.IsMirror(pod) }

// IsStaticPod reports whether pod came from a source other than the API server (its source
// annotation is set and is not "api"). A nil pod is not static.
func IsStaticPod(pod *v1.Pod) bool { return podfacts.IsStatic(pod) }

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
