package nodetest

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/grace"
	"github.com/podlife/podlife/internal/podfacts"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

// VerbKillContainer is the Action of KillContainer: GracePeriod is the container's (see
// grace.ContainerGracePeriod with the kill's reason), Container its name.
const VerbKillContainer = "KillContainer"

// ProbeAnswer is what a container's probe returns when the node runs it.
type ProbeAnswer struct {
	Result node.ProbeResult
	Output string
	// Err, when set, makes the probe error (the node throws the run away).
	Err error
}

// probeKey names a container's probe of a kind in a pod.
type probeKey struct {
	uid       types.UID
	container string
	kind      node.ProbeKind
}

var _ node.Prober = (*Runtime)(nil)

// SetProbe makes the pod's container's probe of kind answer a from now on, for every
// instance of the container, until set again. A probe never set succeeds.
func (r *Runtime) SetProbe(uid types.UID, container string, kind node.ProbeKind, a ProbeAnswer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.probes == nil {
		r.probes = make(map[probeKey]ProbeAnswer)
	}
	r.probes[probeKey{uid, container, kind}] = a
}

// ProbeCount returns how many times the node ran the pod's container's probe of kind.
func (r *Runtime) ProbeCount(uid types.UID, container string, kind node.ProbeKind) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.probeRuns[probeKey{uid, container, kind}]
}

// Probe answers as SetProbe said (Success unless set).
func (r *Runtime) Probe(_ context.Context, pod *v1.Pod, _ *pleg.PodStatus, c *v1.Container, _ string, kind node.ProbeKind) (node.ProbeResult, string, error) {
	k := probeKey{pod.UID, c.Name, kind}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.probeRuns == nil {
		r.probeRuns = make(map[probeKey]int)
	}
	r.probeRuns[k]++
	a, ok := r.probes[k]
	if !ok {
		return node.ProbeSuccess, "", nil
	}
	return a.Result, a.Output, a.Err
}

// KillContainer stops the container as KillPod stops each, within the grace
// grace.ContainerGracePeriod gives for reason (a probe's terminationGracePeriodSeconds
// applies); the next SyncPod starts it again as the pod's restartPolicy says (Always, or
// OnFailure after a non-zero exit: a container that exits 0 on its stop signal is not
// restarted under OnFailure, unlike the kubelet's, which restarts it).
func (r *Runtime) KillContainer(ctx context.Context, pod *v1.Pod, containerID string, reason grace.KillReason, _ string) error {
	var c *v1.Container
	if st, err := r.Mem.PodStatus(ctx, pod.UID, pod.Name, pod.Namespace); err == nil {
		for _, cs := range st.ContainerStatuses {
			if cs.ID == containerID {
				c = podfacts.ContainerByName(pod.Spec.Containers, cs.Name)
				if c == nil {
					c = podfacts.ContainerByName(pod.Spec.InitContainers, cs.Name)
				}
			}
		}
	}
	g := grace.ContainerGracePeriod(pod, c, reason)
	name := ""
	if c != nil {
		name = c.Name
	}
	r.mu.Lock()
	r.actions = append(r.actions, Action{Verb: VerbKillContainer, UID: pod.UID, GracePeriod: g, Container: name})
	r.mu.Unlock()
	return r.Mem.KillContainer(ctx, pod.UID, containerID, time.Duration(g)*time.Second)
}
