package node_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/node"
)

// Container status builders, named after the kubelet's test helpers.

func waitingSt(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}}
}

func waitingLastTermSt(name string, exitCode int32) v1.ContainerStatus {
	st := waitingSt(name)
	st.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: exitCode}
	return st
}

func waitingRestartingAllSt(name string) v1.ContainerStatus {
	return v1.ContainerStatus{
		Name: name,
		State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{
			Reason: node.ReasonRestartingAllContainers, Message: "The container is removed because RestartAllContainers in place",
		}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			Reason: node.ReasonRestartingAllContainers, Message: "The container is removed because RestartAllContainers in place", ExitCode: 137,
		}},
	}
}

func runningSt(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

func startedSt(name string) v1.ContainerStatus {
	st := runningSt(name)
	st.Started = ptr.To(true)
	return st
}

func exitedSt(name string, exitCode int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: exitCode}}}
}

func succeededSt(name string) v1.ContainerStatus { return exitedSt(name, 0) }
func failedSt(name string) v1.ContainerStatus    { return exitedSt(name, -1) }

// phaseCase is one row of the kubelet's getPhase tables. init and regular are the
// pod's init and regular container statuses; all, when set, is the kubelet's single
// list and is passed as both.
type phaseCase struct {
	name                  string
	init, regular, all    []v1.ContainerStatus
	terminal, initialized bool
	want                  v1.PodPhase
}

func runPhaseCases(t *testing.T, spec v1.PodSpec, cases []phaseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: spec}
			init, regular := tc.init, tc.regular
			if tc.all != nil {
				init, regular = tc.all, tc.all
			}
			got := node.PodPhaseInitialized(pod, init, regular, tc.terminal, tc.initialized)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("phase (-want +got):\n%s", diff)
			}
		})
	}
}

func specAB(policy v1.RestartPolicy, init ...v1.Container) v1.PodSpec {
	return v1.PodSpec{
		NodeName:       "machine",
		InitContainers: init,
		Containers:     []v1.Container{{Name: "containerA"}, {Name: "containerB"}},
		RestartPolicy:  policy,
	}
}

func sl(st ...v1.ContainerStatus) []v1.ContainerStatus { return st }

var sidecarX = v1.Container{Name: "containerX", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}

// TestPodPhaseWithRestartAlways ports the kubelet's TestPodPhaseWithRestartAlways.
func TestPodPhaseWithRestartAlways(t *testing.T) {
	runPhaseCases(t, specAB(v1.RestartPolicyAlways), []phaseCase{
		{name: "waiting", want: v1.PodPending},
		{name: "all running", regular: sl(runningSt("containerA"), runningSt("containerB")), want: v1.PodRunning},
		{name: "all stopped with restart always", regular: sl(exitedSt("containerA", 0), exitedSt("containerB", 0)), want: v1.PodRunning},
		{name: "all succeeded with restart always, but the pod is terminal", regular: sl(succeededSt("containerA"), succeededSt("containerB")), terminal: true, want: v1.PodSucceeded},
		{name: "all stopped with restart always, but the pod is terminal", regular: sl(succeededSt("containerA"), failedSt("containerB")), terminal: true, want: v1.PodFailed},
		{name: "mixed state #1 with restart always", regular: sl(runningSt("containerA"), exitedSt("containerB", 0)), want: v1.PodRunning},
		{name: "mixed state #2 with restart always", regular: sl(runningSt("containerA")), want: v1.PodPending},
		{name: "mixed state #3 with restart always", regular: sl(runningSt("containerA"), waitingSt("containerB")), want: v1.PodPending},
		{name: "backoff crashloop container with restart always", regular: sl(runningSt("containerA"), waitingLastTermSt("containerB", 0)), want: v1.PodRunning},
	})
}

