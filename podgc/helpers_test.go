package podgc

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// t0 is the base time of every test.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// podOpt modifies a test pod.
type podOpt func(*v1.Pod)

// mkPod returns pod default/<name> with UID "uid-<name>", created at t0 + age seconds.
func mkPod(name string, ageSeconds int, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:         "default",
			Name:              name,
			UID:               types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(ageSeconds) * time.Second)),
		},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func phase(ph v1.PodPhase) podOpt { return func(p *v1.Pod) { p.Status.Phase = ph } }
func onNode(n string) podOpt      { return func(p *v1.Pod) { p.Spec.NodeName = n } }
func evicted() podOpt {
	return func(p *v1.Pod) { p.Status.Phase = v1.PodFailed; p.Status.Reason = "Evicted" }
}
func terminating() podOpt {
	return func(p *v1.Pod) { ts := metav1.NewTime(t0); p.DeletionTimestamp = &ts }
}
func uid(u string) podOpt { return func(p *v1.Pod) { p.UID = types.UID(u) } }
func ns(n string) podOpt  { return func(p *v1.Pod) { p.Namespace = n } }
func noUID() podOpt       { return func(p *v1.Pod) { p.UID = "" } }
func noName() podOpt      { return func(p *v1.Pod) { p.Name = "" } }
func conds(c ...v1.PodCondition) podOpt {
	return func(p *v1.Pod) { p.Status.Conditions = c }
}

// nodeOpt modifies a test node.
type nodeOpt func(*v1.Node)

// mkNode returns node <name> with no conditions and no taints.
func mkNode(name string, opts ...nodeOpt) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-" + name)}}
	for _, o := range opts {
		o(n)
	}
	return n
}

func ready(s v1.ConditionStatus) nodeOpt {
	return func(n *v1.Node) {
		n.Status.Conditions = append(n.Status.Conditions, v1.NodeCondition{Type: v1.NodeReady, Status: s})
	}
}

func taint(key string, effect v1.TaintEffect) nodeOpt {
	return func(n *v1.Node) { n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Effect: effect}) }
}

func outOfService() nodeOpt { return taint(TaintOutOfService, v1.TaintEffectNoExecute) }

// names returns the names of pods, "<nil>" for nil entries.
func names(pods []*v1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		if p == nil {
			out = append(out, "<nil>")
			continue
		}
		out = append(out, p.Name)
	}
	return out
}
