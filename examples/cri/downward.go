package cri

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// podField is the value of a downward API field path (the kubelet's podFieldSelectorRuntimeValue
// and fieldpath.ExtractFieldPathAsString).
func podField(pod *v1.Pod, path string) (string, error) {
	if path, sub, ok := splitSubscript(path); ok {
		switch path {
		case "metadata.labels":
			return pod.Labels[sub], nil
		case "metadata.annotations":
			return pod.Annotations[sub], nil
		}
		return "", fmt.Errorf("unsupported fieldPath: %v", path)
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	case "status.hostIPs":
		return joinIPs(pod.Status.HostIPs, func(ip v1.HostIP) string { return ip.IP }), nil
	case "status.podIP":
		if pod.Spec.HostNetwork && pod.Status.PodIP == "" {
			return pod.Status.HostIP, nil
		}
		return pod.Status.PodIP, nil
	case "status.podIPs":
		if pod.Spec.HostNetwork && len(pod.Status.PodIPs) == 0 {
			return joinIPs(pod.Status.HostIPs, func(ip v1.HostIP) string { return ip.IP }), nil
		}
		return joinIPs(pod.Status.PodIPs, func(ip v1.PodIP) string { return ip.IP }), nil
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", path)
}

func joinIPs[T any](ips []T, ip func(T) string) string {
	s := make([]string, len(ips))
	for i, x := range ips {
		s[i] = ip(x)
	}
	return strings.Join(s, ",")
}

// splitSubscript splits metadata.labels['key'] into its path and key.
func splitSubscript(fieldPath string) (string, string, bool) {
	if !strings.HasSuffix(fieldPath, "']") {
		return "", "", false
	}
	path, sub, ok := strings.Cut(strings.TrimSuffix(fieldPath, "']"), "['")
	return path, sub, ok
}

// formatMap is the kubelet's fieldpath.FormatMap: key="value" lines, sorted, values quoted.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%v=%q", k, m[k])
	}
	return b.String()
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
			env[e.Name] = expandVars(e.Value, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
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

// expandVars is the kubelet's $(VAR) expansion (third_party/forked/golang/expansion):
// $(NAME) is replaced by its value when lookup knows it and kept as it is otherwise; $$ is
// an escaped $.
func expandVars(s string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}