// TestPodPhaseWithRestartAlwaysInitContainers ports the kubelet's test of that name.
func TestPodPhaseWithRestartAlwaysInitContainers(t *testing.T) {
	runPhaseCases(t, specAB(v1.RestartPolicyAlways, v1.Container{Name: "containerX"}), []phaseCase{
		{name: "empty, waiting", want: v1.PodPending},
		{name: "init container running", init: sl(runningSt("containerX")), want: v1.PodPending},
		{name: "init container terminated non-zero", init: sl(failedSt("containerX")), want: v1.PodPending},
		{name: "init container waiting, terminated zero", init: sl(waitingLastTermSt("containerX", 0)), want: v1.PodPending},
		{name: "init container waiting, terminated non-zero", init: sl(waitingLastTermSt("containerX", -1)), want: v1.PodPending},
		{name: "init container waiting, not terminated", init: sl(waitingSt("containerX")), want: v1.PodPending},
		{name: "init container succeeded", init: sl(succeededSt("containerX")), regular: sl(runningSt("containerA"), runningSt("containerB")), want: v1.PodRunning},
	})
}

// TestPodPhaseWithRestartAlwaysRestartableInitContainers ports the kubelet's test of that name.
func TestPodPhaseWithRestartAlwaysRestartableInitContainers(t *testing.T) {
	both := sl(runningSt("containerA"), runningSt("containerB"))
	runPhaseCases(t, specAB(v1.RestartPolicyAlways, sidecarX), []phaseCase{
		{name: "empty, waiting", want: v1.PodPending},
		{name: "restartable init container running", init: sl(runningSt("containerX")), want: v1.PodPending},
		{name: "restartable init container stopped", init: sl(exitedSt("containerX", 0)), want: v1.PodPending},
		{name: "restartable init container waiting, terminated zero", init: sl(waitingLastTermSt("containerX", 0)), want: v1.PodPending},
		{name: "restartable init container waiting, terminated non-zero", init: sl(waitingLastTermSt("containerX", -1)), want: v1.PodPending},
		{name: "restartable init container waiting, not terminated", init: sl(waitingSt("containerX")), want: v1.PodPending},
		{name: "restartable init container started, 1/2 regular container running", init: sl(startedSt("containerX")), regular: sl(runningSt("containerA")), initialized: true, want: v1.PodPending},
		{name: "restartable init container started, all regular containers running", init: sl(startedSt("containerX")), regular: both, initialized: true, want: v1.PodRunning},
		{name: "restartable init container running, all regular containers running", init: sl(runningSt("containerX")), regular: both, initialized: true, want: v1.PodRunning},
		{name: "restartable init container stopped, all regular containers running", init: sl(exitedSt("containerX", 0)), regular: both, initialized: true, want: v1.PodRunning},
		{name: "backoff crashloop restartable init container, all regular containers running", init: sl(waitingLastTermSt("containerX", 0)), regular: both, initialized: true, want: v1.PodRunning},
		{name: "all regular containers succeeded and restartable init container failed with restart always, but the pod is terminal", init: sl(failedSt("containerX")), regular: sl(succeededSt("containerA"), succeededSt("containerB")), terminal: true, initialized: true, want: v1.PodSucceeded},
		{name: "all regular containers succeeded and restartable init container succeeded with restart always, but the pod is terminal", init: sl(succeededSt("containerX")), regular: sl(succeededSt("containerA"), succeededSt("containerB")), terminal: true, initialized: true, want: v1.PodSucceeded},
		{name: "re-initializing the pod after the sandbox is recreated", init: sl(runningSt("containerX")), regular: both, want: v1.PodPending},
	})
}

