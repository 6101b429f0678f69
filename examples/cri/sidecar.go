package cri

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/order"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/prober"
)

// Sidecars (restartable init containers) in the kubelet's order, from package order:
// SyncPod starts the init containers as order.Init says (a sidecar is done once it runs,
// or once its startup probe succeeded), and KillPod stops the main containers first,
// then the sidecars in the reverse order of their declaration (order.Termination), each
// with the grace order.StopGrace leaves it.

// Probe runs the container's probe of kind once (see probe) and remembers a startup
// probe's success for its container instance: a startup probe's successThreshold is
// always 1, so one success is the probe's result, which order.Init needs to start the
// init container after a sidecar. (The node syncs the pod when that result changes.)
func (r *Runtime) Probe(ctx context.Context, pod *v1.Pod, st *pleg.PodStatus, c *v1.Container, containerID string, kind node.ProbeKind) (node.ProbeResult, string, error) {
	res, out, err := r.probe(ctx, pod, st, c, containerID, kind)
	if err == nil && kind == node.ProbeStartup && res == node.ProbeSuccess && containerID != "" {
		r.startups.Store(containerID, struct{}{})
	}
	return res, out, err
}

// startupResult is the order.Startup of the runtime: Success once a startup probe of the
// instance succeeded, else Unknown (a failure kills the container: the node's
// killUnhealthy).
func (r *Runtime) startupResult(containerID string) prober.Result {
	if _, ok := r.startups.Load(containerID); ok {
		return prober.Success
	}
	return prober.Unknown
}

// killInit stops the init container instances order.Init wants restarted (a startup
// probe failed, an unknown state) before they start again.
func (r *Runtime) killInit(ctx context.Context, pod *v1.Pod, kills []order.Kill) []error {
	var errs []error
	for _, k := range kills {
		if k.Index < 0 || k.Index >= len(pod.Spec.InitContainers) {
			continue
		}
		name := pod.Spec.InitContainers[k.Index].Name
		r.log.Debug("kill init container", "pod", pod.Namespace+"/"+pod.Name, "container", name, "message", k.Message)
		if err := r.killContainer(ctx, pod, liveContainer{id: k.ContainerID, name: name, running: true}, podGrace(pod)); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// turns is a stopping pod's order.Termination as channels: each container's turn comes
// once the containers it waits for stopped (nil: no order, all at once).
type turns struct {
	after   map[string][]string
	mu      sync.Mutex
	stopped map[string]chan struct{}
}

// newTurns returns the turns of the pod's containers (nil for a pod without sidecars).
func newTurns(pod *v1.Pod, containers []liveContainer) *turns {
	if !order.HasSidecar(pod) {
		return nil
	}
	names := make([]string, 0, len(containers))
	for _, c := range containers {
		names = append(names, c.name)
	}
	t := &turns{after: map[string][]string{}, stopped: map[string]chan struct{}{}}
	for _, s := range order.Termination(pod, names) {
		t.after[s.Name] = s.After
		t.stopped[s.Name] = make(chan struct{})
	}
	return t
}

// wait waits for the container's turn, at most budget, and returns how long it waited.
func (t *turns) wait(ctx context.Context, clk clock.Clock, name string, budget time.Duration) time.Duration {
	if t == nil || budget <= 0 || len(t.after[name]) == 0 {
		return 0
	}
	start := clk.Now()
	timer := clk.NewTimer(budget)
	defer timer.Stop()
	for _, dep := range t.after[name] {
		t.mu.Lock()
		ch := t.stopped[dep]
		t.mu.Unlock()
		if ch == nil {
			continue
		}
		select {
		case <-ch:
		case <-timer.C():
			return clk.Since(start)
		case <-ctx.Done():
			return clk.Since(start)
		}
	}
	return clk.Since(start)
}

// done marks the container stopped (or its stop failed: the others go on).
func (t *turns) done(name string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if ch, ok := t.stopped[name]; ok {
		close(ch)
		delete(t.stopped, name)
	}
}
