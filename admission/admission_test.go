package admission_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/admission"
)

func rl(kv ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func testNode(alloc v1.ResourceList) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "machine", Labels: map[string]string{"key": "B"}},
		Status: v1.NodeStatus{Allocatable: alloc}}
}

func podWith(name string, requests v1.ResourceList, ports ...v1.ContainerPort) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: requests}, Ports: ports}}}}
}

func always() *v1.ContainerRestartPolicy { p := v1.ContainerRestartPolicyAlways; return &p }

// The kubelet's predicate_test.go TestGeneralPredicates and kubelet_test.go's
// TestHandlePortConflicts, TestHandleHostNameConflicts, TestHandleNodeSelector,
// TestHandleMemExceeded, as one table of Predicates results.
func TestPredicates(t *testing.T) {
	alloc := rl("cpu", "10", "memory", "20", "pods", "32", "example.com/gpu", "1")
	withAffinity := podWith("aff", nil)
	withAffinity.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "key", Operator: v1.NodeSelectorOpIn, Values: []string{"A"}}}},
			{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"machine"}}}}}}}}
	sidecar := podWith("sidecar", rl("cpu", "3"))
	sidecar.Spec.InitContainers = []v1.Container{
		{Name: "side", RestartPolicy: always(), Resources: v1.ResourceRequirements{Requests: rl("cpu", "4")}},
		{Name: "init", Resources: v1.ResourceRequirements{Requests: rl("cpu", "6")}},
	}
	overhead := podWith("overhead", rl("memory", "10"))
	overhead.Spec.Overhead = rl("memory", "5")
	podLevel := podWith("podlevel", rl("cpu", "1"))
	podLevel.Spec.Resources = &v1.ResourceRequirements{Requests: rl("cpu", "11")}
	limitOnly := podWith("limit", nil)
	limitOnly.Spec.Containers[0].Resources.Limits = rl("memory", "21")
	tainted := testNode(alloc)
	tainted.Spec.Taints = []v1.Taint{{Key: "k", Value: "v", Effect: v1.TaintEffectNoExecute}, {Key: "s", Effect: v1.TaintEffectNoSchedule}}
	static := podWith("static", nil)
	static.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	tolerating := podWith("tolerating", nil)
	tolerating.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}}
	osPod := podWith("os", nil)
	osPod.Spec.OS = &v1.PodOS{Name: "windows"}
	linux := testNode(alloc)
	linux.Labels["kubernetes.io/os"] = "linux"

	port := func(p int32, ip string) v1.ContainerPort { return v1.ContainerPort{HostPort: p, HostIP: ip} }
	rejected := func(reason, msg string) admission.Result { return admission.Result{Reason: reason, Message: msg} }
	ok := admission.Result{Admit: true}
	for _, tc := range []struct {
		name   string
		node   *v1.Node
		pod    *v1.Pod
		others []*v1.Pod
		want   admission.Result
	}{
		{"no resources", testNode(alloc), podWith("p", nil), nil, ok},
		{"fits", testNode(alloc), podWith("p", rl("cpu", "9", "memory", "19")), []*v1.Pod{podWith("o", rl("cpu", "1", "memory", "1"))}, ok},
		{"not enough cpu", testNode(alloc), podWith("p", rl("cpu", "8")), []*v1.Pod{podWith("o", rl("cpu", "5"))},
			rejected("OutOfcpu", "Node didn't have enough resource: cpu, requested: 8000, used: 5000, capacity: 10000")},
		{"mem exceeded (TestHandleMemExceeded)", testNode(alloc), podWith("p", rl("memory", "90")), nil,
			rejected("OutOfmemory", "Node didn't have enough resource: memory, requested: 90, used: 0, capacity: 20")},
		{"too many pods", testNode(rl("pods", "1")), podWith("p", nil), []*v1.Pod{podWith("o", nil)},
			rejected("OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1")},
		{"no pods allocatable", testNode(rl("cpu", "1")), podWith("p", nil), nil,
			rejected("OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 0, capacity: 0")},
		{"extended resource", testNode(alloc), podWith("p", rl("example.com/gpu", "2")), nil,
			rejected("OutOfexample.com/gpu", "Node didn't have enough resource: example.com/gpu, requested: 2, used: 0, capacity: 1")},
		{"missing extended resource ignored", testNode(alloc), podWith("p", rl("example.com/fpga", "2")), nil, ok},
		{"sidecar and init: max(3+4, 4+6) = 10 fits", testNode(alloc), sidecar, nil, ok},
		{"sidecar and init counted", testNode(alloc), sidecar, []*v1.Pod{podWith("o", rl("cpu", "1"))},
			rejected("OutOfcpu", "Node didn't have enough resource: cpu, requested: 10000, used: 1000, capacity: 10000")},
		{"overhead counted", testNode(alloc), overhead, []*v1.Pod{podWith("o", rl("memory", "6"))},
			rejected("OutOfmemory", "Node didn't have enough resource: memory, requested: 15, used: 6, capacity: 20")},
		{"pod-level requests win", testNode(alloc), podLevel, nil,
			rejected("OutOfcpu", "Node didn't have enough resource: cpu, requested: 11000, used: 0, capacity: 10000")},
		{"a limit is the request", testNode(alloc), limitOnly, nil,
			rejected("OutOfmemory", "Node didn't have enough resource: memory, requested: 21, used: 0, capacity: 20")},
		{"node selector (TestHandleNodeSelector)", testNode(alloc), func() *v1.Pod { p := podWith("p", nil); p.Spec.NodeSelector = map[string]string{"key": "A"}; return p }(), nil,
			rejected("NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector")},
		{"node affinity: the matchFields term matches", testNode(alloc), withAffinity, nil, ok},
		{"host name (TestHandleHostNameConflicts)", testNode(alloc), func() *v1.Pod { p := podWith("p", nil); p.Spec.NodeName = "other"; return p }(), nil,
			rejected("NodeName", "Predicate NodeName failed: node(s) didn't match the requested node name")},
		{"port conflict (TestHandlePortConflicts)", testNode(alloc), podWith("p", nil, port(80, "")), []*v1.Pod{podWith("o", nil, port(80, "127.0.0.1"))},
			rejected("NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports")},
		{"ports on other IPs", testNode(alloc), podWith("p", nil, port(80, "10.0.0.1")), []*v1.Pod{podWith("o", nil, port(80, "10.0.0.2"))}, ok},
		{"port held by a sidecar", testNode(alloc), podWith("p", nil, port(80, "")), []*v1.Pod{func() *v1.Pod {
			p := podWith("o", nil)
			p.Spec.InitContainers = []v1.Container{{Name: "s", RestartPolicy: always(), Ports: []v1.ContainerPort{port(80, "")}}}
			return p
		}()}, rejected("NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports")},
		{"untolerated NoExecute taint", tainted, podWith("p", nil), nil,
			rejected("TaintToleration", "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate")},
		{"tolerated taint", tainted, tolerating, nil, ok},
		{"static pods ignore taints", tainted, static, nil, ok},
		{"first failure wins", testNode(alloc), func() *v1.Pod {
			p := podWith("p", rl("cpu", "20"))
			p.Spec.NodeSelector = map[string]string{"key": "A"}
			return p
		}(), nil,
			rejected("OutOfcpu", "Node didn't have enough resource: cpu, requested: 20000, used: 0, capacity: 10000")},
		{"pod OS field", linux, osPod, nil, rejected("PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS")},
		{"no node", nil, podWith("p", nil), nil, rejected("InvalidNodeInfo", "Kubelet cannot get node info.")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			got := admission.Predicates(tc.node, &admission.Attributes{Pod: tc.pod, OtherPods: tc.others})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodRequests(t *testing.T) {
	p := podWith("p", rl("cpu", "1", "memory", "1Gi"))
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "c2", Resources: v1.ResourceRequirements{Requests: rl("cpu", "500m")}})
	p.Spec.InitContainers = []v1.Container{
		{Name: "i1", Resources: v1.ResourceRequirements{Requests: rl("cpu", "2", "memory", "512Mi")}},
		{Name: "s1", RestartPolicy: always(), Resources: v1.ResourceRequirements{Requests: rl("cpu", "1")}},
		{Name: "i2", Resources: v1.ResourceRequirements{Requests: rl("cpu", "2")}},
	}
	p.Spec.Overhead = rl("memory", "100Mi")
	got := admission.PodRequests(p)
	// cpu: max(1 + 0.5 + 1 sidecar, i1 2, i2 2 + 1 sidecar) = 3; memory: max(1Gi, 512Mi) + 100Mi.
	want := rl("cpu", "3", "memory", "1124Mi")
	for name, q := range want {
		if g := got[name]; g.Cmp(q) != 0 {
			t.Errorf("%s = %s, want %s", name, g.String(), q.String())
		}
	}
}

