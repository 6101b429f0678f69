package envvar_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podlife/podlife/examples/envvar"
)

// TestResourceValue: a resourceFieldRef as the kubelet's
// ExtractResourceValueByContainerNameAndNodeAllocatable resolves it, for env and volumes
// alike: an unset (or zero) cpu, memory or ephemeral-storage limit is the node's
// allocatable, never the request; hugepages limits are never defaulted.
func TestResourceValue(t *testing.T) {
	q := resource.MustParse
	allocatable := v1.ResourceList{v1.ResourceCPU: q("2500m"), v1.ResourceMemory: q("4Gi"),
		v1.ResourceEphemeralStorage: q("10Gi"), "hugepages-2Mi": q("1Gi")}
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceMemory: q("16Mi")}}}},
		Containers: []v1.Container{
			{Name: "requests-only", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: q("250m"), v1.ResourceMemory: q("64Mi"), "hugepages-2Mi": q("4Mi")}}},
			{Name: "limited", Resources: v1.ResourceRequirements{
				Limits:   v1.ResourceList{v1.ResourceCPU: q("1200m"), v1.ResourceMemory: q("128Mi"), "hugepages-2Mi": q("8Mi")},
				Requests: v1.ResourceList{v1.ResourceCPU: q("500m"), v1.ResourceMemory: q("128Mi"), "hugepages-2Mi": q("8Mi")}}},
			{Name: "zero-limit", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: q("0")}}},
		}}}
	self := &pod.Spec.Containers[0]
	for _, tc := range []struct {
		name        string
		self        *v1.Container // nil: a downwardAPI volume's item
		container   string
		resource    string
		divisor     string
		allocatable v1.ResourceList
		want        string
		wantErr     string
	}{
		{name: "volume: limits.memory unset is the allocatable, not the request", container: "requests-only", resource: "limits.memory", want: "4294967296"},
		{name: "volume: limits.cpu unset is the allocatable, rounded up", container: "requests-only", resource: "limits.cpu", want: "3"},
		{name: "volume: limits.cpu unset in millicores", container: "requests-only", resource: "limits.cpu", divisor: "1m", want: "2500"},
		{name: "volume: limits.ephemeral-storage unset in Gi", container: "requests-only", resource: "limits.ephemeral-storage", divisor: "1Gi", want: "10"},
		{name: "volume: a set limit", container: "limited", resource: "limits.cpu", divisor: "1m", want: "1200"},
		{name: "volume: a zero limit is the allocatable", container: "zero-limit", resource: "limits.cpu", want: "3"},
		{name: "volume: an init container's unset limit is the allocatable", container: "init", resource: "limits.memory", divisor: "1Mi", want: "4096"},
		{name: "volume: requests.memory", container: "requests-only", resource: "requests.memory", divisor: "1Mi", want: "64"},
		{name: "volume: an unset request is 0", container: "zero-limit", resource: "requests.memory", want: "0"},
		{name: "volume: hugepages limit never from the allocatable", container: "requests-only", resource: "limits.hugepages-2Mi", want: "0"},
		{name: "volume: hugepages request", container: "limited", resource: "requests.hugepages-2Mi", divisor: "1Mi", want: "8"},
		{name: "volume: no allocatable, an unset limit is 0", container: "requests-only", resource: "limits.memory", allocatable: v1.ResourceList{}, want: "0"},
		{name: "env: own container by an empty name", self: self, resource: "limits.memory", divisor: "1Gi", want: "4"},
		{name: "env: another container", self: self, container: "limited", resource: "limits.memory", divisor: "1Mi", want: "128"},
		{name: "volume: unknown container", container: "nope", resource: "limits.cpu", wantErr: "container nope not found"},
		{name: "volume: no container name", resource: "limits.cpu", wantErr: "container  not found"},
		{name: "unsupported resource", self: self, resource: "limits.pods", wantErr: "unsupported container resource : limits.pods"},
		{name: "unsupported kind", self: self, resource: "capacity.cpu", wantErr: "unsupported container resource : capacity.cpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := &v1.ResourceFieldSelector{ContainerName: tc.container, Resource: tc.resource}
			if tc.divisor != "" {
				ref.Divisor = q(tc.divisor)
			}
			alloc := allocatable
			if tc.allocatable != nil {
				alloc = tc.allocatable
			}
			got, err := envvar.ResourceValue(pod, tc.self, ref, alloc)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(struct{ Value, Err string }{tc.want, tc.wantErr}, struct{ Value, Err string }{got, gotErr}); diff != "" {
				t.Errorf("ResourceValue (-want +got):\n%s", diff)
			}
		})
	}
}
