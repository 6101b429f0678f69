package e2e

import (
	"context"
	"errors"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/cri"
	"github.com/podlife/podlife/examples/kube"
	podnode "github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
)

// failFirstSync is a runtime whose first SyncPod fails (the injected sync failure); it
// keeps the runtime's StatusGenerator.
type failFirstSync struct {
	podnode.Runtime
	mu     sync.Mutex
	failed bool
}

func (f *failFirstSync) SyncPod(ctx context.Context, pod *v1.Pod, rs *pleg.PodStatus) error {
	f.mu.Lock()
	first := !f.failed
	f.failed = true
	f.mu.Unlock()
	if first {
		return errors.New("injected sync failure")
	}
	return f.Runtime.SyncPod(ctx, pod, rs)
}

func (f *failFirstSync) APIStatus(pod *v1.Pod, rs *pleg.PodStatus, generated v1.PodStatus, terminal bool) v1.PodStatus {
	if g, ok := f.Runtime.(podnode.StatusGenerator); ok {
		return g.APIStatus(pod, rs, generated, terminal)
	}
	return generated
}

// The kubelet's events reach the server, written as the node (system:node:node1, which
// the Node authorizer lets create and patch events) through client-go's record package,
// for a pod that was created, failed its first sync and was deleted gracefully: the
// node's FailedSync and Killing, and, on real containers (PODLIFE_E2E_CRI), the
// runtime's Pulled, Created and Started.
func TestE2EEvents(t *testing.T) {
	admin, nodeClient := clients(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	recCtx, stopRec := context.WithCancel(context.Background())
	rec, err := kube.NewRecorder(recCtx, nodeClient, "kubelet", node)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopRec(); <-rec.Done() })

	var backend podnode.Runtime
	var rt *cri.Runtime
	var pod *v1.Pod
	want := []string{"FailedSync", "Killing"}
	if ep := os.Getenv(EnvCRI); ep != "" {
		image := os.Getenv(EnvImage)
		if image == "" {
			image = "podlife.test/testimage:v1"
		}
		rt = newCRIConfig(t, cri.Config{Endpoint: ep, Event: rec.Event})
		backend = rt
		pod = criPod(t, "cri-events", image, v1.RestartPolicyAlways, 30, "-term-delay", "1s")
		want = append(want, "Created", "Pulled", "Started")
	} else {
		backend = nodetest.NewRuntime(plegtest.NewRuntime(nil), agent.ContainerBehaviour{})
		pod = busybox(t)
	}
	a := startEventsAgent(t, nodeClient, &failFirstSync{Runtime: backend}, rec)

	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	if rt != nil {
		removeLeftovers(t, rt, pod)
	}
	pw.waitFor(t, ctx, "Running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodRunning })
	})
	deletePod(t, ctx, admin, pod.Name, nil)
	pw.waitFor(t, ctx, "the final delete", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Type == "DELETED" })
	})

	// The events, as an admin lists them (the watch from the start of the test would do
	// too; the list shows what a user's kubectl describe shows).
	w, err := admin.CoreV1().Events(namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	got := map[string]*v1.Event{}
	for !hasAll(got, want) {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the event watch ended")
			}
			if e, isEvent := ev.Object.(*v1.Event); isEvent {
				if e.Reason == "FailedSync" && !strings.Contains(e.Message, "injected sync failure") {
					t.Errorf("unexpected FailedSync: %s", e.Message)
					continue
				}
				got[e.Reason] = e
			}
		case <-ctx.Done():
			t.Fatalf("events on the server: %v, want at least %v; agent trace:\n  %s",
				reasons(got), want, strings.Join(a.trace(pod), "\n  "))
		}
	}
	for _, r := range reasons(got) {
		e := got[r]
		t.Logf("event: %s %s: %s (count %d)", e.Type, e.Reason, e.Message, e.Count)
		if e.Source.Component != "kubelet" || e.Source.Host != node || e.InvolvedObject.Kind != "Pod" {
			t.Errorf("event %s: source %+v, involved object %+v", r, e.Source, e.InvolvedObject)
		}
	}
	if e := got["FailedSync"]; e.Type != v1.EventTypeWarning || !strings.Contains(e.Message, "injected sync failure") {
		t.Errorf("FailedSync = %s %q", e.Type, e.Message)
	}
	if e := got["Killing"]; e.Type != v1.EventTypeNormal || e.Message != "Stopping container "+pod.Spec.Containers[0].Name {
		t.Errorf("Killing = %s %q", e.Type, e.Message)
	}
}

func hasAll(got map[string]*v1.Event, want []string) bool {
	for _, r := range want {
		if got[r] == nil {
			return false
		}
	}
	return true
}

func reasons(got map[string]*v1.Event) []string {
	out := make([]string, 0, len(got))
	for r := range got {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// startEventsAgent starts an agent as the node identity on backend with the recorder,
// stopped when the test ends.
func startEventsAgent(t *testing.T, nodeClient kubernetes.Interface, backend podnode.Runtime, rec podnode.EventRecorder) *runningAgent {
	t.Helper()
	return startAgentWith(t, nodeClient, agent.Config{Backend: backend, Recorder: rec})
}
