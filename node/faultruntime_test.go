package node_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/pleg"
)

// errInjected is the runtime's injected failure.
var errInjected = errors.New("injected runtime failure")

// faultRuntime is a nodetest.Runtime whose actions fail at random (SyncPod, KillPod,
// KillRuntimePod, CleanupPod, and now and then a relist or an inspection) and whose kills
// are sometimes slow to begin (the runtime takes seconds before it signals the
// containers, as a busy container runtime does). Faults are drawn per pod UID.
type faultRuntime struct {
	*nodetest.Runtime
	faults *faults

	mu    sync.Mutex
	stats map[string]int
}

var _ node.Runtime = (*faultRuntime)(nil)

func (r *faultRuntime) fail(verb string, uid types.UID, rate float64) bool {
	x, _ := r.faults.draw("rt/" + verb + "/" + string(uid))
	if x >= rate {
		return false
	}
	r.mu.Lock()
	r.stats["fault/rt/"+verb]++
	r.mu.Unlock()
	return true
}

func (r *faultRuntime) ListPods(ctx context.Context, all bool) ([]*pleg.Pod, error) {
	if r.fail("ListPods", "", 0.03) {
		return nil, fmt.Errorf("ListPods: %w", errInjected)
	}
	return r.Runtime.ListPods(ctx, all)
}

func (r *faultRuntime) PodStatus(ctx context.Context, uid types.UID, name, namespace string) (*pleg.PodStatus, error) {
	if r.fail("PodStatus", uid, 0.03) {
		return nil, fmt.Errorf("PodStatus: %w", errInjected)
	}
	return r.Runtime.PodStatus(ctx, uid, name, namespace)
}

func (r *faultRuntime) SyncPod(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus) error {
	if r.fail("SyncPod", pod.UID, 0.15) {
		return fmt.Errorf("SyncPod: %w", errInjected)
	}
	return r.Runtime.SyncPod(ctx, pod, status)
}

func (r *faultRuntime) KillPod(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus, gracePeriod int64) error {
	x, rng := r.faults.draw("rt/KillPod/" + string(pod.UID))
	switch {
	case x < 0.15:
		r.mu.Lock()
		r.stats["fault/rt/KillPod"]++
		r.mu.Unlock()
		return fmt.Errorf("KillPod: %w", errInjected)
	case x < 0.35:
		// A slow kill: the runtime takes a while before it even signals the containers.
		r.mu.Lock()
		r.stats["fault/rt/KillPod/slow"]++
		r.mu.Unlock()
		if err := sleepCtx(ctx, time.Duration(1+rng.IntN(8))*time.Second); err != nil {
			return err
		}
	}
	return r.Runtime.KillPod(ctx, pod, status, gracePeriod)
}

func (r *faultRuntime) KillRuntimePod(ctx context.Context, rp *pleg.Pod) error {
	if r.fail("KillRuntimePod", rp.ID, 0.3) {
		return fmt.Errorf("KillRuntimePod: %w", errInjected)
	}
	return r.Runtime.KillRuntimePod(ctx, rp)
}

func (r *faultRuntime) CleanupPod(ctx context.Context, pod *v1.Pod) error {
	if r.fail("CleanupPod", pod.UID, 0.1) {
		return fmt.Errorf("CleanupPod: %w", errInjected)
	}
	return r.Runtime.CleanupPod(ctx, pod)
}
