package podgc

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIsTerminated(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{"nil pod", nil, false},
		{"pending", mkPod("a", 0, phase(v1.PodPending)), false},
		{"running", mkPod("a", 0, phase(v1.PodRunning)), false},
		{"unknown", mkPod("a", 0, phase(v1.PodUnknown)), false},
		{"succeeded", mkPod("a", 0, phase(v1.PodSucceeded)), true},
		{"failed", mkPod("a", 0, phase(v1.PodFailed)), true},
		{"empty phase counts as terminated, as in the controller", mkPod("a", 0, phase("")), true},
		{"undefined phase counts as terminated", mkPod("a", 0, phase("Bogus")), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsTerminated(tt.pod); got != tt.want {
				t.Errorf("IsTerminated = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNodePredicates(t *testing.T) {
	tests := []struct {
		name             string
		node             *v1.Node
		wantReady, wantO bool
	}{
		{"nil node", nil, false, false},
		{"no conditions, no taints", mkNode("n"), false, false},
		{"no conditions, out-of-service taint", mkNode("n", outOfService()), false, true},
		{"ready, out-of-service taint", mkNode("n", ready(v1.ConditionTrue), outOfService()), true, false},
		{"not ready, out-of-service taint", mkNode("n", ready(v1.ConditionFalse), outOfService()), false, true},
		{"unknown, out-of-service taint with NoSchedule effect", mkNode("n", ready(v1.ConditionUnknown), taint(TaintOutOfService, v1.TaintEffectNoSchedule)), false, true},
		{"not ready, other taint", mkNode("n", ready(v1.ConditionFalse), taint("node.kubernetes.io/unreachable", v1.TaintEffectNoExecute)), false, false},
		{"first Ready condition wins", mkNode("n", ready(v1.ConditionFalse), ready(v1.ConditionTrue), outOfService()), false, true},
		{"other conditions only", mkNode("n", func(n *v1.Node) {
			n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeMemoryPressure, Status: v1.ConditionTrue}}
		}, outOfService()), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsNodeReady(tt.node); got != tt.wantReady {
				t.Errorf("IsNodeReady = %v, want %v", got, tt.wantReady)
			}
			if got := IsNodeOutOfService(tt.node); got != tt.wantO {
				t.Errorf("IsNodeOutOfService = %v, want %v", got, tt.wantO)
			}
		})
	}
}

