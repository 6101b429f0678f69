package node

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/grace"
	"github.com/podlife/podlife/internal/podfacts"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/prober"
)

// Reasons of the Kubernetes events of probes (the kubelet's).
const (
	// ReasonUnhealthy: a probe failed ("Liveness probe failed: <output>") or could not
	// be run ("Liveness probe errored and resulted in unknown state: <err>").
	ReasonUnhealthy = "Unhealthy"
	// ReasonProbeWarning: a probe passed with a warning ("Readiness probe warning: ...").
	ReasonProbeWarning = "ProbeWarning"
)

// maxProbeRetries is how many times a probe that errors is run before its error counts
// (the kubelet's maxProbeRetries).
const maxProbeRetries = 3

// newProbes returns the runner of the node's probes, nil when the Runtime runs none.
func (n *Node) newProbes() (*prober.Runner, error) {
	if n.prober == nil {
		return nil, nil
	}
	return prober.New(prober.Config{Clock: n.clock, Probe: n.runProbe, OnChange: n.onProbeChange})
}

// probeKindOf and kindOf translate between the node's probe kinds and package prober's.
func probeKindOf(k prober.Kind) ProbeKind {
	switch k {
	case prober.Readiness:
		return ProbeReadiness
	case prober.Liveness:
		return ProbeLiveness
	}
	return ProbeStartup
}

func kindOf(k ProbeKind) prober.Kind {
	switch k {
	case ProbeReadiness:
		return prober.Readiness
	case ProbeLiveness:
		return prober.Liveness
	}
	return prober.Startup
}

// probeTitle is the kubelet's name of a probe kind in its events ("Liveness").
func probeTitle(k ProbeKind) string {
	s := k.String()
	return strings.ToUpper(s[:1]) + s[1:]
}

// runProbe is the runner's Probe: it has the Runtime run the probe (up to
// maxProbeRetries times while it errors, as the kubelet's prober), records the
// kubelet's events (Unhealthy for a failure or an error, ProbeWarning) and gives the
// runner the outcome: a warning counts as a success, an unknown as a failure, and an
// error is thrown away.
func (n *Node) runProbe(ctx context.Context, p prober.Probe) (prober.Result, error) {
	rs, _ := n.relister.LastStatus(p.Key.PodUID)
	if rs == nil {
		rs = &pleg.PodStatus{ID: p.Pod.UID, Name: p.Pod.Name, Namespace: p.Pod.Namespace}
	}
	kind := probeKindOf(p.Key.Kind)
	var res ProbeResult
	var out string
	var err error
	for range maxProbeRetries {
		res, out, err = n.prober.Probe(ctx, p.Pod, rs, p.Container, p.ContainerID, kind)
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		n.recordEvent(p.Pod, v1.EventTypeWarning, ReasonUnhealthy, "%s probe errored and resulted in %s state: %s", probeTitle(kind), ProbeUnknown, err)
		n.log.DebugContext(ctx, "probe errored", append(podKeys(p.Pod, ""), "probeType", kind, "containerName", p.Key.Container, "err", err)...)
		return prober.Unknown, err
	}
	if n.cfg.Metrics.Probe != nil {
		n.cfg.Metrics.Probe(kind, res)
	}
	switch res {
	case ProbeSuccess:
		return prober.Success, nil
	case ProbeWarning:
		n.recordEvent(p.Pod, v1.EventTypeWarning, ReasonProbeWarning, "%s probe warning: %s", probeTitle(kind), out)
		return prober.Success, nil
	case ProbeFailure:
		n.recordEvent(p.Pod, v1.EventTypeWarning, ReasonUnhealthy, "%s probe failed: %s", probeTitle(kind), out)
		n.log.DebugContext(ctx, "probe failed", append(podKeys(p.Pod, ""), "probeType", kind, "containerName", p.Key.Container, "output", out)...)
	}
	return prober.Failure, nil
}

// onProbeChange is the runner's OnChange (the kubelet's syncLoopIteration on its probe
// result channels): a readiness or startup result that changed, and a liveness failure,
// sync the pod, whose status then shows the result (and whose liveness or startup
// failure then has the container killed and started again: killUnhealthy).
func (n *Node) onProbeChange(c prober.Change) {
	if c.Key.Kind == prober.Liveness && c.Result != prober.Failure {
		return
	}
	p, ok := n.pods.GetPodByUID(c.Key.PodUID)
	if !ok {
		return
	}
	n.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodSync, Pod: p, MirrorPod: n.mirrorOf(p)})
}

