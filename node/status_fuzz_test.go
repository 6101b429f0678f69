package node_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

// fuzzBytes hands out the fuzzer's bytes; zeros once they run out.
type fuzzBytes struct {
	b []byte
	i int
}

func (f *fuzzBytes) next() int {
	if f.i >= len(f.b) {
		return 0
	}
	f.i++
	return int(f.b[f.i-1])
}

func (f *fuzzBytes) pick(n int) int { return f.next() % n }

func pickOf[T any](f *fuzzBytes, xs ...T) T { return xs[f.pick(len(xs))] }

var fuzzResources = []v1.ResourceRequirements{
	{},
	{Requests: cpuMem("100m", "100Mi"), Limits: cpuMem("100m", "100Mi")},
	{Requests: cpuMem("100m", "100Mi")},
	{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}},
}

// fuzzCase builds a pod, its runtime status and the generation options from bytes.
func fuzzCase(data []byte) (*v1.Pod, *pleg.PodStatus, node.GenerateOptions) {
	f := &fuzzBytes{b: data}
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	phases := []v1.PodPhase{"", v1.PodPending, v1.PodRunning, v1.PodSucceeded, v1.PodFailed}
	pod := &v1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "p", "ns", "uid"
	pod.Spec.RestartPolicy = pickOf(f, v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever, "")
	pod.Spec.HostNetwork = f.pick(4) == 0
	if f.pick(4) == 0 {
		pod.DeletionTimestamp = &metav1.Time{Time: t0}
	}
	if f.pick(5) == 0 {
		pod.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	}
	if f.pick(6) == 0 {
		pod.Spec.Resources = &fuzzResources[f.pick(len(fuzzResources))]
	}
	rule := []v1.ContainerRestartRule{{Action: pickOf(f, v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleActionRestartAllContainers),
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: pickOf(f, v1.ContainerRestartRuleOnExitCodesOpIn, v1.ContainerRestartRuleOnExitCodesOpNotIn), Values: []int32{42}}}}
	// Names are unique in a valid pod; the order of the pool is shuffled by the bytes.
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for i := len(names) - 1; i > 0; i-- {
		j := f.pick(i + 1)
		names[i], names[j] = names[j], names[i]
	}
	n := 0
	newContainer := func() v1.Container {
		c := v1.Container{Name: names[n], Image: "img-" + names[n], Resources: fuzzResources[f.pick(len(fuzzResources))]}
		n++
		switch f.pick(6) {
		case 1:
			c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
		case 2:
			c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyOnFailure)
		case 3:
			c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
		case 4:
			c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyNever)
			c.RestartPolicyRules = rule
		}
		if f.pick(4) == 0 {
			c.StartupProbe = &v1.Probe{}
		}
		if f.pick(4) == 0 {
			c.ReadinessProbe = &v1.Probe{}
		}
		return c
	}
	for range f.pick(3) {
		c := newContainer()
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyOnFailure {
			c.RestartPolicy = nil // init containers take Always (sidecar) or nothing here
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	}
	for range 1 + f.pick(3) {
		pod.Spec.Containers = append(pod.Spec.Containers, newContainer())
	}
	if f.pick(3) == 0 {
		c := newContainer()
		pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: c.Name, Image: c.Image}}}
	}
	pod.Spec.ReadinessGates = nil
	if f.pick(4) == 0 {
		pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "gate"}}
		pod.Status.Conditions = []v1.PodCondition{{Type: "gate", Status: pickOf(f, v1.ConditionTrue, v1.ConditionFalse)}}
	}
	pod.Status.Phase = pickOf(f, phases...)

	states := []pleg.ContainerState{pleg.ContainerStateCreated, pleg.ContainerStateRunning, pleg.ContainerStateExited,
		pleg.ContainerStateUnknown, pleg.ContainerStateNonExistent}
	exitCodes := []int{0, 1, 42, 137}
	all := append(append(append([]string{}, names[:n]...), "stranger"), names[n%len(names)])
	rs := &pleg.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	if f.pick(5) == 0 {
		rs = nil
	} else {
		for _, name := range all {
			for k := range f.pick(4) {
				rs.ContainerStatuses = append(rs.ContainerStatuses, &pleg.ContainerStatus{
					ID: fmt.Sprintf("%s-%d", name, k), Name: name, Image: "img-" + name, ImageID: "sha-" + name,
					State: pickOf(f, states...), ExitCode: pickOf(f, exitCodes...), RestartCount: f.pick(4),
					CreatedAt: t0.Add(time.Duration(f.pick(8)) * time.Second), StartedAt: t0.Add(time.Duration(f.pick(8)) * time.Second),
					Reason: pickOf(f, "", "OOMKilled"),
				})
			}
		}
		for range f.pick(3) {
			rs.SandboxStatuses = append(rs.SandboxStatuses, &pleg.SandboxStatus{
				State: pickOf(f, pleg.SandboxReady, pleg.SandboxNotReady), IP: pickOf(f, "", "10.1.0.5", "fd00::5"),
				CreatedAt: t0.Add(time.Duration(f.pick(8)) * time.Second),
			})
		}
		for range f.pick(3) {
			rs.IPs = append(rs.IPs, pickOf(f, "10.1.0.5", "fd00::5", "bogus", "010.001.000.007"))
		}
	}

	oldStatus := func() v1.ContainerStatus {
		st := v1.ContainerStatus{Name: pickOf(f, all...), RestartCount: int32(f.pick(4)), Started: pickOf(f, nil, ptr.To(true), ptr.To(false))}
		switch f.pick(4) {
		case 0:
			st.State.Waiting = &v1.ContainerStateWaiting{Reason: pickOf(f, "", node.ReasonContainerCreating, node.ReasonPodInitializing)}
		case 1:
			st.State.Running = &v1.ContainerStateRunning{}
		case 2:
			st.State.Terminated = &v1.ContainerStateTerminated{ExitCode: int32(pickOf(f, exitCodes...)), Reason: pickOf(f, "", node.ReasonRestartingAllContainers)}
		}
		if f.pick(3) == 0 {
			st.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: int32(pickOf(f, exitCodes...))}
		}
		return st
	}
	opts := node.GenerateOptions{
		HostIPs:       []string{pickOf(f, "192.168.0.1", "fd01::1", "x")},
		Now:           t0.Add(time.Hour),
		PodIsTerminal: f.pick(3) == 0,
	}
	old := &opts.OldStatus
	old.Phase = pickOf(f, phases...)
	old.QOSClass = pickOf(f, "", v1.PodQOSGuaranteed)
	for range f.pick(4) {
		old.ContainerStatuses = append(old.ContainerStatuses, oldStatus())
	}
	for range f.pick(3) {
		old.InitContainerStatuses = append(old.InitContainerStatuses, oldStatus())
	}
	if f.pick(4) == 0 {
		old.Conditions = append(old.Conditions, v1.PodCondition{Type: pickOf(f, v1.AllContainersRestarting, v1.PodInitialized, v1.DisruptionTarget), Status: v1.ConditionTrue})
	}
	if f.pick(2) == 0 {
		opts.ProbeResult = func(name, _ string, kind node.ProbeKind) (bool, bool) { return name < "d", kind == node.ProbeReadiness }
		opts.StartFailure = func(name string) (string, string, bool) { return "CrashLoopBackOff", name, name > "c" }
	}
	return pod, rs, opts
}