func TestSortForDeletion(t *testing.T) {
	tests := []struct {
		name string
		pods []*v1.Pod
		want []string
	}{
		{"empty", nil, []string{}},
		{"oldest first", []*v1.Pod{mkPod("c", 30), mkPod("a", 10), mkPod("b", 20)}, []string{"a", "b", "c"}},
		{"evicted before older non-evicted", []*v1.Pod{mkPod("old", 1, phase(v1.PodSucceeded)), mkPod("ev", 50, evicted())}, []string{"ev", "old"}},
		{"failed but not evicted keeps age order", []*v1.Pod{mkPod("young", 9, phase(v1.PodFailed)), mkPod("old", 1, phase(v1.PodSucceeded))}, []string{"old", "young"}},
		{"evicted among themselves by age", []*v1.Pod{mkPod("e2", 20, evicted()), mkPod("e1", 10, evicted())}, []string{"e1", "e2"}},
		{"same time: by name", []*v1.Pod{mkPod("b", 5), mkPod("a", 5)}, []string{"a", "b"}},
		{"nil last", []*v1.Pod{nil, mkPod("a", 5)}, []string{"a", "<nil>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			SortForDeletion(tt.pods)
			if diff := cmp.Diff(tt.want, names(tt.pods)); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("namespace tiebreak", func(t *testing.T) {
		pods := []*v1.Pod{mkPod("a", 5, ns("z"), uid("1")), mkPod("a", 5, ns("y"), uid("2"))}
		SortForDeletion(pods)
		if pods[0].Namespace != "y" {
			t.Errorf("first namespace = %q, want y", pods[0].Namespace)
		}
	})
}

func TestTerminatedOverThreshold(t *testing.T) {
	done := func(name string, age int) *v1.Pod { return mkPod(name, age, phase(v1.PodSucceeded)) }
	tests := []struct {
		name      string
		pods      []*v1.Pod
		threshold int
		want      []string
	}{
		{"threshold 0 disables", []*v1.Pod{done("a", 1), done("b", 2)}, 0, []string{}},
		{"negative threshold disables", []*v1.Pod{done("a", 1)}, -5, []string{}},
		{"at threshold: nothing", []*v1.Pod{done("a", 1), done("b", 2)}, 2, []string{}},
		{"below threshold: nothing", []*v1.Pod{done("a", 1)}, 2, []string{}},
		{"one over: the oldest", []*v1.Pod{done("new", 3), done("old", 1), done("mid", 2)}, 2, []string{"old"}},
		{"two over: the two oldest, oldest first", []*v1.Pod{done("new", 3), done("old", 1), done("mid", 2)}, 1, []string{"old", "mid"}},
		{"running pods neither count nor go", []*v1.Pod{mkPod("run", 0), mkPod("pend", 0, phase(v1.PodPending)), mkPod("unk", 0, phase(v1.PodUnknown)), done("d", 5)}, 1, []string{}},
		{"evicted go first", []*v1.Pod{done("old", 1), mkPod("ev", 9, evicted()), done("mid", 2)}, 2, []string{"ev"}},
		{"failed counts", []*v1.Pod{mkPod("f", 1, phase(v1.PodFailed)), done("s", 2)}, 1, []string{"f"}},
		{"empty phase counts", []*v1.Pod{mkPod("e", 1, phase("")), done("s", 2)}, 1, []string{"e"}},
		{"invalid pods ignored and not counted", []*v1.Pod{nil, done("x", 0), mkPod("nouid", 0, phase(v1.PodSucceeded), noUID()), mkPod("", 0, phase(v1.PodSucceeded), noName())}, 1, []string{}},
		{"terminating terminated pods count too", []*v1.Pod{done("a", 1), mkPod("b", 2, phase(v1.PodFailed), terminating())}, 1, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]*v1.Pod(nil), tt.pods...)
			got := TerminatedOverThreshold(tt.pods, tt.threshold)
			if diff := cmp.Diff(tt.want, names(got)); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(names(in), names(tt.pods)); diff != "" {
				t.Errorf("input reordered (-before +after):\n%s", diff)
			}
		})
	}
}