// TestPodPhaseWithRestartAlwaysAndPodHasRun ports the kubelet's test of that name.
func TestPodPhaseWithRestartAlwaysAndPodHasRun(t *testing.T) {
	spec := v1.PodSpec{
		InitContainers: []v1.Container{{Name: "containerX"}, {Name: "containerY", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}},
		Containers:     []v1.Container{{Name: "containerA"}},
		RestartPolicy:  v1.RestartPolicyAlways,
	}
	runPhaseCases(t, spec, []phaseCase{
		{name: "regular init containers, restartable init container and regular container are all running", init: sl(runningSt("containerX"), runningSt("containerY")), regular: sl(runningSt("containerA")), want: v1.PodPending},
		{name: "regular containers is stopped, restartable init container and regular int container are both running", init: sl(runningSt("containerX"), runningSt("containerY")), regular: sl(exitedSt("containerA", 0)), want: v1.PodPending},
		{name: "re-created sandbox: regular init container is succeeded, restartable init container is running, old regular containers is stopped", init: sl(succeededSt("containerX"), runningSt("containerY")), regular: sl(exitedSt("containerA", 0)), want: v1.PodPending},
		{name: "regular init container is succeeded, restartable init container is running, regular containers is stopped", init: sl(succeededSt("containerX"), runningSt("containerY")), regular: sl(exitedSt("containerA", 0)), initialized: true, want: v1.PodRunning},
		{name: "regular init container is succeeded, restartable init container and regular containers are both running", init: sl(succeededSt("containerX"), runningSt("containerY")), regular: sl(runningSt("containerA")), initialized: true, want: v1.PodRunning},
	})
}

// TestPodPhaseWithRestartNever ports the kubelet's TestPodPhaseWithRestartNever.
func TestPodPhaseWithRestartNever(t *testing.T) {
	runPhaseCases(t, specAB(v1.RestartPolicyNever), []phaseCase{
		{name: "waiting", want: v1.PodPending},
		{name: "all running with restart never", regular: sl(runningSt("containerA"), runningSt("containerB")), want: v1.PodRunning},
		{name: "all succeeded with restart never", regular: sl(succeededSt("containerA"), succeededSt("containerB")), want: v1.PodSucceeded},
		{name: "all failed with restart never", regular: sl(failedSt("containerA"), failedSt("containerB")), want: v1.PodFailed},
		{name: "mixed state #1 with restart never", regular: sl(runningSt("containerA"), succeededSt("containerB")), want: v1.PodRunning},
		{name: "mixed state #2 with restart never", regular: sl(runningSt("containerA")), want: v1.PodPending},
		{name: "mixed state #3 with restart never", regular: sl(runningSt("containerA"), waitingSt("containerB")), want: v1.PodPending},
	})
}

// TestPodPhaseWithRestartNeverInitContainers ports the kubelet's test of that name.
func TestPodPhaseWithRestartNeverInitContainers(t *testing.T) {
	runPhaseCases(t, specAB(v1.RestartPolicyNever, v1.Container{Name: "containerX"}), []phaseCase{
		{name: "empty, waiting", want: v1.PodPending},
		{name: "init container running", init: sl(runningSt("containerX")), want: v1.PodPending},
		{name: "init container terminated non-zero", init: sl(failedSt("containerX")), want: v1.PodFailed},
		{name: "init container waiting, terminated zero", init: sl(waitingLastTermSt("containerX", 0)), want: v1.PodPending},
		{name: "init container waiting, terminated non-zero", init: sl(waitingLastTermSt("containerX", -1)), want: v1.PodFailed},
		{name: "init container waiting, not terminated", init: sl(waitingSt("containerX")), want: v1.PodPending},
		{name: "init container succeeded", init: sl(succeededSt("containerX")), regular: sl(runningSt("containerA"), runningSt("containerB")), want: v1.PodRunning},
	})
}

