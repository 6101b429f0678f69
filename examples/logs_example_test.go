package examples_test

import (
	"context"
	"log/slog"
	"os"

	"github.com/go-logr/logr"

	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
)

// Example_logs hands podlife's components a *slog.Logger that writes through a
// logr.Logger, the logging interface of klog and controller-runtime: a node agent that
// logs with klog passes slog.New(logr.ToSlogHandler(klog.Background())) as
// node.Config.Logger. Every package logs the same keys: pod (namespace/name) and podUID.
// The logr.Logger here is a text handler without time, so the output is stable.
func Example_logs() {
	text := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // no time: stable output
			}
			return a
		},
	})
	var l logr.Logger = logr.FromSlogHandler(text) // stands for klog.Background()
	logger := slog.New(logr.ToSlogHandler(l))

	// A runtime that lists the same pod twice: the relister warns, with the pod's keys.
	rt := plegtest.NewRuntime(nil)
	twice := pleg.RuntimeServiceFuncs{
		ListPodsFunc: func(ctx context.Context, all bool) ([]*pleg.Pod, error) {
			p := &pleg.Pod{ID: "6f1c", Name: "web", Namespace: "default"}
			return []*pleg.Pod{p, p}, nil
		},
		PodStatusFunc: rt.PodStatus,
	}
	r, err := pleg.New(pleg.Config{Runtime: twice, Cache: pleg.NewCache(), Logger: logger})
	if err != nil {
		panic(err)
	}
	_ = r.Relist(context.Background())
	// Output:
	// level=WARN msg="pleg: relist: ignoring a pod listed twice" pod=default/web podUID=6f1c index=1
}
