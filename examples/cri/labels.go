package cri

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The kubelet's labels and annotations on sandboxes and containers.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
	// LabelContainerType is on sandboxes ("podsandbox"); the kubelet's dockershim set it.
	LabelContainerType = "io.kubernetes.container.type"

	AnnotationContainerHash             = "io.kubernetes.container.hash"
	AnnotationContainerRestartCount     = "io.kubernetes.container.restartCount"
	AnnotationTerminationMessagePath    = "io.kubernetes.container.terminationMessagePath"
	AnnotationTerminationMessagePolicy  = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationPodTerminationGracePeriod = "io.kubernetes.pod.terminationGracePeriod"
	AnnotationContainerPreStopHandler   = "io.kubernetes.container.preStopHandler"
	AnnotationPodDeletionGracePeriod    = "io.kubernetes.pod.deletionGracePeriod"
	sandboxContainerType                = "podsandbox"
)

// podLabels are the labels that tie a sandbox or container to its pod.
func podLabels(uid types.UID, name, namespace string) map[string]string {
	return map[string]string{LabelPodUID: string(uid), LabelPodName: name, LabelPodNamespace: namespace}
}

// sandboxLabels: the pod's own labels and the kubelet's.
func sandboxLabels(pod *v1.Pod) map[string]string {
	l := make(map[string]string, len(pod.Labels)+4)
	for k, v := range pod.Labels {
		l[k] = v
	}
	for k, v := range podLabels(pod.UID, pod.Name, pod.Namespace) {
		l[k] = v
	}
	l[LabelContainerType] = sandboxContainerType
	return l
}

func containerLabels(pod *v1.Pod, c *v1.Container) map[string]string {
	l := podLabels(pod.UID, pod.Name, pod.Namespace)
	l[LabelContainerName] = c.Name
	return l
}

func containerAnnotations(pod *v1.Pod, c *v1.Container, restartCount int) map[string]string {
	a := map[string]string{
		AnnotationContainerHash:            strconv.FormatUint(containerHash(c), 16),
		AnnotationContainerRestartCount:    strconv.Itoa(restartCount),
		AnnotationTerminationMessagePath:   c.TerminationMessagePath,
		AnnotationTerminationMessagePolicy: string(c.TerminationMessagePolicy),
	}
	if pod.DeletionGracePeriodSeconds != nil {
		a[AnnotationPodDeletionGracePeriod] = strconv.FormatInt(*pod.DeletionGracePeriodSeconds, 10)
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		a[AnnotationPodTerminationGracePeriod] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		if b, err := json.Marshal(c.Lifecycle.PreStop); err == nil {
			a[AnnotationContainerPreStopHandler] = string(b)
		}
	}
	return a
}

// containerHash is an FNV-1a hash of the container's JSON (the kubelet hashes the spec
// the same way in spirit: a changed spec gives a changed hash).
func containerHash(c *v1.Container) uint64 {
	b, err := json.Marshal(c)
	if err != nil {
		return 0
	}
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// restartCountOf reads the restart count annotation (0 when absent or bad).
func restartCountOf(annotations map[string]string) int {
	n, err := strconv.Atoi(annotations[AnnotationContainerRestartCount])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// podLogDir is the kubelet's pod log directory: root/<namespace>_<name>_<uid>.
func podLogDir(root, namespace, name string, uid types.UID) string {
	return filepath.Join(root, fmt.Sprintf("%s_%s_%s", namespace, name, uid))
}

// containerLogPath is a container's log file, relative to the pod's log directory.
func containerLogPath(name string, restartCount int) string {
	return filepath.Join(name, strconv.Itoa(restartCount)+".log")
}
