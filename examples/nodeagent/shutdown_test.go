package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/admission"
	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// shutdownRun is runNode on an in-memory API server and runtime, in a synctest bubble.
type shutdownRun struct {
	server *statusmgrtest.FakeAPI
	sigs   chan os.Signal
	done   chan error
	cancel context.CancelFunc
	mu     sync.Mutex
	out    strings.Builder
}

func startShutdownRun(t *testing.T, sc node.ShutdownConfig) *shutdownRun {
	t.Helper()
	r := &shutdownRun{server: statusmgrtest.NewFakeAPI(), sigs: make(chan os.Signal, 2), done: make(chan error, 1)}
	gate := &shutdownGate{}
	a, err := agent.New(agent.Config{Server: r.server, Runtime: plegtest.NewRuntime(nil),
		Containers: agent.ContainerBehaviour{StopDelay: time.Second}, Admit: []admission.Handler{gate.handler()}})
	if err != nil {
		t.Fatal(err)
	}
	say := func(format string, args ...any) {
		r.mu.Lock()
		fmt.Fprintf(&r.out, format+"\n", args...)
		r.mu.Unlock()
	}
	waitTerminal := func(ctx context.Context) error {
		return r.server.WaitForPods(ctx, func(pods map[types.NamespacedName]*v1.Pod) bool {
			for _, p := range pods {
				if p.Status.Phase != v1.PodFailed && p.Status.Phase != v1.PodSucceeded {
					return false
				}
			}
			return true
		})
	}
	ctx, cancel := context.WithCancel(t.Context())
	r.cancel = cancel
	go func() { r.done <- runNode(ctx, a, r.sigs, sc, gate, waitTerminal, say) }()
	return r
}

func (r *shutdownRun) create(t *testing.T, name string, grace int64, stopDelay string, priority int32) {
	t.Helper()
	p := newPod(name, grace)
	p.Annotations = map[string]string{agent.AnnotationStopDelay: stopDelay}
	p.Spec.Priority = ptr.To(priority)
	if _, err := r.server.Create(p); err != nil {
		t.Fatal(err)
	}
}

func (r *shutdownRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// The SIGTERM path of a real node (-shutdown-grace-period): the pods are killed by
// priority with the group's grace period, every pod is Failed/Terminated with the
// DisruptionTarget condition on the server when runNode returns, within the period, and a
// pod created meanwhile is refused with NodeShutdown.
func TestRunNodeGracefulShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startShutdownRun(t, node.ShutdownConfig{GracePeriod: 10 * time.Second, GracePeriodCriticalPods: 3 * time.Second})
		r.create(t, "exits", 30, "1s", 0)
		r.create(t, "ignores", 30, "1h", 0) // killed when its group's 7 s run out
		r.create(t, "critical", 30, "2s", node.SystemCriticalPriority)
		if err := r.server.WaitForPods(t.Context(), allRunning([]string{"exits", "ignores", "critical"})); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r.sigs <- syscall.SIGTERM
		synctest.Wait()
		r.create(t, "late", 30, "1s", 0)
		if err := <-r.done; err != nil {
			t.Fatalf("runNode: %v\n%s", err, r.output())
		}
		took := time.Since(start)
		// 7 s for the ordinary pods (ignores is killed then), 2 s for the critical one.
		if took < 9*time.Second || took > 10*time.Second {
			t.Errorf("the shutdown took %v, want 9 to 10 s", took)
		}
		got := map[string]string{}
		for _, name := range []string{"exits", "ignores", "critical", "late"} {
			p, ok := r.server.Pod("default", name)
			if !ok {
				t.Fatalf("pod %s is gone", name)
			}
			dt := "no DisruptionTarget"
			for _, c := range p.Status.Conditions {
				if c.Type == v1.DisruptionTarget {
					dt = string(c.Status) + " " + c.Reason
				}
			}
			got[name] = fmt.Sprintf("%s %s %q, %s", p.Status.Phase, p.Status.Reason, p.Status.Message, dt)
		}
		shut := `Failed Terminated "Pod was terminated in response to imminent node shutdown.", True TerminationByKubelet`
		want := map[string]string{"exits": shut, "ignores": shut, "critical": shut,
			"late": `Failed NodeShutdown "Pod was rejected: Pod was rejected as the node is shutting down.", no DisruptionTarget`}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("statuses (-want +got):\n%s", diff)
		}
		for _, line := range []string{"# terminated: graceful node shutdown (shutdownGracePeriod 10s, shutdownGracePeriodCriticalPods 3s)",
			"# graceful node shutdown done after 9s: every pod is terminal on the server"} {
			if !strings.Contains(r.output(), line) {
				t.Errorf("output lacks %q:\n%s", line, r.output())
			}
		}
	})
}

// Without a shutdown period a signal stops the agent at once, the pods left as they are.
func TestRunNodeSignalWithoutShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := startShutdownRun(t, node.ShutdownConfig{})
		r.create(t, "web", 30, "1s", 0)
		if err := r.server.WaitForPods(t.Context(), allRunning([]string{"web"})); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r.sigs <- os.Interrupt
		if err := <-r.done; err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("stopping took %v, want no time", took)
		}
		if p, _ := r.server.Pod("default", "web"); p.Status.Phase != v1.PodRunning {
			t.Errorf("phase %s, want Running", p.Status.Phase)
		}
		if !strings.Contains(r.output(), "# interrupt: stopping") {
			t.Errorf("output:\n%s", r.output())
		}
	})
}
