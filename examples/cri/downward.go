package cri

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podlife/podlife/examples/envvar"
)

// podField is the value of a downward API field path (the kubelet's
// fieldpath.ExtractFieldPathAsString, its message for a path it does not know), the
// addresses from the pod's status; a hostNetwork pod without pod IPs has the host's.
func podField(pod *v1.Pod, path string) (string, error) {
	hostIPs, podIPs := envvar.StatusIPs(pod)
	if pod.Spec.HostNetwork && len(podIPs) == 0 {
		podIPs = hostIPs
	}
	v, err := envvar.FieldValue(pod, path, hostIPs, podIPs)
	if err != nil {
		return "", fmt.Errorf("unsupported fieldPath: %v", path)
	}
	return v, nil
}

// containerResource is a resourceFieldRef's value (the kubelet's
// ExtractContainerResourceValue): the container's limit or request, divided by the
// divisor and rounded up. An unset limit falls back to the request (the kubelet takes the
// node's allocatable, which this runtime does not know), an unset request to 0.
func containerResource(pod *v1.Pod, ref *v1.ResourceFieldSelector) (string, error) {
	var c *v1.Container
	for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == ref.ContainerName {
				c = &cs[i]
			}
		}
	}
	if c == nil {
		return "", fmt.Errorf("container %s not found", ref.ContainerName)
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
	}
	rn := v1.ResourceName(name)
	q, found := c.Resources.Requests[rn]
	if kind == "limits" {
		if l, ok := c.Resources.Limits[rn]; ok {
			q, found = l, true
		}
	}
	if !found {
		q = resource.Quantity{}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if rn == v1.ResourceCPU {
		m := float64(q.MilliValue()) / float64(divisor.MilliValue())
		return strconv.FormatInt(int64(math.Ceil(m)), 10), nil
	}
	v := float64(q.Value()) / float64(divisor.Value())
	return strconv.FormatInt(int64(math.Ceil(v)), 10), nil
}

// containerEnv is the container's environment as far as a subPathExpr needs it: values
// (with $(VAR) references to earlier variables expanded) and the downward API's fieldRef
// and resourceFieldRef; configMap and secret references are left out.
func containerEnv(pod *v1.Pod, c *v1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = envvar.Expand(e.Value, envvar.MappingFor(env))
		case e.ValueFrom.FieldRef != nil:
			if v, err := podField(pod, e.ValueFrom.FieldRef.FieldPath); err == nil {
				env[e.Name] = v
			}
		case e.ValueFrom.ResourceFieldRef != nil:
			ref := *e.ValueFrom.ResourceFieldRef
			if ref.ContainerName == "" {
				ref.ContainerName = c.Name
			}
			if v, err := containerResource(pod, &ref); err == nil {
				env[e.Name] = v
			}
		}
	}
	return env
}
