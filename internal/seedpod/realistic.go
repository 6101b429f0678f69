package seedpod

import (
	"fmt"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RealisticSteps is the number of statuses W4 sets per pod before TerminatePod.
const RealisticSteps = 20

// RealisticPod is one pod's history in BENCHMARKS.md's "W4 on realistic statuses": the
// statuses a node agent sets, step by step, and the step from which the pod it passes
// along carries a deletionTimestamp.
type RealisticPod struct {
	// Pod is Merged(n, start): the pod as the config merge delivers it before its deletion.
	Pod *v1.Pod
	// Deleting is Pod as the API server's graceful delete leaves it: deletionTimestamp
	// (DeletionTime) and deletionGracePeriodSeconds 30 set. It is the pod to pass with every
	// step from DeletedAt on, and to TerminatePod.
	Deleting *v1.Pod
	// DeletedAt is the first step (0..RealisticSteps-1) whose pod is Deleting, or
	// RealisticSteps when the pod is deleted only at TerminatePod.
	DeletedAt int
	// TerminalAt is the first step whose status has a terminal phase (Succeeded or
	// Failed), or RealisticSteps when none has. Every later status stays terminal, with
	// the same phase.
	TerminalAt int
	// Statuses are the RealisticSteps statuses in order. Conditions carry reasons and
	// messages, containers carry containerd IDs (a new one for every restart), terminated
	// states carry exit codes, reasons and times; every status is a separate deep copy.
	Statuses []v1.PodStatus
}

// PodAt is the pod to pass with step i: Deleting from DeletedAt on, Pod before.
func (p RealisticPod) PodAt(i int) *v1.Pod {
	if i >= p.DeletedAt {
		return p.Deleting
	}
	return p.Pod
}

// Realistic builds pod n's realistic W4 history, deterministic from seed and n; start is
// the time of step 0 (each step is 10 s later). About 10% of the pods reach a terminal
// phase before TerminatePod (deleted during the steps, their container stopped, the node
// agent reports Succeeded for exit code 0 and Failed otherwise), about 30% more are deleted
// during the steps and still terminating at the end, the others are deleted only at
// TerminatePod. Along the way the container starts unready, becomes ready, and may crash,
// back off and restart.
func Realistic(seed uint64, n int, start time.Time) RealisticPod {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	p := RealisticPod{Pod: Merged(n, start), DeletedAt: RealisticSteps, TerminalAt: RealisticSteps}
	switch u := rng.IntN(100); {
	case u < 10:
		p.DeletedAt = 8 + rng.IntN(8)
		p.TerminalAt = p.DeletedAt + 2 + rng.IntN(3)
	case u < 40:
		p.DeletedAt = 10 + rng.IntN(RealisticSteps-10)
	}
	p.Deleting = p.Pod.DeepCopy()
	deletedAt := metav1.NewTime(stepTime(start, min(p.DeletedAt, RealisticSteps)))
	grace := int64(30)
	p.Deleting.DeletionTimestamp, p.Deleting.DeletionGracePeriodSeconds = &deletedAt, &grace

	h := history{rng: rng, pod: p.Pod, start: start}
	p.Statuses = make([]v1.PodStatus, RealisticSteps)
	for j := range RealisticSteps {
		p.Statuses[j] = h.step(j, p.DeletedAt, p.TerminalAt)
	}
	return p
}

// stepTime is the time of step j.
func stepTime(start time.Time, j int) time.Time {
	return start.Add(time.Duration(j) * 10 * time.Second)
}

// history is the state of one pod's container while its statuses are generated.
type history struct {
	rng      *rand.Rand
	pod      *v1.Pod
	start    time.Time
	restarts int32
	id       string                       // the running container's ID ("" before the first start)
	started  metav1.Time                  // when it started
	ready    bool                         // whether it passed its readiness probe
	last     *v1.ContainerStateTerminated // the previous container's end
	crashed  bool                         // the container ended and waits in back-off
	stopped  *v1.ContainerStateTerminated // the container's end after the deletion
	readyAt  metav1.Time                  // the last time readiness changed
}

// step returns the status at step j and advances the container's state.
func (h *history) step(j, deletedAt, terminalAt int) v1.PodStatus {
	now := metav1.NewTime(stepTime(h.start, j))
	switch {
	case j == 0:
	case j >= deletedAt+1 && h.stopped == nil:
		h.stop(now, terminalAt < RealisticSteps)
	case h.stopped != nil:
	case h.crashed:
		h.crashed = false
		h.begin(now)
	case h.id == "":
		h.begin(now)
	case !h.ready:
		h.ready, h.readyAt = true, now
	case j < deletedAt && h.rng.IntN(8) == 0:
		h.crash(now)
	}
	return h.status(j, now, terminalAt)
}

// begin starts a new container (unready until its readiness probe passes).
func (h *history) begin(now metav1.Time) {
	h.id = containerID(h.rng)
	h.started = now
	if h.ready {
		h.readyAt = now
	}
	h.ready = false
}

// crash ends the running container with an error exit code: it waits in back-off.
func (h *history) crash(now metav1.Time) {
	code, reason := int32(1), "Error"
	if h.rng.IntN(3) == 0 {
		code, reason = 137, "OOMKilled"
	}
	h.last = &v1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: h.started, FinishedAt: now, ContainerID: h.id}
	h.restarts++
	h.crashed, h.ready, h.readyAt = true, false, now
}

