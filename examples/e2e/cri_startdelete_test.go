package e2e

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// Pods deleted at random moments while they start (issue 28): the runtime never cancels a
// RunPodSandbox, CreateContainer or StartContainer in flight, so no container status the
// server shows has exit code 128 or reason StartError (containerd's report of a shim killed
// by a cancelled start), and every pod ends deleted.
func TestE2ECRIDeleteWhileStarting(t *testing.T) {
	admin, nodeClient, ep, image := criEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	rt := newCRI(t, ep)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewPCG(seed, seed))
	startCRIAgent(t, nodeClient, rt)
	const n = 20
	pods := make([]*v1.Pod, n)
	watches := make([]*podWatch, n)
	for i := range pods {
		pods[i] = criPod(t, "cri-startdel", image, v1.RestartPolicyAlways, 2)
		watches[i] = watchPod(t, ctx, admin, pods[i].Name)
	}
	removeLeftovers(t, rt, pods...)
	for i := range pods {
		pods[i] = createPod(t, ctx, admin, pods[i])
		time.Sleep(time.Duration(rnd.IntN(800)) * time.Millisecond)
		deletePod(t, ctx, admin, pods[i].Name, ptr.To[int64](2))
	}
	for i, pw := range watches {
		events := pw.waitFor(t, ctx, "the pod deleted", func(es []podEvent) bool {
			return last(es, func(e podEvent) bool { return e.Type == watch.Deleted })
		})
		for _, e := range events {
			if e.Pod == nil {
				continue
			}
			for _, cs := range e.Pod.Status.ContainerStatuses {
				for _, st := range []v1.ContainerState{cs.State, cs.LastTerminationState} {
					if tm := st.Terminated; tm != nil && (tm.ExitCode == 128 || tm.Reason == "StartError") {
						t.Errorf("pod %s: container %s terminated with exit code %d, reason %s: %s; events:\n%s",
							pods[i].Name, cs.Name, tm.ExitCode, tm.Reason, tm.Message, formatEvents(events))
					}
				}
			}
		}
	}
}
