package cri

import (
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/order"
	"github.com/podlife/podlife/pleg"
)

// podActions is what SyncPod must do to bring a pod to its spec (the kubelet's
// podActions): a pure decision from the pod and its runtime status.
type podActions struct {
	// KillPod: stop every container and sandbox of the pod first (its sandbox is gone or
	// not ready, or the pod is done).
	KillPod bool
	// CreateSandbox: create a new sandbox (attempt Attempt) and start from scratch.
	CreateSandbox bool
	Attempt       uint32
	// SandboxID is the ready sandbox to start containers in (when not CreateSandbox).
	SandboxID string
	// NextInit is the index in pod.Spec.InitContainers of the init container to start,
	// or -1; InitStart lists more to start after it (sidecars to restart), and InitKill
	// the instances to stop first (order.Init).
	NextInit  int
	InitStart []int
	InitKill  []order.Kill
	// Start lists indexes in pod.Spec.Containers to start.
	Start []int
	// StartEphemeral lists indexes in pod.Spec.EphemeralContainers to start: those never
	// created (an ephemeral container is never restarted).
	StartEphemeral []int
	// InitFailed: an init container failed and the restartPolicy is Never: the pod is
	// done (the node sees it Failed).
	InitFailed bool
}

// restartOnFailure: the policy restarts failed containers (OnFailure, Always, or unset).
func restartOnFailure(pod *v1.Pod) bool { return pod.Spec.RestartPolicy != v1.RestartPolicyNever }

// shouldRestart is the kubelet's ShouldContainerBeRestarted: whether a container whose
// newest instance is s (nil: never created) must be (re)started. An instance the runtime
// killed for a failed liveness or startup probe (probeKilled, may be nil) is restarted
// unless the policy is Never, whatever its exit code (the kubelet's computePodActions kills
// and restarts it in one step).
func shouldRestart(pod *v1.Pod, s *pleg.ContainerStatus, probeKilled func(id string) bool) bool {
	if s == nil {
		return true
	}
	switch s.State {
	case pleg.ContainerStateRunning:
		return false
	case pleg.ContainerStateUnknown, pleg.ContainerStateCreated:
		return true
	}
	switch pod.Spec.RestartPolicy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return s.ExitCode != 0 || (probeKilled != nil && probeKilled(s.ID))
	default:
		return true
	}
}

// succeeded: the container's newest instance exited with 0.
func succeeded(s *pleg.ContainerStatus) bool {
	return s != nil && s.State == pleg.ContainerStateExited && s.ExitCode == 0
}

// isTerminalPhase: the pod's API phase is terminal.
func isTerminalPhase(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

// computePodActions decides what SyncPod does, as the kubelet's computePodActions does
// for pods without resizes or changed container specs; the init containers and sidecars
// as package order decides; probeKilled (may be nil) tells the container instances killed
// for a failed probe (see shouldRestart).
func computePodActions(pod *v1.Pod, status *pleg.PodStatus, probeKilled func(id string) bool) podActions {
	return computePodActionsStartup(pod, status, nil, probeKilled)
}

// computePodActionsStartup is computePodActions with the sidecars' startup probe results
// (nil: none known): the init containers as order.Init decides.
func computePodActionsStartup(pod *v1.Pod, status *pleg.PodStatus, startup order.Startup, probeKilled func(id string) bool) podActions {
	a := podActions{NextInit: -1}
	var newest *pleg.SandboxStatus
	if status != nil && len(status.SandboxStatuses) > 0 {
		newest = status.SandboxStatuses[0]
	}
	if isTerminalPhase(pod) {
		// Never start anything of a pod that is done; stop what still runs.
		a.KillPod = status.IsRunning()
		return a
	}
	if newest == nil || newest.State != pleg.SandboxReady {
		a.KillPod = status.IsRunning() // what is left of the old sandbox
		a.CreateSandbox = true
		if newest != nil {
			a.Attempt = newest.Attempt + 1
		}
		hadContainers := status != nil && len(status.ContainerStatuses) > 0
		if !restartOnFailure(pod) && newest != nil && hadContainers {
			// restartPolicy Never: a pod whose sandbox died after it ran is done.
			a.CreateSandbox = false
			return a
		}
		if len(pod.Spec.InitContainers) > 0 {
			a.NextInit = 0 // a new sandbox runs the init containers again
			return a
		}
		for i := range pod.Spec.Containers {
			s := status.FindContainerStatusByName(pod.Spec.Containers[i].Name)
			if pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure && succeeded(s) {
				continue
			}
			if pod.Spec.RestartPolicy == v1.RestartPolicyNever && s != nil && s.State == pleg.ContainerStateExited {
				continue
			}
			a.Start = append(a.Start, i)
		}
		if len(a.Start) == 0 {
			a.CreateSandbox = false // nothing would run in it: the pod is done
		}
		return a
	}

	a.SandboxID = newest.ID
	a.StartEphemeral = ephemeralToStart(pod, status)
	init := order.Init(pod, status, startup)
	if init.KillPod {
		a.InitFailed = true
		a.KillPod = true
		return a
	}
	if len(init.Start) > 0 {
		a.NextInit = init.Start[0]
		if len(init.Start) > 1 {
			a.InitStart = init.Start[1:]
		}
	}
	a.InitKill = init.Kill
	if !init.Initialized {
		return a
	}
	running := false
	for i := range pod.Spec.Containers {
		s := status.FindContainerStatusByName(pod.Spec.Containers[i].Name)
		if s != nil && s.State == pleg.ContainerStateRunning {
			running = true
			continue
		}
		if shouldRestart(pod, s, probeKilled) {
			a.Start = append(a.Start, i)
		}
	}
	if !running && len(a.Start) == 0 {
		a.KillPod = true // every container is done: stop the sandbox (and its sidecars)
		a.NextInit, a.InitStart, a.InitKill = -1, nil, nil
	}
	return a
}

// ephemeralToStart is the kubelet's choice of ephemeral containers to start: those without
// a status (never restarted), even while the init containers run.
func ephemeralToStart(pod *v1.Pod, status *pleg.PodStatus) []int {
	var out []int
	for i := range pod.Spec.EphemeralContainers {
		if status.FindContainerStatusByName(pod.Spec.EphemeralContainers[i].Name) == nil {
			out = append(out, i)
		}
	}
	return out
}