// TestPodPhaseWithRestartNeverRestartableInitContainers ports the kubelet's test of that name.
func TestPodPhaseWithRestartNeverRestartableInitContainers(t *testing.T) {
	done := sl(succeededSt("containerA"), succeededSt("containerB"))
	runPhaseCases(t, specAB(v1.RestartPolicyNever, sidecarX), []phaseCase{
		{name: "empty, waiting", want: v1.PodPending},
		{name: "restartable init container running", init: sl(runningSt("containerX")), want: v1.PodPending},
		{name: "restartable init container stopped", init: sl(exitedSt("containerX", 0)), want: v1.PodPending},
		{name: "restartable init container waiting, terminated zero", init: sl(waitingLastTermSt("containerX", 0)), want: v1.PodPending},
		{name: "restartable init container waiting, terminated non-zero", init: sl(waitingLastTermSt("containerX", -1)), want: v1.PodPending},
		{name: "restartable init container waiting, not terminated", init: sl(waitingSt("containerX")), want: v1.PodPending},
		{name: "restartable init container started, one main container running", init: sl(startedSt("containerX")), regular: sl(runningSt("containerA")), initialized: true, want: v1.PodPending},
		{name: "restartable init container started, main containers succeeded", init: sl(startedSt("containerX")), regular: done, initialized: true, want: v1.PodRunning},
		{name: "restartable init container re-running, main containers succeeded", init: sl(runningSt("containerX")), regular: done, initialized: true, want: v1.PodRunning},
		{name: "all containers succeeded", init: sl(succeededSt("containerX")), regular: done, initialized: true, want: v1.PodSucceeded},
		{name: "restartable init container terminated non-zero, main containers succeeded", init: sl(failedSt("containerX")), regular: done, initialized: true, want: v1.PodSucceeded},
		{name: "backoff crashloop restartable init container, main containers succeeded", init: sl(waitingLastTermSt("containerX", 0)), regular: done, initialized: true, want: v1.PodSucceeded},
		{name: "backoff crashloop with non-zero restartable init container, main containers succeeded", init: sl(waitingLastTermSt("containerX", -1)), regular: done, initialized: true, want: v1.PodSucceeded},
	})
}

// TestPodPhaseWithRestartOnFailure ports the kubelet's TestPodPhaseWithRestartOnFailure.
func TestPodPhaseWithRestartOnFailure(t *testing.T) {
	runPhaseCases(t, specAB(v1.RestartPolicyOnFailure), []phaseCase{
		{name: "waiting", want: v1.PodPending},
		{name: "all running with restart onfailure", regular: sl(runningSt("containerA"), runningSt("containerB")), want: v1.PodRunning},
		{name: "all succeeded with restart onfailure", regular: sl(succeededSt("containerA"), succeededSt("containerB")), want: v1.PodSucceeded},
		{name: "all failed with restart never", regular: sl(failedSt("containerA"), failedSt("containerB")), want: v1.PodRunning},
		{name: "mixed state #1 with restart onfailure", regular: sl(runningSt("containerA"), succeededSt("containerB")), want: v1.PodRunning},
		{name: "mixed state #2 with restart onfailure", regular: sl(runningSt("containerA")), want: v1.PodPending},
		{name: "mixed state #3 with restart onfailure", regular: sl(runningSt("containerA"), waitingSt("containerB")), want: v1.PodPending},
		{name: "backoff crashloop container with restart onfailure", regular: sl(runningSt("containerA"), waitingLastTermSt("containerB", 0)), want: v1.PodRunning},
	})
}