// stop ends the container after the pod's deletion: exit code 0 or 143 (SIGTERM), or for
// a pod that becomes terminal, sometimes 137 (killed after the grace period). A container
// waiting in back-off stays as it ended.
func (h *history) stop(now metav1.Time, terminal bool) {
	if h.crashed {
		h.stopped, h.crashed = h.last, false
		return
	}
	code, reason := int32(0), "Completed"
	switch u := h.rng.IntN(4); {
	case u == 1:
		code, reason = 143, "Error"
	case u == 2 && terminal:
		code, reason = 137, "Error"
	}
	if h.id == "" { // never started
		h.id = containerID(h.rng)
		h.started = now
	}
	h.stopped = &v1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: h.started, FinishedAt: now, ContainerID: h.id}
	if h.ready {
		h.readyAt = now
	}
	h.ready = false
}

// status renders the current state as the node agent's status at step j.
func (h *history) status(j int, now metav1.Time, terminalAt int) v1.PodStatus {
	s := *h.pod.Status.DeepCopy()
	started := h.id != "" && !h.crashed && h.stopped == nil
	cs := &s.ContainerStatuses[0]
	cs.RestartCount = h.restarts
	cs.Ready = h.ready
	cs.Started = &started
	cs.ContainerID = h.id
	cs.LastTerminationState = v1.ContainerState{}
	if h.last != nil {
		cs.LastTerminationState.Terminated = h.last.DeepCopy()
	}
	key := fmt.Sprintf("%s_%s(%s)", h.pod.Name, h.pod.Namespace, h.pod.UID)
	switch {
	case h.stopped != nil:
		cs.State = v1.ContainerState{Terminated: h.stopped.DeepCopy()}
	case h.crashed:
		cs.ContainerID = h.last.ContainerID
		cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %ds restarting failed container=busybox pod=%s", 10<<min(h.restarts-1, 5), key)}}
	case h.id == "":
		cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	default:
		cs.State = v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: h.started}}
	}

	s.Phase = v1.PodRunning
	switch {
	case j >= terminalAt && h.stopped.ExitCode == 0:
		s.Phase = v1.PodSucceeded
	case j >= terminalAt:
		s.Phase = v1.PodFailed
	case h.id == "":
		s.Phase = v1.PodPending
	}
	s.Conditions = h.conditions(now, s.Phase)
	return s
}

// conditions are the five conditions of a 1.37 node agent, with the reasons and messages
// it gives when a condition is false.
func (h *history) conditions(now metav1.Time, phase v1.PodPhase) []v1.PodCondition {
	start := metav1.NewTime(h.start)
	sandbox := v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue, LastTransitionTime: start}
	if phase == v1.PodSucceeded || phase == v1.PodFailed {
		sandbox.Status, sandbox.LastTransitionTime = v1.ConditionFalse, now
	}
	ready := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: h.readyAt}
	containersReady := v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: h.readyAt}
	if !h.ready {
		msg := "containers with unready status: [busybox]"
		ready.Status, ready.Reason, ready.Message = v1.ConditionFalse, "ContainersNotReady", msg
		containersReady.Status, containersReady.Reason, containersReady.Message = v1.ConditionFalse, "ContainersNotReady", msg
		if phase == v1.PodSucceeded {
			ready.Reason, containersReady.Reason = "PodCompleted", "PodCompleted"
			ready.Message, containersReady.Message = "", ""
		}
	}
	if ready.LastTransitionTime.IsZero() {
		ready.LastTransitionTime, containersReady.LastTransitionTime = start, start
	}
	return []v1.PodCondition{
		sandbox,
		{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: start},
		ready,
		containersReady,
		{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: start},
	}
}

// containerID is a containerd container ID: 64 random hex digits.
func containerID(rng *rand.Rand) string {
	return fmt.Sprintf("containerd://%016x%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64())
}