func TestTerminatingOnOutOfServiceNodes(t *testing.T) {
	oos := mkNode("oos", ready(v1.ConditionFalse), outOfService())
	nodes := []*v1.Node{
		oos,
		mkNode("ready-tainted", ready(v1.ConditionTrue), outOfService()),
		mkNode("notready", ready(v1.ConditionFalse)),
		mkNode("bare", outOfService()), // no conditions: not ready
	}
	tests := []struct {
		name  string
		pods  []*v1.Pod
		nodes []*v1.Node
		want  []string
	}{
		{"terminating on out-of-service node", []*v1.Pod{mkPod("a", 0, onNode("oos"), terminating())}, nodes, []string{"a"}},
		{"not terminating: kept", []*v1.Pod{mkPod("a", 0, onNode("oos"))}, nodes, []string{}},
		{"ready node with taint: kept", []*v1.Pod{mkPod("a", 0, onNode("ready-tainted"), terminating())}, nodes, []string{}},
		{"not ready without taint: kept", []*v1.Pod{mkPod("a", 0, onNode("notready"), terminating())}, nodes, []string{}},
		{"node without conditions counts as not ready", []*v1.Pod{mkPod("a", 0, onNode("bare"), terminating())}, nodes, []string{"a"}},
		{"unknown node: left to the orphan pass", []*v1.Pod{mkPod("a", 0, onNode("ghost"), terminating())}, nodes, []string{}},
		{"no node: left to the unscheduled pass", []*v1.Pod{mkPod("a", 0, terminating())}, nodes, []string{}},
		{"any phase goes, in deletion order", []*v1.Pod{
			mkPod("young", 9, onNode("oos"), terminating()),
			mkPod("old", 1, onNode("oos"), terminating(), phase(v1.PodSucceeded)),
			mkPod("ev", 20, onNode("bare"), terminating(), evicted()),
		}, nodes, []string{"ev", "old", "young"}},
		{"nil and unnamed nodes ignored", []*v1.Pod{mkPod("a", 0, onNode("oos"), terminating())}, []*v1.Node{nil, mkNode(""), oos}, []string{"a"}},
		{"first node of a name counts", []*v1.Pod{mkPod("a", 0, onNode("dup"), terminating())}, []*v1.Node{mkNode("dup", ready(v1.ConditionTrue)), mkNode("dup", outOfService())}, []string{}},
		{"no nodes", []*v1.Pod{mkPod("a", 0, onNode("oos"), terminating())}, nil, []string{}},
		{"invalid pods ignored", []*v1.Pod{nil, mkPod("x", 0, onNode("oos"), terminating(), noUID())}, nodes, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TerminatingOnOutOfServiceNodes(tt.pods, tt.nodes)
			if diff := cmp.Diff(tt.want, names(got)); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOrphaned(t *testing.T) {
	nodes := []*v1.Node{mkNode("alive")}
	tests := []struct {
		name  string
		pods  []*v1.Pod
		nodes []*v1.Node
		gone  []string
		want  []string
	}{
		{"bound to gone node", []*v1.Pod{mkPod("a", 0, onNode("dead"))}, nodes, []string{"dead"}, []string{"a"}},
		{"missing but not gone (in quarantine): kept", []*v1.Pod{mkPod("a", 0, onNode("dead"))}, nodes, nil, []string{}},
		{"gone name that is listed after all: kept", []*v1.Pod{mkPod("a", 0, onNode("alive"))}, nodes, []string{"alive"}, []string{}},
		{"unbound pod: kept even with empty gone name", []*v1.Pod{mkPod("a", 0)}, nodes, []string{""}, []string{}},
		{"any phase and terminating too, input order", []*v1.Pod{
			mkPod("b", 9, onNode("dead"), phase(v1.PodSucceeded)),
			mkPod("a", 1, onNode("dead"), terminating()),
			mkPod("c", 5, onNode("alive")),
			mkPod("d", 5, onNode("dead2")),
		}, nodes, []string{"dead", "dead2"}, []string{"b", "a", "d"}},
		{"no nodes listed at all", []*v1.Pod{mkPod("a", 0, onNode("dead"))}, nil, []string{"dead"}, []string{"a"}},
		{"invalid pods ignored", []*v1.Pod{nil, mkPod("x", 0, onNode("dead"), noUID())}, nodes, []string{"dead"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Orphaned(tt.pods, tt.nodes, tt.gone)
			if diff := cmp.Diff(tt.want, names(got)); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnscheduledTerminating(t *testing.T) {
	tests := []struct {
		name string
		pods []*v1.Pod
		want []string
	}{
		{"terminating without node", []*v1.Pod{mkPod("a", 0, terminating(), phase(v1.PodPending))}, []string{"a"}},
		{"terminating on a node: kept", []*v1.Pod{mkPod("a", 0, terminating(), onNode("n"))}, []string{}},
		{"not terminating without node: kept", []*v1.Pod{mkPod("a", 0, phase(v1.PodPending))}, []string{}},
		{"input order", []*v1.Pod{mkPod("b", 2, terminating()), mkPod("a", 1, terminating())}, []string{"b", "a"}},
		{"invalid ignored", []*v1.Pod{nil, mkPod("", 0, terminating(), noName())}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, names(UnscheduledTerminating(tt.pods))); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMissingNodes(t *testing.T) {
	tests := []struct {
		name  string
		pods  []*v1.Pod
		nodes []*v1.Node
		want  []string
	}{
		{"none", []*v1.Pod{mkPod("a", 0, onNode("n1"))}, []*v1.Node{mkNode("n1")}, nil},
		{"unbound pods reference nothing", []*v1.Pod{mkPod("a", 0)}, nil, nil},
		{"sorted, once each", []*v1.Pod{mkPod("a", 0, onNode("z")), mkPod("b", 0, onNode("y")), mkPod("c", 0, onNode("z")), mkPod("d", 0, onNode("n1"))}, []*v1.Node{mkNode("n1")}, []string{"y", "z"}},
		{"nil node does not hide a name", []*v1.Pod{mkPod("a", 0, onNode("n1"))}, []*v1.Node{nil}, []string{"n1"}},
		{"invalid pods ignored", []*v1.Pod{nil, mkPod("a", 0, onNode("n1"), noUID())}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, MissingNodes(tt.pods, tt.nodes)); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
}

// deletionSummary is the comparable part of a Deletion.
type deletionSummary struct {
	Name   string
	Reason Reason
	Phase  v1.PodPhase // phase to write first; "" when no status is written
	Cond   string      // reason of the DisruptionTarget condition written, if any
}

func summarize(ds []Deletion) []deletionSummary {
	out := []deletionSummary{}
	for _, d := range ds {
		s := deletionSummary{Name: d.Pod.Name, Reason: d.Reason}
		if d.Status != nil {
			s.Phase = d.Status.Phase
			for _, c := range d.Status.Conditions {
				if c.Type == v1.DisruptionTarget {
					s.Cond = c.Reason
				}
			}
		}
		out = append(out, s)
	}
	return out
}

func TestDecide(t *testing.T) {
	oos := mkNode("oos", ready(v1.ConditionFalse), outOfService())
	alive := mkNode("alive", ready(v1.ConditionTrue))
	tests := []struct {
		name        string
		in          Input
		want        []deletionSummary
		wantSkipped []error
	}{
		{
			name: "empty",
			in:   Input{},
			want: []deletionSummary{},
		},
		{
			name: "all four passes in order, Failed written only for non-terminal pods",
			in: Input{
				Pods: []*v1.Pod{
					mkPod("unsched", 0, terminating(), phase(v1.PodPending)),
					mkPod("orphan", 0, onNode("dead")),
					mkPod("oos-pod", 0, onNode("oos"), terminating()),
					mkPod("done-old", 1, onNode("alive"), phase(v1.PodSucceeded)),
					mkPod("done-new", 2, onNode("alive"), phase(v1.PodSucceeded)),
					mkPod("running", 0, onNode("alive")),
				},
				Nodes:                  []*v1.Node{oos, alive},
				GoneNodes:              []string{"dead"},
				TerminatedPodThreshold: 1,
				Now:                    t0,
			},
			want: []deletionSummary{
				{"done-old", ReasonTerminated, "", ""},
				{"oos-pod", ReasonTerminatingOutOfService, v1.PodFailed, ""},
				{"orphan", ReasonOrphaned, v1.PodFailed, ConditionReasonDeletionByPodGC},
				{"unsched", ReasonTerminatingUnscheduled, v1.PodFailed, ""},
			},
		},
		{
			name: "a pod selected twice is deleted once, for the first reason",
			in: Input{
				Pods: []*v1.Pod{
					mkPod("a", 1, onNode("dead"), phase(v1.PodFailed)),
					mkPod("b", 2, onNode("dead"), phase(v1.PodFailed)),
				},
				GoneNodes:              []string{"dead"},
				TerminatedPodThreshold: 1,
			},
			want: []deletionSummary{
				{"a", ReasonTerminated, "", ""},
				{"b", ReasonOrphaned, "", ""},
			},
		},
		{
			name: "orphaned terminal pod is deleted without a status write",
			in: Input{
				Pods:      []*v1.Pod{mkPod("a", 1, onNode("dead"), phase(v1.PodSucceeded))},
				GoneNodes: []string{"dead"},
			},
			want: []deletionSummary{{"a", ReasonOrphaned, "", ""}},
		},
		{
			name: "threshold 0: terminated pass off, others on",
			in: Input{
				Pods: []*v1.Pod{
					mkPod("done", 1, onNode("alive"), phase(v1.PodSucceeded)),
					mkPod("unsched", 0, terminating()),
				},
				Nodes: []*v1.Node{alive},
			},
			want: []deletionSummary{{"unsched", ReasonTerminatingUnscheduled, v1.PodFailed, ""}},
		},
		{
			name: "pod on a missing node not yet gone is kept",
			in: Input{
				Pods:  []*v1.Pod{mkPod("a", 0, onNode("new-node"))},
				Nodes: []*v1.Node{alive},
			},
			want: []deletionSummary{},
		},
		{
			name: "invalid entries skipped and reported",
			in: Input{
				Pods: []*v1.Pod{
					nil,
					mkPod("nouid", 0, terminating(), noUID()),
					mkPod("", 0, terminating(), noName()),
					mkPod("ok", 0, terminating()),
				},
				Nodes: []*v1.Node{nil, mkNode("")},
			},
			want:        []deletionSummary{{"ok", ReasonTerminatingUnscheduled, v1.PodFailed, ""}},
			wantSkipped: []error{ErrNilPod, ErrInvalidPod, ErrInvalidPod, ErrNilNode, ErrInvalidNode},
		},
		{
			name: "same UID, different pods: both considered",
			in: Input{
				Pods: []*v1.Pod{
					mkPod("a", 0, terminating(), uid("same")),
					mkPod("b", 0, terminating(), uid("same")),
				},
			},
			want: []deletionSummary{
				{"a", ReasonTerminatingUnscheduled, v1.PodFailed, ""},
				{"b", ReasonTerminatingUnscheduled, v1.PodFailed, ""},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before []*v1.Pod
			for _, p := range tt.in.Pods {
				before = append(before, p.DeepCopy())
			}
			plan := Decide(tt.in)
			if diff := cmp.Diff(tt.want, summarize(plan.Deletions)); diff != "" {
				t.Errorf("deletions (-want +got):\n%s", diff)
			}
			if len(plan.Skipped) != len(tt.wantSkipped) {
				t.Fatalf("skipped = %v, want %d errors", plan.Skipped, len(tt.wantSkipped))
			}
			for i, want := range tt.wantSkipped {
				if !errors.Is(plan.Skipped[i], want) {
					t.Errorf("skipped[%d] = %v, want %v", i, plan.Skipped[i], want)
				}
			}
			if diff := cmp.Diff(before, tt.in.Pods); diff != "" {
				t.Errorf("Decide modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestDecideOrphanedCondition(t *testing.T) {
	existing := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}
	pod := mkPod("a", 0, onNode("dead"), conds(existing))
	plan := Decide(Input{Pods: []*v1.Pod{pod}, GoneNodes: []string{"dead"}, Now: t0})
	if len(plan.Deletions) != 1 || plan.Deletions[0].Status == nil {
		t.Fatalf("plan = %+v, want one deletion with a status", plan)
	}
	want := v1.PodStatus{
		Phase: v1.PodFailed,
		Conditions: []v1.PodCondition{existing, {
			Type:               v1.DisruptionTarget,
			Status:             v1.ConditionTrue,
			Reason:             "DeletionByPodGC",
			Message:            "PodGC: node no longer exists",
			LastTransitionTime: metav1.NewTime(t0),
		}},
	}
	if diff := cmp.Diff(want, *plan.Deletions[0].Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}
