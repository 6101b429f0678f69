package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// harness runs an agent inside a synctest bubble: time is virtual, and the bubble checks
// that every goroutine has ended when the test does.
type harness struct {
	t       *testing.T
	server  *statusmgrtest.FakeAPI
	runtime *plegtest.Runtime
	agent   *Agent
	cancel  context.CancelFunc
	done    chan error

	mu    sync.Mutex
	steps []Step
}

func newHarness(t *testing.T, server *statusmgrtest.FakeAPI, runtime *plegtest.Runtime, b ContainerBehaviour) *harness {
	t.Helper()
	h := &harness{t: t, server: server, runtime: runtime, done: make(chan error, 1)}
	if h.server == nil {
		h.server = statusmgrtest.NewFakeAPI()
	}
	if h.runtime == nil {
		h.runtime = plegtest.NewRuntime(nil)
	}
	a, err := New(Config{Server: h.server, Runtime: h.runtime, Containers: b, Observer: h.record})
	if err != nil {
		t.Fatal(err)
	}
	h.agent = a
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- a.Run(ctx) }()
	return h
}

func (h *harness) record(s Step) {
	h.mu.Lock()
	h.steps = append(h.steps, s)
	h.mu.Unlock()
}

// stop stops the agent and waits for it.
func (h *harness) stop() {
	h.t.Helper()
	h.cancel()
	if err := <-h.done; err != nil {
		h.t.Fatalf("agent.Run: %v", err)
	}
}

// trace returns the recorded steps of kinds, as "kind detail" lines without times and
// container IDs.
func (h *harness) trace(kinds ...Kind) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, s := range h.steps {
		for _, k := range kinds {
			if s.Kind == k {
				d := s.Detail
				if i := strings.Index(d, " container-"); i >= 0 && s.Kind == KindPLEG {
					d = d[:i]
				}
				if i := strings.Index(d, " sandbox-"); i >= 0 && s.Kind == KindPLEG {
					d = d[:i] + " (sandbox)"
				}
				if i := strings.Index(d, " ("); i >= 0 && s.Kind == KindStatus {
					d = d[:i] // drop the patch size
				}
				line := string(s.Kind) + " " + d
				if len(out) > 0 && out[len(out)-1] == line {
					continue // PLEG events of one relist may or may not coalesce into one sync
				}
				if s.Kind == KindWork && strings.HasPrefix(d, "SyncPod (sync)") && len(out) > 1 &&
					out[len(out)-2] == line && strings.HasPrefix(out[len(out)-1], string(KindStatus)) {
					continue // the second sync of one relist's events, after the first one's patch
				}
				out = append(out, line)
			}
		}
	}
	return out
}

func (h *harness) create(name string, grace int64, policy v1.RestartPolicy, ann map[string]string) *v1.Pod {
	h.t.Helper()
	p, err := h.server.Create(withPreStop(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: ann},
		Spec: v1.PodSpec{NodeName: DefaultNodeName, RestartPolicy: policy, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
	}))
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

func nn(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}

// withPreStop gives the pod's container a preStop hook when its annotations say how long
// the hook takes.
func withPreStop(p *v1.Pod) *v1.Pod {
	if p.Annotations[AnnotationPreStop] != "" {
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	}
	return p
}

