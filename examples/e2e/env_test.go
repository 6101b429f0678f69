package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/cri"
	"github.com/podlife/podlife/examples/envvar"
	"github.com/podlife/podlife/examples/nodeinfo"
)

// Containers' environments on containerd and the real API server (issue 29): examples/cri
// makes them with examples/envvar as the kubelet does (the downward API, resources,
// ConfigMap and Secret keys, envFrom, the master service's variables, $(VAR) in args),
// reading ConfigMaps and Secrets as the node (the Node authorizer lets it read its pods').

// envRuntime starts a CRI agent whose runtime makes environments through the node's
// client; it returns the log root of the containers and the node's addresses.
func envRuntime(t *testing.T) (admin kubernetes.Interface, rt *cri.Runtime, image, logRoot string, hostIPs []string) {
	t.Helper()
	admin, nodeClient, ep, image := criEnv(t)
	hostIPs, err := nodeinfo.HostIPs()
	if err != nil {
		t.Fatal(err)
	}
	getter := envvar.ClientGetter(nodeClient)
	logRoot = t.TempDir()
	rt, _ = startCRINode(t, nodeClient, cri.Config{Endpoint: ep, LogRoot: logRoot,
		Env: cri.EnvConfig{Getter: getter, Services: getter, HostIPs: hostIPs,
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3"), v1.ResourceMemory: resource.MustParse("2Gi")}}},
		agent.Config{HostIPs: hostIPs})
	return admin, rt, image, logRoot, hostIPs
}

// containerLogEnv reads the "env NAME=value" lines (testimage -print-env) of the pod's
// container main from its CRI log file.
func containerLogEnv(t *testing.T, logRoot string, pod *v1.Pod) (env map[string]string, lines []string) {
	t.Helper()
	path := filepath.Join(logRoot, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID), "main", "0.log")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env = map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// CRI log format: time stream tag message.
		parts := strings.SplitN(sc.Text(), " ", 4)
		if len(parts) < 4 {
			continue
		}
		msg := parts[3]
		lines = append(lines, msg)
		if kv, ok := strings.CutPrefix(msg, "env "); ok {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	return env, lines
}

func TestE2ECRIEnv(t *testing.T) {
	admin, rt, image, logRoot, hostIPs := envRuntime(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()

	t.Run("downward API, ConfigMap, Secret, envFrom, $(VAR)", func(t *testing.T) {
		pod := criPod(t, "cri-env", image, v1.RestartPolicyNever, 2, "-print-env", "-print", "arg=$(POD_NAME)/$(COLOR)/$$(POD_NAME)", "-exit-after", "1s")
		cmName, secretName := pod.Name+"-cm", pod.Name+"-secret"
		if _, err := admin.CoreV1().ConfigMaps(namespace).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName},
			Data: map[string]string{"color": "blue", "size": "L"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().Secrets(namespace).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName},
			Data: map[string][]byte{"token": []byte("s3cret")}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			admin.CoreV1().ConfigMaps(namespace).Delete(context.Background(), cmName, metav1.DeleteOptions{})
			admin.CoreV1().Secrets(namespace).Delete(context.Background(), secretName, metav1.DeleteOptions{})
		})
		pod.Labels = map[string]string{"app": "env"}
		pod.Annotations = map[string]string{"note": "hello world"}
		// The ServiceAccount admission plugin wants the account to exist; without a token
		// volume (this runtime has no volume client).
		sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "env-sa", Namespace: namespace},
			AutomountServiceAccountToken: ptr.To(false)}
		if _, err := admin.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			admin.CoreV1().ServiceAccounts(namespace).Delete(context.Background(), sa.Name, metav1.DeleteOptions{})
		})
		pod.Spec.ServiceAccountName = "env-sa"
		field := func(name, path string) v1.EnvVar {
			return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}}
		}
		c := &pod.Spec.Containers[0]
		c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
		c.EnvFrom = []v1.EnvFromSource{{Prefix: "CM_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: cmName}}}}
		c.Env = []v1.EnvVar{
			field("POD_NAME", "metadata.name"), field("POD_NAMESPACE", "metadata.namespace"), field("POD_UID", "metadata.uid"),
			field("POD_LABEL", "metadata.labels['app']"), field("POD_ANNOTATION", "metadata.annotations['note']"),
			field("NODE_NAME", "spec.nodeName"), field("SA_NAME", "spec.serviceAccountName"),
			field("HOST_IP", "status.hostIP"), field("HOST_IPS", "status.hostIPs"),
			field("POD_IP", "status.podIP"), field("POD_IPS", "status.podIPs"),
			{Name: "MEM_LIMIT", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "CPU_LIMIT", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "COLOR", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: cmName}, Key: "color"}}},
			{Name: "TOKEN", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: secretName}, Key: "token"}}},
			{Name: "GREETING", Value: "$(POD_NAME) is $(COLOR)"},
		}
		pw := watchPod(t, ctx, admin, pod.Name)
		pod = createPod(t, ctx, admin, pod)
		removeLeftovers(t, rt, pod)
		events := pw.waitFor(t, ctx, "Succeeded", func(es []podEvent) bool {
			return last(es, func(e podEvent) bool { return e.Phase == v1.PodSucceeded })
		})
		final := events[len(events)-1].Pod
		env, lines := containerLogEnv(t, logRoot, pod)
		got := map[string]string{}
		for k := range map[string]bool{"POD_NAME": true, "POD_NAMESPACE": true, "POD_UID": true, "POD_LABEL": true, "POD_ANNOTATION": true,
			"NODE_NAME": true, "SA_NAME": true, "HOST_IP": true, "HOST_IPS": true, "POD_IP": true, "POD_IPS": true, "MEM_LIMIT": true,
			"CPU_LIMIT": true, "COLOR": true, "TOKEN": true, "GREETING": true, "CM_color": true, "CM_size": true} {
			if v, ok := env[k]; ok {
				got[k] = v
			}
		}
		var podIPs []string
		for _, ip := range final.Status.PodIPs {
			podIPs = append(podIPs, ip.IP)
		}
		want := map[string]string{"POD_NAME": pod.Name, "POD_NAMESPACE": namespace, "POD_UID": string(pod.UID), "POD_LABEL": "env",
			"POD_ANNOTATION": "hello world", "NODE_NAME": node, "SA_NAME": "env-sa",
			"HOST_IP": final.Status.HostIP, "HOST_IPS": strings.Join(hostIPs, ","), "POD_IP": final.Status.PodIP,
			"POD_IPS": strings.Join(podIPs, ","), "MEM_LIMIT": "64", "CPU_LIMIT": "3", "COLOR": "blue", "TOKEN": "s3cret",
			"GREETING": pod.Name + " is blue", "CM_color": "blue", "CM_size": "L"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the container's environment (-want +got):\n%s\nlog:\n%s", diff, strings.Join(lines, "\n"))
		}
		if final.Status.HostIP != hostIPs[0] || final.Status.PodIP != hostIPs[0] {
			t.Errorf("status hostIP %q podIP %q, want the node's %q", final.Status.HostIP, final.Status.PodIP, hostIPs[0])
		}
		if env["KUBERNETES_SERVICE_HOST"] == "" || env["KUBERNETES_SERVICE_PORT"] == "" {
			t.Errorf("no master service variables in the environment:\n%s", strings.Join(lines, "\n"))
		}
		wantArg := "arg=" + pod.Name + "/blue/$(POD_NAME)"
		if !strings.Contains("\n"+strings.Join(lines, "\n")+"\n", "\n"+wantArg+"\n") {
			t.Errorf("no line %q in the log:\n%s", wantArg, strings.Join(lines, "\n"))
		}
	})

	t.Run("missing mandatory ConfigMap", func(t *testing.T) {
		pod := criPod(t, "cri-env-missing", image, v1.RestartPolicyAlways, 2)
		missing := pod.Name + "-nope"
		pod.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: missing}, Key: "k"}}}}
		pw := watchPod(t, ctx, admin, pod.Name)
		pod = createPod(t, ctx, admin, pod)
		removeLeftovers(t, rt, pod)
		wantMsg := fmt.Sprintf("configmap %q not found", missing)
		events := pw.waitFor(t, ctx, "CreateContainerConfigError", func(es []podEvent) bool {
			return last(es, func(e podEvent) bool {
				w := mainStatus(e.Pod).State.Waiting
				return w != nil && w.Reason == "CreateContainerConfigError" && w.Message == wantMsg
			})
		})
		if p := events[len(events)-1].Pod; p.Status.Phase != v1.PodPending {
			t.Errorf("phase %s, want Pending", p.Status.Phase)
		}
		if c := runtimeContainer(t, ctx, rt, pod, "main"); c != nil {
			t.Errorf("the runtime created the container: %+v", c)
		}
	})
}
