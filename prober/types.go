package prober

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Kind is the kind of a probe.
type Kind int

const (
	// Startup is the startup probe: liveness and readiness wait for its success.
	Startup Kind = iota
	// Readiness is the readiness probe: it decides whether the container is ready.
	Readiness
	// Liveness is the liveness probe: its failure asks for the container's restart.
	Liveness
)

// String returns "startup", "readiness" or "liveness".
func (k Kind) String() string {
	switch k {
	case Startup:
		return "startup"
	case Readiness:
		return "readiness"
	case Liveness:
		return "liveness"
	default:
		return fmt.Sprintf("Kind(%d)", int(k))
	}
}

// Result is a probe's current result for a container instance (the kubelet's
// results.Result), or the outcome of one run of it.
type Result int

const (
	// Unknown: not decided yet (a startup probe's initial result).
	Unknown Result = iota
	// Success: the probe passed (successThreshold times in a row).
	Success
	// Failure: the probe failed (failureThreshold times in a row), or the container no
	// longer runs.
	Failure
)

// String returns "unknown", "success" or "failure".
func (r Result) String() string {
	switch r {
	case Unknown:
		return "unknown"
	case Success:
		return "success"
	case Failure:
		return "failure"
	default:
		return fmt.Sprintf("Result(%d)", int(r))
	}
}

// initial is the result a probe of kind has for a new container instance before it ran
// (the kubelet's initialValue): a startup probe Unknown, a readiness probe Failure, a
// liveness probe Success.
func initial(k Kind) Result {
	switch k {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	}
	return Unknown
}

// Key names one probe: a container's probe of a kind.
type Key struct {
	PodUID    types.UID
	Container string
	Kind      Kind
}

// Instance is the current instance of one of a pod's containers, as the runtime
// reports it.
type Instance struct {
	// Name is the container's name.
	Name string
	// ID is the instance's container ID (the runtime's); "" means the container has no
	// instance yet, and the instance the machine knew is kept.
	ID string
	// Running: the instance runs.
	Running bool
	// StartedAt is when it started (initialDelaySeconds count from it).
	StartedAt time.Time
}

// Change is a probe's result that changed.
type Change struct {
	Key         Key
	ContainerID string
	Result      Result
}

// Probe is one run of a probe that is due: the caller runs it and reports its outcome
// (Machine.Report). Pod, Container and Spec are the pod's objects, shared and
// read-only.
type Probe struct {
	Key         Key
	ContainerID string
	Pod         *v1.Pod
	Container   *v1.Container
	Spec        *v1.Probe
	// Timeout is the probe's timeoutSeconds (1 s when unset).
	Timeout time.Duration
	// seq tells this run from a later one of the same probe.
	seq uint64
}

// Defaults of probe fields left unset (the API server's defaults; a pod that went
// through it always has them).
const (
	DefaultPeriod  = 10 * time.Second
	DefaultTimeout = time.Second
)

// period is the probe's periodSeconds (DefaultPeriod when not positive).
func period(p *v1.Probe) time.Duration {
	if p.PeriodSeconds <= 0 {
		return DefaultPeriod
	}
	return time.Duration(p.PeriodSeconds) * time.Second
}

// timeout is the probe's timeoutSeconds (DefaultTimeout when not positive).
func timeout(p *v1.Probe) time.Duration {
	if p.TimeoutSeconds <= 0 {
		return DefaultTimeout
	}
	return time.Duration(p.TimeoutSeconds) * time.Second
}

// specOf returns the container's probe of kind, or nil.
func specOf(c *v1.Container, k Kind) *v1.Probe {
	switch k {
	case Startup:
		return c.StartupProbe
	case Readiness:
		return c.ReadinessProbe
	case Liveness:
		return c.LivenessProbe
	}
	return nil
}
