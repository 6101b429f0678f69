package nodetest

import (
	"context"
	"errors"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/order"
	"github.com/podlife/podlife/pleg"
)

// killInOrder stops the running containers of a pod with sidecars in the kubelet's order
// (order.Termination): the main containers at once, each sidecar once the containers it
// waits for stopped, within what order.StopGrace leaves of gracePeriod. A pod without
// sidecars is left to the in-memory runtime's KillPod (all at once).
func (r *Runtime) killInOrder(ctx context.Context, pod *v1.Pod, gracePeriod int64) error {
	if !order.HasSidecar(pod) {
		return nil
	}
	st, err := r.Mem.PodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return nil // the in-memory runtime's KillPod stops what there is
	}
	ids := map[string]string{}
	var names []string
	for _, cs := range st.ContainerStatuses {
		if cs.State == pleg.ContainerStateRunning {
			if _, ok := ids[cs.Name]; !ok {
				names = append(names, cs.Name)
			}
			ids[cs.Name] = cs.ID
		}
	}
	stops := order.Termination(pod, names)
	stopped := make(map[string]chan struct{}, len(stops))
	for _, s := range stops {
		stopped[s.Name] = make(chan struct{})
	}
	clk := r.Mem.Clock()
	start := clk.Now()
	budget := order.TurnBudget(gracePeriod, 0)
	var wg sync.WaitGroup
	errs := make([]error, len(stops))
	for i, s := range stops {
		wg.Go(func() {
			defer close(stopped[s.Name])
			var waited time.Duration
			if len(s.After) > 0 {
				t := clk.NewTimer(budget)
			wait:
				for _, a := range s.After {
					select {
					case <-stopped[a]:
					case <-t.C():
						break wait
					case <-ctx.Done():
						t.Stop()
						errs[i] = ctx.Err()
						return
					}
				}
				t.Stop()
				waited = clk.Since(start)
			}
			g := order.StopGrace(gracePeriod, 0, waited)
			errs[i] = r.Mem.KillContainer(ctx, pod.UID, ids[s.Name], time.Duration(g)*time.Second)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
