package envvar_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podlife/podlife/examples/envvar"
)

// fake is a Getter and ServiceLister over maps.
type fake struct {
	cms      map[string]*v1.ConfigMap
	secrets  map[string]*v1.Secret
	services []*v1.Service
	err      error // returned by every Get when set
}

func (f *fake) GetConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	if f.err != nil {
		return nil, f.err
	}
	if cm, ok := f.cms[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (f *fake) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	if f.err != nil {
		return nil, f.err
	}
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func (f *fake) ListServices(_ context.Context, ns string) ([]*v1.Service, error) {
	var out []*v1.Service
	for _, s := range f.services {
		if s.Namespace == ns {
			out = append(out, s)
		}
	}
	return out, nil
}

func buildService(name, namespace, clusterIP string, port int32) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Protocol: "TCP", Port: port}}, ClusterIP: clusterIP}}
}

func svcEnv(prefix, ip, port string) []v1.EnvVar {
	url := "tcp://" + ip + ":" + port
	pp := prefix + "_PORT_" + port + "_TCP"
	return []v1.EnvVar{
		{Name: prefix + "_SERVICE_HOST", Value: ip}, {Name: prefix + "_SERVICE_PORT", Value: port},
		{Name: prefix + "_PORT", Value: url}, {Name: pp, Value: url}, {Name: pp + "_PROTO", Value: "tcp"},
		{Name: pp + "_PORT", Value: port}, {Name: pp + "_ADDR", Value: ip},
	}
}

func fieldRef(name, path string) v1.EnvVar {
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
}

func cmKey(name, cm, key string, optional bool) v1.EnvVar {
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: cm}, Key: key, Optional: &optional}}}
}

func secretKey(name, s, key string, optional bool) v1.EnvVar {
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: s}, Key: key, Optional: &optional}}}
}

func byName(env []v1.EnvVar) []v1.EnvVar {
	env = slices.Clone(env)
	slices.SortFunc(env, func(a, b v1.EnvVar) int { return strings.Compare(a.Name, b.Name) })
	return env
}