func (h *harness) waitPhase(name string, phase v1.PodPhase) {
	h.t.Helper()
	err := h.server.WaitForPods(context.Background(), func(p map[types.NamespacedName]*v1.Pod) bool {
		pod, ok := p[nn("default", name)]
		return ok && pod.Status.Phase == phase
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) waitGone(name string) {
	h.t.Helper()
	err := h.server.WaitForPods(context.Background(), func(p map[types.NamespacedName]*v1.Pod) bool {
		_, ok := p[nn("default", name)]
		return !ok
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// waitForgotten waits (in virtual time) until housekeeping forgot every pod.
func (h *harness) waitForgotten() {
	for h.agent.Workers().Len() > 0 {
		time.Sleep(time.Second) // virtual: the bubble's clock jumps to the next timer
	}
}

// checkDeletedOnce asserts the API side: exactly one final delete, no patch after it.
func (h *harness) checkDeletedOnce() {
	h.t.Helper()
	if c := h.server.Counts(); c.Deletes != 1 {
		h.t.Errorf("final deletes = %d, want exactly 1", c.Deletes)
	}
	deleted := false
	for _, line := range h.trace(KindStatus, KindDelete) {
		switch {
		case strings.HasPrefix(line, "delete deleted"):
			deleted = true
		case deleted && strings.HasPrefix(line, "status patched"):
			h.t.Errorf("status patched after the final delete: %q", line)
		}
	}
	if !deleted {
		h.t.Errorf("no final delete in the trace")
	}
}

// inOrder asserts that each line first appears in the trace after the previous one.
func (h *harness) inOrder(lines ...string) {
	h.t.Helper()
	trace := h.trace(KindConfig, KindWorker, KindWork, KindStatus, KindDelete, KindPLEG)
	at := -1
	for _, want := range lines {
		i := slices.Index(trace, want)
		if i < 0 || i < at {
			h.t.Errorf("%q is missing or out of order; trace:\n  %s", want, strings.Join(trace, "\n  "))
			return
		}
		at = i
	}
}

// timeline returns every recorded step, one per line.
func (h *harness) timeline() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, s := range h.steps {
		fmt.Fprintln(&b, s)
	}
	return b.String()
}

func diffLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\ngot:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// Seed 001: a pod's creation.
func TestCreation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, nil, ContainerBehaviour{StopDelay: time.Second})
		h.create("web", 30, v1.RestartPolicyAlways, nil)
		h.waitPhase("web", v1.PodRunning)
		time.Sleep(time.Minute) // nothing more happens
		h.stop()
		// Seed 001's order: the create's sync, the Pending status, the sync that sees the
		// container started, the Running status. The relist that sees the container may run
		// before or after the Pending patch is written, and the status manager may coalesce
		// Pending and Running into one patch when both are set at the same instant (its
		// documentation allows it): each chain is checked on its own.
		h.inOrder("config ADD", "work SyncPod (create), 0 running container(s)",
			"work SyncPod (sync), 1 running container(s)", "status patched status: phase Running", "config RECONCILE (phase Running)")
		c := h.server.Counts()
		if c.Patches == 2 {
			h.inOrder("work SyncPod (create), 0 running container(s)", "status patched status: phase Pending",
				"config RECONCILE (phase Pending)", "config RECONCILE (phase Running)")
			h.inOrder("status patched status: phase Pending", "status patched status: phase Running")
		}
		if c.Patches < 1 || c.Patches > 2 || c.Deletes != 0 {
			t.Errorf("API calls = %+v, want 1 or 2 patches (Pending, Running) and no delete", c)
		}
	})
}

// Seed 000: a graceful delete, from the deletionTimestamp to the final delete.
func TestGracefulDeletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, nil, ContainerBehaviour{StopDelay: 2 * time.Second})
		h.create("web", 30, v1.RestartPolicyAlways, nil)
		h.waitPhase("web", v1.PodRunning)
		synctest.Wait() // let the agent take in the Running status
		h.mu.Lock()
		h.steps = nil
		h.mu.Unlock()
		start := time.Now()
		if err := h.server.Delete("default", "web", nil); err != nil {
			t.Fatal(err)
		}
		h.waitGone("web")
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("the pod was gone %v after the delete, want 2s (its containers' stop delay)", took)
		}
		h.waitForgotten()
		h.stop()
		// The pod worker's own sequence is serialized.
		diffLines(t, "pod worker trace", h.trace(KindWorker, KindWork), []string{
			"worker syncing -> terminating",
			"work SyncTerminatingPod (grace 30s), 1 running container(s)",
			"work SyncTerminatingPod done: every container stopped",
			"worker terminating -> terminated",
			"work SyncTerminatedPod",
			"worker terminated -> finished",
			"worker finished -> none",
		})
		// The config side sees the graceful delete, the status patches come back (the
		// terminal phase among them), then the final delete as a Remove.
		cfg := h.trace(KindConfig)
		if len(cfg) < 3 || cfg[0] != "config DELETE (graceful, 30s)" || cfg[len(cfg)-1] != "config REMOVE" ||
			!slices.Contains(cfg, "config RECONCILE (phase Succeeded)") ||
			slices.ContainsFunc(cfg[1:len(cfg)-1], func(l string) bool { return !strings.HasPrefix(l, "config RECONCILE") }) {
			t.Errorf("config trace = %q, want DELETE, RECONCILE..., REMOVE with the terminal phase reconciled", cfg)
		}
		// Across components: the containers stop, then the terminal phase reaches the
		// server, the final delete follows SyncTerminatedPod, and the Remove and the
		// forgetting come last.
		h.inOrder("work SyncTerminatingPod done: every container stopped", "status patched status: phase Succeeded",
			"delete deleted from the API (grace 0, UID precondition uid-0001)", "config REMOVE", "worker finished -> none")
		h.inOrder("work SyncTerminatedPod", "delete deleted from the API (grace 0, UID precondition uid-0001)")
		h.checkDeletedOnce()
	})
}

