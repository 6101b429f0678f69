package node_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podlife/podlife/node"
)

func cpuMem(cpu, mem string) v1.ResourceList {
	return v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
}

func podWith(name string, containers ...v1.ResourceRequirements) *v1.Pod {
	pod := &v1.Pod{}
	pod.Name = name
	for i, r := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: fmt.Sprintf("c%d", i), Resources: r})
	}
	return pod
}

// TestPodQOSClass ports the kubelet's TestComputePodQOS (qos_test.go) with the 1.37
// gates: PodLevelResources and PodLevelResourcesFixKubeletQOSClass on.
func TestPodQOSClass(t *testing.T) {
	guaranteed := v1.ResourceRequirements{
		// Ephemeral storage does not count.
		Requests: v1.ResourceList{
			v1.ResourceCPU:              resource.MustParse("100m"),
			v1.ResourceMemory:           resource.MustParse("100Mi"),
			v1.ResourceEphemeralStorage: resource.MustParse("10Gi"),
		},
		Limits: cpuMem("100m", "100Mi"),
	}
	bestEffort := []v1.ResourceRequirements{
		{},
		{Requests: cpuMem("0", "0")},
		{Requests: cpuMem("0", "0"), Limits: cpuMem("0", "0")},
		{Requests: v1.ResourceList{v1.ResourceCPU: resource.Quantity{}, v1.ResourceMemory: resource.Quantity{}}},
		{Requests: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("10Gi")}},
		{Requests: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("10Gi")}, Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("10Gi")}},
	}
	burstable := []v1.ResourceRequirements{
		{Requests: cpuMem("100m", "100Mi"), Limits: cpuMem("200m", "200Mi")},
		{Requests: cpuMem("100m", "100Mi"), Limits: cpuMem("100m", "200Mi")},
		{Requests: cpuMem("100m", "100Mi"), Limits: cpuMem("200m", "100Mi")},
		{Requests: cpuMem("100m", "100Mi")},
		{Requests: cpuMem("100m", "100Mi"), Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}},
	}
	type tc struct {
		pod  *v1.Pod
		want v1.PodQOSClass
	}
	single := []tc{{podWith("guaranteed", guaranteed), v1.PodQOSGuaranteed}}
	for i, r := range bestEffort {
		single = append(single, tc{podWith(fmt.Sprintf("best-effort-%d", i), r), v1.PodQOSBestEffort})
	}
	for i, r := range burstable {
		single = append(single, tc{podWith(fmt.Sprintf("burstable-%d", i), r), v1.PodQOSBurstable})
	}
	two := []tc{
		{podWith("2c-guaranteed", guaranteed, guaranteed), v1.PodQOSGuaranteed},
		{podWith("2c-best-effort", bestEffort[0], bestEffort[1]), v1.PodQOSBestEffort},
		{podWith("2c-burstable", burstable[0], burstable[1]), v1.PodQOSBurstable},
	}
	firsts := []v1.ResourceRequirements{guaranteed, bestEffort[0], burstable[0]}
	seconds := []v1.ResourceRequirements{guaranteed, bestEffort[1], burstable[1]}
	for i := range firsts {
		for j := range seconds {
			if i != j {
				two = append(two, tc{podWith(fmt.Sprintf("2c-mixed-burstable-%d-%d", i, j), firsts[i], seconds[j]), v1.PodQOSBurstable})
			}
		}
	}
	cases := append(append([]tc{}, single...), two...)
	// An init container counts like a regular one.
	for _, c := range two {
		pod := c.pod.DeepCopy()
		pod.Name += "-init"
		pod.Spec.InitContainers = pod.Spec.Containers[1:]
		pod.Spec.Containers = pod.Spec.Containers[:1]
		cases = append(cases, tc{pod, c.want})
	}
	// An ephemeral container does not count.
	ec := podWith("guaranteed-ephemeral", guaranteed)
	ec.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "ec"}}}
	cases = append(cases, tc{ec, v1.PodQOSGuaranteed})
	// Pod-level resources decide when they name cpu, memory or hugepages.
	for _, c := range single {
		pod := c.pod.DeepCopy()
		pod.Name = "pod-" + pod.Name + "-plr"
		pod.Spec.Resources = pod.Spec.Containers[0].Resources.DeepCopy()
		pod.Spec.Containers[0].Resources = guaranteed
		want := c.want
		switch c.pod.Name {
		case "best-effort-0", "best-effort-4", "best-effort-5":
			// Nothing (or only ephemeral-storage) at pod level: the containers decide.
			want = v1.PodQOSGuaranteed
			pod.Name += "-fallback"
		}
		cases = append(cases, tc{pod, want})
	}
	plr := func(name string, res *v1.ResourceRequirements, containers []v1.Container) *v1.Pod {
		pod := &v1.Pod{Spec: v1.PodSpec{Containers: containers, Resources: res}}
		pod.Name = name
		return pod
	}
	gc := []v1.Container{{Name: "guaranteed", Resources: v1.ResourceRequirements{Requests: cpuMem("100m", "100Mi"), Limits: cpuMem("100m", "100Mi")}}}
	be := []v1.Container{{Name: "best-effort"}}
	huge := v1.ResourceName("hugepages-2Mi")
	cases = append(cases,
		tc{plr("empty-pod-level-resources-should-fallback-to-containers", &v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}, gc), v1.PodQOSGuaranteed},
		tc{plr("completely-empty-pod-level-resources-should-fallback-to-containers", &v1.ResourceRequirements{}, gc), v1.PodQOSGuaranteed},
		tc{plr("nil-pod-level-resources-should-fallback-to-containers", nil, gc), v1.PodQOSGuaranteed},
		tc{plr("zero-pod-level-resources-should-not-fallback-to-containers", &v1.ResourceRequirements{Requests: cpuMem("0", "0"), Limits: cpuMem("0", "0")}, gc), v1.PodQOSBestEffort},
		tc{plr("guaranteed-with-pod-level-resources-and-hugepages", &v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("100Mi"), huge: resource.MustParse("100Mi")},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("100Mi"), huge: resource.MustParse("100Mi")},
		}, be), v1.PodQOSGuaranteed},
		tc{plr("burstable-with-pod-level-resources-and-hugepages", &v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), huge: resource.MustParse("100Mi")},
			Limits:   v1.ResourceList{huge: resource.MustParse("100Mi")},
		}, be), v1.PodQOSBurstable},
		tc{plr("pod-without-containers", nil, nil), v1.PodQOSBestEffort},
		// Hugepages alone set pod-level resources: cpu and memory are then zero.
		tc{plr("only-hugepages-at-pod-level", &v1.ResourceRequirements{
			Requests: v1.ResourceList{huge: resource.MustParse("100Mi")}, Limits: v1.ResourceList{huge: resource.MustParse("100Mi")},
		}, gc), v1.PodQOSBestEffort},
	)
	// A container's limit without a request counts as the request the API server would
	// default it to. (Not made into pod-level cases: the API server defaults pod-level
	// requests as well, which PodQOSClass does not.)
	cases = append(cases,
		tc{podWith("limits-only-guaranteed", v1.ResourceRequirements{Limits: cpuMem("100m", "100Mi")}), v1.PodQOSGuaranteed},
		tc{podWith("limits-only-cpu-burstable", v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}), v1.PodQOSBurstable},
		tc{podWith("limits-and-lower-cpu-request-burstable", v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("50m")}, Limits: cpuMem("100m", "100Mi")}), v1.PodQOSBurstable},
		tc{podWith("limits-and-equal-memory-request-guaranteed", v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("100Mi")}, Limits: cpuMem("100m", "100Mi")}), v1.PodQOSGuaranteed},
	)
	for _, c := range cases {
		t.Run(c.pod.Name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, node.PodQOSClass(c.pod)); diff != "" {
				t.Errorf("QoS class (-want +got):\n%s", diff)
			}
		})
	}
}
