package e2e

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/examples/vk/vktest"
)

// quietFor is how long a Running pod must go without a status write: more than two of the
// status manager's 10 s full syncs.
const quietFor = 25 * time.Second

// TestE2EVirtualKubeletNoIdlePatch: once a vk pod is Running on the server, nothing about
// it changes, so the node writes nothing: no status PATCH for 25 s (there used to be one
// every 10 s, {"status":{"podIPs":null,"qosClass":null}}, the provider's status lacking
// what the server keeps).
func TestE2EVirtualKubeletNoIdlePatch(t *testing.T) {
	for _, kind := range vkKinds {
		t.Run(kind.name, func(t *testing.T) {
			e := newVKEnv(t, kind)
			_, patcher, r := e.run("", vktest.Config{}, nil)
			pod := vkPod(t, "idle", v1.RestartPolicyAlways)
			w := e.watch(pod.Name)
			pod = createPod(t, e.ctx, e.admin, pod)
			events := of(w.waitFor(t, e.ctx, "Running on the server", hasPhase(pod.UID, v1.PodRunning)), pod.UID)
			running := events[index(events, func(ev podEvent) bool { return ev.Phase == v1.PodRunning })].At
			timer := vkClock.NewTimer(quietFor)
			defer timer.Stop()
			select {
			case <-timer.C():
			case <-e.ctx.Done():
				t.Fatal(e.ctx.Err())
			}
			end := vkClock.Now()
			// A patch is recorded when its answer arrives; one still in flight now is
			// recorded once the runner has stopped, with Started in the window.
			if err := r.stop(); err != nil {
				t.Errorf("vk.Run: %v", err)
			}
			var before int
			for _, p := range patcher.find("patch", pod.UID) {
				switch {
				case p.Started.Before(running):
					before++
				case p.Started.Before(end):
					t.Errorf("a status PATCH %v after the pod was Running: %s", p.Started.Sub(running), p.Patch)
				}
			}
			t.Logf("%d status patch(es) until Running, none in the %v after", before, quietFor)
		})
	}
}
