// Package envvar makes a container's environment as the kubelet does
// (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables, v1.37): envFrom (ConfigMaps and
// Secrets, with prefix), then env in order (a literal value with $(VAR) expanded from the
// variables defined so far and the service variables; valueFrom: fieldRef,
// resourceFieldRef, configMapKeyRef, secretKeyRef), then the service environment
// variables (FOO_SERVICE_HOST, FOO_PORT, ...) a variable of the container does not
// override. ExpandCommandAndArgs expands $(VAR) in the command and args from the result;
// ExpandCommandOnlyStatic is the exec probes' and hooks' expansion.
//
// Both runtimes of the examples use it: examples/cri sets the CRI container config's
// environment from it, examples/vk resolves a pod for its provider with it. FieldValue and
// ResourceValue (a resourceFieldRef; an unset limit is the node's allocatable) are the
// downward API's values, examples/cri's downwardAPI volumes use them too.
//
// ConfigMaps and Secrets are read through a Getter (ClientGetter: the node's client-go
// client; the Node authorizer lets a node read those of its pods). A missing mandatory
// one, or a missing key, or one that cannot be read (an optional one too, unless it is
// NotFound) fails the container with the kubelet's message (configmap "x" not found,
// couldn't find key k in ConfigMap ns/x): the runtime reports it as the container's
// CreateContainerConfigError.
package envvar

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
)

// Getter reads the ConfigMaps and Secrets a container's environment refers to. A missing
// object is an error for which apierrors.IsNotFound is true.
type Getter interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// ServiceLister lists the services of a namespace, for the service environment variables.
type ServiceLister interface {
	ListServices(ctx context.Context, namespace string) ([]*v1.Service, error)
}

// Client is a Getter and ServiceLister over a client-go client.
type Client struct{ c kubernetes.Interface }

// ClientGetter returns a Getter and ServiceLister that GET and LIST through client (the
// node's). It reads the API server on every call: no cache.
func ClientGetter(client kubernetes.Interface) Client { return Client{client} }

// GetConfigMap GETs the ConfigMap.
func (c Client) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	return c.c.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}

// GetSecret GETs the Secret.
func (c Client) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	return c.c.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

// ListServices LISTs the namespace's services.
func (c Client) ListServices(ctx context.Context, namespace string) ([]*v1.Service, error) {
	l, err := c.c.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*v1.Service, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

// ErrEnv is wrapped by every error of Env.
var ErrEnv = errors.New("envvar: cannot make the environment")

// Error is the error of one container's environment. Error() is the kubelet's message
// (the container's CreateContainerConfigError message).
type Error struct {
	Container string
	Err       error
}

func (e *Error) Error() string   { return e.Err.Error() }
func (e *Error) Unwrap() []error { return []error{ErrEnv, e.Err} }

// Reasons of the events Resolver.Event is told of (virtual-kubelet's podutils'; the
// kubelet records none of them).
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
)

// Resolver makes containers' environments. The zero value resolves literal values and
// the downward API only (a ConfigMap or Secret reference is an error, as on a kubelet
// without a client). It is safe for concurrent use if its Getter and ServiceLister are.
type Resolver struct {
	// Getter reads ConfigMaps and Secrets; nil: a reference to one fails the container.
	Getter Getter
	// Services lists services for the service environment variables; nil: none (the
	// kubelet without an API server).
	Services ServiceLister
	// Allocatable is the node's allocatable, the value of a cpu, memory or
	// ephemeral-storage limit (resourceFieldRef limits.*) the container does not set, as
	// the kubelet's (see ResourceValue); nil: such a limit is 0.
	Allocatable v1.ResourceList
	// HostIPs are the node's addresses, status.hostIP (the first) and status.hostIPs;
	// empty: the pod's status.hostIPs (or hostIP).
	HostIPs []string
	// SkipInvalidNames drops envFrom keys that are not valid variable names
	// (validation.IsEnvVarName) with an InvalidEnvironmentVariableNames event, as
	// virtual-kubelet does; the kubelet 1.37 keeps every key (the API server's relaxed
	// validation allows any printable name).
	SkipInvalidNames bool
	// Event, if set, is told of a skipped optional reference and of a missing mandatory
	// one (warning events, the Reason constants). It must not block.
	Event func(pod *v1.Pod, reason, message string)
}

