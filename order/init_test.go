package order

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/prober"
)

var always = v1.ContainerRestartPolicyAlways

// initPod is the kubelet's makeBasePodAndStatusWithInitContainers (kuberuntime_manager_test.go):
// three regular init containers, all exited 0, and three main containers.
func initPod() (*v1.Pod, *pleg.PodStatus) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init1", Image: "bar-image"}, {Name: "init2", Image: "bar-image"}, {Name: "init3", Image: "bar-image"}},
		Containers:     []v1.Container{{Name: "foo1", Image: "busybox"}, {Name: "foo2", Image: "busybox"}, {Name: "foo3", Image: "busybox"}},
	}}
	st := &pleg.PodStatus{ID: "12345678", ContainerStatuses: []*pleg.ContainerStatus{
		{ID: "initid1", Name: "init1", State: pleg.ContainerStateExited},
		{ID: "initid2", Name: "init2", State: pleg.ContainerStateExited},
		{ID: "initid3", Name: "init3", State: pleg.ContainerStateExited},
	}}
	return pod, st
}

// sidecarPod is the kubelet's makeBasePodAndStatusWithRestartableInitContainers: three
// sidecars, all running, the last two with startup (and liveness) probes.
func sidecarPod() (*v1.Pod, *pleg.PodStatus) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{
			{Name: "restartable-init-1", Image: "bar-image", RestartPolicy: &always},
			{Name: "restartable-init-2", Image: "bar-image", RestartPolicy: &always, LivenessProbe: &v1.Probe{}, StartupProbe: &v1.Probe{}},
			{Name: "restartable-init-3", Image: "bar-image", RestartPolicy: &always, LivenessProbe: &v1.Probe{}, StartupProbe: &v1.Probe{}},
		},
		Containers: []v1.Container{{Name: "foo1", Image: "busybox"}, {Name: "foo2", Image: "busybox"}, {Name: "foo3", Image: "busybox"}},
	}}
	st := &pleg.PodStatus{ID: "12345678", ContainerStatuses: []*pleg.ContainerStatus{
		{ID: "initid1", Name: "restartable-init-1", State: pleg.ContainerStateRunning},
		{ID: "initid2", Name: "restartable-init-2", State: pleg.ContainerStateRunning},
		{ID: "initid3", Name: "restartable-init-3", State: pleg.ContainerStateRunning},
	}}
	return pod, st
}