// TestEnv ports the cases of the kubelet's TestMakeEnvironmentVariables
// (pkg/kubelet/kubelet_pods_test.go, v1.37.2) that apply here (named as there), plus
// resourceFieldRef's. The kubelet's result is unordered: the lists compare sorted by name.
func TestEnv(t *testing.T) {
	services := []*v1.Service{
		buildService("kubernetes", metav1.NamespaceDefault, "1.2.3.1", 8081),
		buildService("test", "test1", "1.2.3.3", 8083),
		buildService("kubernetes", "test2", "1.2.3.4", 8084),
		buildService("test", "test2", "1.2.3.5", 8085),
		buildService("test", "test2", "None", 8085),
		buildService("test", "test2", "", 8085),
		buildService("not-special", metav1.NamespaceDefault, "1.2.3.8", 8088),
		buildService("not-special", metav1.NamespaceDefault, "None", 8088),
		buildService("not-special", metav1.NamespaceDefault, "", 8088),
	}
	master := svcEnv("KUBERNETES", "1.2.3.1", "8081")
	yes, no := true, false
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "test1", Name: "test-configmap"},
		Data: map[string]string{"REPLACE_ME": "FROM_CONFIG_MAP", "DUPE_TEST": "CONFIG_MAP", "1234": "abc", "1z": "abc", "key": "value"}}
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "test1", Name: "test-secret"},
		Data: map[string][]byte{"REPLACE_ME": []byte("FROM_SECRET"), "DUPE_TEST": []byte("SECRET"), "1234": []byte("abc")}}
	for _, tc := range []struct {
		name      string
		ns        string
		links     *bool
		nilLister bool
		container v1.Container
		podIPs    []string
		want      []v1.EnvVar
		wantErr   string
	}{
		{name: "api server = Y, kubelet = Y", ns: "test1", links: &no,
			container: v1.Container{Env: []v1.EnvVar{{Name: "FOO", Value: "BAR"}, {Name: "TEST_SERVICE_HOST", Value: "1.2.3.3"},
				{Name: "TEST_SERVICE_PORT", Value: "8083"}}},
			want: append([]v1.EnvVar{{Name: "FOO", Value: "BAR"}, {Name: "TEST_SERVICE_HOST", Value: "1.2.3.3"},
				{Name: "TEST_SERVICE_PORT", Value: "8083"}}, master...)},
		{name: "api server = N; kubelet = Y", ns: "test1", links: &no,
			container: v1.Container{Env: []v1.EnvVar{{Name: "FOO", Value: "BAZ"}}},
			want:      append([]v1.EnvVar{{Name: "FOO", Value: "BAZ"}}, master...)},
		{name: "api server = N; kubelet = Y; service env vars", ns: "test1", links: &yes,
			container: v1.Container{Env: []v1.EnvVar{{Name: "FOO", Value: "BAZ"}}},
			want:      append(append([]v1.EnvVar{{Name: "FOO", Value: "BAZ"}}, svcEnv("TEST", "1.2.3.3", "8083")...), master...)},
		{name: "master service in pod ns", ns: "test2", links: &no,
			container: v1.Container{Env: []v1.EnvVar{{Name: "FOO", Value: "ZAP"}}},
			want:      append([]v1.EnvVar{{Name: "FOO", Value: "ZAP"}}, master...)},
		{name: "master service in pod ns, service env vars", ns: "test2", links: &yes,
			container: v1.Container{Env: []v1.EnvVar{{Name: "FOO", Value: "ZAP"}}},
			want: append(append([]v1.EnvVar{{Name: "FOO", Value: "ZAP"}}, svcEnv("TEST", "1.2.3.5", "8085")...),
				svcEnv("KUBERNETES", "1.2.3.4", "8084")...)},
		{name: "pod in master service ns", ns: metav1.NamespaceDefault, links: &no, want: master},
		{name: "pod in master service ns, service env vars", ns: metav1.NamespaceDefault, links: &yes,
			want: append(svcEnv("NOT_SPECIAL", "1.2.3.8", "8088"), master...)},
		{name: "downward api pod", ns: "downward-api", links: &no, nilLister: true, podIPs: []string{"1.2.3.4", "fd00::6"},
			container: v1.Container{Env: []v1.EnvVar{fieldRef("POD_NAME", "metadata.name"), fieldRef("POD_NAMESPACE", "metadata.namespace"),
				fieldRef("POD_NODE_NAME", "spec.nodeName"), fieldRef("POD_SERVICE_ACCOUNT_NAME", "spec.serviceAccountName"),
				fieldRef("POD_IP", "status.podIP"), fieldRef("POD_IPS", "status.podIPs"), fieldRef("HOST_IP", "status.hostIP"),
				fieldRef("HOST_IPS", "status.hostIPs")}},
			want: []v1.EnvVar{{Name: "POD_NAME", Value: "dapi-test-pod-name"}, {Name: "POD_NAMESPACE", Value: "downward-api"},
				{Name: "POD_NODE_NAME", Value: "node-name"}, {Name: "POD_SERVICE_ACCOUNT_NAME", Value: "special"},
				{Name: "POD_IP", Value: "1.2.3.4"}, {Name: "POD_IPS", Value: "1.2.3.4,fd00::6"},
				{Name: "HOST_IP", Value: "127.0.0.1"}, {Name: "HOST_IPS", Value: "127.0.0.1,::1"}}},
		{name: "downward api metadata (uid, labels, annotations)", ns: "downward-api", links: &no, nilLister: true,
			container: v1.Container{Env: []v1.EnvVar{fieldRef("UID", "metadata.uid"), fieldRef("APP", "metadata.labels['app']"),
				fieldRef("NOTE", "metadata.annotations['note']"), fieldRef("MISSING", "metadata.labels['none']"),
				fieldRef("LABELS", "metadata.labels")}},
			want: []v1.EnvVar{{Name: "UID", Value: "uid-1"}, {Name: "APP", Value: "web"}, {Name: "NOTE", Value: "a b"},
				{Name: "MISSING"}, {Name: "LABELS", Value: `app="web"`}}},
		{name: "unsupported fieldPath", ns: "test1", links: &no, nilLister: true,
			container: v1.Container{Env: []v1.EnvVar{fieldRef("X", "spec.schedulerName")}},
			wantErr:   "field label not supported: spec.schedulerName"},
		{name: "env expansion", ns: "test1", links: &no,
			container: v1.Container{Env: []v1.EnvVar{{Name: "TEST_LITERAL", Value: "test-test-test"}, fieldRef("POD_NAME", "metadata.name"),
				{Name: "OUT_OF_ORDER_TEST", Value: "$(OUT_OF_ORDER_TARGET)"}, {Name: "OUT_OF_ORDER_TARGET", Value: "FOO"},
				{Name: "EMPTY_VAR"}, {Name: "EMPTY_TEST", Value: "foo-$(EMPTY_VAR)"}, {Name: "POD_NAME_TEST2", Value: "test2-$(POD_NAME)"},
				{Name: "POD_NAME_TEST3", Value: "$(POD_NAME_TEST2)-3"}, {Name: "LITERAL_TEST", Value: "literal-$(TEST_LITERAL)"},
				{Name: "TEST_UNDEFINED", Value: "$(UNDEFINED_VAR)"}}},
			want: append([]v1.EnvVar{{Name: "TEST_LITERAL", Value: "test-test-test"}, {Name: "POD_NAME", Value: "dapi-test-pod-name"},
				{Name: "POD_NAME_TEST2", Value: "test2-dapi-test-pod-name"}, {Name: "POD_NAME_TEST3", Value: "test2-dapi-test-pod-name-3"},
				{Name: "LITERAL_TEST", Value: "literal-test-test-test"}, {Name: "OUT_OF_ORDER_TEST", Value: "$(OUT_OF_ORDER_TARGET)"},
				{Name: "OUT_OF_ORDER_TARGET", Value: "FOO"}, {Name: "TEST_UNDEFINED", Value: "$(UNDEFINED_VAR)"},
				{Name: "EMPTY_VAR"}, {Name: "EMPTY_TEST", Value: "foo-"}}, master...)},
		{name: "env expansion, service env vars", ns: "test1", links: &yes,
			container: v1.Container{Env: []v1.EnvVar{{Name: "SVC", Value: "$(TEST_SERVICE_HOST):$(TEST_SERVICE_PORT)"}}},
			want:      append(append([]v1.EnvVar{{Name: "SVC", Value: "1.2.3.3:8083"}}, svcEnv("TEST", "1.2.3.3", "8083")...), master...)},
		{name: "configmapkeyref_missing_optional", ns: "test", links: &no, nilLister: true,
			container: v1.Container{Env: []v1.EnvVar{cmKey("POD_NAME", "missing-config-map", "key", true)}}},
		{name: "configmapkeyref_missing_key_optional", ns: "test1", links: &no, nilLister: true,
			container: v1.Container{Env: []v1.EnvVar{cmKey("POD_NAME", "test-configmap", "missing", true)}}},
		{name: "secretkeyref_missing_optional", ns: "test", links: &no, nilLister: true,
			container: v1.Container{Env: []v1.EnvVar{secretKey("POD_NAME", "missing-secret", "key", true)}}},
		{name: "secretkeyref_missing_key_optional", ns: "test1", links: &no, nilLister: true,
			container: v1.Container{Env: []v1.EnvVar{secretKey("POD_NAME", "test-secret", "missing", true)}}},
		{name: "configmapkeyref missing mandatory", ns: "test1", links: &no, nilLister: true,
			container: v1.Container{Env: []v1.EnvVar{cmKey("X", "nope", "key", false)}}, wantErr: `configmap "nope" not found`},
		{name: "configmapkeyref missing key mandatory", ns: "test1", links: &no, nilLister: true,
			container: v1.Container{Env: []v1.EnvVar{cmKey("X", "test-configmap", "k", false)}},
			wantErr:   "couldn't find key k in ConfigMap test1/test-configmap"},
		{name: "secretkeyref missing key mandatory", ns: "test1", links: &no, nilLister: true,
			container: v1.Container{Env: []v1.EnvVar{secretKey("X", "test-secret", "k", false)}},
			wantErr:   "couldn't find key k in Secret test1/test-secret"},
		{name: "configmap", ns: "test1", links: &no,
			container: v1.Container{EnvFrom: []v1.EnvFromSource{
				{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "test-configmap"}}},
				{Prefix: "p_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "test-configmap"}}}},
				Env: []v1.EnvVar{{Name: "TEST_LITERAL", Value: "test-test-test"}, {Name: "EXPANSION_TEST", Value: "$(REPLACE_ME)"},
					{Name: "DUPE_TEST", Value: "ENV_VAR"}, cmKey("KEY", "test-configmap", "key", false)}},
			want: append([]v1.EnvVar{{Name: "TEST_LITERAL", Value: "test-test-test"}, {Name: "REPLACE_ME", Value: "FROM_CONFIG_MAP"},
				{Name: "EXPANSION_TEST", Value: "FROM_CONFIG_MAP"}, {Name: "DUPE_TEST", Value: "ENV_VAR"},
				{Name: "1234", Value: "abc"}, {Name: "1z", Value: "abc"}, {Name: "key", Value: "value"}, {Name: "KEY", Value: "value"},
				{Name: "p_REPLACE_ME", Value: "FROM_CONFIG_MAP"}, {Name: "p_DUPE_TEST", Value: "CONFIG_MAP"},
				{Name: "p_1234", Value: "abc"}, {Name: "p_1z", Value: "abc"}, {Name: "p_key", Value: "value"}}, master...)},
		{name: "configmap_missing", ns: "test1", links: &no,
			container: v1.Container{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "test-configmap2"}}}}},
			wantErr:   `configmap "test-configmap2" not found`},
		{name: "configmap_missing_optional", ns: "test", links: &no,
			container: v1.Container{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{Optional: &yes,
				LocalObjectReference: v1.LocalObjectReference{Name: "missing-config-map"}}}}},
			want: master},
		{name: "secret", ns: "test1", links: &no,
			container: v1.Container{EnvFrom: []v1.EnvFromSource{
				{Prefix: "p_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "test-secret"}}}},
				Env: []v1.EnvVar{{Name: "DUPE_TEST", Value: "$(p_DUPE_TEST)!"}, secretKey("S", "test-secret", "REPLACE_ME", false)}},
			want: append([]v1.EnvVar{{Name: "p_REPLACE_ME", Value: "FROM_SECRET"}, {Name: "p_DUPE_TEST", Value: "SECRET"},
				{Name: "p_1234", Value: "abc"}, {Name: "DUPE_TEST", Value: "SECRET!"}, {Name: "S", Value: "FROM_SECRET"}}, master...)},
		{name: "secret_missing", ns: "test1", links: &no,
			container: v1.Container{EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "test-secret2"}}}}},
			wantErr:   `secret "test-secret2" not found`},
		{name: "secret_missing_optional", ns: "test", links: &no,
			container: v1.Container{EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{Optional: &yes,
				LocalObjectReference: v1.LocalObjectReference{Name: "missing-secret"}}}}},
			want: master},
		{name: "nil_enableServiceLinks is true (the API server's default)", ns: "test1",
			want: append(svcEnv("TEST", "1.2.3.3", "8083"), master...)},
		{name: "resourceFieldRef: limits and requests with divisors, ceil, allocatable as default limit", ns: "test1", links: &no, nilLister: true,
			container: v1.Container{Resources: v1.ResourceRequirements{
				Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")},
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("1500k")}},
				Env: []v1.EnvVar{res("CPU_LIMIT", "limits.cpu", ""), res("CPU_LIMIT_M", "limits.cpu", "1m"),
					res("CPU_REQUEST", "requests.cpu", ""), res("CPU_REQUEST_M", "requests.cpu", "1m"),
					res("MEM_LIMIT", "limits.memory", ""), res("MEM_LIMIT_MI", "limits.memory", "1Mi"),
					res("MEM_REQUEST_MI", "requests.memory", "1Mi"), res("EPH_LIMIT_GI", "limits.ephemeral-storage", "1Gi"),
					res("EPH_REQUEST", "requests.ephemeral-storage", "")}},
			want: []v1.EnvVar{{Name: "CPU_LIMIT", Value: "3"}, {Name: "CPU_LIMIT_M", Value: "2500"},
				{Name: "CPU_REQUEST", Value: "1"}, {Name: "CPU_REQUEST_M", Value: "250"},
				{Name: "MEM_LIMIT", Value: "67108864"}, {Name: "MEM_LIMIT_MI", Value: "64"},
				{Name: "MEM_REQUEST_MI", Value: "2"}, {Name: "EPH_LIMIT_GI", Value: "10"}, {Name: "EPH_REQUEST", Value: "0"}}},
		{name: "resourceFieldRef: a zero limit is the allocatable, a hugepages limit never", ns: "test1", links: &no, nilLister: true,
			container: v1.Container{Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("0")}},
				Env: []v1.EnvVar{res("CPU_LIMIT_M", "limits.cpu", "1m"), res("HUGE_LIMIT", "limits.hugepages-2Mi", "")}},
			want: []v1.EnvVar{{Name: "CPU_LIMIT_M", Value: "2500"}, {Name: "HUGE_LIMIT", Value: "0"}}},
		{name: "resourceFieldRef of another container", ns: "test1", links: &no, nilLister: true,
			container: v1.Container{Name: "self", Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{
				ContainerName: "other", Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}}}},
			want: []v1.EnvVar{{Name: "X", Value: "32"}}},
		{name: "resourceFieldRef of an unknown container", ns: "test1", links: &no, nilLister: true,
			container: v1.Container{Name: "self", Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{
				ContainerName: "nope", Resource: "limits.memory"}}}}},
			wantErr: "container nope not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{cms: map[string]*v1.ConfigMap{"test1/test-configmap": cm}, secrets: map[string]*v1.Secret{"test1/test-secret": secret},
				services: services}
			r := &envvar.Resolver{Getter: f, Services: f, HostIPs: []string{"127.0.0.1", "::1"},
				Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2500m"), v1.ResourceMemory: resource.MustParse("4Gi"),
					v1.ResourceEphemeralStorage: resource.MustParse("9.5Gi"), "hugepages-2Mi": resource.MustParse("1Gi")}}
			if tc.nilLister {
				r.Services = nil
			}
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "dapi-test-pod-name", Namespace: tc.ns, UID: "uid-1",
				Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "a b"}},
				Spec: v1.PodSpec{NodeName: "node-name", ServiceAccountName: "special", EnableServiceLinks: tc.links,
					Containers: []v1.Container{tc.container, {Name: "other", Resources: v1.ResourceRequirements{
						Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("32Mi")}}}}}}
			got, err := r.Env(context.Background(), pod, &tc.container, tc.podIPs)
			if tc.wantErr != "" {
				var ee *envvar.Error
				if !errors.Is(err, envvar.ErrEnv) || !errors.As(err, &ee) || err.Error() != tc.wantErr {
					t.Fatalf("Env = %v, want *Error %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(byName(tc.want), byName(got), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Env (-want +got):\n%s", diff)
			}
		})
	}
}