func TestGracePeriods(t *testing.T) {
	cases := []struct {
		name      string
		grace     int64
		ann       map[string]string
		secondDel *int64 // a second delete after 2 s
		wantGone  time.Duration
		wantPhase v1.PodPhase
	}{
		{name: "container ignores the stop signal: killed at the end of the grace period", grace: 5,
			ann: map[string]string{AnnotationStopDelay: "never"}, wantGone: 5 * time.Second, wantPhase: v1.PodFailed},
		{name: "grace period shortened by a second delete", grace: 30,
			ann: map[string]string{AnnotationStopDelay: "never"}, secondDel: ptrTo(int64(3)), wantGone: 5 * time.Second, wantPhase: v1.PodFailed},
		{name: "a longer second delete changes nothing", grace: 4,
			ann: map[string]string{AnnotationStopDelay: "never"}, secondDel: ptrTo(int64(60)), wantGone: 4 * time.Second, wantPhase: v1.PodFailed},
		{name: "preStop hook and stop delay within the grace period", grace: 30,
			ann: map[string]string{AnnotationStopDelay: "1s", AnnotationPreStop: "3s"}, wantGone: 4 * time.Second, wantPhase: v1.PodSucceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, nil, nil, ContainerBehaviour{})
				h.create("web", tc.grace, v1.RestartPolicyAlways, tc.ann)
				h.waitPhase("web", v1.PodRunning)
				start := time.Now()
				if err := h.server.Delete("default", "web", nil); err != nil {
					t.Fatal(err)
				}
				if tc.secondDel != nil {
					time.Sleep(2 * time.Second)
					if err := h.server.Delete("default", "web", tc.secondDel); err != nil {
						t.Fatal(err)
					}
				}
				h.waitGone("web")
				if took := time.Since(start); took != tc.wantGone {
					t.Errorf("gone %v after the delete, want %v; timeline:\n%s", took, tc.wantGone, h.timeline())
				}
				if deleted := h.server.DeletedPods(); len(deleted) != 1 || deleted[0].Status.Phase != tc.wantPhase {
					t.Errorf("pods at the final delete = %v, want one in phase %q", deleted, tc.wantPhase)
				}
				h.waitForgotten()
				h.stop()
				h.checkDeletedOnce()
			})
		})
	}
}

func TestDeletedBeforeStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server := statusmgrtest.NewFakeAPI()
		p, err := server.Create(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: v1.PodSpec{NodeName: DefaultNodeName, Containers: []v1.Container{{Name: "app"}}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := server.Delete("default", "web", nil); err != nil { // before the agent ever saw it
			t.Fatal(err)
		}
		h := newHarness(t, server, nil, ContainerBehaviour{})
		h.waitGone("web")
		h.waitForgotten()
		h.stop()
		h.checkDeletedOnce()
		for _, line := range h.trace(KindWork) {
			if strings.HasPrefix(line, "work SyncPod") {
				t.Errorf("a pod deleted before it started was synced: %q", line)
			}
		}
		if n := h.runtime.Calls(); n.PodStatus != 0 && h.runtime.IsRunning(p.UID) {
			t.Errorf("a container of the deleted pod runs")
		}
	})
}

// A pod whose containers exit on their own under restartPolicy Never becomes Succeeded and
// stays on the server until someone deletes it.
func TestExitsOnItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil, nil, ContainerBehaviour{})
		h.create("job", 30, v1.RestartPolicyNever, map[string]string{AnnotationRunFor: "3s"})
		h.waitPhase("job", v1.PodSucceeded)
		time.Sleep(time.Minute)
		if _, ok := h.server.Pod("default", "job"); !ok {
			t.Fatal("a finished pod was deleted before its deletion was requested")
		}
		if c := h.server.Counts(); c.Deletes != 0 {
			t.Fatalf("final deletes before deletion was requested: %d", c.Deletes)
		}
		if err := h.server.Delete("default", "job", nil); err != nil {
			t.Fatal(err)
		}
		h.waitGone("job") // a terminal pod goes at once on the API server
		h.waitForgotten()
		h.stop()
		if c := h.server.Counts(); c.Deletes != 0 {
			t.Errorf("the agent deleted a pod the API server had already removed: %d deletes", c.Deletes)
		}
	})
}

// The agent restarted in the middle of a termination recovers from what the API server and
// the runtime say: the pod ends deleted exactly once.
func TestRestartMidTermination(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server, runtime := statusmgrtest.NewFakeAPI(), plegtest.NewRuntime(nil)
		h1 := newHarness(t, server, runtime, ContainerBehaviour{StopDelay: -1})
		h1.create("web", 10, v1.RestartPolicyAlways, nil)
		h1.waitPhase("web", v1.PodRunning)
		start := time.Now()
		if err := server.Delete("default", "web", nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(4 * time.Second)
		h1.stop()
		if _, ok := server.Pod("default", "web"); !ok {
			t.Fatal("pod gone before the restart")
		}
		h2 := newHarness(t, server, runtime, ContainerBehaviour{StopDelay: -1})
		h2.waitGone("web")
		if took := time.Since(start); took != 10*time.Second {
			t.Errorf("gone %v after the delete, want 10s (the first kill's deadline)", took)
		}
		h2.waitForgotten()
		h2.stop()
		if c := server.Counts(); c.Deletes != 1 {
			t.Errorf("final deletes = %d, want 1", c.Deletes)
		}
	})
}

func ptrTo[T any](v T) *T { return &v }
