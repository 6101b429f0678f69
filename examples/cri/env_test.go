package cri_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/examples/cri"
	"github.com/podlife/podlife/examples/envvar"
	"github.com/podlife/podlife/node"
)

func envHarness(t *testing.T) *harness {
	client := fake.NewClientset(
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"color": "blue", "size": "L"}},
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sec"}, Data: map[string][]byte{"token": []byte("s3cret")}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
			Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Name: "https", Port: 443}}}})
	getter := envvar.ClientGetter(client)
	return newHarness(t, func(c *cri.Config) {
		c.Env = cri.EnvConfig{Getter: getter, Services: getter, HostIPs: []string{"192.168.1.5"},
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")}}
	})
}

func containerConfig(t *testing.T, h *harness, name string) *runtimeapi.ContainerConfig {
	t.Helper()
	h.fakeCRI.mu.Lock()
	defer h.fakeCRI.mu.Unlock()
	for _, c := range h.fakeCRI.containers {
		if c.cfg.GetMetadata().GetName() == name {
			return c.cfg
		}
	}
	t.Fatalf("no container %s created", name)
	return nil
}

// TestContainerEnv: CreateContainer's config has the container's environment as the
// kubelet makes it (the downward API, ConfigMap and Secret keys, envFrom, resources, the
// master service's variables) and its args with $(VAR) expanded.
func TestContainerEnv(t *testing.T) {
	h := envHarness(t)
	pod := fakePod(v1.RestartPolicyAlways, "app")
	pod.Spec.NodeName, pod.Spec.ServiceAccountName = "node-1", "sa"
	c := &pod.Spec.Containers[0]
	c.Args = []string{"-name=$(POD_NAME)", "$$(POD_NAME)", "$(NOPE)"}
	c.EnvFrom = []v1.EnvFromSource{{Prefix: "CM_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}}
	field := func(name, path string) v1.EnvVar {
		return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}}
	}
	c.Env = []v1.EnvVar{{Name: "A", Value: "1"}, field("POD_NAME", "metadata.name"), field("POD_IP", "status.podIP"),
		field("HOST_IPS", "status.hostIPs"), field("APP", "metadata.labels['app']"),
		{Name: "COLOR", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: "color"}}},
		{Name: "TOKEN", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}, Key: "token"}}},
		{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
		{Name: "GREETING", Value: "hi $(POD_NAME) in $(COLOR)"}}
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	cfg := containerConfig(t, h, "app")
	got := map[string]string{}
	for _, kv := range cfg.GetEnvs() {
		got[kv.GetKey()] = string(kv.GetValue())
	}
	want := map[string]string{"A": "1", "POD_NAME": "web", "POD_IP": "192.168.1.5", "HOST_IPS": "192.168.1.5", "APP": "web",
		"COLOR": "blue", "TOKEN": "s3cret", "MEM": "8192", "GREETING": "hi web in blue", "CM_color": "blue", "CM_size": "L",
		"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT": "tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp", "KUBERNETES_PORT_443_TCP_PORT": "443", "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"-name=web", "$(POD_NAME)", "$(NOPE)"}, cfg.GetArgs()); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
}

// TestContainerEnvMissingConfigMap: a container whose mandatory ConfigMap is missing is
// not created; its error is CreateContainerConfigError with the kubelet's message.
func TestContainerEnvMissingConfigMap(t *testing.T) {
	h := envHarness(t)
	pod := fakePod(v1.RestartPolicyAlways, "app")
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: "missing"}, Key: "k"}}}}
	err := h.sync(t, pod)
	var ce *node.ContainerError
	if !errors.As(err, &ce) || ce.Reason != node.ReasonCreateContainerConfigError || ce.Message != `configmap "missing" not found` || ce.Container != "app" {
		t.Fatalf("SyncPod = %v, want app's CreateContainerConfigError: configmap \"missing\" not found", err)
	}
	if !errors.Is(err, envvar.ErrEnv) {
		t.Errorf("SyncPod = %v, want it to wrap envvar.ErrEnv", err)
	}
	if n := len(h.fakeCRI.containers); n != 0 {
		t.Errorf("%d containers created, want none", n)
	}
	if ev := h.eventsWith("Failed"); len(ev) != 1 || !strings.Contains(ev[0], `Error: configmap "missing" not found`) {
		t.Errorf("Failed events %q", ev)
	}
}

// TestProbeExecExpansion: an exec probe's command has $(VAR) expanded from the
// container's literal env values (the kubelet's ExpandContainerCommandOnlyStatic).
func TestProbeExecExpansion(t *testing.T) {
	h := newHarness(t, nil)
	var got []string
	h.execReply = func(cmd []string) (*runtimeapi.ExecSyncResponse, error) {
		got = cmd
		return &runtimeapi.ExecSyncResponse{}, nil
	}
	r := runProbe(t, h, &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"check", "$(A)", "$(FROM)", "$$(A)"}}}}, "")
	if r.result != node.ProbeSuccess {
		t.Fatalf("probe %+v", r)
	}
	if diff := cmp.Diff([]string{"check", "1", "$(FROM)", "$(A)"}, got); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
}
