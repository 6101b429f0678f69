package podgc

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/internal/podfacts"
)

// byteReader hands out fuzz bytes, then zeros.
type byteReader struct{ b []byte }

func (r *byteReader) next() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

var fuzzPhases = []v1.PodPhase{v1.PodPending, v1.PodRunning, v1.PodSucceeded, v1.PodFailed, v1.PodUnknown, "", "Bogus"}

// fuzzInput builds an Input from fuzz bytes: up to 40 pods over 4 node names, of which some
// are listed, and a random set of gone names.
func fuzzInput(data []byte) Input {
	r := &byteReader{b: data}
	nodeNames := []string{"", "n0", "n1", "n2", "n3"}
	var in Input
	in.TerminatedPodThreshold = int(int8(r.next())) % 20
	in.Now = t0
	nNodes := int(r.next() % 6)
	for i := range nNodes {
		b := r.next()
		if b == 255 {
			in.Nodes = append(in.Nodes, nil)
			continue
		}
		n := mkNode(nodeNames[1+i%4])
		switch b % 4 {
		case 1:
			ready(v1.ConditionTrue)(n)
		case 2:
			ready(v1.ConditionFalse)(n)
		case 3:
			ready(v1.ConditionUnknown)(n)
		}
		if b&4 != 0 {
			outOfService()(n)
		}
		if b&8 != 0 {
			n.Name = ""
		}
		in.Nodes = append(in.Nodes, n)
	}
	g := r.next()
	for i, name := range nodeNames {
		if g&(1<<i) != 0 {
			in.GoneNodes = append(in.GoneNodes, name)
		}
	}
	nPods := int(r.next() % 41)
	for i := range nPods {
		a, b := r.next(), r.next()
		if a == 255 {
			in.Pods = append(in.Pods, nil)
			continue
		}
		p := mkPod(fmt.Sprintf("p%d", i), int(b%8), phase(fuzzPhases[int(a)%len(fuzzPhases)]), onNode(nodeNames[int(a>>3)%len(nodeNames)]))
		if a&0x80 != 0 {
			terminating()(p)
		}
		if b&0x10 != 0 && p.Status.Phase == v1.PodFailed {
			p.Status.Reason = "Evicted"
		}
		if b&0x20 != 0 {
			p.UID = ""
		}
		if b&0x40 != 0 {
			p.Namespace = "other"
		}
		in.Pods = append(in.Pods, p)
	}
	return in
}

// naiveDecide is a slow, obviously correct restatement of Decide for the valid pods.
func naiveDecide(in Input) map[types.UID]Reason {
	valid := func(p *v1.Pod) bool { return p != nil && p.Name != "" && p.UID != "" }
	node := func(name string) *v1.Node {
		for _, n := range in.Nodes {
			if n != nil && n.Name != "" && n.Name == name {
				return n
			}
		}
		return nil
	}
	out := map[types.UID]Reason{}
	set := func(p *v1.Pod, r Reason) {
		if _, ok := out[p.UID]; !ok {
			out[p.UID] = r
		}
	}
	if in.TerminatedPodThreshold > 0 {
		var term []*v1.Pod
		for _, p := range in.Pods {
			if valid(p) && p.Status.Phase != v1.PodPending && p.Status.Phase != v1.PodRunning && p.Status.Phase != v1.PodUnknown {
				term = append(term, p)
			}
		}
		// Repeatedly take the first in deletion order.
		for len(term) > in.TerminatedPodThreshold {
			best := 0
			for i := range term {
				if DeletionOrderLess(term[i], term[best]) {
					best = i
				}
			}
			set(term[best], ReasonTerminated)
			term = slices.Delete(term, best, best+1)
		}
	}
	for _, p := range in.Pods {
		if !valid(p) || p.DeletionTimestamp == nil || p.Spec.NodeName == "" {
			continue
		}
		n := node(p.Spec.NodeName)
		if n == nil {
			continue
		}
		isReady := false
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady {
				isReady = c.Status == v1.ConditionTrue
				break
			}
		}
		hasTaint := false
		for _, tn := range n.Spec.Taints {
			hasTaint = hasTaint || tn.Key == "node.kubernetes.io/out-of-service"
		}
		if !isReady && hasTaint {
			set(p, ReasonTerminatingOutOfService)
		}
	}
	for _, p := range in.Pods {
		if valid(p) && p.Spec.NodeName != "" && node(p.Spec.NodeName) == nil && slices.Contains(in.GoneNodes, p.Spec.NodeName) {
			set(p, ReasonOrphaned)
		}
	}
	for _, p := range in.Pods {
		if valid(p) && p.DeletionTimestamp != nil && p.Spec.NodeName == "" {
			set(p, ReasonTerminatingUnscheduled)
		}
	}
	return out
}

