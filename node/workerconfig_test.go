package node_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// Config's ResyncInterval, BackoffInitial and BackoffMax reach the pod workers: the
// second SyncPod of a pod comes after the configured back-off (a failed sync) or resync
// (a successful one), each jittered downwards by up to half, not after the defaults.
func TestWorkerPeriods(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      node.Config
		fail     bool
		min, max time.Duration // of the second SyncPod, after the first
	}{
		{"default back-off", node.Config{}, true, 500 * time.Millisecond, time.Second},
		{"back-off of 40 s", node.Config{BackoffInitial: 40 * time.Second, BackoffMax: 40 * time.Second}, true, 20 * time.Second, 40 * time.Second},
		{"initial back-off above the default maximum", node.Config{BackoffInitial: 30 * time.Second}, true, 15 * time.Second, 30 * time.Second},
		{"default resync", node.Config{}, false, 30 * time.Second, time.Minute},
		{"resync of 5 minutes", node.Config{ResyncInterval: 5 * time.Minute}, false, 150 * time.Second, 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var (
					mu    sync.Mutex
					syncs []time.Time
				)
				api := statusmgrtest.NewFakeAPI()
				pod, err := api.Create(newPod("web", 30, v1.RestartPolicyAlways, nil))
				if err != nil {
					t.Fatal(err)
				}
				cfg := tc.cfg
				cfg.NodeName, cfg.Patcher = nodeName, api
				cfg.Runtime = node.RuntimeFuncs{SyncPodFunc: func(context.Context, *v1.Pod, *pleg.PodStatus) error {
					mu.Lock()
					defer mu.Unlock()
					syncs = append(syncs, time.Now())
					if tc.fail {
						return errors.New("no sandbox")
					}
					return nil
				}}
				n, err := node.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- n.Run(ctx) }()
				if err := n.Update(ctx, config.PodUpdate{Op: config.Set, Source: node.SourceAPI, Pods: []*v1.Pod{pod}}); err != nil {
					t.Fatal(err)
				}
				for range 600 {
					time.Sleep(time.Second) // virtual
					mu.Lock()
					k := len(syncs)
					mu.Unlock()
					if k >= 2 {
						break
					}
				}
				cancel()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if len(syncs) < 2 {
					t.Fatalf("%d SyncPod calls in 10 minutes, want 2", len(syncs))
				}
				if d := syncs[1].Sub(syncs[0]); d < tc.min || d > tc.max {
					t.Errorf("second SyncPod %v after the first, want it within [%v, %v]", d, tc.min, tc.max)
				}
			})
		})
	}
}