// TestPodPhaseWithContainerRestartPolicy ports the kubelet's test of that name
// (each case has its own spec; the kubelet passes podHasInitialized true).
func TestPodPhaseWithContainerRestartPolicy(t *testing.T) {
	never, onFailure, always := ptr.To(v1.ContainerRestartPolicyNever), ptr.To(v1.ContainerRestartPolicyOnFailure), ptr.To(v1.ContainerRestartPolicyAlways)
	cases := []struct {
		name string
		spec v1.PodSpec
		all  []v1.ContainerStatus
		want v1.PodPhase
	}{
		{"container with restart policy Never failed",
			v1.PodSpec{Containers: []v1.Container{{Name: "failed-container", RestartPolicy: never}}, RestartPolicy: v1.RestartPolicyAlways},
			sl(failedSt("failed-container")), v1.PodFailed},
		{"container with restart policy OnFailure failed",
			v1.PodSpec{Containers: []v1.Container{{Name: "failed-container", RestartPolicy: onFailure}}, RestartPolicy: v1.RestartPolicyAlways},
			sl(failedSt("failed-container")), v1.PodRunning},
		{"container with restart policy Always failed",
			v1.PodSpec{Containers: []v1.Container{{Name: "failed-container", RestartPolicy: always}}, RestartPolicy: v1.RestartPolicyAlways},
			sl(failedSt("failed-container")), v1.PodRunning},
		{"At least one container with restartable container-level restart policy failed",
			v1.PodSpec{Containers: []v1.Container{{Name: "containerA", RestartPolicy: always}, {Name: "containerB"}}, RestartPolicy: v1.RestartPolicyNever},
			sl(succeededSt("containerA"), failedSt("containerB")), v1.PodRunning},
		{"All containers without restartable container-level restart policy failed",
			v1.PodSpec{Containers: []v1.Container{{Name: "containerA", RestartPolicy: never}, {Name: "containerB", RestartPolicy: onFailure}}, RestartPolicy: v1.RestartPolicyAlways},
			sl(failedSt("containerA"), succeededSt("containerB")), v1.PodFailed},
		{"All containers succeeded",
			v1.PodSpec{Containers: []v1.Container{{Name: "containerA", RestartPolicy: never}, {Name: "containerB", RestartPolicy: onFailure}}, RestartPolicy: v1.RestartPolicyAlways},
			sl(succeededSt("containerA"), succeededSt("containerB")), v1.PodSucceeded},
		// TestPodPhaseWithContainerRestartPolicyInitContainers
		{"init container with restart policy Never failed",
			v1.PodSpec{InitContainers: []v1.Container{{Name: "failed-container", RestartPolicy: never}}, Containers: []v1.Container{{Name: "container"}}, RestartPolicy: v1.RestartPolicyAlways},
			sl(failedSt("failed-container")), v1.PodFailed},
		{"init container with restart policy OnFailure failed",
			v1.PodSpec{InitContainers: []v1.Container{{Name: "failed-container", RestartPolicy: onFailure}}, Containers: []v1.Container{{Name: "container"}}, RestartPolicy: v1.RestartPolicyNever},
			sl(failedSt("failed-container")), v1.PodPending},
		{"init: container with restart policy Always failed",
			v1.PodSpec{InitContainers: []v1.Container{{Name: "failed-container", RestartPolicy: always}}, Containers: []v1.Container{{Name: "container"}}, RestartPolicy: v1.RestartPolicyNever},
			sl(failedSt("failed-container")), v1.PodPending},
	}
	for _, tc := range cases {
		runPhaseCases(t, tc.spec, []phaseCase{{name: tc.name, all: tc.all, initialized: true, want: tc.want}})
	}
}