// TestInitRegular ports the init container part of the kubelet's
// TestComputePodActionsWithInitContainers (kuberuntime_manager_test.go, v1.37.2); the
// sandbox and resize cases are not Init's.
func TestInitRegular(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy v1.RestartPolicy
		mutate func(*pleg.PodStatus)
		want   InitActions
	}{
		{name: "initialization completed; start all containers", want: InitActions{Initialized: true}},
		{name: "no init containers have been started; start the first one", mutate: func(s *pleg.PodStatus) { s.ContainerStatuses = nil }, want: InitActions{Start: []int{0}}},
		{name: "initialization in progress; do nothing", policy: v1.RestartPolicyAlways,
			mutate: func(s *pleg.PodStatus) { s.ContainerStatuses[2].State = pleg.ContainerStateRunning }},
		{name: "initialization failed; restart the last init container if RestartPolicy == Always", policy: v1.RestartPolicyAlways,
			mutate: func(s *pleg.PodStatus) { s.ContainerStatuses[2].ExitCode = 137 }, want: InitActions{Start: []int{2}}},
		{name: "initialization failed; restart the last init container if RestartPolicy == OnFailure", policy: v1.RestartPolicyOnFailure,
			mutate: func(s *pleg.PodStatus) { s.ContainerStatuses[2].ExitCode = 137 }, want: InitActions{Start: []int{2}}},
		{name: "initialization failed; kill pod if RestartPolicy == Never", policy: v1.RestartPolicyNever,
			mutate: func(s *pleg.PodStatus) { s.ContainerStatuses[2].ExitCode = 137 }, want: InitActions{KillPod: true}},
		{name: "init container state unknown; kill and recreate the last init container if RestartPolicy == Always", policy: v1.RestartPolicyAlways,
			mutate: func(s *pleg.PodStatus) { s.ContainerStatuses[2].State = pleg.ContainerStateUnknown },
			want:   InitActions{Start: []int{2}, Kill: []Kill{{Index: 2, ContainerID: "initid3", Message: `Init container is in "unknown" state, try killing it before restart`}}}},
		{name: "init container state unknown; kill and recreate the last init container if RestartPolicy == OnFailure", policy: v1.RestartPolicyOnFailure,
			mutate: func(s *pleg.PodStatus) { s.ContainerStatuses[2].State = pleg.ContainerStateUnknown },
			want:   InitActions{Start: []int{2}, Kill: []Kill{{Index: 2, ContainerID: "initid3", Message: `Init container is in "unknown" state, try killing it before restart`}}}},
		{name: "init container state unknown; kill pod if RestartPolicy == Never", policy: v1.RestartPolicyNever,
			mutate: func(s *pleg.PodStatus) { s.ContainerStatuses[2].State = pleg.ContainerStateUnknown }, want: InitActions{KillPod: true}},
		{name: "some of the init container statuses are missing but the last init container is running, don't restart preceding ones", policy: v1.RestartPolicyAlways,
			mutate: func(s *pleg.PodStatus) {
				s.ContainerStatuses[2].State = pleg.ContainerStateRunning
				s.ContainerStatuses = s.ContainerStatuses[2:]
			}},
		{name: "an init container is in the created state due to an unknown error when starting container; restart it", policy: v1.RestartPolicyAlways,
			mutate: func(s *pleg.PodStatus) { s.ContainerStatuses[2].State = pleg.ContainerStateCreated }, want: InitActions{Start: []int{2}}},
		// podlife: the middle one exited 0, the next starts.
		{name: "podlife: the first init container succeeded; start the second", mutate: func(s *pleg.PodStatus) { s.ContainerStatuses = s.ContainerStatuses[:1] }, want: InitActions{Start: []int{1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, st := initPod()
			pod.Spec.RestartPolicy = tc.policy
			if tc.mutate != nil {
				tc.mutate(st)
			}
			if diff := cmp.Diff(tc.want, Init(pod, st, nil)); diff != "" {
				t.Errorf("Init (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInitSidecars ports the kubelet's TestComputePodActionsWithRestartableInitContainers
// (kuberuntime_manager_test.go, v1.37.2): the startup probes of restartable-init-2 and -3
// succeeded unless a case says otherwise. Left out: the sandbox cases (not Init's), the
// liveness, changed-definition and resize cases (the runtime's), and the stale main
// container case (podlife's status has no separate active containers).
func TestInitSidecars(t *testing.T) {
	mains := func(state pleg.ContainerState) func(*pleg.PodStatus) {
		return func(s *pleg.PodStatus) {
			for _, n := range []string{"foo1", "foo2", "foo3"} {
				s.ContainerStatuses = append(s.ContainerStatuses, &pleg.ContainerStatus{ID: "id-" + n, Name: n, State: state})
			}
		}
	}
	for _, tc := range []struct {
		name    string
		policy  v1.RestartPolicy
		mutate  func(*pleg.PodStatus)
		startup map[string]prober.Result // overrides
		probe2  bool                     // pod.Spec.InitContainers[2] gets a startup probe (it has one)
		want    InitActions
	}{
		{name: "initialization completed; start all containers", want: InitActions{Initialized: true}},
		{name: "no init containers have been started; start the first one", mutate: func(s *pleg.PodStatus) { s.ContainerStatuses = nil }, want: InitActions{Start: []int{0}}},
		{name: "an init container is stuck in the created state; restart it", policy: v1.RestartPolicyAlways,
			mutate: func(s *pleg.PodStatus) { s.ContainerStatuses[2].State = pleg.ContainerStateCreated }, want: InitActions{Start: []int{2}}},
		{name: "restartable init container has started; start the next", policy: v1.RestartPolicyAlways,
			mutate: func(s *pleg.PodStatus) { s.ContainerStatuses = s.ContainerStatuses[:1] }, want: InitActions{Start: []int{1}}},
		{name: "startupProbe has not been run; do nothing", policy: v1.RestartPolicyAlways,
			mutate: func(s *pleg.PodStatus) { s.ContainerStatuses = s.ContainerStatuses[:2] }, startup: map[string]prober.Result{"initid2": prober.Unknown}},
		{name: "startupProbe has completed; start the next", policy: v1.RestartPolicyAlways,
			mutate: func(s *pleg.PodStatus) { s.ContainerStatuses = s.ContainerStatuses[:2] }, want: InitActions{Start: []int{2}}},
		{name: "kill and recreate the restartable init container if the startup check has failed", policy: v1.RestartPolicyAlways,
			startup: map[string]prober.Result{"initid3": prober.Failure},
			want:    InitActions{Start: []int{2}, Kill: []Kill{{Index: 2, ContainerID: "initid3", Message: "Init container restartable-init-3 failed startup probe"}}}},
		{name: "restart terminated restartable init container and next init container", policy: v1.RestartPolicyAlways,
			mutate: func(s *pleg.PodStatus) {
				s.ContainerStatuses[0].State = pleg.ContainerStateExited
				s.ContainerStatuses[2].State = pleg.ContainerStateExited
			}, want: InitActions{Start: []int{0, 2}}},
		{name: "restart terminated restartable init container and regular containers", policy: v1.RestartPolicyAlways,
			mutate: func(s *pleg.PodStatus) { s.ContainerStatuses[0].State = pleg.ContainerStateExited }, want: InitActions{Start: []int{0}, Initialized: true}},
		{name: "initialization failed; restart the last restartable init container even if pod's RestartPolicy == Never", policy: v1.RestartPolicyNever,
			mutate: func(s *pleg.PodStatus) {
				s.ContainerStatuses[2].State = pleg.ContainerStateExited
				s.ContainerStatuses[2].ExitCode = 137
			}, want: InitActions{Start: []int{2}}},
		{name: "restartable init container state unknown; kill and recreate the last restartable init container even if pod's RestartPolicy == Never", policy: v1.RestartPolicyNever,
			mutate: func(s *pleg.PodStatus) { s.ContainerStatuses[2].State = pleg.ContainerStateUnknown },
			want:   InitActions{Start: []int{2}, Kill: []Kill{{Index: 2, ContainerID: "initid3", Message: `Init container is in "unknown" state, try killing it before restart`}}}},
		{name: "restart restartable init container if regular containers are running even if pod's RestartPolicy == Never", policy: v1.RestartPolicyNever,
			mutate: func(s *pleg.PodStatus) {
				s.ContainerStatuses[2].State = pleg.ContainerStateExited
				s.ContainerStatuses[2].ExitCode = 137
				mains(pleg.ContainerStateRunning)(s)
			}, want: InitActions{Start: []int{2}, Initialized: true}},
		{name: "kill the pod if all main containers succeeded if pod's RestartPolicy == Never (the init part: nothing to start)", policy: v1.RestartPolicyNever,
			mutate: mains(pleg.ContainerStateExited), want: InitActions{Initialized: true}},
		{name: "some of the init container statuses are missing but the last init container is running, restart restartable init and regular containers", policy: v1.RestartPolicyAlways,
			mutate: func(s *pleg.PodStatus) { s.ContainerStatuses = s.ContainerStatuses[2:] }, want: InitActions{Start: []int{0, 1}, Initialized: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, st := sidecarPod()
			pod.Spec.RestartPolicy = tc.policy
			if tc.mutate != nil {
				tc.mutate(st)
			}
			startup := func(id string) prober.Result {
				if r, ok := tc.startup[id]; ok {
					return r
				}
				if id == "initid2" || id == "initid3" {
					return prober.Success
				}
				return prober.Unknown
			}
			if diff := cmp.Diff(tc.want, Init(pod, st, startup)); diff != "" {
				t.Errorf("Init (-want +got):\n%s", diff)
			}
		})
	}
}

// TestInitSidecarNoStartupProbe: a sidecar without a startup probe is done once it runs;
// one with a startup probe and no result (a nil Startup) is not.
func TestInitSidecarNoStartupProbe(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "proxy", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "app"}},
	}}
	running := &pleg.PodStatus{ContainerStatuses: []*pleg.ContainerStatus{{ID: "p", Name: "proxy", State: pleg.ContainerStateRunning}}}
	if diff := cmp.Diff(InitActions{Initialized: true}, Init(pod, running, nil)); diff != "" {
		t.Errorf("running sidecar, no probe (-want +got):\n%s", diff)
	}
	pod.Spec.InitContainers[0].StartupProbe = &v1.Probe{}
	if diff := cmp.Diff(InitActions{}, Init(pod, running, nil)); diff != "" {
		t.Errorf("running sidecar, startup probe without a result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(InitActions{}, Init(nil, nil, nil)); diff != "" {
		t.Errorf("nil pod (-want +got):\n%s", diff)
	}
}