func statusNames(st []v1.ContainerStatus) []string {
	var out []string
	for _, s := range st {
		out = append(out, s.Name)
	}
	return out
}

func specNames(cs []v1.Container, sorted bool) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	if sorted {
		slices.Sort(out)
	}
	return out
}

// FuzzGenerateAPIStatus builds pods, runtime statuses and old statuses from the fuzz
// bytes and checks the invariants of GenerateAPIStatus: no panic, inputs untouched,
// one status per spec container in the kubelet's order, a known phase, a terminal
// phase never left, a qosClass that never changes once set, and determinism.
func FuzzGenerateAPIStatus(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add([]byte("the kubelet's pod lifecycle, as a library, for custom node agents"))
	f.Add([]byte{255, 254, 3, 3, 3, 1, 1, 1, 2, 2, 2, 0, 0, 0, 4, 4, 4, 200, 100, 50, 25, 12, 6, 3, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		pod, rs, opts := fuzzCase(data)
		podBefore, rsBefore, oldBefore := pod.DeepCopy(), deepCopyRuntime(rs), opts.OldStatus.DeepCopy()

		st := node.GenerateAPIStatus(pod, rs, opts)

		if diff := cmp.Diff(podBefore, pod); diff != "" {
			t.Fatalf("pod modified:\n%s", diff)
		}
		if diff := cmp.Diff(rsBefore, rs); diff != "" {
			t.Fatalf("runtime status modified:\n%s", diff)
		}
		if diff := cmp.Diff(*oldBefore, opts.OldStatus); diff != "" {
			t.Fatalf("old status modified:\n%s", diff)
		}
		if diff := cmp.Diff(st.Conditions, node.PodConditions(pod, rs, &st, opts)); diff != "" {
			t.Errorf("PodConditions of the generated status (-generated +PodConditions):\n%s", diff)
		}
		if diff := cmp.Diff(specNames(pod.Spec.InitContainers, false), statusNames(st.InitContainerStatuses)); diff != "" {
			t.Errorf("init container statuses (-spec order +got):\n%s", diff)
		}
		if diff := cmp.Diff(specNames(pod.Spec.Containers, true), statusNames(st.ContainerStatuses)); diff != "" {
			t.Errorf("container statuses (-sorted spec names +got):\n%s", diff)
		}
		var eph []v1.Container
		for _, ec := range pod.Spec.EphemeralContainers {
			eph = append(eph, v1.Container{Name: ec.Name})
		}
		if diff := cmp.Diff(specNames(eph, true), statusNames(st.EphemeralContainerStatuses)); diff != "" {
			t.Errorf("ephemeral container statuses (-spec +got):\n%s", diff)
		}
		switch st.Phase {
		case v1.PodPending, v1.PodRunning, v1.PodSucceeded, v1.PodFailed, v1.PodUnknown:
		default:
			t.Errorf("phase %q is none of the five", st.Phase)
		}
		terminal := func(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }
		if terminal(pod.Status.Phase) && st.Phase != pod.Status.Phase {
			t.Errorf("phase %s left the API server's terminal phase %s", st.Phase, pod.Status.Phase)
		}
		if terminal(opts.OldStatus.Phase) && !terminal(st.Phase) {
			t.Errorf("phase %s left the old terminal phase %s", st.Phase, opts.OldStatus.Phase)
		}
		wantQOS := opts.OldStatus.QOSClass
		if wantQOS == "" {
			wantQOS = node.PodQOSClass(pod)
		}
		if st.QOSClass != wantQOS {
			t.Errorf("qosClass %q, want %q", st.QOSClass, wantQOS)
		}
		for _, cs := range append(append([]v1.ContainerStatus{}, st.InitContainerStatuses...), st.ContainerStatuses...) {
			if n := len(stateKinds(cs.State)); n != 1 {
				t.Errorf("container %s has %d states set: %+v", cs.Name, n, cs.State)
			}
			if cs.Ready && cs.State.Running == nil && cs.State.Terminated == nil {
				t.Errorf("container %s ready while waiting", cs.Name)
			}
		}

		// Generating again, from the result, is deterministic and keeps the class
		// and the start time.
		again := opts
		again.OldStatus = st
		again.Now = opts.Now.Add(time.Hour)
		st2 := node.GenerateAPIStatus(pod, rs, again)
		if st2.QOSClass != st.QOSClass {
			t.Errorf("qosClass changed from %q to %q", st.QOSClass, st2.QOSClass)
		}
		if st2.StartTime == nil || st.StartTime == nil || !st2.StartTime.Equal(st.StartTime) {
			t.Errorf("startTime changed from %v to %v", st.StartTime, st2.StartTime)
		}
		if diff := cmp.Diff(st, node.GenerateAPIStatus(pod, rs, opts)); diff != "" {
			t.Errorf("not deterministic (-first +second):\n%s", diff)
		}

		// The result shares no memory with the inputs: changing all of it changes none.
		scribble(&st)
		if diff := cmp.Diff(*oldBefore, opts.OldStatus); diff != "" {
			t.Fatalf("old status changed with the result:\n%s", diff)
		}
		if diff := cmp.Diff(podBefore, pod); diff != "" {
			t.Fatalf("pod changed with the result:\n%s", diff)
		}
	})
}

