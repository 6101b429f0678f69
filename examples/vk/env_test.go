package vk_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/vk"
	"github.com/podlife/podlife/examples/vk/vktest"
)

// mapEnv is an in-memory vk.EnvSource.
type mapEnv struct {
	mu         sync.Mutex
	configMaps map[string]map[string]string
	secrets    map[string]map[string]string
}

func newMapEnv() *mapEnv {
	return &mapEnv{configMaps: map[string]map[string]string{}, secrets: map[string]map[string]string{}}
}

func (m *mapEnv) setConfigMap(name string, data map[string]string) {
	m.mu.Lock()
	m.configMaps[name] = data
	m.mu.Unlock()
}

func (m *mapEnv) setSecret(name string, data map[string]string) {
	m.mu.Lock()
	m.secrets[name] = data
	m.mu.Unlock()
}

func (m *mapEnv) GetConfigMap(_ context.Context, namespace, name string) (*v1.ConfigMap, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.configMaps[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	}
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: d}, nil
}

func (m *mapEnv) GetSecret(_ context.Context, namespace, name string) (*v1.Secret, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.secrets[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
	}
	s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string][]byte{}}
	for k, v := range d {
		s.Data[k] = []byte(v)
	}
	return s, nil
}

func envOf(t *testing.T, p *vktest.Provider, name string) map[string]string {
	t.Helper()
	got, err := p.GetPod(context.Background(), "default", name)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Containers[0].EnvFrom) != 0 {
		t.Errorf("the provider got envFrom %+v, want it resolved", got.Spec.Containers[0].EnvFrom)
	}
	m := map[string]string{}
	for _, e := range got.Spec.Containers[0].Env {
		if e.ValueFrom != nil {
			t.Errorf("the provider got %s with valueFrom, want a value", e.Name)
		}
		m[e.Name] = e.Value
	}
	return m
}

// TestEnvResolved: before CreatePod, the container's environment is resolved as
// virtual-kubelet's pod controller does: envFrom (ConfigMap with prefix, Secret), env
// values with $(VAR) expanded, ConfigMap and Secret keys, fieldRef, resourceFieldRef (a
// limit the container does not set is the node's allocatable); optional references to
// missing objects or keys are skipped with a warning event.
func TestEnvResolved(t *testing.T) {
	ctx := context.Background()
	src := newMapEnv()
	src.setConfigMap("cfg", map[string]string{"mode": "fast", "level": "3", "bad-name!": "x"})
	src.setSecret("creds", map[string]string{"token": "s3cr3t"})
	var ev events
	p := vktest.New(vktest.Config{})
	ad, err := vk.NewAdapter(vk.AdapterConfig{Provider: p, Env: src, Recorder: &ev,
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("8")}})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u1", Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{NodeName: "vnode", Containers: []v1.Container{{Name: "app", Image: "busybox",
			Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}},
			EnvFrom: []v1.EnvFromSource{
				{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
				{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}},
				{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "nocfg"}, Optional: &yes}},
			},
			Env: []v1.EnvVar{
				{Name: "PLAIN", Value: "mode=$(CFG_mode) $$(CFG_mode) $(UNDEFINED)"},
				{Name: "LEVEL", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "level"}}},
				{Name: "TOKEN", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "token"}}},
				{Name: "OPT_SECRET", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "nosecret"}, Key: "k", Optional: &yes}}},
				{Name: "OPT_KEY", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "nokey", Optional: &yes}}},
				{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "POD_NS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
				{Name: "APP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
				{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
				{Name: "MEM_MI", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
				{Name: "CPUS", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
				{Name: "CFG_mode", Value: "overridden"},
			}}}}}
	if err := ad.StartPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	got := envOf(t, p, "web")
	want := map[string]string{"CFG_mode": "overridden", "CFG_level": "3", "token": "s3cr3t",
		"PLAIN": "mode=fast $(CFG_mode) $(UNDEFINED)", "LEVEL": "3", "TOKEN": "s3cr3t", "POD_NAME": "web", "POD_NS": "default",
		"APP": "web", "NODE": "vnode", "MEM_MI": "64", "CPUS": "8"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, k := range []string{"OPT_SECRET", "OPT_KEY", "CFG_bad-name!"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s is set, want it skipped", k)
		}
	}
	if len(got) != len(want) {
		t.Errorf("env %v, want exactly %v", got, want)
	}
	for _, reason := range []string{vk.ReasonOptionalConfigMapNotFound, vk.ReasonOptionalSecretNotFound,
		vk.ReasonOptionalConfigMapKeyNotFound, vk.ReasonInvalidEnvironmentVariableNames} {
		if ev.find(v1.EventTypeWarning, reason) == "" {
			t.Errorf("no %s warning event in\n%s", reason, strings.Join(ev.lines, "\n"))
		}
	}
	// An unchanged pod is not sent again; the original spec stays the pod's.
	if err := ad.StartPod(ctx, pod); err != nil || p.Count(vktest.Update) != 0 {
		t.Errorf("a second StartPod: %v, %d UpdatePod calls; want none", err, p.Count(vktest.Update))
	}
	if len(pod.Spec.Containers[0].EnvFrom) != 3 {
		t.Error("the pod given to StartPod was modified")
	}
}

