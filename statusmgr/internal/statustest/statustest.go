// Package statustest holds what statusmgr's tests and those of its internal packages share:
// pseudo-random statuses and the API server's way of applying a status patch. Only tests
// import it.
package statustest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// ApplyPatch applies patch with apimachinery's strategic merge to a pod whose status is
// server and returns the resulting pod.
func ApplyPatch(t testing.TB, uid types.UID, server v1.PodStatus, patch []byte) *v1.Pod {
	t.Helper()
	orig, err := json.Marshal(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: uid}, Status: server})
	if err != nil {
		t.Fatal(err)
	}
	out, err := strategicpatch.StrategicMergePatch(orig, patch, v1.Pod{})
	if err != nil {
		t.Fatalf("apply patch %s: %v", patch, err)
	}
	var pod v1.Pod
	if err := json.Unmarshal(out, &pod); err != nil {
		t.Fatal(err)
	}
	return &pod
}

// RandomStatus builds a pseudo-random pod status from seed, with unique condition types and
// whole-second times (what the API server stores).
func RandomStatus(seed uint64) v1.PodStatus {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pick := func(vals ...string) string { return vals[r.IntN(len(vals))] }
	tm := func() metav1.Time {
		if r.IntN(4) == 0 {
			return metav1.Time{}
		}
		return metav1.NewTime(time.Unix(1_700_000_000+r.Int64N(1000), 0).UTC())
	}
	var s v1.PodStatus
	s.Phase = v1.PodPhase(pick("", "Pending", "Running", "Succeeded", "Failed", "Unknown"))
	if r.IntN(2) == 0 {
		s.Reason = pick("Evicted", "NodeLost", "")
		s.Message = pick("m1", "a longer message", "")
	}
	types := []v1.PodConditionType{v1.PodScheduled, v1.PodReady, v1.PodInitialized, v1.ContainersReady,
		v1.PodReadyToStartContainers, v1.DisruptionTarget, v1.PodResizePending, "example.com/a", "example.com/b"}
	r.Shuffle(len(types), func(i, j int) { types[i], types[j] = types[j], types[i] })
	for _, t := range types[:r.IntN(len(types)+1)] {
		c := v1.PodCondition{Type: t, Status: v1.ConditionStatus(pick("True", "False", "Unknown"))}
		if r.IntN(2) == 0 {
			c.Reason = pick("R1", "R2")
		}
		if r.IntN(3) == 0 {
			c.Message = pick("msg", "other msg")
		}
		c.LastTransitionTime = tm()
		if r.IntN(3) == 0 {
			c.LastProbeTime = tm()
		}
		c.ObservedGeneration = r.Int64N(3)
		s.Conditions = append(s.Conditions, c)
	}
	if r.IntN(2) == 0 {
		s.HostIP = pick("10.0.0.1", "10.0.0.2")
		s.HostIPs = []v1.HostIP{{IP: s.HostIP}}
	}
	if r.IntN(2) == 0 {
		ips := []string{"10.1.0.1", "fd00::1", "10.1.0.2"}
		r.Shuffle(len(ips), func(i, j int) { ips[i], ips[j] = ips[j], ips[i] })
		for _, ip := range ips[:1+r.IntN(2)] {
			s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
		}
		s.PodIP = s.PodIPs[0].IP
	}
	if r.IntN(2) == 0 {
		t := tm()
		s.StartTime = &t
	}
	for i := range r.IntN(3) {
		cs := v1.ContainerStatus{Name: fmt.Sprintf("c%d", i), Image: "busybox", Ready: r.IntN(2) == 0,
			RestartCount: r.Int32N(3), ContainerID: pick("", "containerd://abc", "containerd://def")}
		switch r.IntN(3) {
		case 0:
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: pick("ContainerCreating", "CrashLoopBackOff")}
		case 1:
			cs.State.Running = &v1.ContainerStateRunning{StartedAt: tm()}
		case 2:
			cs.State.Terminated = &v1.ContainerStateTerminated{ExitCode: r.Int32N(2) * 137, Reason: pick("Completed", "Error"), FinishedAt: tm()}
		}
		if r.IntN(2) == 0 {
			b := r.IntN(2) == 0
			cs.Started = &b
		}
		s.ContainerStatuses = append(s.ContainerStatuses, cs)
	}
	if r.IntN(4) == 0 {
		s.InitContainerStatuses = []v1.ContainerStatus{{Name: "init", State: v1.ContainerState{
			Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}
	}
	if r.IntN(3) == 0 {
		s.QOSClass = v1.PodQOSClass(pick("BestEffort", "Burstable"))
	}
	if r.IntN(4) == 0 {
		s.ObservedGeneration = r.Int64N(4)
	}
	if r.IntN(4) == 0 {
		s.NominatedNodeName = pick("n1", "n2")
	}
	if r.IntN(4) == 0 {
		s.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: pick("gpu", "fpga")}}
	}
	if r.IntN(4) == 0 {
		s.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: pick("x", "y")}
		if r.IntN(2) == 0 {
			s.ExtendedResourceClaimStatus.RequestMappings = []v1.ContainerExtendedResourceRequest{{ContainerName: "c0", ResourceName: "r", RequestName: "q"}}
		}
	}
	if r.IntN(4) == 0 {
		s.AllocatedResources = v1.ResourceList{v1.ResourceCPU: resource.MustParse(pick("100m", "1"))}
		if r.IntN(2) == 0 {
			s.AllocatedResources[v1.ResourceMemory] = resource.MustParse("64Mi")
		}
	}
	return s
}

// RoundTrip returns s as it reads back from JSON (the form the server stores).
func RoundTrip(t testing.TB, s v1.PodStatus) v1.PodStatus {
	t.Helper()
	data, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	var out v1.PodStatus
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Cond is a pod condition of type t and status s with its reason, changed at at.
func Cond(t v1.PodConditionType, s v1.ConditionStatus, reason string, at time.Time) v1.PodCondition {
	return v1.PodCondition{Type: t, Status: s, Reason: reason, LastTransitionTime: metav1.NewTime(at)}
}

// Running is statusmgrtest's "running" (ready) or "notready" status: one container
// "c" started at startedAt.
func Running(ready bool, startedAt time.Time) v1.PodStatus {
	rs := v1.ConditionFalse
	if ready {
		rs = v1.ConditionTrue
	}
	return v1.PodStatus{
		Phase: v1.PodRunning,
		Conditions: []v1.PodCondition{
			{Type: v1.PodScheduled, Status: v1.ConditionTrue},
			{Type: v1.PodReady, Status: rs},
			{Type: v1.ContainersReady, Status: rs},
		},
		HostIP: "10.0.0.1",
		PodIP:  "10.1.0.1",
		ContainerStatuses: []v1.ContainerStatus{{
			Name: "c", Image: "busybox", ContainerID: "containerd://c1", Ready: ready,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(startedAt)}},
		}},
	}
}
