package eviction_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/eviction"
)

const mi = 1024 * 1024

func i64(n int64) *int64 { return &n }

func pod(name string, prio int32, requests, limits v1.ResourceList) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: 3},
		Spec: v1.PodSpec{Priority: &prio, Containers: []v1.Container{{Name: name,
			Resources: v1.ResourceRequirements{Requests: requests, Limits: limits}}}}}
}

func mem(q string) v1.ResourceList { return v1.ResourceList{v1.ResourceMemory: resource.MustParse(q)} }

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// The kubelet's helpers_test.go TestOrderedByPriorityMemory (and, through its first and
// last pods, TestOrderedByExceedsRequestMemory and TestOrderedByMemory).
func TestRankMemoryPressure(t *testing.T) {
	const low, high = 1, 2
	p1 := pod("above-requests-low-priority-high-usage", low, nil, nil)
	p2 := pod("above-requests-low-priority-low-usage", low, nil, nil)
	p3 := pod("above-requests-high-priority-high-usage", high, mem("100Mi"), nil)
	p4 := pod("above-requests-high-priority-low-usage", high, mem("100Mi"), nil)
	p5 := pod("below-requests-low-priority-high-usage", low, mem("1Gi"), nil)
	p6 := pod("below-requests-low-priority-low-usage", low, mem("1Gi"), nil)
	p7 := pod("below-requests-high-priority-high-usage", high, mem("1Gi"), nil)
	p8 := pod("below-requests-high-priority-low-usage", high, mem("1Gi"), nil)
	noStats := pod("no-stats-high-priority", high, nil, nil)
	usage := map[*v1.Pod]int64{p1: 500, p2: 50, p3: 600, p4: 150, p5: 800, p6: 200, p7: 800, p8: 200}
	stats := func(p *v1.Pod) (eviction.PodStats, bool) {
		u, ok := usage[p]
		return eviction.PodStats{MemoryWorkingSetBytes: i64(u * mi)}, ok
	}
	pods := []*v1.Pod{p8, p7, p6, p5, p4, p3, p2, p1, noStats}
	eviction.RankMemoryPressure(pods, stats)
	want := names([]*v1.Pod{noStats, p1, p2, p3, p4, p5, p6, p7, p8})
	if diff := cmp.Diff(want, names(pods)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestRankDiskPressure(t *testing.T) {
	eph := func(q string) v1.ResourceList {
		return v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(q)}
	}
	a := pod("below-request", 0, eph("1Gi"), nil)
	b := pod("above-request-small", 0, nil, nil)
	c := pod("above-request-large", 0, nil, nil)
	c.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	usage := map[*v1.Pod]eviction.PodStats{
		a: {Containers: []eviction.ContainerStats{{Name: a.Name, RootfsBytes: i64(500 * mi), LogsBytes: i64(0)}}},
		b: {Containers: []eviction.ContainerStats{{Name: b.Name, RootfsBytes: i64(100 * mi), LogsBytes: i64(10 * mi)}}},
		c: {Containers: []eviction.ContainerStats{{Name: c.Name, RootfsBytes: i64(100 * mi)}}, VolumeBytes: map[string]int64{"scratch": 50 * mi}},
	}
	pods := []*v1.Pod{a, b, c}
	eviction.RankDiskPressure(pods, func(p *v1.Pod) (eviction.PodStats, bool) { s, ok := usage[p]; return s, ok })
	if diff := cmp.Diff([]string{"above-request-large", "above-request-small", "below-request"}, names(pods)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestLocalStorageEviction(t *testing.T) {
	limit := func(q string) v1.ResourceList {
		return v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(q)}
	}
	sized := func(q string) *v1.Pod {
		p := pod("p", 0, nil, nil)
		size := resource.MustParse(q)
		p.Spec.Volumes = []v1.Volume{{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{SizeLimit: &size}}}}
		return p
	}
	critical := pod("crit", 2000000000, nil, limit("1Mi"))
	type want struct {
		Message string
		Evict   bool
	}
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		stats     eviction.PodStats
		dedicated bool
		want      want
	}{
		{"emptyDir over its sizeLimit", sized("1Mi"), eviction.PodStats{VolumeBytes: map[string]int64{"cache": 2 * mi}},
			false, want{`Usage of EmptyDir volume "cache" exceeds the limit "1Mi". `, true}},
		{"emptyDir within its sizeLimit", sized("1Mi"), eviction.PodStats{VolumeBytes: map[string]int64{"cache": mi}}, false, want{}},
		{"pod over its limit", pod("p", 0, nil, limit("2Mi")), eviction.PodStats{EphemeralStorageBytes: i64(3 * mi)},
			false, want{"Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. ", true}},
		{"container over its limit", pod("app", 0, nil, limit("2Mi")), eviction.PodStats{EphemeralStorageBytes: i64(mi),
			Containers: []eviction.ContainerStats{{Name: "app", RootfsBytes: i64(2 * mi), LogsBytes: i64(1)}}},
			false, want{`Container app exceeded its local ephemeral storage limit "2Mi". `, true}},
		{"rootfs on a dedicated image fs does not count", pod("app", 0, nil, limit("2Mi")), eviction.PodStats{EphemeralStorageBytes: i64(mi),
			Containers: []eviction.ContainerStats{{Name: "app", RootfsBytes: i64(2 * mi), LogsBytes: i64(1)}}}, true, want{}},
		{"critical pods are never evicted", critical, eviction.PodStats{EphemeralStorageBytes: i64(3 * mi)}, false, want{}},
		{"no limits", pod("p", 0, nil, nil), eviction.PodStats{EphemeralStorageBytes: i64(3 * mi)}, false, want{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, evict := eviction.LocalStorageEviction(tc.pod, tc.stats, tc.dedicated)
			if diff := cmp.Diff(tc.want, want{msg, evict}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The kubelet's helpers_test.go TestEvictionMessage, for memory and ephemeral-storage.
func TestEvictionMessage(t *testing.T) {
	p := pod("app", 0, mem("100Mi"), nil)
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "quiet", Resources: v1.ResourceRequirements{Requests: mem("1Gi")}})
	stats := eviction.PodStats{Containers: []eviction.ContainerStats{
		{Name: "app", MemoryWorkingSetBytes: i64(200 * mi), RootfsBytes: i64(mi), LogsBytes: i64(mi)},
		{Name: "quiet", MemoryWorkingSetBytes: i64(10 * mi)}}}
	threshold, available := resource.MustParse("100Mi"), resource.MustParse("50Mi")
	for _, tc := range []struct {
		name string
		res  v1.ResourceName
		t, a *resource.Quantity
		want string
	}{
		{"memory", v1.ResourceMemory, &threshold, &available,
			"The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container app was using 200Mi, request is 100Mi, has larger consumption of memory. "},
		{"ephemeral-storage", v1.ResourceEphemeralStorage, nil, nil,
			"The node was low on resource: ephemeral-storage. Container app was using 2Mi, request is 0, has larger consumption of ephemeral-storage. "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, eviction.EvictionMessage(tc.res, p, stats, tc.t, tc.a)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestEvictedStatus(t *testing.T) {
	p := pod("p", 0, nil, nil)
	var pressure, limit v1.PodStatus
	eviction.EvictedStatus(p, "The node was low on resource: memory. ", true)(&pressure)
	eviction.EvictedStatus(p, "Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. ", false)(&limit)
	want := v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory. ",
		Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, ObservedGeneration: 3,
			Reason: "TerminationByKubelet", Message: "The node was low on resource: memory. "}}}
	if diff := cmp.Diff(want, pressure); diff != "" {
		t.Errorf("pressure (-want +got):\n%s", diff)
	}
	if limit.Phase != v1.PodFailed || limit.Reason != "Evicted" || len(limit.Conditions) != 0 {
		t.Errorf("limit eviction status %+v, want Failed, Evicted, no condition", limit)
	}
}
