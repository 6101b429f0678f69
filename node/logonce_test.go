package node_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// errorLines collects the Error records of a logger.
type errorLines struct {
	mu    sync.Mutex
	lines []string
}

func (h *errorLines) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h *errorLines) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.lines = append(h.lines, r.Message)
	h.mu.Unlock()
	return nil
}
func (h *errorLines) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *errorLines) WithGroup(string) slog.Handler      { return h }

// failingRuntime fails the first SyncPod (failOnce) and the first KillPod.
type failingRuntime struct {
	failOnce
	killed bool // guarded by failOnce.mu
}

func (f *failingRuntime) KillPod(ctx context.Context, pod *v1.Pod, rs *pleg.PodStatus, grace int64) error {
	f.mu.Lock()
	first := !f.killed
	f.killed = true
	f.mu.Unlock()
	if first {
		return errors.New("injected kill failure")
	}
	return f.Runtime.KillPod(ctx, pod, rs, grace)
}

// One failed SyncPod and one failed KillPod are each logged once at Error (by the pod
// workers, with the pod's keys), not once by the node and again by the pod workers
// (issue 33).
func TestFailureLoggedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := statusmgrtest.NewFakeAPI()
		h := &errorLines{}
		rt := &failingRuntime{failOnce: failOnce{Runtime: nodetest.NewRuntime(plegtest.NewRuntime(nil), nodetest.ContainerBehaviour{})}}
		n, err := node.New(node.Config{NodeName: nodeName, Runtime: rt, Patcher: api, Logger: slog.New(h)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 2)
		go func() { done <- n.Run(ctx) }()
		go func() { done <- nodetest.FeedAPI(ctx, n, api, nodeName) }()
		if _, err := api.Create(newPod("web", 30, v1.RestartPolicyAlways, nil)); err != nil {
			t.Fatal(err)
		}
		if err := api.WaitForPods(ctx, func(pods map[types.NamespacedName]*v1.Pod) bool {
			p := pods[types.NamespacedName{Namespace: "default", Name: "web"}]
			return p != nil && p.Status.Phase == v1.PodRunning
		}); err != nil {
			t.Fatal(err)
		}
		if err := api.Delete("default", "web", nil); err != nil {
			t.Fatal(err)
		}
		if err := api.WaitForPods(ctx, func(pods map[types.NamespacedName]*v1.Pod) bool {
			return pods[types.NamespacedName{Namespace: "default", Name: "web"}] == nil
		}); err != nil {
			t.Fatal(err)
		}
		cancel()
		<-done
		<-done
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.lines) != 2 {
			t.Errorf("%d Error lines, want 2 (one per failure): %q", len(h.lines), strings.Join(h.lines, " | "))
		}
	})
}
