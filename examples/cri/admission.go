package cri

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// admission lets a bounded number of pods into a kind of runtime action at once (their
// sandboxes and containers started, or stopped), in arrival order. With many pods at once
// the runtime shares its CPU among all of their calls, and every pod finishes late (all
// about when the last one does); admitted in order, the first pods finish early and the
// median pod is done about halfway. A pod holds its slot until its action ends or for at
// most lease, so a slow action (an image pull, a container that waits out its grace period)
// holds the others up by at most lease.
type admission struct {
	slots chan struct{}
	lease time.Duration
	clock clock.WithDelayedExecution // nil: slots are held until the action ends
}

// newAdmission admits n pods at once (n <= 0: every pod, no admission at all).
func newAdmission(n int, lease time.Duration, c clock.Clock) *admission {
	if n <= 0 {
		return nil
	}
	a := &admission{slots: make(chan struct{}, n), lease: lease}
	if dc, ok := c.(clock.WithDelayedExecution); ok && lease > 0 {
		a.clock = dc
	}
	return a
}

// enter waits for a slot (in arrival order: the channel's waiting senders are served first
// come, first served) and returns the function that gives it back; it fails only when ctx
// ends first.
func (a *admission) enter(ctx context.Context) (leave func(), err error) {
	if a == nil {
		return func() {}, nil
	}
	select {
	case a.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var once sync.Once
	release := func() { once.Do(func() { <-a.slots }) }
	if a.clock == nil {
		return release, nil
	}
	t := a.clock.AfterFunc(a.lease, release)
	return func() { t.Stop(); release() }, nil
}