func res(name, resource_, divisor string) v1.EnvVar {
	sel := &v1.ResourceFieldSelector{Resource: resource_}
	if divisor != "" {
		sel.Divisor = resource.MustParse(divisor)
	}
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{ResourceFieldRef: sel}}
}

// TestEnvOrder: envFrom's keys (sorted per source), then env in its order (a variable
// set again keeps its place), then the service variables sorted.
func TestEnvOrder(t *testing.T) {
	f := &fake{cms: map[string]*v1.ConfigMap{"ns/c": {Data: map[string]string{"B": "1", "A": "2"}}},
		services: []*v1.Service{buildService("kubernetes", "default", "10.0.0.1", 443)}}
	r := &envvar.Resolver{Getter: f, Services: f}
	c := &v1.Container{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "c"}}}},
		Env: []v1.EnvVar{{Name: "Z", Value: "z"}, {Name: "B", Value: "b"}, {Name: "KUBERNETES_SERVICE_HOST", Value: "x"}}}
	got, err := r.Env(context.Background(), &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}}, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range got {
		names = append(names, e.Name)
	}
	want := []string{"A", "B", "Z", "KUBERNETES_SERVICE_HOST", "KUBERNETES_PORT", "KUBERNETES_PORT_443_TCP", "KUBERNETES_PORT_443_TCP_ADDR",
		"KUBERNETES_PORT_443_TCP_PORT", "KUBERNETES_PORT_443_TCP_PROTO", "KUBERNETES_SERVICE_PORT"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// TestEnvGetterErrors: no Getter is the kubelet's "no kubeClient" error; an optional
// object that cannot be read (not NotFound) fails as the kubelet's.
func TestEnvGetterErrors(t *testing.T) {
	yes := true
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}}
	c := &v1.Container{Name: "app", Env: []v1.EnvVar{cmKey("X", "c", "k", true)}}
	_, err := (&envvar.Resolver{}).Env(context.Background(), pod, c, nil)
	if err == nil || err.Error() != "couldn't get configMap ns/c, no kubeClient defined" {
		t.Errorf("no Getter: %v", err)
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "s", errors.New("no relationship"))
	c = &v1.Container{Name: "app", EnvFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{Optional: &yes, LocalObjectReference: v1.LocalObjectReference{Name: "s"}}}}}
	var reasons []string
	r := &envvar.Resolver{Getter: &fake{err: forbidden}, Event: func(_ *v1.Pod, reason, _ string) { reasons = append(reasons, reason) }}
	_, err = r.Env(context.Background(), pod, c, nil)
	if !errors.Is(err, envvar.ErrEnv) || !apierrors.IsForbidden(err) {
		t.Errorf("unreadable optional secret: %v, want ErrEnv wrapping Forbidden", err)
	}
	if diff := cmp.Diff([]string{envvar.ReasonFailedToReadOptionalSecret}, reasons); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestSkipInvalidNames: virtual-kubelet's rule (vk) drops envFrom keys that are not
// variable names with an event; the kubelet's (default) keeps them.
func TestSkipInvalidNames(t *testing.T) {
	f := &fake{cms: map[string]*v1.ConfigMap{"ns/c": {Data: map[string]string{"ok": "1", "a=b": "2"}}}}
	c := &v1.Container{EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "c"}}}}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}}
	for _, tc := range []struct {
		name   string
		skip   bool
		want   []v1.EnvVar
		events []string
	}{
		{name: "kubelet", want: []v1.EnvVar{{Name: "a=b", Value: "2"}, {Name: "ok", Value: "1"}}},
		{name: "skip", skip: true, want: []v1.EnvVar{{Name: "ok", Value: "1"}},
			events: []string{"keys [a=b] from configmap ns/c were skipped since they are invalid as environment variable names"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var events []string
			r := &envvar.Resolver{Getter: f, SkipInvalidNames: tc.skip, Event: func(_ *v1.Pod, _, m string) { events = append(events, m) }}
			got, err := r.Env(context.Background(), pod, c, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Env (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.events, events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
