package agent

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// slowSource is an API server whose first list takes a while (unreachable, or slow).
type slowSource struct {
	*statusmgrtest.FakeAPI
	delay time.Duration
}

func (s slowSource) Watch(ctx context.Context, nodeName string) ([]*v1.Pod, <-chan statusmgrtest.Event) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
	}
	return s.FakeAPI.Watch(ctx, nodeName)
}

// Issue 13, bug 2: an agent restarted while its first list is slow must not take its
// running pods for orphans. Before package node, housekeeping ran before the API source
// had listed: every running pod was killed with grace 1, restartPolicy Never pods were
// reported Succeeded though nobody deleted them, and pods ran twice.
func TestRestartWithASlowFirstListKillsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server, runtime := statusmgrtest.NewFakeAPI(), plegtest.NewRuntime(nil)
		h1 := newHarness(t, server, runtime, ContainerBehaviour{StopDelay: time.Second})
		h1.create("web", 30, v1.RestartPolicyAlways, nil)
		h1.create("job", 30, v1.RestartPolicyNever, nil)
		h1.waitPhase("web", v1.PodRunning)
		h1.waitPhase("job", v1.PodRunning)
		web, _ := server.Pod("default", "web")
		h1.stop()

		a, err := New(Config{Source: WatchSource(slowSource{server, 5 * time.Second}), Patcher: server, Runtime: runtime,
			Containers: ContainerBehaviour{StopDelay: time.Second}, HousekeepingPeriod: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		time.Sleep(15 * time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"web", "job"} {
			p, ok := server.Pod("default", name)
			if !ok || p.Status.Phase != v1.PodRunning || p.DeletionTimestamp != nil {
				t.Errorf("%s after the restart: present %v, phase %s; want Running, untouched", name, ok, p.Status.Phase)
				continue
			}
			if !runtime.IsRunning(p.UID) {
				t.Errorf("%s: its containers were stopped by the restarted agent", name)
			}
			if p.Status.ContainerStatuses[0].RestartCount != 0 {
				t.Errorf("%s ran twice: restartCount %d", name, p.Status.ContainerStatuses[0].RestartCount)
			}
		}
		if p, _ := server.Pod("default", "web"); p.Status.ContainerStatuses[0].ContainerID != web.Status.ContainerStatuses[0].ContainerID {
			t.Errorf("web's container changed across the restart: %s, was %s",
				p.Status.ContainerStatuses[0].ContainerID, web.Status.ContainerStatuses[0].ContainerID)
		}
		if c := server.Counts(); c.Deletes != 0 {
			t.Errorf("final deletes = %d, want none", c.Deletes)
		}
	})
}