func FuzzDecide(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 3, 1, 6, 12, 30, 0x12, 1, 0x83, 2, 0x0b, 3, 0x90, 7})
	f.Add([]byte{0xff, 5, 255, 2, 6, 0xff, 40, 3, 0x1a, 0x10, 0x8b, 0x22, 0x13, 0x45, 0x98, 0x01})
	f.Add([]byte{1, 4, 6, 6, 6, 6, 0x1f, 20, 3, 1, 2, 2, 0x8a, 3, 0x0b, 4, 0x03, 0x10, 0x9b, 5})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzInput(data)
		var before []*v1.Pod
		for _, p := range in.Pods {
			before = append(before, p.DeepCopy())
		}
		plan := Decide(in)

		got := map[types.UID]Reason{}
		for _, d := range plan.Deletions {
			if checkPod(d.Pod) != nil {
				t.Fatalf("invalid pod planned: %+v", d.Pod)
			}
			if _, dup := got[d.Pod.UID]; dup {
				t.Fatalf("pod %s planned twice", d.Pod.UID)
			}
			got[d.Pod.UID] = d.Reason
			if wantStatus := !podfacts.IsTerminal(d.Pod); (d.Status != nil) != wantStatus {
				t.Fatalf("pod %s phase %q: status written = %v", d.Pod.Name, d.Pod.Status.Phase, d.Status != nil)
			}
			if d.Status != nil && d.Status.Phase != v1.PodFailed {
				t.Fatalf("status written with phase %q", d.Status.Phase)
			}
		}
		if diff := cmp.Diff(naiveDecide(in), got); diff != "" {
			t.Fatalf("Decide differs from the naive version (-naive +fast):\n%s", diff)
		}
		if diff := cmp.Diff(before, in.Pods); diff != "" {
			t.Fatalf("input modified (-before +after):\n%s", diff)
		}
		invalid := 0
		for _, p := range in.Pods {
			if checkPod(p) != nil {
				invalid++
			}
		}
		for _, n := range in.Nodes {
			if checkNode(n) != nil {
				invalid++
			}
		}
		if len(plan.Skipped) != invalid {
			t.Fatalf("skipped %d, want %d", len(plan.Skipped), invalid)
		}
	})
}

// FuzzFailedStatusPatch checks that the patch of the Failed status, applied to the pod as
// the API server would, gives exactly that status, whatever the pod's current status.
func FuzzFailedStatusPatch(f *testing.F) {
	f.Add("Running", "Ready", "True", "", "10.0.0.1", "c1", true, int64(0))
	f.Add("Pending", "DisruptionTarget", "True", "DeletionByTaintManager", "", "", false, int64(-3600))
	f.Add("", "DisruptionTarget", "False", "x", "::1", "c", true, int64(1))
	f.Add("Unknown", "", "", "", "", "", false, int64(0))
	f.Add("Succeeded", "Ready", "True", "", "", "", true, int64(0))
	f.Fuzz(func(t *testing.T, ph, condType, condStatus, condReason, ip, container string, orphan bool, offsetSeconds int64) {
		// Objects reach the garbage collector decoded from JSON: their strings are UTF-8.
		for _, s := range []*string{&ph, &condType, &condStatus, &condReason, &ip, &container} {
			*s = strings.ToValidUTF8(*s, "?")
		}
		pod := mkPod("p", 0, phase(v1.PodPhase(ph)))
		pod.Status.PodIP = ip
		if condType != "" {
			pod.Status.Conditions = []v1.PodCondition{{
				Type: v1.PodConditionType(condType), Status: v1.ConditionStatus(condStatus), Reason: condReason,
				LastTransitionTime: metav1.NewTime(t0.Add(time.Duration(offsetSeconds%1e6) * time.Second).Truncate(time.Second)),
			}}
		}
		if container != "" {
			pod.Status.ContainerStatuses = []v1.ContainerStatus{{Name: container, Ready: true}}
		}
		var cond *v1.PodCondition
		if orphan {
			cond = ConditionFor(ReasonOrphaned)
		}
		now := t0.Add(time.Hour)
		st, ok := FailedStatus(pod, cond, now)
		if ok != !podfacts.IsTerminal(pod) {
			t.Fatalf("phase %q: write = %v", ph, ok)
		}
		if !ok {
			return
		}
		patch, err := StatusPatch(pod, st)
		if err != nil {
			t.Fatal(err)
		}
		res, err := applyStatusPatch(t, pod, patch)
		if err != nil {
			t.Fatalf("apply %s: %v", patch, err)
		}
		if diff := cmp.Diff(st, res.Status); diff != "" {
			t.Fatalf("patched status (-want +got):\n%s\npatch %s", diff, patch)
		}
		if diff := cmp.Diff(pod.ObjectMeta, res.ObjectMeta); diff != "" {
			t.Fatalf("patch changed metadata (-want +got):\n%s", diff)
		}
	})
}
