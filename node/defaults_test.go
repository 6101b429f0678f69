package node_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/statusmgr"
)

// A pod that never went through an API server's defaulting (a hand-built fixture, a
// manifest) may have an empty restartPolicy: every decision reads it as Always, as the API
// server stores it. Its crashing container restarts, and the status manager takes the
// terminated -> running transition (it used to refuse it: FailedSync "illegal container
// state transition" on every restart).
func TestEmptyRestartPolicyCrashLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, nil, nil, envOpts{noAPISource: true})
		p := e.create(newPod("crash", 30, v1.RestartPolicyAlways, map[string]string{
			nodetest.AnnotationRunFor: "2s", nodetest.AnnotationExitCode: "1"}))
		p.Spec.RestartPolicy = "" // the node's copy, as a source that does not default gives it
		if err := e.n.Update(context.Background(), config.PodUpdate{Op: config.Set, Source: node.SourceAPI, Pods: []*v1.Pod{p}}); err != nil {
			t.Fatal(err)
		}
		// Virtual time: the bound only ends the test when the statuses never arrive.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		err := e.api.WaitForPods(ctx, func(pods map[types.NamespacedName]*v1.Pod) bool {
			p, ok := pods[types.NamespacedName{Namespace: "default", Name: "crash"}]
			return ok && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 2 &&
				p.Status.ContainerStatuses[0].State.Running != nil
		})
		e.stop()
		if err != nil {
			t.Errorf("the API server never saw the container running after two restarts: %v", err)
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		refused := 0
		for _, ev := range e.events {
			if errors.Is(ev.Err, statusmgr.ErrIllegalTransition) {
				if refused == 0 {
					t.Errorf("%s %s: %v", ev.Kind, ev.Reason, ev.Err)
				}
				refused++
			}
		}
		if refused > 1 {
			t.Errorf("%d statuses refused in all", refused)
		}
		if got, _ := e.api.Pod("default", "crash"); got.Status.Phase != v1.PodRunning {
			t.Errorf("phase %s, want Running", got.Status.Phase)
		}
	})
}

// Every decision that reads the pod's restartPolicy gives the same answer for an empty one
// as for Always.
func TestEmptyRestartPolicyIsAlways(t *testing.T) {
	terminated := func(code int32) v1.ContainerStatus {
		return v1.ContainerStatus{Name: "app", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
	}
	running := v1.ContainerStatus{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	type answers struct {
		ShouldRestart   bool
		Transition      bool // CheckContainerStateTransition allows terminated -> running
		Phase           v1.PodPhase
		RuntimeRestarts bool // nodetest.PodSpec restarts exited containers
	}
	decide := func(policy v1.RestartPolicy, code int32) answers {
		pod := newPod("p", 30, policy, nil)
		old := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{terminated(code)}}
		next := v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{running}}
		spec, err := nodetest.PodSpec(pod, nodetest.ContainerBehaviour{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return answers{
			ShouldRestart:   node.ContainerShouldRestart(&pod.Spec.Containers[0], &pod.Spec, code),
			Transition:      statusmgr.CheckContainerStateTransition(pod, &old, &next) == nil,
			Phase:           node.PodPhase(pod, nil, old.ContainerStatuses, false),
			RuntimeRestarts: spec.RestartExited,
		}
	}
	for _, code := range []int32{0, 1, 137} {
		t.Run(fmt.Sprintf("exit code %d", code), func(t *testing.T) {
			always := decide(v1.RestartPolicyAlways, code)
			if diff := cmp.Diff(always, decide("", code)); diff != "" {
				t.Errorf("exit code %d: empty restartPolicy (-Always +empty):\n%s", code, diff)
			}
			if never := decide(v1.RestartPolicyNever, code); never == always {
				t.Errorf("exit code %d: Never answers as Always (%+v): the table decides nothing", code, never)
			}
		})
	}
}