// scribble changes every value of a status and every value it points to.
func scribble(st *v1.PodStatus) {
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range list {
			cs := &list[i]
			cs.Name += "!"
			for _, s := range []*v1.ContainerState{&cs.State, &cs.LastTerminationState} {
				if s.Waiting != nil {
					s.Waiting.Message += "!"
				}
				if s.Running != nil {
					s.Running.StartedAt = metav1.Time{}
				}
				if s.Terminated != nil {
					s.Terminated.Message += "!"
					s.Terminated.ExitCode++
				}
			}
			if cs.Started != nil {
				*cs.Started = !*cs.Started
			}
			for j := range cs.VolumeMounts {
				cs.VolumeMounts[j].Name += "!"
				if m := cs.VolumeMounts[j].RecursiveReadOnly; m != nil {
					*m += "!"
				}
			}
		}
	}
	for i := range st.Conditions {
		st.Conditions[i].Message += "!"
	}
	for i := range st.PodIPs {
		st.PodIPs[i].IP += "!"
	}
	for i := range st.HostIPs {
		st.HostIPs[i].IP += "!"
	}
	if st.StartTime != nil {
		st.StartTime.Time = time.Time{}
	}
}

func stateKinds(s v1.ContainerState) []string {
	var out []string
	if s.Waiting != nil {
		out = append(out, "waiting")
	}
	if s.Running != nil {
		out = append(out, "running")
	}
	if s.Terminated != nil {
		out = append(out, "terminated")
	}
	return out
}
