package cri

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

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

// containerEnv is the container's environment as far as a subPathExpr needs it: values
// (with $(VAR) references to earlier variables expanded) and the downward API's fieldRef
// and resourceFieldRef (an unset limit is the node's allocatable, envvar.ResourceValue);
// configMap and secret references are left out.
func containerEnv(pod *v1.Pod, c *v1.Container, allocatable v1.ResourceList) map[string]string {
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
			if v, err := envvar.ResourceValue(pod, c, e.ValueFrom.ResourceFieldRef, allocatable); err == nil {
				env[e.Name] = v
			}
		}
	}
	return env
}