// Env returns container c's environment in pod: envFrom's variables (each source's keys
// sorted), then env's in order (one defined twice keeps its first place), then the
// service variables sorted by name. podIPs are the pod's IPs (status.podIP is the
// first); nil: the pod's status. Its errors are *Error wrapping ErrEnv.
func (r *Resolver) Env(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string) ([]v1.EnvVar, error) {
	fail := func(err error) error { return &Error{Container: c.Name, Err: err} }
	if podIPs == nil {
		_, podIPs = StatusIPs(pod)
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	serviceEnv, err := r.serviceEnv(ctx, pod.Namespace, links)
	if err != nil {
		return nil, fail(err)
	}
	objs := objects{r: r, pod: pod, cms: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{}}
	l := envList{vals: map[string]string{}}
	for _, ef := range c.EnvFrom {
		var data map[string]string
		var kind, name string
		switch {
		case ef.ConfigMapRef != nil:
			kind, name = "configmap", ef.ConfigMapRef.Name
			cm, err := objs.configMap(ctx, name, "", ef.ConfigMapRef.Optional)
			if err != nil {
				return nil, fail(err)
			}
			if cm == nil {
				continue
			}
			data = cm.Data
		case ef.SecretRef != nil:
			kind, name = "secret", ef.SecretRef.Name
			s, err := objs.secret(ctx, name, "", ef.SecretRef.Optional)
			if err != nil {
				return nil, fail(err)
			}
			if s == nil {
				continue
			}
			data = make(map[string]string, len(s.Data))
			for k, v := range s.Data {
				data[k] = string(v)
			}
		default:
			continue
		}
		var invalid []string
		for _, k := range sortedKeys(data) {
			n := ef.Prefix + k
			if r.SkipInvalidNames && len(validation.IsEnvVarName(n)) != 0 {
				invalid = append(invalid, n)
				continue
			}
			l.set(n, data[k])
		}
		if len(invalid) > 0 {
			r.event(pod, ReasonInvalidEnvironmentVariableNames, fmt.Sprintf("keys [%s] from %s %s/%s were skipped since they are invalid as environment variable names",
				strings.Join(invalid, ", "), kind, pod.Namespace, name))
		}
	}
	for _, e := range c.Env {
		val := e.Value
		switch vf := e.ValueFrom; {
		case val != "":
			val = Expand(val, MappingFor(l.vals, serviceEnv))
		case vf == nil:
		case vf.FieldRef != nil:
			val, err = r.fieldValue(pod, vf.FieldRef.FieldPath, podIPs)
			if err != nil {
				return nil, fail(err)
			}
		case vf.ResourceFieldRef != nil:
			val, err = ResourceValue(pod, c, vf.ResourceFieldRef, r.Allocatable)
			if err != nil {
				return nil, fail(err)
			}
		case vf.ConfigMapKeyRef != nil:
			ref := vf.ConfigMapKeyRef
			cm, err := objs.configMap(ctx, ref.Name, e.Name, ref.Optional)
			if err != nil {
				return nil, fail(err)
			}
			if cm == nil {
				continue
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				if err := objs.missingKey("ConfigMap", ref.Name, ref.Key, e.Name, ref.Optional); err != nil {
					return nil, fail(err)
				}
				continue
			}
			val = v
		case vf.SecretKeyRef != nil:
			ref := vf.SecretKeyRef
			s, err := objs.secret(ctx, ref.Name, e.Name, ref.Optional)
			if err != nil {
				return nil, fail(err)
			}
			if s == nil {
				continue
			}
			v, ok := s.Data[ref.Key]
			if !ok {
				if err := objs.missingKey("Secret", ref.Name, ref.Key, e.Name, ref.Optional); err != nil {
					return nil, fail(err)
				}
				continue
			}
			val = string(v)
		}
		l.set(e.Name, val)
	}
	out := make([]v1.EnvVar, 0, len(l.order)+len(serviceEnv))
	for _, n := range l.order {
		out = append(out, v1.EnvVar{Name: n, Value: l.vals[n]})
	}
	for _, n := range sortedKeys(serviceEnv) {
		if _, ok := l.vals[n]; !ok {
			out = append(out, v1.EnvVar{Name: n, Value: serviceEnv[n]})
		}
	}
	return out, nil
}

func (r *Resolver) event(pod *v1.Pod, reason, message string) {
	if r.Event != nil {
		r.Event(pod, reason, message)
	}
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

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// objects reads each ConfigMap and Secret of one container once.
type objects struct {
	r       *Resolver
	pod     *v1.Pod
	cms     map[string]*v1.ConfigMap
	secrets map[string]*v1.Secret
}

// configMap returns the ConfigMap, nil when it is optional and NotFound (skipped), or
// the kubelet's error. envName is "" for envFrom.
func (o *objects) configMap(ctx context.Context, name, envName string, optional *bool) (*v1.ConfigMap, error) {
	if cm, ok := o.cms[name]; ok {
		return cm, nil
	}
	if o.r.Getter == nil {
		return nil, fmt.Errorf("couldn't get configMap %s/%s, no kubeClient defined", o.pod.Namespace, name)
	}
	cm, err := o.r.Getter.GetConfigMap(ctx, o.pod.Namespace, name)
	if err != nil {
		return nil, o.missing("configmap", name, envName, optional, err)
	}
	o.cms[name] = cm
	return cm, nil
}

func (o *objects) secret(ctx context.Context, name, envName string, optional *bool) (*v1.Secret, error) {
	if s, ok := o.secrets[name]; ok {
		return s, nil
	}
	if o.r.Getter == nil {
		return nil, fmt.Errorf("couldn't get secret %s/%s, no kubeClient defined", o.pod.Namespace, name)
	}
	s, err := o.r.Getter.GetSecret(ctx, o.pod.Namespace, name)
	if err != nil {
		return nil, o.missing("secret", name, envName, optional, err)
	}
	o.secrets[name] = s
	return s, nil
}

// missing is nil for an optional object that is NotFound (skipped), err otherwise (the
// kubelet fails on an optional object it cannot read, so it is retried rather than left
// out for good).
func (o *objects) missing(kind, name, envName string, optional *bool, err error) error {
	notFound := apierrors.IsNotFound(err)
	isCM := kind == "configmap"
	if optional != nil && *optional {
		if notFound {
			what := fmt.Sprintf("%s %q not found", kind, name)
			if envName != "" {
				what = fmt.Sprintf("skipping optional envvar %q: %s", envName, what)
			}
			o.r.event(o.pod, pick(isCM, true, ReasonOptionalConfigMapNotFound, "", ReasonOptionalSecretNotFound, ""), what)
			return nil
		}
		o.r.event(o.pod, pick(isCM, false, "", ReasonFailedToReadOptionalConfigMap, "", ReasonFailedToReadOptionalSecret),
			fmt.Sprintf("failed to read %s %q", kind, name))
		return err
	}
	reason := pick(isCM, notFound, ReasonMandatoryConfigMapNotFound, ReasonFailedToReadMandatoryConfigMap,
		ReasonMandatorySecretNotFound, ReasonFailedToReadMandatorySecret)
	if notFound {
		o.r.event(o.pod, reason, fmt.Sprintf("%s %q not found", kind, name))
		// The kubelet's cache answers `configmap "x" not found` whatever the Getter's
		// error says (a client's is `configmaps "x" not found`).
		return apierrors.NewNotFound(schema.GroupResource{Resource: kind}, name)
	} else {
		o.r.event(o.pod, reason, fmt.Sprintf("failed to read %s %q", kind, name))
	}
	return err
}

// missingKey: kind is ConfigMap or Secret.
func (o *objects) missingKey(kind, name, key, envName string, optional *bool) error {
	isCM := kind == "ConfigMap"
	lower := strings.ToLower(kind)
	if optional != nil && *optional {
		o.r.event(o.pod, pick(isCM, true, ReasonOptionalConfigMapKeyNotFound, "", ReasonOptionalSecretKeyNotFound, ""),
			fmt.Sprintf("skipping optional envvar %q: key %q does not exist in %s %q", envName, key, lower, name))
		return nil
	}
	o.r.event(o.pod, pick(isCM, true, ReasonMandatoryConfigMapKeyNotFound, "", ReasonMandatorySecretKeyNotFound, ""),
		fmt.Sprintf("key %q does not exist in %s %q", key, lower, name))
	return fmt.Errorf("couldn't find key %s in %s %s/%s", key, kind, o.pod.Namespace, name)
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

// serviceEnv is the kubelet's getServiceEnvVarMap: the variables of the master service
// (kubernetes in default) always, and of the pod's namespace's services when links is
// true; a service without a cluster IP (None or "") has none.
func (r *Resolver) serviceEnv(ctx context.Context, ns string, links bool) (map[string]string, error) {
	m := map[string]string{}
	if r.Services == nil {
		return m, nil
	}
	byName := map[string]*v1.Service{}
	svcs, err := r.Services.ListServices(ctx, metav1.NamespaceDefault)
	if err != nil {
		return nil, fmt.Errorf("failed to list services when setting up env vars: %w", err)
	}
	for _, s := range svcs {
		if s.Namespace == metav1.NamespaceDefault && s.Name == "kubernetes" && ipSet(s) {
			byName[s.Name] = s
		}
	}
	if links {
		if ns != metav1.NamespaceDefault {
			if svcs, err = r.Services.ListServices(ctx, ns); err != nil {
				return nil, fmt.Errorf("failed to list services when setting up env vars: %w", err)
			}
		}
		// A service of the pod's namespace wins over the master service of its name.
		for _, s := range svcs {
			if s.Namespace == ns && ipSet(s) {
				byName[s.Name] = s
			}
		}
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range byName {
			if !yield(n) {
				return
			}
		}
	}) {
		for _, e := range ServiceEnv(byName[name]) {
			m[e.Name] = e.Value
		}
	}
	return m, nil
}

func ipSet(s *v1.Service) bool {
	return s.Spec.ClusterIP != "" && s.Spec.ClusterIP != v1.ClusterIPNone
}

// ServiceEnv is one service's environment variables as the kubelet's envvars.FromServices
// makes them: NAME_SERVICE_HOST, NAME_SERVICE_PORT (the first port),
// NAME_SERVICE_PORT_PORTNAME for each named port, NAME_PORT (the first port's URL), and
// NAME_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR} for each port; NAME is the service's name
// upper-cased with - as _. A service without a cluster IP or ports has none.
func ServiceEnv(s *v1.Service) []v1.EnvVar {
	if !ipSet(s) || len(s.Spec.Ports) == 0 {
		return nil
	}
	prefix := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
	ip := s.Spec.ClusterIP
	out := []v1.EnvVar{
		{Name: prefix + "_SERVICE_HOST", Value: ip},
		{Name: prefix + "_SERVICE_PORT", Value: strconv.Itoa(int(s.Spec.Ports[0].Port))},
	}
	for _, p := range s.Spec.Ports {
		if p.Name != "" {
			out = append(out, v1.EnvVar{Name: prefix + "_SERVICE_PORT_" + strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_")), Value: strconv.Itoa(int(p.Port))})
		}
	}
	for i, p := range s.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(v1.ProtocolTCP)
		}
		port := strconv.Itoa(int(p.Port))
		url := strings.ToLower(proto) + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			out = append(out, v1.EnvVar{Name: prefix + "_PORT", Value: url})
		}
		pp := prefix + "_PORT_" + port + "_" + strings.ToUpper(proto)
		out = append(out,
			v1.EnvVar{Name: pp, Value: url},
			v1.EnvVar{Name: pp + "_PROTO", Value: strings.ToLower(proto)},
			v1.EnvVar{Name: pp + "_PORT", Value: port},
			v1.EnvVar{Name: pp + "_ADDR", Value: ip})
	}
	return out
}

// fieldValue is the downward API's value of a pod field (fieldRef.fieldPath): the host's
// addresses are r.HostIPs, or the pod's status.
func (r *Resolver) fieldValue(pod *v1.Pod, path string, podIPs []string) (string, error) {
	hostIPs := r.HostIPs
	if len(hostIPs) == 0 {
		hostIPs, _ = StatusIPs(pod)
	}
	return FieldValue(pod, path, hostIPs, podIPs)
}

// StatusIPs are the pod's host and pod addresses in its status: status.hostIPs (or
// hostIP) and status.podIPs (or podIP).
func StatusIPs(pod *v1.Pod) (hostIPs, podIPs []string) {
	for _, ip := range pod.Status.HostIPs {
		hostIPs = append(hostIPs, ip.IP)
	}
	if len(hostIPs) == 0 && pod.Status.HostIP != "" {
		hostIPs = []string{pod.Status.HostIP}
	}
	for _, ip := range pod.Status.PodIPs {
		podIPs = append(podIPs, ip.IP)
	}
	if len(podIPs) == 0 && pod.Status.PodIP != "" {
		podIPs = []string{pod.Status.PodIP}
	}
	return hostIPs, podIPs
}

// FieldValue is the downward API's value of a pod field, a fieldRef's fieldPath (the
// kubelet's podFieldSelectorRuntimeValue): metadata (a label or annotation by
// subscript, all of them as sorted key="value" lines), spec.nodeName and serviceAccountName, and
// the addresses given: status.hostIP is the first of hostIPs, status.hostIPs all of them
// joined by commas, likewise status.podIP(s) of podIPs. Another path is an error.
func FieldValue(pod *v1.Pod, path string, hostIPs, podIPs []string) (string, error) {
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
		if len(hostIPs) == 0 {
			return "", nil
		}
		return hostIPs[0], nil
	case "status.hostIPs":
		return strings.Join(hostIPs, ","), nil
	case "status.podIP":
		if len(podIPs) == 0 {
			return "", nil
		}
		return podIPs[0], nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	}
	return "", fmt.Errorf("field label not supported: %s", path)
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
	var b strings.Builder
	for _, k := range sortedKeys(m) {
		fmt.Fprintf(&b, "%s=%s\n", k, strconv.Quote(m[k]))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ResourceValue is the downward API's value of a container resource, a resourceFieldRef,
// for an environment variable and a downwardAPI volume's file alike (the kubelet's
// ExtractResourceValueByContainerNameAndNodeAllocatable): the limit or request of the
// container ref.ContainerName of pod (a regular container, else an init container; self
// when the name is empty or self's: the container whose environment it is, nil for a
// volume), divided by the divisor (1 when zero) and rounded up, cpu in millicores.
//
// A cpu, memory or ephemeral-storage limit the container does not set (or sets to 0) is
// the node's allocatable (the kubelet's MergeContainerResourceLimits), never the request.
// It is 0 when allocatable lacks that resource, as are an unset hugepages limit (never
// taken from allocatable) and an unset request. Another resource, or a kind other than
// limits and requests, is the kubelet's "unsupported container resource" error.
func ResourceValue(pod *v1.Pod, self *v1.Container, ref *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	c := self
	if c == nil || (ref.ContainerName != "" && ref.ContainerName != c.Name) {
		c = findContainer(pod, ref.ContainerName)
		if c == nil {
			return "", fmt.Errorf("container %s not found", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
	}
	res := v1.ResourceName(name)
	var q resource.Quantity
	if kind == "requests" {
		q = c.Resources.Requests[res]
	} else {
		q = c.Resources.Limits[res]
		switch res {
		case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage:
			if a, ok := allocatable[res]; ok && q.IsZero() {
				q = a
			}
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	switch {
	case res == v1.ResourceCPU:
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case res == v1.ResourceMemory, res == v1.ResourceEphemeralStorage, strings.HasPrefix(name, v1.ResourceHugePagesPrefix):
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
}

// findContainer is the kubelet's findContainerInPod: the regular container of that name,
// else the init container, else nil.
func findContainer(pod *v1.Pod, name string) *v1.Container {
	for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	return nil
}
