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

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// shutdownRun runs an in-memory agent with two pods (one whose containers ignore the stop
// signal), sends SIGTERM through shutdownOnSignal with cfg, and returns the pods as the
// server has them once the agent's Run returned, how long that took after the signal,
// and the narration.
func shutdownRun(t *testing.T, cfg node.ShutdownConfig) (map[string]*v1.Pod, time.Duration, string) {
	api := statusmgrtest.NewFakeAPI()
	a, err := agent.New(agent.Config{Server: api, Runtime: plegtest.NewRuntime(nil),
		Containers: agent.ContainerBehaviour{StopDelay: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out strings.Builder
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(&out, format+"\n", args...)
	}
	sig := make(chan os.Signal, 1)
	go shutdownOnSignal(ctx, sig, a.Node(), cfg, 30*time.Second, cancel, say)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	for _, name := range []string{"web", "stubborn"} {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1.PodSpec{NodeName: agent.DefaultNodeName, Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
		if name == "stubborn" {
			p.Annotations = map[string]string{agent.AnnotationStopDelay: "never"}
		}
		if _, err := api.Create(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := api.WaitForPods(ctx, func(pods map[types.NamespacedName]*v1.Pod) bool {
		for _, name := range []string{"web", "stubborn"} {
			if p := pods[types.NamespacedName{Namespace: "default", Name: name}]; p == nil || p.Status.Phase != v1.PodRunning {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	sig <- syscall.SIGTERM
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	took := time.Since(begin)
	got := map[string]*v1.Pod{}
	for _, name := range []string{"web", "stubborn"} {
		got[name], _ = api.Pod("default", name)
	}
	mu.Lock()
	defer mu.Unlock()
	return got, took, out.String()
}

// With -shutdown-grace-period, SIGTERM stops every pod as the kubelet's graceful node
// shutdown does, and the agent exits only once each pod's shutdown status is on the
// server; the pod that ignores the stop signal is killed when the period ends.
func TestShutdownOnSIGTERM(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got, took, out := shutdownRun(t, node.ShutdownConfig{GracePeriod: 10 * time.Second})
		for name, p := range got {
			if p == nil {
				t.Fatalf("pod %s is gone", name)
			}
			if p.Status.Phase != v1.PodFailed || p.Status.Reason != node.ShutdownReason || p.Status.Message != node.ShutdownMessage {
				t.Errorf("pod %s: phase %s reason %q message %q, want Failed %q %q", name, p.Status.Phase,
					p.Status.Reason, p.Status.Message, node.ShutdownReason, node.ShutdownMessage)
			}
		}
		if took < 10*time.Second || took > 11*time.Second {
			t.Errorf("the agent exited %v after SIGTERM, want the 10 s period (the stubborn pod's kill) and no more than 1 s on top", took)
		}
		if !strings.Contains(out, "graceful node shutdown (grace period 10s") || !strings.Contains(out, "every pod stopped and its status written") {
			t.Errorf("narration:\n%s", out)
		}
	})
}

// Without it, SIGTERM stops the agent at once and the pods keep their Running status.
func TestSIGTERMWithoutShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got, took, out := shutdownRun(t, node.ShutdownConfig{})
		for name, p := range got {
			if p == nil || p.Status.Phase != v1.PodRunning {
				t.Errorf("pod %s: %+v, want it Running as the agent left it", name, p)
			}
		}
		if took != 0 {
			t.Errorf("the agent exited %v after SIGTERM, want at once", took)
		}
		if !strings.Contains(out, "stopping") {
			t.Errorf("narration:\n%s", out)
		}
	})
}