// setProbes adds the pod's probes to the runner and gives it the containers' current
// instances from the runtime status (nothing without a Prober).
func (n *Node) setProbes(pod *v1.Pod, rs *pleg.PodStatus) {
	if n.probes == nil {
		return
	}
	var buf [4]prober.Instance
	inst := buf[:0]
	add := func(c *v1.Container) {
		if c.StartupProbe == nil && c.ReadinessProbe == nil && c.LivenessProbe == nil {
			return
		}
		if cs := rs.FindContainerStatusByName(c.Name); cs != nil {
			inst = append(inst, prober.Instance{Name: c.Name, ID: cs.ID, Running: cs.State == pleg.ContainerStateRunning, StartedAt: cs.StartedAt})
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; isRestartableInitContainer(c) {
			add(c)
		}
	}
	n.probes.SetPod(pod, inst)
}

// probeResult is GenerateOptions.ProbeResult for the pod from the runner's results,
// nil without a Prober.
func (n *Node) probeResult(pod *v1.Pod) func(containerName, containerID string, kind ProbeKind) (bool, bool) {
	if n.probes == nil {
		return nil
	}
	uid := pod.UID
	return func(name, apiID string, kind ProbeKind) (bool, bool) {
		id, r, ok := n.probes.Result(prober.Key{PodUID: uid, Container: name, Kind: kindOf(kind)})
		if !ok || !sameContainerID(apiID, id) {
			return false, false
		}
		return r == prober.Success, true
	}
}

// sameContainerID reports whether an API containerID ("type://id") names the runtime's
// container id.
func sameContainerID(apiID, id string) bool {
	if id == "" {
		return false
	}
	if apiID == id {
		return true
	}
	return strings.HasSuffix(apiID, "://"+id)
}

// killUnhealthy kills each running container of the pod whose liveness (else startup)
// probe failed for its current instance (the kubelet's computePodActions and
// killContainer; restartable init containers first, "Init container x failed ..."),
// each with a Killing event, and returns the pod's runtime status
// inspected after the kills (rs when none was killed), from which Runtime.SyncPod
// starts them again.
func (n *Node) killUnhealthy(ctx context.Context, pod *v1.Pod, rs *pleg.PodStatus) (*pleg.PodStatus, error) {
	if n.probes == nil || rs == nil {
		return rs, nil
	}
	killed := false
	check := func(c *v1.Container, init bool) error {
		if c.LivenessProbe == nil && c.StartupProbe == nil {
			return nil
		}
		cs := rs.FindContainerStatusByName(c.Name)
		if cs == nil || cs.State != pleg.ContainerStateRunning {
			return nil
		}
		var reason grace.KillReason
		var message string
		if id, r, ok := n.probes.Result(prober.Key{PodUID: pod.UID, Container: c.Name, Kind: prober.Liveness}); ok && id == cs.ID && r == prober.Failure {
			reason, message = grace.KillLivenessProbe, fmt.Sprintf("Container %s failed liveness probe", c.Name)
		} else if id, r, ok := n.probes.Result(prober.Key{PodUID: pod.UID, Container: c.Name, Kind: prober.Startup}); ok && id == cs.ID && r == prober.Failure {
			reason, message = grace.KillStartupProbe, fmt.Sprintf("Container %s failed startup probe", c.Name)
		} else {
			return nil
		}
		if init {
			// A sidecar's message (computeInitContainerActions): no suffix, it always restarts.
			message = "Init c" + message[1:]
		} else if restartsAfterProbeKill(pod, c) {
			message += ", will be restarted"
		}
		n.recordEvent(pod, v1.EventTypeNormal, ReasonKilling, "%s", message)
		n.emit(Event{Kind: EventWork, Pod: pod, Reason: ReasonKilling, Message: message})
		n.log.InfoContext(ctx, "killing a container that failed its probe", append(podKeys(pod, ""), "containerName", c.Name, "containerID", cs.ID, "reason", reason)...)
		if err := n.prober.KillContainer(ctx, pod, cs.ID, reason, message); err != nil {
			if ctx.Err() == nil {
				n.emit(Event{Kind: EventError, Pod: pod, Reason: ReasonFailedSync, Err: err})
				n.recordEvent(pod, v1.EventTypeWarning, ReasonFailedSync, "error syncing pod: %v", err)
			}
			return fmt.Errorf("node: killing container %s of %s/%s: %w", c.Name, pod.Namespace, pod.Name, err)
		}
		killed = true
		return nil
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; isRestartableInitContainer(c) {
			if err := check(c, true); err != nil {
				return rs, err
			}
		}
	}
	for i := range pod.Spec.Containers {
		if err := check(&pod.Spec.Containers[i], false); err != nil {
			return rs, err
		}
	}
	if !killed {
		return rs, nil
	}
	after, err := n.relister.Refresh(ctx, pod.UID)
	if err != nil {
		return rs, fmt.Errorf("node: inspecting %s/%s after killing its unhealthy containers: %w", pod.Namespace, pod.Name, err)
	}
	if after == nil {
		return rs, nil
	}
	return after, nil
}

// restartsAfterProbeKill reports whether a container killed for a probe is started
// again (the kubelet's computePodActions: the pod's restartPolicy is not Never, or the
// container's own restartPolicy, a sidecar's Always, says so).
func restartsAfterProbeKill(pod *v1.Pod, c *v1.Container) bool {
	if c.RestartPolicy != nil {
		return *c.RestartPolicy != v1.ContainerRestartPolicyNever
	}
	return podfacts.RestartPolicy(&pod.Spec) != v1.RestartPolicyNever
}
