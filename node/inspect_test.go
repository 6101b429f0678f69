package node_test

import (
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/node/nodetest"
)

// TestGracefulStopInspectsTwice: one graceful stop inspects the runtime at most twice
// (before the kill, for the containers to stop; after it, to see that none runs, which
// is also the status the terminated work gets); periodic relists find nothing new.
func TestGracefulStopInspectsTwice(t *testing.T) {
	for _, stopDelay := range []time.Duration{0, 500 * time.Millisecond, 2 * time.Second} {
		t.Run(stopDelay.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := start(t, nil, nil, envOpts{containers: nodetest.ContainerBehaviour{StopDelay: stopDelay}})
				e.create(newPod("web", 30, v1.RestartPolicyAlways, nil))
				e.waitPhase("web", v1.PodRunning)
				// Relists settle; the stop starts and ends between two of them, so that the
				// count is the stop's own, not a periodic relist's that happens to see it.
				time.Sleep(10*time.Second + 300*time.Millisecond)
				before := e.mem.Calls().PodStatus
				if err := e.api.Delete("default", "web", nil); err != nil {
					t.Fatal(err)
				}
				e.waitGone("web")
				time.Sleep(10 * time.Second) // and relists after the stop find nothing new
				e.stop()
				if got := e.mem.Calls().PodStatus - before; got > 2 {
					t.Errorf("%d runtime inspections for one graceful stop, want at most 2", got)
				}
				if n := e.rt.Count(nodetest.VerbKillPod, ""); n != 1 {
					t.Errorf("%d KillPod calls, want 1", n)
				}
			})
		})
	}
}