// TestEnvMandatoryMissing: a mandatory reference to a missing ConfigMap, Secret or key
// refuses the create (no CreatePod; an error wrapping ErrEnv with the message, and a
// warning event); the container waits with reason CreateContainerConfigError; once the
// object exists, the next StartPod creates the pod.
func TestEnvMandatoryMissing(t *testing.T) {
	ref := func(kind, name, key string) v1.EnvVar {
		e := v1.EnvVar{Name: "X"}
		if kind == "configmap" {
			e.ValueFrom = &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key}}
		} else {
			e.ValueFrom = &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key}}
		}
		return e
	}
	for _, tc := range []struct {
		name    string
		env     []v1.EnvVar
		envFrom []v1.EnvFromSource
		setup   func(*mapEnv)
		fix     func(*mapEnv)
		reason  string
		msg     string
	}{
		{name: "secret", env: []v1.EnvVar{ref("secret", "s", "k")}, reason: vk.ReasonMandatorySecretNotFound, msg: `secret "s" not found`,
			fix: func(m *mapEnv) { m.setSecret("s", map[string]string{"k": "v"}) }},
		{name: "configmap", env: []v1.EnvVar{ref("configmap", "c", "k")}, reason: vk.ReasonMandatoryConfigMapNotFound, msg: `configmap "c" not found`,
			fix: func(m *mapEnv) { m.setConfigMap("c", map[string]string{"k": "v"}) }},
		{name: "secret key", env: []v1.EnvVar{ref("secret", "s", "k")}, reason: vk.ReasonMandatorySecretKeyNotFound,
			msg:   `couldn't find key k in Secret default/s`,
			setup: func(m *mapEnv) { m.setSecret("s", map[string]string{"other": "v"}) },
			fix:   func(m *mapEnv) { m.setSecret("s", map[string]string{"k": "v"}) }},
		{name: "configmap key", env: []v1.EnvVar{ref("configmap", "c", "k")}, reason: vk.ReasonMandatoryConfigMapKeyNotFound,
			msg:   `couldn't find key k in ConfigMap default/c`,
			setup: func(m *mapEnv) { m.setConfigMap("c", map[string]string{}) },
			fix:   func(m *mapEnv) { m.setConfigMap("c", map[string]string{"k": "v"}) }},
		{name: "envFrom secret", envFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "s"}}}},
			reason: vk.ReasonMandatorySecretNotFound, msg: `secret "s" not found`,
			fix: func(m *mapEnv) { m.setSecret("s", map[string]string{"k": "v"}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			src := newMapEnv()
			if tc.setup != nil {
				tc.setup(src)
			}
			var ev events
			p := vktest.New(vktest.Config{})
			ad, err := vk.NewAdapter(vk.AdapterConfig{Provider: p, Env: src, Recorder: &ev})
			if err != nil {
				t.Fatal(err)
			}
			pod := namedPod("u1")
			pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "sidecar", Image: "busybox"})
			pod.Spec.Containers[0].Env, pod.Spec.Containers[0].EnvFrom = tc.env, tc.envFrom
			err = ad.StartPod(ctx, pod)
			if !errors.Is(err, vk.ErrEnv) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("StartPod = %v, want ErrEnv with %q", err, tc.msg)
			}
			if n := p.Count(vktest.Create); n != 0 {
				t.Errorf("%d CreatePod calls, want none", n)
			}
			if ev.find(v1.EventTypeWarning, tc.reason) == "" {
				t.Errorf("no %s warning event in\n%s", tc.reason, strings.Join(ev.lines, "\n"))
			}
			st := ad.APIStatus(pod, nil, v1.PodStatus{}, false)
			if st.Phase != v1.PodPending || len(st.ContainerStatuses) != 2 {
				t.Fatalf("status %+v, want Pending with two containers", st)
			}
			if w := st.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != vk.ReasonCreateContainerConfigError || w.Message != tc.msg {
				t.Errorf("app waits with %+v, want %s: %s", w, vk.ReasonCreateContainerConfigError, tc.msg)
			}
			if w := st.ContainerStatuses[1].State.Waiting; w == nil || w.Reason != "ContainerCreating" {
				t.Errorf("sidecar waits with %+v, want ContainerCreating", w)
			}
			tc.fix(src)
			if err := ad.StartPod(ctx, pod); err != nil {
				t.Fatalf("StartPod once the object exists = %v", err)
			}
			if envOf(t, p, "web")["X"] != "v" && tc.envFrom == nil {
				t.Error("X is not resolved once the object exists")
			}
			if st := ad.APIStatus(pod, nil, v1.PodStatus{}, false); st.ContainerStatuses[0].State.Waiting != nil &&
				st.ContainerStatuses[0].State.Waiting.Reason == vk.ReasonCreateContainerConfigError {
				t.Error("the container still waits with CreateContainerConfigError once created")
			}
		})
	}
}