// TestPodPhaseWithRestartAllContainers ports the kubelet's test of that name.
func TestPodPhaseWithRestartAllContainers(t *testing.T) {
	rule := []v1.ContainerRestartRule{{
		Action:    v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
	}}
	withRule := v1.Container{Name: "container", RestartPolicy: ptr.To(v1.ContainerRestartPolicyNever), RestartPolicyRules: rule}
	sidecarWithRule := v1.Container{Name: "container", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways), RestartPolicyRules: rule}
	regular := v1.Container{Name: "regular"}
	spec := func(init []v1.Container, containers ...v1.Container) v1.PodSpec {
		return v1.PodSpec{InitContainers: init, Containers: containers, RestartPolicy: v1.RestartPolicyNever}
	}
	cases := []struct {
		name string
		spec v1.PodSpec
		all  []v1.ContainerStatus
		want v1.PodPhase
	}{
		{"regular container triggers RestartAllContainers", spec(nil, withRule), sl(exitedSt("container", 42)), v1.PodRunning},
		{"init container triggers RestartAllContainers", spec([]v1.Container{withRule}), sl(exitedSt("container", 42), waitingSt("regular")), v1.PodPending},
		{"sidecar container triggers RestartAllContainers", spec([]v1.Container{sidecarWithRule}, regular), sl(exitedSt("container", 42), waitingSt("regular")), v1.PodPending},
		{"sidecar container triggers RestartAllContainers, kills another init container", spec([]v1.Container{sidecarWithRule, {Name: "init"}}, regular), sl(exitedSt("container", 42), waitingSt("init"), waitingSt("regular")), v1.PodPending},
		{"regular container triggers RestartAllContainers, cleaned up", spec(nil, withRule), sl(waitingRestartingAllSt("container")), v1.PodRunning},
		{"init container triggers RestartAllContainers, cleaned up", spec([]v1.Container{withRule}), sl(waitingRestartingAllSt("container"), waitingSt("regular")), v1.PodPending},
		{"sidecar container triggers RestartAllContainers, cleaned up", spec([]v1.Container{sidecarWithRule}, regular), sl(waitingRestartingAllSt("container"), waitingSt("regular")), v1.PodPending},
		{"sidecar container triggers RestartAllContainers, kills another init container, cleaned up", spec([]v1.Container{sidecarWithRule, {Name: "init"}}, regular), sl(waitingRestartingAllSt("container"), waitingRestartingAllSt("container"), waitingSt("regular")), v1.PodPending},
		{"regular container triggered RestartAllContainers; init container succeeded", spec([]v1.Container{{Name: "init"}}, withRule), sl(succeededSt("init"), waitingRestartingAllSt("container")), v1.PodRunning},
		{"regular container triggered RestartAllContainers; init container failed", spec([]v1.Container{{Name: "init"}}, withRule), sl(failedSt("init"), waitingRestartingAllSt("container")), v1.PodFailed},
		{"init container triggered RestartAllContainers", spec([]v1.Container{withRule}, regular), sl(exitedSt("container", 42), waitingSt("regular")), v1.PodPending},
		{"init container triggered RestartAllContainers; init container succeeds", spec([]v1.Container{withRule}, regular), sl(succeededSt("container"), waitingSt("regular")), v1.PodPending},
		{"sidecar container triggered RestartAllContainers kills regular container", spec([]v1.Container{sidecarWithRule}, regular), sl(waitingRestartingAllSt("container"), waitingRestartingAllSt("regular")), v1.PodRunning},
		{"sidecar container triggered RestartAllContainers kills regular container; sidecar running", spec([]v1.Container{sidecarWithRule}, regular), sl(runningSt("container"), waitingRestartingAllSt("regular")), v1.PodRunning},
		{"sidecar container triggered RestartAllContainers; kills init container; sidecar running", spec([]v1.Container{sidecarWithRule, {Name: "init"}}, regular), sl(runningSt("container"), waitingRestartingAllSt("container"), waitingSt("regular")), v1.PodPending},
	}
	for _, tc := range cases {
		runPhaseCases(t, tc.spec, []phaseCase{{name: tc.name, all: tc.all, initialized: true, want: tc.want}})
	}
}

// TestPodPhaseDerivesInitialized checks what PodPhase reads from the statuses: a
// regular container that ran means the pod was initialized, so a sidecar that has
// not started does not make it Pending.
func TestPodPhaseDerivesInitialized(t *testing.T) {
	pod := &v1.Pod{Spec: specAB(v1.RestartPolicyAlways, sidecarX)}
	both := sl(runningSt("containerA"), runningSt("containerB"))
	if got := node.PodPhase(pod, sl(runningSt("containerX")), both, false); got != v1.PodRunning {
		t.Errorf("regular containers running, sidecar not started: phase %s, want Running", got)
	}
	if got := node.PodPhase(pod, sl(runningSt("containerX")), nil, false); got != v1.PodPending {
		t.Errorf("no regular container yet: phase %s, want Pending", got)
	}
	static := pod.DeepCopy()
	static.Spec.InitContainers = nil
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	if got := node.PodPhase(static, nil, sl(succeededSt("containerA"), failedSt("containerB")), true); got != v1.PodRunning {
		t.Errorf("terminal static pod with restartPolicy Always: phase %s, want Running (the kubelet gives static pods no terminal phase here)", got)
	}
}