func TestAdmitChain(t *testing.T) {
	var calls []string
	h := func(name string, admit bool) admission.Handler {
		return admission.HandlerFunc(func(_ context.Context, a *admission.Attributes) admission.Result {
			calls = append(calls, fmt.Sprintf("%s:%d", name, len(a.OtherPods)))
			return admission.Result{Admit: admit, Reason: name, Message: "no"}
		})
	}
	p := podWith("p", nil)
	got := admission.Admit(context.Background(), []admission.Handler{h("a", true), nil, h("b", false), h("c", false)},
		&admission.Attributes{Pod: p, OtherPods: []*v1.Pod{p, podWith("o", nil), nil}})
	if diff := cmp.Diff(admission.Result{Reason: "b", Message: "no"}, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a:1", "b:1"}, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if r := admission.Admit(context.Background(), nil, nil); r.Admit || r.Reason != admission.UnexpectedAdmissionError {
		t.Errorf("nil attributes: %+v", r)
	}
}

func TestRejectedStatus(t *testing.T) {
	got := admission.RejectedStatus(podWith("p", rl("cpu", "1")), "OutOfcpu", "Node didn't have enough resource: cpu")
	want := v1.PodStatus{Phase: v1.PodFailed, Reason: "OutOfcpu", QOSClass: v1.PodQOSBurstable,
		Message: "Pod was rejected: Node didn't have enough resource: cpu"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// The kubelet's preemption_test.go TestGetPodsToPreempt.
func TestPodsToPreempt(t *testing.T) {
	guaranteed := func(name, q string) *v1.Pod {
		p := podWith(name, rl("cpu", q+"m", "memory", q+"Mi"))
		p.Spec.Containers[0].Resources.Limits = rl("cpu", q+"m", "memory", q+"Mi")
		return p
	}
	critical := func(name string, prio int32) *v1.Pod {
		p := podWith(name, rl("cpu", "100m", "memory", "100Mi"))
		p.Spec.Priority = &prio
		return p
	}
	pods := map[string]*v1.Pod{
		"bestEffort":            podWith("bestEffort", nil),
		"burstable":             podWith("burstable", rl("cpu", "100m", "memory", "100Mi")),
		"highRequestBurstable":  podWith("highRequestBurstable", rl("cpu", "300m", "memory", "300Mi")),
		"guaranteed":            guaranteed("guaranteed", "100"),
		"highRequestGuaranteed": guaranteed("highRequestGuaranteed", "300"),
		"clusterCritical":       critical("clusterCritical", admission.SystemCriticalPriority),
		"nodeCritical":          critical("nodeCritical", admission.SystemCriticalPriority+100),
	}
	reqs := func(cpu, mem, n int64) []admission.Requirement {
		var rs []admission.Requirement
		if cpu > 0 {
			rs = append(rs, admission.Requirement{Resource: v1.ResourceCPU, Quantity: cpu})
		}
		if mem > 0 {
			rs = append(rs, admission.Requirement{Resource: v1.ResourceMemory, Quantity: mem * 1024 * 1024})
		}
		if n > 0 {
			rs = append(rs, admission.Requirement{Resource: v1.ResourcePods, Quantity: n})
		}
		return rs
	}
	all := []string{"bestEffort", "burstable", "highRequestBurstable", "guaranteed", "highRequestGuaranteed"}
	for _, tc := range []struct {
		name      string
		preemptor string
		input     []string
		reqs      []admission.Requirement
		want      []string // nil: an error
	}{
		{"no requirements", "clusterCritical", nil, reqs(0, 0, 0), []string{}},
		{"no pods", "clusterCritical", nil, reqs(0, 0, 1), nil},
		{"equal pods and resources requirements", "clusterCritical", []string{"burstable"}, reqs(100, 100, 1), []string{"burstable"}},
		{"higher requirements than pod requests", "clusterCritical", []string{"burstable"}, reqs(200, 200, 2), nil},
		{"choose between bestEffort and burstable", "clusterCritical", []string{"burstable", "bestEffort"}, reqs(0, 0, 1), []string{"bestEffort"}},
		{"choose between burstable and guaranteed", "clusterCritical", []string{"burstable", "guaranteed"}, reqs(0, 0, 1), []string{"burstable"}},
		{"choose lower request burstable if it meets requirements", "clusterCritical", []string{"bestEffort", "highRequestBurstable", "burstable"}, reqs(100, 100, 0), []string{"burstable"}},
		{"choose higher request burstable if lower does not meet requirements", "clusterCritical", []string{"bestEffort", "burstable", "highRequestBurstable"}, reqs(150, 150, 0), []string{"highRequestBurstable"}},
		{"multiple pods required", "clusterCritical", all, reqs(350, 350, 0), []string{"burstable", "highRequestBurstable"}},
		{"evict guaranteed when we have to, and dont evict the extra burstable", "clusterCritical", all, reqs(0, 550, 0), []string{"highRequestBurstable", "highRequestGuaranteed"}},
		{"evict cluster critical pod for node critical pod", "nodeCritical", []string{"clusterCritical"}, reqs(100, 0, 0), []string{"clusterCritical"}},
		{"can not evict node critical pod for cluster critical pod", "clusterCritical", []string{"nodeCritical"}, reqs(100, 0, 0), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var input []*v1.Pod
			for _, n := range tc.input {
				input = append(input, pods[n])
			}
			got, err := admission.PodsToPreempt(pods[tc.preemptor], input, tc.reqs)
			if tc.want == nil {
				if !errors.Is(err, admission.ErrNoPreemption) {
					t.Fatalf("err = %v, want ErrNoPreemption", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names := []string{}
			for _, p := range got {
				names = append(names, p.Name)
			}
			// The kubelet's test compares the pods as a set.
			if diff := cmp.Diff(tc.want, names, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A critical pod that does not fit is admitted once the lower-priority pods are killed
// with the preempted status; a pod that is not critical is refused.
func TestCriticalPodPreemption(t *testing.T) {
	node := func(context.Context) (*v1.Node, error) { return testNode(rl("cpu", "1", "pods", "10")), nil }
	var killed []string
	var statuses []v1.PodStatus
	kill := func(_ context.Context, p *v1.Pod, f func(*v1.PodStatus)) error {
		killed = append(killed, p.Name)
		var s v1.PodStatus
		f(&s)
		statuses = append(statuses, s)
		return nil
	}
	h := admission.PredicateHandler(admission.PredicateConfig{Node: node, OnFailure: admission.CriticalPodPreemption(kill, nil)})
	running := podWith("running", rl("cpu", "800m"))
	plain := podWith("plain", rl("cpu", "500m"))
	if r := h.Admit(context.Background(), &admission.Attributes{Pod: plain, OtherPods: []*v1.Pod{running}}); r.Reason != admission.OutOfCPU || len(killed) != 0 {
		t.Fatalf("plain pod: %+v, killed %v", r, killed)
	}
	crit := podWith("crit", rl("cpu", "500m"))
	prio := admission.SystemCriticalPriority
	crit.Spec.Priority = &prio
	if r := h.Admit(context.Background(), &admission.Attributes{Pod: crit, OtherPods: []*v1.Pod{running}}); !r.Admit {
		t.Fatalf("critical pod refused: %+v", r)
	}
	want := v1.PodStatus{Phase: v1.PodFailed, Reason: "Preempting", Message: "Preempted in order to admit critical pod",
		Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "TerminationByKubelet",
			Message: "Pod was preempted by Kubelet to accommodate a critical pod."}}}
	if diff := cmp.Diff([]string{"running"}, killed); diff != "" {
		t.Errorf("killed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]v1.PodStatus{want}, statuses); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	critical := podWith("other-critical", rl("cpu", "800m"))
	critical.Spec.Priority = &prio
	r := h.Admit(context.Background(), &admission.Attributes{Pod: crit, OtherPods: []*v1.Pod{critical}})
	wantMsg := "Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: [(res: cpu, q: 300), ]"
	if diff := cmp.Diff(admission.Result{Reason: admission.UnexpectedAdmissionError, Message: wantMsg}, r); diff != "" {
		t.Errorf("nothing to preempt (-want +got):\n%s", diff)
	}
}
