package seedpod

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// W4Status is BENCHMARKS.md's W4 status of pod in round r (0..19), the one input of
// statusmgr's benchmark and hack/bench's side by side: the container is
// restarted every 5 rounds and flips readiness, so phase, conditions and container
// statuses all change.
func W4Status(pod *v1.Pod, r int, start time.Time) v1.PodStatus {
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
