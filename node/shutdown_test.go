package node_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/node"
)

// Priorities of the kubelet's nodeshutdown tests (k8s.io/kubernetes/pkg/apis/scheduling).
const (
	defaultPriority              = 0             // DefaultPriorityWhenNoDefaultClassExists
	highestUserDefinablePriority = 1_000_000_000 // HighestUserDefinablePriority
)

// shutdownPod is the kubelet's makePod of nodeshutdown_manager_test.go.
func shutdownPod(name string, priority int32, grace *int64) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)},
		Spec: v1.PodSpec{Priority: &priority, TerminationGracePeriodSeconds: grace}}
}

// The kubelet's Test_migrateConfig, plus the kubelet's configuration validation (which
// rejects what migrateConfig turns into no groups) and ByPodPriority.
func TestShutdownPeriods(t *testing.T) {
	tests := []struct {
		name    string
		cfg     node.ShutdownConfig
		want    []node.ShutdownGracePeriodByPodPriority
		wantErr bool
	}{
		{name: "both shutdownGracePeriodRequested and shutdownGracePeriodCriticalPods",
			cfg: node.ShutdownConfig{GracePeriod: 300 * time.Second, GracePeriodCriticalPods: 120 * time.Second},
			want: []node.ShutdownGracePeriodByPodPriority{
				{Priority: defaultPriority, ShutdownGracePeriodSeconds: 180},
				{Priority: node.SystemCriticalPriority, ShutdownGracePeriodSeconds: 120},
			}},
		{name: "only shutdownGracePeriodRequested",
			cfg: node.ShutdownConfig{GracePeriod: 100 * time.Second},
			want: []node.ShutdownGracePeriodByPodPriority{
				{Priority: defaultPriority, ShutdownGracePeriodSeconds: 100},
				{Priority: node.SystemCriticalPriority, ShutdownGracePeriodSeconds: 0},
			}},
		{name: "empty configuration", cfg: node.ShutdownConfig{}, want: nil},
		// migrateConfig returns no groups; the kubelet's validation refuses the config.
		{name: "wrong configuration", cfg: node.ShutdownConfig{GracePeriod: time.Second, GracePeriodCriticalPods: 100 * time.Second}, wantErr: true},
		{name: "negative grace period", cfg: node.ShutdownConfig{GracePeriod: -time.Second}, wantErr: true},
		{name: "grace period below a second", cfg: node.ShutdownConfig{GracePeriod: 500 * time.Millisecond}, wantErr: true},
		{name: "critical grace period below a second", cfg: node.ShutdownConfig{GracePeriod: 10 * time.Second, GracePeriodCriticalPods: time.Millisecond}, wantErr: true},
		{name: "fractions of seconds are dropped",
			cfg: node.ShutdownConfig{GracePeriod: 30500 * time.Millisecond, GracePeriodCriticalPods: 10 * time.Second},
			want: []node.ShutdownGracePeriodByPodPriority{
				{Priority: defaultPriority, ShutdownGracePeriodSeconds: 20},
				{Priority: node.SystemCriticalPriority, ShutdownGracePeriodSeconds: 10},
			}},
		{name: "by pod priority, sorted lowest first",
			cfg: node.ShutdownConfig{ByPodPriority: []node.ShutdownGracePeriodByPodPriority{
				{Priority: 100000, ShutdownGracePeriodSeconds: 20}, {Priority: 0, ShutdownGracePeriodSeconds: 10},
				{Priority: node.SystemCriticalPriority, ShutdownGracePeriodSeconds: 30}}},
			want: []node.ShutdownGracePeriodByPodPriority{
				{Priority: 0, ShutdownGracePeriodSeconds: 10}, {Priority: 100000, ShutdownGracePeriodSeconds: 20},
				{Priority: node.SystemCriticalPriority, ShutdownGracePeriodSeconds: 30}}},
		{name: "by pod priority and grace period both set",
			cfg:     node.ShutdownConfig{GracePeriod: 30 * time.Second, ByPodPriority: []node.ShutdownGracePeriodByPodPriority{{Priority: 1, ShutdownGracePeriodSeconds: 1}}},
			wantErr: true},
		{name: "by pod priority with a negative period",
			cfg:     node.ShutdownConfig{ByPodPriority: []node.ShutdownGracePeriodByPodPriority{{Priority: 1, ShutdownGracePeriodSeconds: -1}}},
			wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := node.ShutdownPeriods(tt.cfg)
			if tt.wantErr {
				if !errors.Is(err, node.ErrInvalidShutdown) {
					t.Fatalf("err = %v, want ErrInvalidShutdown", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ShutdownPeriods (-want +got):\n%s", diff)
			}
		})
	}
}

// planNames is a plan as group priority and period -> pod names with their grace.
type planGroup struct {
	Priority int32
	Seconds  int64
	Pods     map[string]int64
}

func planNames(groups []node.ShutdownGroup) []planGroup {
	var out []planGroup
	for _, g := range groups {
		pg := planGroup{Priority: g.Priority, Seconds: g.ShutdownGracePeriodSeconds}
		for _, p := range g.Pods {
			if pg.Pods == nil {
				pg.Pods = map[string]int64{}
			}
			pg.Pods[p.Pod.Name] = p.GracePeriodSeconds
		}
		out = append(out, pg)
	}
	return out
}

// The kubelet's Test_groupByPriority, and the grace period overrides of its TestManager
// (expectedPodToGracePeriodOverride; the inhibit-delay cases are systemd's, not
// podlife's).
func TestShutdownPlan(t *testing.T) {
	short, long := int64(2), int64(1000)
	normalNoGrace := shutdownPod("normal-pod-nil-grace-period", defaultPriority, nil)
	criticalNoGrace := shutdownPod("critical-pod-nil-grace-period", node.SystemCriticalPriority, nil)
	normalGrace := shutdownPod("normal-pod-grace-period", defaultPriority, &short)
	criticalGrace := shutdownPod("critical-pod-grace-period", node.SystemCriticalPriority, &short)
	normalLongGrace := shutdownPod("normal-pod-long-grace-period", defaultPriority, &long)
	byPriority := []node.ShutdownGracePeriodByPodPriority{
		{Priority: 1, ShutdownGracePeriodSeconds: 10}, {Priority: 2, ShutdownGracePeriodSeconds: 20},
		{Priority: 3, ShutdownGracePeriodSeconds: 30}, {Priority: 4, ShutdownGracePeriodSeconds: 40},
	}
	tests := []struct {
		name string
		pods []*v1.Pod
		cfg  node.ShutdownConfig
		want []planGroup
	}{
		{name: "migrate config",
			pods: []*v1.Pod{shutdownPod("normal-pod", defaultPriority, nil),
				shutdownPod("highest-user-definable-pod", highestUserDefinablePriority, nil),
				shutdownPod("critical-pod", node.SystemCriticalPriority, nil)},
			cfg: node.ShutdownConfig{GracePeriod: 300 * time.Second, GracePeriodCriticalPods: 120 * time.Second},
			want: []planGroup{
				{Priority: defaultPriority, Seconds: 180, Pods: map[string]int64{"normal-pod": 180, "highest-user-definable-pod": 180}},
				{Priority: node.SystemCriticalPriority, Seconds: 120, Pods: map[string]int64{"critical-pod": 120}},
			}},
		{name: "pod priority",
			pods: []*v1.Pod{shutdownPod("pod-0", 0, nil), shutdownPod("pod-1", 1, nil), shutdownPod("pod-2", 2, nil),
				shutdownPod("pod-3", 3, nil), shutdownPod("pod-4", 4, nil), shutdownPod("pod-5", 5, nil)},
			cfg: node.ShutdownConfig{ByPodPriority: byPriority},
			want: []planGroup{
				{Priority: 1, Seconds: 10, Pods: map[string]int64{"pod-0": 10, "pod-1": 10}},
				{Priority: 2, Seconds: 20, Pods: map[string]int64{"pod-2": 20}},
				{Priority: 3, Seconds: 30, Pods: map[string]int64{"pod-3": 30}},
				{Priority: 4, Seconds: 40, Pods: map[string]int64{"pod-4": 40, "pod-5": 40}},
			}},
		{name: "no override (total=30s, critical=10s)",
			pods: []*v1.Pod{normalNoGrace, criticalNoGrace},
			cfg:  node.ShutdownConfig{GracePeriod: 30 * time.Second, GracePeriodCriticalPods: 10 * time.Second},
			want: []planGroup{
				{Priority: defaultPriority, Seconds: 20, Pods: map[string]int64{"normal-pod-nil-grace-period": 20}},
				{Priority: node.SystemCriticalPriority, Seconds: 10, Pods: map[string]int64{"critical-pod-nil-grace-period": 10}},
			}},
		{name: "no override (total=30s, critical=10s) pods with terminationGracePeriod and without",
			pods: []*v1.Pod{normalNoGrace, criticalNoGrace, normalGrace, criticalGrace},
			cfg:  node.ShutdownConfig{GracePeriod: 30 * time.Second, GracePeriodCriticalPods: 10 * time.Second},
			want: []planGroup{
				{Priority: defaultPriority, Seconds: 20, Pods: map[string]int64{"normal-pod-nil-grace-period": 20, "normal-pod-grace-period": 2}},
				{Priority: node.SystemCriticalPriority, Seconds: 10, Pods: map[string]int64{"critical-pod-nil-grace-period": 10, "critical-pod-grace-period": 2}},
			}},
		{name: "no override (total=30s, critical=10s) pod with long terminationGracePeriod is overridden",
			pods: []*v1.Pod{normalNoGrace, criticalNoGrace, normalGrace, criticalGrace, normalLongGrace},
			cfg:  node.ShutdownConfig{GracePeriod: 30 * time.Second, GracePeriodCriticalPods: 10 * time.Second},
			want: []planGroup{
				{Priority: defaultPriority, Seconds: 20, Pods: map[string]int64{"normal-pod-nil-grace-period": 20, "normal-pod-grace-period": 2, "normal-pod-long-grace-period": 20}},
				{Priority: node.SystemCriticalPriority, Seconds: 10, Pods: map[string]int64{"critical-pod-nil-grace-period": 10, "critical-pod-grace-period": 2}},
			}},
		{name: "no override (total=30, critical=0)",
			pods: []*v1.Pod{normalNoGrace, criticalNoGrace},
			cfg:  node.ShutdownConfig{GracePeriod: 30 * time.Second},
			want: []planGroup{
				{Priority: defaultPriority, Seconds: 30, Pods: map[string]int64{"normal-pod-nil-grace-period": 30}},
				{Priority: node.SystemCriticalPriority, Seconds: 0, Pods: map[string]int64{"critical-pod-nil-grace-period": 0}},
			}},
		{name: "no override, all time to critical pods",
			pods: []*v1.Pod{normalNoGrace, criticalNoGrace},
			cfg:  node.ShutdownConfig{GracePeriod: 5 * time.Second, GracePeriodCriticalPods: 5 * time.Second},
			want: []planGroup{
				{Priority: defaultPriority, Seconds: 0, Pods: map[string]int64{"normal-pod-nil-grace-period": 0}},
				{Priority: node.SystemCriticalPriority, Seconds: 5, Pods: map[string]int64{"critical-pod-nil-grace-period": 5}},
			}},
		{name: "empty groups are listed",
			pods: []*v1.Pod{shutdownPod("pod-3", 3, nil)},
			cfg:  node.ShutdownConfig{ByPodPriority: byPriority[:3]},
			want: []planGroup{{Priority: 1, Seconds: 10}, {Priority: 2, Seconds: 20}, {Priority: 3, Seconds: 30, Pods: map[string]int64{"pod-3": 30}}}},
		{name: "unset priority is 0, below every group: the lowest group",
			pods: []*v1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "no-priority"}}, nil},
			cfg:  node.ShutdownConfig{ByPodPriority: byPriority[2:]},
			want: []planGroup{{Priority: 3, Seconds: 30, Pods: map[string]int64{"no-priority": 30}}, {Priority: 4, Seconds: 40}}},
		{name: "feature off: no groups", pods: []*v1.Pod{normalNoGrace}, cfg: node.ShutdownConfig{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := node.ShutdownPlan(tt.pods, tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, planNames(got)); diff != "" {
				t.Errorf("ShutdownPlan (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := node.ShutdownPlan(nil, node.ShutdownConfig{GracePeriod: -1}); !errors.Is(err, node.ErrInvalidShutdown) {
		t.Errorf("invalid config: err = %v, want ErrInvalidShutdown", err)
	}
}

// The kubelet's TestManager "verify pod status": the shutdown's status function on a
// running, a failed and a succeeded pod; and on a status that already has a
// DisruptionTarget condition (replaced, its transition time kept while still True).
func TestShutdownStatus(t *testing.T) {
	dt := func(ltt metav1.Time, gen int64) v1.PodCondition {
		return v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "TerminationByKubelet",
			Message: "Pod was terminated in response to imminent node shutdown.", LastTransitionTime: ltt, ObservedGeneration: gen}
	}
	ready := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}
	then := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	tests := []struct {
		name string
		gen  int64
		in   v1.PodStatus
		want v1.PodStatus
	}{
		{name: "running-pod", in: v1.PodStatus{Phase: v1.PodRunning},
			want: v1.PodStatus{Phase: v1.PodFailed, Message: "Pod was terminated in response to imminent node shutdown.", Reason: "Terminated",
				Conditions: []v1.PodCondition{dt(metav1.Time{}, 0)}}},
		{name: "failed-pod", in: v1.PodStatus{Phase: v1.PodFailed},
			want: v1.PodStatus{Phase: v1.PodFailed, Message: "Pod was terminated in response to imminent node shutdown.", Reason: "Terminated",
				Conditions: []v1.PodCondition{dt(metav1.Time{}, 0)}}},
		{name: "succeeded-pod", in: v1.PodStatus{Phase: v1.PodSucceeded},
			want: v1.PodStatus{Phase: v1.PodSucceeded, Message: "Pod was terminated in response to imminent node shutdown.", Reason: "Terminated",
				Conditions: []v1.PodCondition{dt(metav1.Time{}, 0)}}},
		{name: "observed generation and other conditions kept", gen: 3,
			in: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{ready}},
			want: v1.PodStatus{Phase: v1.PodFailed, Message: "Pod was terminated in response to imminent node shutdown.", Reason: "Terminated",
				Conditions: []v1.PodCondition{ready, dt(metav1.Time{}, 3)}}},
		{name: "a True DisruptionTarget is replaced, its transition time kept",
			in: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
				{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "EvictionByEvictionAPI", LastTransitionTime: then}, ready}},
			want: v1.PodStatus{Phase: v1.PodFailed, Message: "Pod was terminated in response to imminent node shutdown.", Reason: "Terminated",
				Conditions: []v1.PodCondition{dt(then, 0), ready}}},
		{name: "a False DisruptionTarget is replaced with a new transition",
			in: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
				{Type: v1.DisruptionTarget, Status: v1.ConditionFalse, LastTransitionTime: then}}},
			want: v1.PodStatus{Phase: v1.PodFailed, Message: "Pod was terminated in response to imminent node shutdown.", Reason: "Terminated",
				Conditions: []v1.PodCondition{dt(metav1.Time{}, 0)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Generation: tt.gen}}
			in := tt.in.DeepCopy()
			before := in.DeepCopy()
			conds := in.Conditions
			got := *in
			node.ShutdownStatus(pod)(&got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before.Conditions, conds); diff != "" {
				t.Errorf("the conditions the function got were modified in place (-before +after):\n%s", diff)
			}
		})
	}
	node.ShutdownStatus(nil)(nil) // no panic
	var s v1.PodStatus
	node.SetDisruptionTarget(nil, "", "", 0)
	node.SetDisruptionTarget(&s, node.DisruptionReasonTerminationByKubelet, "m", 1)
	if want := []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "TerminationByKubelet", Message: "m", ObservedGeneration: 1}}; !cmp.Equal(want, s.Conditions) {
		t.Errorf("SetDisruptionTarget = %+v, want %+v", s.Conditions, want)
	}
}
