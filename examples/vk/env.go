package vk

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/node"
)

// EnvSource reads the ConfigMaps and Secrets a pod's environment refers to. The Node
// authorizer lets a node GET the ConfigMaps and Secrets of the pods bound to it.
type EnvSource interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// ClientEnvSource is an EnvSource that GETs the objects through client (the node's).
func ClientEnvSource(client kubernetes.Interface) EnvSource { return clientEnv{client} }

type clientEnv struct{ c kubernetes.Interface }

func (c clientEnv) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	return c.c.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (c clientEnv) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	return c.c.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Reasons of the events of environment resolution (virtual-kubelet's podutils) and the
// kubelet's waiting reason of a container whose environment cannot be made.
const (
	ReasonOptionalConfigMapNotFound     = "OptionalConfigMapNotFound"
	ReasonOptionalConfigMapKeyNotFound  = "OptionalConfigMapKeyNotFound"
	ReasonFailedToReadOptionalConfigMap = "FailedToReadOptionalConfigMap"
	ReasonOptionalSecretNotFound        = "OptionalSecretNotFound"
	ReasonOptionalSecretKeyNotFound     = "OptionalSecretKeyNotFound"
	ReasonFailedToReadOptionalSecret    = "FailedToReadOptionalSecret"

	ReasonMandatoryConfigMapNotFound     = "MandatoryConfigMapNotFound"
	ReasonMandatoryConfigMapKeyNotFound  = "MandatoryConfigMapKeyNotFound"
	ReasonFailedToReadMandatoryConfigMap = "FailedToReadMandatoryConfigMap"
	ReasonMandatorySecretNotFound        = "MandatorySecretNotFound"
	ReasonMandatorySecretKeyNotFound     = "MandatorySecretKeyNotFound"
	ReasonFailedToReadMandatorySecret    = "FailedToReadMandatorySecret"

	ReasonInvalidEnvironmentVariableNames = "InvalidEnvironmentVariableNames"

	// ReasonCreateContainerConfigError is the kubelet's waiting reason of a container
	// whose configuration (here: its environment) cannot be made.
	ReasonCreateContainerConfigError = node.ReasonCreateContainerConfigError
)

// ErrEnv is wrapped by the error of a pod whose environment cannot be resolved (a
// mandatory ConfigMap, Secret or key is missing or unreadable, or a field reference is
// invalid); EnvError carries the container.
var ErrEnv = errors.New("vk: cannot resolve the environment")

// EnvError is the error of one container's environment.
type EnvError struct {
	Container string
	Msg       string
}

func (e *EnvError) Error() string { return e.Msg }
func (e *EnvError) Unwrap() error { return ErrEnv }

// envResolver resolves a pod's environment as virtual-kubelet's pod controller does
// before CreatePod and UpdatePod (podutils.PopulateEnvironmentVariables): every container
// gets its env from envFrom (ConfigMaps, Secrets, with prefix) and env (values with
// $(VAR) expanded, ConfigMap and Secret keys, fieldRef, resourceFieldRef) as plain
// values, env overriding envFrom, and no envFrom. A missing optional reference is
// skipped with a warning event; a missing mandatory one, or any object that cannot be
// read (not NotFound: the kubelet's rule), fails the pod's resolution.
// Unlike virtual-kubelet, the order of env is kept (envFrom's keys sorted first, then
// env's in order) and resourceFieldRef is resolved (an unset limit is the node's
// allocatable, as the kubelet's); service links are not added.
type envResolver struct {
	src         EnvSource
	allocatable v1.ResourceList
	event       func(pod *v1.Pod, reason, message string)
}

// resolve returns a copy of pod with every container's environment resolved.
func (r *envResolver) resolve(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	out := pod.DeepCopy()
	for _, cs := range [][]v1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range cs {
			env, err := r.container(ctx, pod, &cs[i], cs[i].Env, cs[i].EnvFrom)
			if err != nil {
				return nil, err
			}
			cs[i].Env, cs[i].EnvFrom = env, nil
		}
	}
	for i := range out.Spec.EphemeralContainers {
		c := &out.Spec.EphemeralContainers[i]
		ct := v1.Container(c.EphemeralContainerCommon)
		env, err := r.container(ctx, pod, &ct, c.Env, c.EnvFrom)
		if err != nil {
			return nil, err
		}
		c.Env, c.EnvFrom = env, nil
	}
	return out, nil
}

type envList struct {
	order []string
	vals  map[string]string
}

func (l *envList) set(name, value string) {
	if _, ok := l.vals[name]; !ok {
		l.order = append(l.order, name)
	}
	l.vals[name] = value
}