// TestEnvMissingSecretScenario: on the agent, a pod whose mandatory Secret is missing
// stays Pending with its container waiting (CreateContainerConfigError), and runs once
// the Secret is created (the pod worker's backoff retries).
func TestEnvMissingSecretScenario(t *testing.T) {
	eachProvider(t, func(t *testing.T, kind providerKind) {
		e := newEnv(t, kind, vktest.Config{})
		e.envSrc = newMapEnv()
		r := e.start(nil)
		grace := int64(30)
		pod, err := e.server.Create(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: v1.PodSpec{NodeName: agent.DefaultNodeName, TerminationGracePeriodSeconds: &grace,
				Containers: []v1.Container{{Name: "app", Image: "busybox", Env: []v1.EnvVar{{Name: "TOKEN",
					ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "token"}}}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		e.waitFor("web", func(p *v1.Pod) bool {
			return p != nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
				p.Status.ContainerStatuses[0].State.Waiting.Reason == vk.ReasonCreateContainerConfigError
		})
		if w := e.pod("web").Status.ContainerStatuses[0].State.Waiting; w.Message != `secret "creds" not found` {
			t.Errorf("waiting message %q", w.Message)
		}
		if e.events.find(string(pod.UID), vk.ReasonMandatorySecretNotFound) == "" {
			t.Error("no MandatorySecretNotFound event")
		}
		time.Sleep(30 * time.Second)
		if n := e.provider.CountFor(pod.UID, vktest.Create); n != 0 {
			t.Fatalf("%d CreatePod calls while the Secret is missing", n)
		}
		e.envSrc.setSecret("creds", map[string]string{"token": "s3cr3t"})
		e.waitFor("web", phaseIs(v1.PodRunning))
		if got := envOf(t, e.provider, "web")["TOKEN"]; got != "s3cr3t" {
			t.Errorf("TOKEN = %q", got)
		}
		r.stop(t)
	})
}

// failingEnv fails every read with a server error.
type failingEnv struct{}

func (failingEnv) GetConfigMap(context.Context, string, string) (*v1.ConfigMap, error) {
	return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "c", errors.New("no relationship found"))
}

func (failingEnv) GetSecret(context.Context, string, string) (*v1.Secret, error) {
	return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "s", errors.New("no relationship found"))
}

// TestEnvOptionalUnreadable: an optional Secret that cannot be read (Forbidden, not
// NotFound) is not skipped: the create is refused and retried (the kubelet's rule), with
// a FailedToReadOptionalSecret event.
func TestEnvOptionalUnreadable(t *testing.T) {
	var ev events
	p := vktest.New(vktest.Config{})
	ad, err := vk.NewAdapter(vk.AdapterConfig{Provider: p, Env: failingEnv{}, Recorder: &ev})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	pod := namedPod("u1")
	pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "k", Optional: &yes}}}}
	if err := ad.StartPod(context.Background(), pod); !errors.Is(err, vk.ErrEnv) {
		t.Fatalf("StartPod = %v, want ErrEnv", err)
	}
	if p.Count(vktest.Create) != 0 || ev.find(vk.ReasonFailedToReadOptionalSecret) == "" {
		t.Errorf("%d CreatePod calls, events:\n%s; want none and FailedToReadOptionalSecret", p.Count(vktest.Create), strings.Join(ev.lines, "\n"))
	}
}
