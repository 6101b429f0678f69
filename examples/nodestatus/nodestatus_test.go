package nodestatus

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

var cmpIgnoreTimes = cmpopts.IgnoreFields(v1.NodeCondition{}, "LastHeartbeatTime", "LastTransitionTime")

func TestConditions(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(time.Minute)
	full := testNode().Status.Capacity
	noDisk := full.DeepCopy()
	delete(noDisk, v1.ResourceEphemeralStorage)
	pressure := func(ready v1.NodeCondition) []v1.NodeCondition {
		return []v1.NodeCondition{
			{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
			{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
			{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
			ready,
		}
	}
	readyTrue := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	pleg := errors.New("PLEG is not healthy: pleg was last seen active 3m0s ago; threshold is 3m0s")
	tests := []struct {
		name     string
		old      []v1.NodeCondition
		health   error
		capacity v1.ResourceList
		want     []v1.NodeCondition
	}{
		{name: "healthy", capacity: full, want: pressure(readyTrue)},
		{name: "PLEG unhealthy", health: pleg, capacity: full, want: pressure(v1.NodeCondition{Type: v1.NodeReady,
			Status: v1.ConditionFalse, Reason: "KubeletNotReady", Message: pleg.Error()})},
		{name: "missing capacity", capacity: noDisk, want: pressure(v1.NodeCondition{Type: v1.NodeReady,
			Status: v1.ConditionFalse, Reason: "KubeletNotReady", Message: "missing node capacity for resources: ephemeral-storage"})},
		{name: "both, aggregated", health: pleg, capacity: noDisk, want: pressure(v1.NodeCondition{Type: v1.NodeReady,
			Status: v1.ConditionFalse, Reason: "KubeletNotReady", Message: "[" + pleg.Error() + ", missing node capacity for resources: ephemeral-storage]"})},
		{name: "other types kept, Ready last", capacity: full,
			old:  []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionFalse}, {Type: "NetworkUnavailable", Status: v1.ConditionFalse}},
			want: append([]v1.NodeCondition{{Type: "NetworkUnavailable", Status: v1.ConditionFalse}}, pressure(readyTrue)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Conditions(tt.old, now, tt.health, tt.capacity)
			if diff := cmp.Diff(tt.want, got, cmpIgnoreTimes); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestConditionsTransitionTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(10 * time.Second)
	t2 := t1.Add(10 * time.Second)
	full := testNode().Status.Capacity
	first := Conditions(nil, t0, nil, full)
	same := Conditions(first, t1, nil, full)
	flipped := Conditions(same, t2, errors.New("down"), full)
	type times struct{ Heartbeat, Transition time.Time }
	get := func(cs []v1.NodeCondition) times {
		r := cs[len(cs)-1]
		return times{r.LastHeartbeatTime.Time, r.LastTransitionTime.Time}
	}
	got := []times{get(first), get(same), get(flipped)}
	want := []times{{t0, t0}, {t1, t0}, {t2, t2}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Ready's times (-want +got):\n%s", diff)
	}
	if StatusChanged(&v1.NodeStatus{Conditions: first}, &v1.NodeStatus{Conditions: same}) {
		t.Error("StatusChanged: a new heartbeat alone is a change")
	}
	if !StatusChanged(&v1.NodeStatus{Conditions: same}, &v1.NodeStatus{Conditions: flipped}) {
		t.Error("StatusChanged: Ready False is no change")
	}
}

func TestStatusChanged(t *testing.T) {
	base := v1.NodeStatus{Capacity: testNode().Status.Capacity, Conditions: Conditions(nil, time.Unix(0, 0), nil, testNode().Status.Capacity)}
	tests := []struct {
		name   string
		modify func(*v1.NodeStatus)
		want   bool
	}{
		{name: "same", modify: func(*v1.NodeStatus) {}},
		{name: "heartbeat only", modify: func(s *v1.NodeStatus) {
			for i := range s.Conditions {
				s.Conditions[i].LastHeartbeatTime = metav1.NewTime(time.Unix(100, 0))
			}
		}},
		{name: "conditions reordered", modify: func(s *v1.NodeStatus) {
			s.Conditions[0], s.Conditions[1] = s.Conditions[1], s.Conditions[0]
		}},
		{name: "capacity", want: true, modify: func(s *v1.NodeStatus) { s.Capacity[v1.ResourceCPU] = resource.MustParse("3") }},
		{name: "addresses", want: true, modify: func(s *v1.NodeStatus) { s.Addresses = []v1.NodeAddress{{Type: v1.NodeHostName, Address: "x"}} }},
		{name: "a condition less", want: true, modify: func(s *v1.NodeStatus) { s.Conditions = s.Conditions[1:] }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base.DeepCopy()
			tt.modify(s)
			if got := StatusChanged(&base, s); got != tt.want {
				t.Errorf("StatusChanged = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAllowedLabel(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"kubernetes.io/hostname", true},
		{"kubernetes.io/os", true},
		{"kubernetes.io/arch", true},
		{"beta.kubernetes.io/os", true},
		{"node.kubernetes.io/instance-type", true},
		{"beta.kubernetes.io/instance-type", true},
		{"topology.kubernetes.io/zone", true},
		{"failure-domain.beta.kubernetes.io/region", true},
		{"node.kubernetes.io/whatever", true},
		{"foo.node.kubernetes.io/x", true},
		{"kubelet.kubernetes.io/x", true},
		{"example.com/team", true},
		{"plain", true},
		{"node-role.kubernetes.io/control-plane", false},
		{"kubernetes.io/role", false},
		{"k8s.io/anything", false},
		{"sub.k8s.io/anything", false},
		{"node-restriction.kubernetes.io/x", false},
		{"a.node-restriction.kubernetes.io/x", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if got := AllowedLabel(tt.key); got != tt.want {
				t.Errorf("AllowedLabel(%q) = %v, want %v", tt.key, got, tt.want)
			}
		})
	}
}

func TestReconcileLabels(t *testing.T) {
	tests := []struct {
		name        string
		initial     map[string]string
		existing    map[string]string
		want        map[string]string
		wantChanged bool
	}{
		{name: "same", initial: map[string]string{v1.LabelHostname: "n"}, existing: map[string]string{v1.LabelHostname: "n"},
			want: map[string]string{v1.LabelHostname: "n"}},
		{name: "replaced, others kept", initial: map[string]string{v1.LabelHostname: "n", "example.com/x": "new"},
			existing:    map[string]string{v1.LabelHostname: "old", "example.com/x": "old"},
			want:        map[string]string{v1.LabelHostname: "n", "example.com/x": "old"},
			wantChanged: true},
		{name: "added to none", initial: map[string]string{v1.LabelOSStable: "linux"},
			want: map[string]string{v1.LabelOSStable: "linux"}, wantChanged: true},
		{name: "empty removes", initial: map[string]string{v1.LabelTopologyZone: ""},
			existing: map[string]string{v1.LabelTopologyZone: "z"}, want: map[string]string{}, wantChanged: true},
		{name: "absent keeps", initial: map[string]string{},
			existing: map[string]string{v1.LabelTopologyZone: "z"}, want: map[string]string{v1.LabelTopologyZone: "z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			existing := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: tt.existing}}
			changed := ReconcileLabels(&v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: tt.initial}}, existing)
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if diff := cmp.Diff(tt.want, existing.Labels); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatusPatch(t *testing.T) {
	old := testNode()
	old.Spec.PodCIDR = "10.1.0.0/24"
	old.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}, {Type: v1.NodeHostName, Address: "node1"}}
	tests := []struct {
		name   string
		modify func(*v1.Node)
		want   string
	}{
		{name: "nothing", modify: func(*v1.Node) {}, want: `{}`},
		{name: "spec left out", modify: func(n *v1.Node) { n.Spec.PodCIDR = "x"; n.Spec.Unschedulable = true }, want: `{}`},
		{name: "label", modify: func(n *v1.Node) { n.Labels["example.com/x"] = "y" }, want: `{"metadata":{"labels":{"example.com/x":"y"}}}`},
		{name: "addresses replaced", modify: func(n *v1.Node) {
			n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.2"}, {Type: v1.NodeHostName, Address: "node1"}}
		}, want: `{"status":{"addresses":[{"address":"10.0.0.2","type":"InternalIP"},{"address":"node1","type":"Hostname"},{"$patch":"replace"}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := old.DeepCopy()
			tt.modify(n)
			patch, err := StatusPatch(old, n)
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			if err := json.Unmarshal(patch, &got); err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal([]byte(tt.want), &want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("patch %s (-want +got):\n%s", patch, diff)
			}
		})
	}
}

func TestNewInvalid(t *testing.T) {
	client := fake.NewClientset()
	withLabel := testNode()
	withLabel.Labels["node-role.kubernetes.io/worker"] = ""
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{name: "no client", cfg: Config{Node: testNode()}, want: "no Client"},
		{name: "no node", cfg: Config{Client: client}, want: "no Node name"},
		{name: "forbidden label", cfg: Config{Client: client, Node: withLabel}, want: "node-role.kubernetes.io/worker"},
		{name: "negative period", cfg: Config{Client: client, Node: testNode(), UpdateFrequency: -1}, want: "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrInvalid with %q", err, tt.want)
			}
		})
	}
}

func TestPrettyNameAndRuntimeVersion(t *testing.T) {
	got := []string{
		PrettyName(strings.NewReader("NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\n")),
		PrettyName(strings.NewReader("PRETTY_NAME=Plain\n")),
		PrettyName(strings.NewReader("NAME=x\n")),
		RuntimeVersion("containerd", "v2.1.4"),
		RuntimeVersion("containerd", "1.7.24~ds1"),
	}
	want := []string{"Debian GNU/Linux 13 (trixie)", "Plain", "", "containerd://2.1.4", "containerd://1.7.24~ds1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
