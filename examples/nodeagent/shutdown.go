package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/podlife/podlife/node"
)

// shutdownOnSignal waits for a signal on sig, or for ctx to end. On a signal it runs the
// kubelet's graceful node shutdown when cfg asks for one (cfg.GracePeriod > 0 or
// ByPodPriority): every pod is killed by priority group with the shutdown status
// (node.ShutdownStatus), and the statuses are written to the API server before stop
// is called, so the agent exits only once the pods are terminal on the server (or the
// shutdown's periods, and a status flush of at most flush, have run out). Without a
// shutdown configuration it calls stop at once, the agent's plain exit. say writes the
// narration lines.
func shutdownOnSignal(ctx context.Context, sig <-chan os.Signal, n *node.Node, cfg node.ShutdownConfig,
	flush time.Duration, stop func(), say func(format string, args ...any)) {
	defer stop()
	var s os.Signal
	select {
	case s = <-sig:
	case <-ctx.Done():
		return
	}
	if cfg.GracePeriod <= 0 && len(cfg.ByPodPriority) == 0 {
		say("# %v: stopping", s)
		return
	}
	say("# %v: graceful node shutdown (grace period %v, critical pods %v)", s, cfg.GracePeriod, cfg.GracePeriodCriticalPods)
	start := time.Now()
	if err := n.Shutdown(ctx, cfg); err != nil {
		say("# node shutdown: %v", err)
		return
	}
	fctx, cancel := context.WithTimeout(ctx, flush)
	defer cancel()
	if err := n.Status().Sync(fctx); err != nil {
		say("# node shutdown: writing the statuses: %v", err)
		return
	}
	say("# node shutdown: every pod stopped and its status written after %v", time.Since(start).Round(time.Millisecond))
}

// writer is say over an io.Writer, for shutdownOnSignal.
func writer(out io.Writer, lock func() func()) func(format string, args ...any) {
	return func(format string, args ...any) {
		defer lock()()
		fmt.Fprintf(out, format+"\n", args...)
	}
}
