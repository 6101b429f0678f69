package vk

import (
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/pleg"
)

func specOf(names ...string) v1.PodSpec {
	var s v1.PodSpec
	for _, n := range names {
		s.Containers = append(s.Containers, v1.Container{Name: n, Image: "img"})
	}
	return s
}

func running(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

func exited(name string, code int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
}

func waiting(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
}

// TestStopped: when the adapter takes a provider's pod as stopped (StopPod returns, the
// PLEG's sandbox is not ready).
func TestStopped(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  v1.PodSpec
		st    v1.PodStatus
		wantS bool
	}{
		{"terminal phase Succeeded", specOf("a"), v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{running("a")}}, true},
		{"terminal phase Failed, no statuses", specOf("a"), v1.PodStatus{Phase: v1.PodFailed}, true},
		{"running container", specOf("a"), v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("a")}}, false},
		{"every container exited, phase Running", specOf("a", "b"), v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{exited("a", 0), exited("b", 1)}}, true},
		{"one of two exited", specOf("a", "b"), v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{exited("a", 0), running("b")}}, false},
		{"a container without status may still start", specOf("a", "b"), v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{exited("a", 0)}}, false},
		{"waiting container", specOf("a"), v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{waiting("a")}}, false},
		{"no status at all", specOf("a"), v1.PodStatus{}, false},
		{"status of a container not in the spec ignored", specOf("a"), v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("x"), exited("a", 0)}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stopped(&tc.spec, &tc.st); got != tc.wantS {
				t.Errorf("stopped = %t, want %t", got, tc.wantS)
			}
		})
	}
}

// TestTerminatedPhase: the phase a terminated pod gets when the provider's phase is not
// terminal.
func TestTerminatedPhase(t *testing.T) {
	pod := &v1.Pod{Spec: specOf("a", "b")}
	for _, tc := range []struct {
		name   string
		cs     []v1.ContainerStatus
		want   v1.PodPhase
		wantOK bool
	}{
		{"all exit 0", []v1.ContainerStatus{exited("a", 0), exited("b", 0)}, v1.PodSucceeded, true},
		{"one non-zero", []v1.ContainerStatus{exited("a", 0), exited("b", 137)}, v1.PodFailed, true},
		{"one running", []v1.ContainerStatus{exited("a", 0), running("b")}, "", false},
		{"one missing", []v1.ContainerStatus{exited("a", 0)}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := terminatedPhase(pod, &v1.PodStatus{ContainerStatuses: tc.cs})
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("terminatedPhase = %q, %t; want %q, %t", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// TestSameDesire: which changes the provider hears of through UpdatePod.
func TestSameDesire(t *testing.T) {
	base := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "1"}}, Spec: specOf("a")}
	for _, tc := range []struct {
		name   string
		change func(*v1.Pod)
		same   bool
	}{
		{"nothing", func(*v1.Pod) {}, true},
		{"status", func(p *v1.Pod) { p.Status.Phase = v1.PodRunning }, true},
		{"deletion timestamp", func(p *v1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }, true},
		{"resource version", func(p *v1.Pod) { p.ResourceVersion = "7" }, true},
		{"image", func(p *v1.Pod) { p.Spec.Containers[0].Image = "other" }, false},
		{"label", func(p *v1.Pod) { p.Labels["a"] = "2" }, false},
		{"annotation", func(p *v1.Pod) { p.Annotations = map[string]string{"x": "y"} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := base.DeepCopy()
			tc.change(next)
			if got := sameDesire(base, next); got != tc.same {
				t.Errorf("sameDesire = %t, want %t", got, tc.same)
			}
		})
	}
}

// FuzzRuntimeStatus feeds arbitrary provider pods (as JSON) to the conversions the PLEG
// relies on: they never panic, every reported container appears once with its ID stable
// across calls, the listed pod and the detailed status agree on every container's state,
// and the sandbox is ready exactly when the pod is not stopped.
func FuzzRuntimeStatus(f *testing.F) {
	seed := func(p *v1.Pod) {
		b, err := json.Marshal(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	seed(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}, Spec: specOf("a", "b"),
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.1", ContainerStatuses: []v1.ContainerStatus{running("a"), exited("b", 2)}}})
	seed(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job"}, Spec: specOf("a"),
		Status: v1.PodStatus{Phase: v1.PodSucceeded, InitContainerStatuses: []v1.ContainerStatus{exited("init", 0)},
			ContainerStatuses: []v1.ContainerStatus{{Name: "a", ContainerID: "cri://x", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}}}}})
	seed(&v1.Pod{Spec: specOf("a"), Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{waiting("a"), {Name: "a"}}}})
	f.Fuzz(func(t *testing.T, data []byte) {
		var p v1.Pod
		if err := json.Unmarshal(data, &p); err != nil {
			return
		}
		const uid = "fuzz-uid"
		rs := runtimeStatus(uid, &p, &p.Status)
		rp := runtimePod(uid, &p, &p.Status)
		n := len(p.Status.InitContainerStatuses) + len(p.Status.ContainerStatuses)
		if len(rs.ContainerStatuses) != n || len(rp.Containers) != n {
			t.Fatalf("%d container statuses gave %d statuses and %d listed containers", n, len(rs.ContainerStatuses), len(rp.Containers))
		}
		again := runtimeStatus(uid, &p, &p.Status)
		for i, c := range rs.ContainerStatuses {
			if c.ID == "" || c.ID != again.ContainerStatuses[i].ID || c.ID != rp.Containers[i].ID {
				t.Fatalf("container %d: IDs %q, %q, %q; want one non-empty, stable ID", i, c.ID, again.ContainerStatuses[i].ID, rp.Containers[i].ID)
			}
			if c.State != rp.Containers[i].State {
				t.Fatalf("container %d: status says %s, list says %s", i, c.State, rp.Containers[i].State)
			}
		}
		ready := rs.SandboxStatuses[0].State == pleg.SandboxReady
		if ready == stopped(&p.Spec, &p.Status) || (rp.Sandboxes[0].State == pleg.ContainerStateRunning) != ready {
			t.Fatalf("sandbox ready=%t, listed %s, stopped=%t", ready, rp.Sandboxes[0].State, stopped(&p.Spec, &p.Status))
		}
		if rs.ID != uid || rp.ID != uid {
			t.Fatalf("IDs %q/%q, want %q", rs.ID, rp.ID, uid)
		}
	})
}
