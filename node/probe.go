package node

import (
	"context"
	"strconv"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/grace"
	"github.com/podlife/podlife/pleg"
)

// ProbeResult is the outcome of one run of a probe (the kubelet's probe.Result).
type ProbeResult int

const (
	// ProbeUnknown: the probe could not tell; the node counts it as a failure, as the
	// kubelet's prober does (an error from Probe, by contrast, is thrown away).
	ProbeUnknown ProbeResult = iota
	// ProbeSuccess: the probe passed.
	ProbeSuccess
	// ProbeWarning: the probe passed with a warning (an HTTP redirect to another host,
	// say); it counts as a success and its output is recorded as a ProbeWarning event.
	ProbeWarning
	// ProbeFailure: the probe failed.
	ProbeFailure
)

// String returns "unknown", "success", "warning" or "failure".
func (r ProbeResult) String() string {
	switch r {
	case ProbeUnknown:
		return "unknown"
	case ProbeSuccess:
		return "success"
	case ProbeWarning:
		return "warning"
	case ProbeFailure:
		return "failure"
	default:
		return "ProbeResult(" + strconv.Itoa(int(r)) + ")"
	}
}

// Prober is implemented by a Runtime that runs containers' probes (the kubelet's prober:
// exec, httpGet, tcpSocket and grpc handlers). The node then runs every startup,
// liveness and readiness probe of the pods' containers on the kubelet's schedule
// (initialDelaySeconds, periodSeconds, successThreshold, failureThreshold; liveness and
// readiness wait for the startup probe's success), feeds the results into the pods'
// statuses (Ready, Started, the Ready and ContainersReady conditions) without waiting
// for a relist, and has a container that failed its liveness or startup probe killed
// (KillContainer) and started again (SyncPod). A Runtime that does not implement it gets
// no probes run: a container with a readiness probe is never ready, as GenerateOptions
// documents.
//
// Both methods are called outside every lock; Probe may be called for many containers
// at once (and for one pod while another of its methods runs), KillContainer only from
// the pod's worker, like every other action on the pod.
type Prober interface {
	// Probe runs the container's probe of kind once (the probe is the container's
	// StartupProbe, LivenessProbe or ReadinessProbe) and returns its result and output
	// (recorded in the Unhealthy event of a failure). ctx ends after the probe's
	// timeoutSeconds (and when the node stops). An error means the probe could not be
	// run (not that it failed); the kubelet throws such a result away and so does the
	// node. status is the pod's latest runtime status (for its IPs), never nil.
	Probe(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus, container *v1.Container, containerID string, kind ProbeKind) (ProbeResult, string, error)

	// KillContainer stops one running container of the pod (the kubelet's killContainer
	// for a liveness or startup failure), with the grace the container-level rules give
	// for reason (grace.ContainerStopTimeout with reason: a probe's own
	// terminationGracePeriodSeconds applies), running its preStop hook first, and
	// returns nil once it no longer runs. message is the kubelet's ("Container app
	// failed liveness probe, will be restarted"); the node records it as the Killing
	// event. The node calls SyncPod right after, which starts the container again as
	// the pod's restartPolicy says (with its restart back-off).
	KillContainer(ctx context.Context, pod *v1.Pod, containerID string, reason grace.KillReason, message string) error
}
