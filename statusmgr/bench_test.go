package statusmgr_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/internal/seedpod"
	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

func ptrTo[T any](v T) *T { return &v }

// w4Status is the node agent's status of pod i in round r (0..19): the container is
// restarted every 5 rounds and flips readiness, so phase, conditions and container
// statuses all change.
func w4Status(pod *v1.Pod, r int, start time.Time) v1.PodStatus {
	s := *pod.Status.DeepCopy()
	ready := r%2 == 1
	cs := &s.ContainerStatuses[0]
	cs.RestartCount = int32(r / 5)
	cs.Ready = ready
	cs.ContainerID = fmt.Sprintf("containerd://%062x%02d", r/5, r/5)
	cs.State = v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(start.Add(time.Duration(r/5) * time.Minute))}}
	if r/5 > 0 {
		cs.LastTerminationState = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
			FinishedAt: metav1.NewTime(start.Add(time.Duration(r/5) * time.Minute))}}
	}
	status := v1.ConditionFalse
	if ready {
		status = v1.ConditionTrue
	}
	s.Conditions = []v1.PodCondition{
		{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue},
		{Type: v1.PodInitialized, Status: v1.ConditionTrue},
		{Type: v1.PodReady, Status: status},
		{Type: v1.ContainersReady, Status: status},
		{Type: v1.PodScheduled, Status: v1.ConditionTrue},
	}
	if r < 2 {
		s.Phase = v1.PodPending
		cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	}
	return s
}

// BenchmarkW4StatusManager is BENCHMARKS.md's W4: 1,000 pods, 20 SetPodStatus calls per pod
// interleaved across pods, then TerminatePod for every pod (each carries a deletionTimestamp
// on the server); the fake API answers at once and counts calls. Timed from the first
// SetPodStatus until the API side has deleted every pod (waited on its count).
func BenchmarkW4StatusManager(b *testing.B) {
	benchW4(b, 0)
}

// BenchmarkW4StatusManager1Writer is W4 with MaxConcurrentWrites 1 (one writer, as before
// issue 16).
func BenchmarkW4StatusManager1Writer(b *testing.B) {
	benchW4(b, 1)
}

func benchW4(b *testing.B, maxWrites int) {
	const pods, rounds = 1000, 20
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	seeds := make([]*v1.Pod, pods)
	deleting := make([]*v1.Pod, pods)
	statuses := make([][]v1.PodStatus, rounds)
	for i := range seeds {
		seeds[i] = seedpod.Merged(i, start)
		d := seeds[i].DeepCopy()
		ts := metav1.NewTime(start.Add(time.Hour))
		d.DeletionTimestamp = &ts
		d.DeletionGracePeriodSeconds = ptrTo(int64(30))
		deleting[i] = d
	}
	for r := range statuses {
		statuses[r] = make([]v1.PodStatus, pods)
		for i := range seeds {
			statuses[r][i] = w4Status(seeds[i], r, start)
		}
	}
	var last statusmgrtest.Counts
	var wall time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		api := statusmgrtest.NewFakeAPI(seeds...)
		m, err := statusmgr.New(statusmgr.Config{Patcher: api, MaxConcurrentWrites: maxWrites})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(b.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		b.StartTimer()

		t0 := time.Now()
		for r := range rounds {
			for i, pod := range seeds {
				if err := m.SetPodStatus(pod, statuses[r][i]); err != nil {
					b.Fatal(err)
				}
			}
		}
		for i, d := range deleting {
			if !api.MarkDeleted(d.Namespace, d.Name, *d.DeletionTimestamp, 30) {
				b.Fatalf("pod %d missing", i)
			}
			if err := m.TerminatePod(d); err != nil {
				b.Fatal(err)
			}
		}
		if err := api.WaitFor(ctx, func(c statusmgrtest.Counts) bool { return c.Deleted == pods }); err != nil {
			b.Fatal(err)
		}
		wall = time.Since(t0)

		b.StopTimer()
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		last = api.Counts()
		if api.Len() != 0 || last.Deletes != pods {
			b.Fatalf("left %d pods, %d deletes", api.Len(), last.Deletes)
		}
		for _, p := range api.DeletedPods() {
			if p.Status.Phase != v1.PodFailed || p.Status.ContainerStatuses[0].State.Terminated == nil {
				b.Fatalf("pod %s deleted with status %+v", p.Name, p.Status)
			}
		}
		if s := m.Stats(); s.Errors != 0 || s.Conflicts != 0 || s.Deleted != pods {
			b.Fatalf("stats %+v", s)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(last.Gets)/pods, "GET/pod")
	b.ReportMetric(float64(last.Patches)/pods, "PATCH/pod")
	b.ReportMetric(float64(last.Deletes)/pods, "DELETE/pod")
	b.ReportMetric(float64(last.PatchBytes)/pods, "patchB/pod")
	b.ReportMetric(float64(wall.Milliseconds()), "ms-until-deleted")
}