func (r *envResolver) container(ctx context.Context, pod *v1.Pod, c *v1.Container, env []v1.EnvVar, from []v1.EnvFromSource) ([]v1.EnvVar, error) {
	if len(env) == 0 && len(from) == 0 {
		return env, nil
	}
	fail := func(format string, args ...any) error {
		return &EnvError{Container: c.Name, Msg: fmt.Sprintf(format, args...)}
	}
	l := &envList{vals: map[string]string{}}
	for _, ef := range from {
		var data map[string]string
		switch {
		case ef.ConfigMapRef != nil:
			ref := ef.ConfigMapRef
			cm, err := r.src.GetConfigMap(ctx, pod.Namespace, ref.Name)
			if err != nil {
				if e := r.missing(pod, "configmap", ref.Name, "", ref.Optional, err); e != nil {
					return nil, fail("%s", e)
				}
				continue
			}
			data = cm.Data
		case ef.SecretRef != nil:
			ref := ef.SecretRef
			s, err := r.src.GetSecret(ctx, pod.Namespace, ref.Name)
			if err != nil {
				if e := r.missing(pod, "secret", ref.Name, "", ref.Optional, err); e != nil {
					return nil, fail("%s", e)
				}
				continue
			}
			data = map[string]string{}
			for k, v := range s.Data {
				data[k] = string(v)
			}
			for k, v := range s.StringData {
				data[k] = v
			}
		default:
			continue
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var invalid []string
		for _, k := range keys {
			name := ef.Prefix + k
			if len(validation.IsEnvVarName(name)) != 0 {
				invalid = append(invalid, name)
				continue
			}
			l.set(name, data[k])
		}
		if len(invalid) > 0 {
			kind, name := "configmap", ""
			if ef.ConfigMapRef != nil {
				name = ef.ConfigMapRef.Name
			} else {
				kind, name = "secret", ef.SecretRef.Name
			}
			r.event(pod, ReasonInvalidEnvironmentVariableNames, fmt.Sprintf("keys [%s] from %s %s/%s were skipped since they are invalid as environment variable names",
				strings.Join(invalid, ", "), kind, pod.Namespace, name))
		}
	}
	for _, e := range env {
		if e.ValueFrom == nil {
			l.set(e.Name, expand(e.Value, l.vals))
			continue
		}
		vf := e.ValueFrom
		switch {
		case vf.ConfigMapKeyRef != nil:
			ref := vf.ConfigMapKeyRef
			cm, err := r.src.GetConfigMap(ctx, pod.Namespace, ref.Name)
			if err != nil {
				if m := r.missing(pod, "configmap", ref.Name, e.Name, ref.Optional, err); m != nil {
					return nil, fail("%s", m)
				}
				continue
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				if m := r.missingKey(pod, "configmap", ref.Name, ref.Key, e.Name, ref.Optional); m != nil {
					return nil, fail("%s", m)
				}
				continue
			}
			l.set(e.Name, v)
		case vf.SecretKeyRef != nil:
			ref := vf.SecretKeyRef
			s, err := r.src.GetSecret(ctx, pod.Namespace, ref.Name)
			if err != nil {
				if m := r.missing(pod, "secret", ref.Name, e.Name, ref.Optional, err); m != nil {
					return nil, fail("%s", m)
				}
				continue
			}
			v, ok := s.Data[ref.Key]
			if !ok {
				if m := r.missingKey(pod, "secret", ref.Name, ref.Key, e.Name, ref.Optional); m != nil {
					return nil, fail("%s", m)
				}
				continue
			}
			l.set(e.Name, string(v))
		case vf.FieldRef != nil:
			v, err := fieldValue(pod, vf.FieldRef.FieldPath)
			if err != nil {
				return nil, fail("env %q: %v", e.Name, err)
			}
			l.set(e.Name, v)
		case vf.ResourceFieldRef != nil:
			v, err := r.resourceValue(pod, c, vf.ResourceFieldRef)
			if err != nil {
				return nil, fail("env %q: %v", e.Name, err)
			}
			l.set(e.Name, v)
		}
	}
	out := make([]v1.EnvVar, 0, len(l.order))
	for _, n := range l.order {
		out = append(out, v1.EnvVar{Name: n, Value: l.vals[n]})
	}
	return out, nil
}

// missing handles an unreadable ConfigMap or Secret: an optional one is skipped (nil)
// with a warning event, a mandatory one is the error message (and a warning event).
// envName is "" for envFrom.
func (r *envResolver) missing(pod *v1.Pod, kind, name, envName string, optional *bool, err error) error {
	notFound := apierrors.IsNotFound(err)
	isCM := kind == "configmap"
	if optional != nil && *optional {
		if notFound {
			what := fmt.Sprintf("%s %q not found", kind, name)
			if envName != "" {
				what = fmt.Sprintf("skipping optional envvar %q: %s", envName, what)
			}
			r.event(pod, pick(isCM, true, ReasonOptionalConfigMapNotFound, "", ReasonOptionalSecretNotFound, ""), what)
			return nil
		}
		// Unlike virtual-kubelet, which skips it, an optional object that cannot be read
		// (e.g. the Node authorizer not yet relating it to the pod) fails the
		// resolution, as the kubelet's: it is retried rather than left out for good.
		r.event(pod, pick(isCM, false, "", ReasonFailedToReadOptionalConfigMap, "", ReasonFailedToReadOptionalSecret),
			fmt.Sprintf("failed to read %s %q", kind, name))
		return fmt.Errorf("failed to read %s %q: %v", kind, name, err)
	}
	reason := pick(isCM, notFound, ReasonMandatoryConfigMapNotFound, ReasonFailedToReadMandatoryConfigMap,
		ReasonMandatorySecretNotFound, ReasonFailedToReadMandatorySecret)
	if notFound {
		r.event(pod, reason, fmt.Sprintf("%s %q not found", kind, name))
		return fmt.Errorf("%s %q not found", kind, name)
	}
	r.event(pod, reason, fmt.Sprintf("failed to read %s %q", kind, name))
	return fmt.Errorf("failed to read %s %q: %v", kind, name, err)
}

func (r *envResolver) missingKey(pod *v1.Pod, kind, name, key, envName string, optional *bool) error {
	isCM := kind == "configmap"
	if optional != nil && *optional {
		r.event(pod, pick(isCM, true, ReasonOptionalConfigMapKeyNotFound, "", ReasonOptionalSecretKeyNotFound, ""),
			fmt.Sprintf("skipping optional envvar %q: key %q does not exist in %s %q", envName, key, kind, name))
		return nil
	}
	r.event(pod, pick(isCM, true, ReasonMandatoryConfigMapKeyNotFound, "", ReasonMandatorySecretKeyNotFound, ""),
		fmt.Sprintf("key %q does not exist in %s %q", key, kind, name))
	return fmt.Errorf("%s %q doesn't contain the %q key required by pod %s", kind, name, key, pod.Name)
}

func pick(configMap, notFound bool, cmNotFound, cmFailed, sNotFound, sFailed string) string {
	switch {
	case configMap && notFound:
		return cmNotFound
	case configMap:
		return cmFailed
	case notFound:
		return sNotFound
	}
	return sFailed
}

// expand replaces $(NAME) by the value of a variable defined so far (a reference to an
// undefined one stays as written) and $$ by $, as the kubelet's expansion does.
func expand(s string, vals map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
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
			if v, ok := vals[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// fieldValue is the downward API's value of a pod field (fieldRef.fieldPath).
func fieldValue(pod *v1.Pod, path string) (string, error) {
	if sub, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[sub], nil
	}
	if sub, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[sub], nil
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
		return pod.Status.PodIP, nil
	case "status.podIPs":
		return joinIPs(pod.Status.PodIPs, func(ip v1.PodIP) string { return ip.IP }), nil
	}
	return "", fmt.Errorf("unsupported fieldPath %q", path)
}

// subscript returns k of prefix['k'].
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return "", false
	}
	rest = strings.TrimSuffix(rest, "]")
	if len(rest) >= 2 && (rest[0] == '\'' || rest[0] == '"') && rest[len(rest)-1] == rest[0] {
		return rest[1 : len(rest)-1], true
	}
	return "", false
}

func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, strconv.Quote(m[k]))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func joinIPs[T any](ips []T, ip func(T) string) string {
	s := make([]string, len(ips))
	for i := range ips {
		s[i] = ip(ips[i])
	}
	return strings.Join(s, ",")
}

// resourceValue is the downward API's value of a container resource
// (resourceFieldRef): the request or limit divided by the divisor, rounded up; an unset
// limit is the node's allocatable, as the kubelet's.
func (r *envResolver) resourceValue(pod *v1.Pod, self *v1.Container, ref *v1.ResourceFieldSelector) (string, error) {
	c := self
	if ref.ContainerName != "" && ref.ContainerName != self.Name {
		c = nil
		for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range cs {
				if cs[i].Name == ref.ContainerName {
					c = &cs[i]
				}
			}
		}
		if c == nil {
			return "", fmt.Errorf("no container %q", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	res := v1.ResourceName(name)
	var q resource.Quantity
	var set bool
	if kind == "limits" {
		q, set = c.Resources.Limits[res]
		if !set {
			q, set = r.allocatable[res]
		}
	} else {
		q, set = c.Resources.Requests[res] // defaulted to the limit by the API server
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if !set {
		return "0", nil
	}
	if res == v1.ResourceCPU {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}
