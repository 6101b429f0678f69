package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/cri"
)

// Volumes on containerd and the real API server (issue 31 items 1 and 4): examples/cri
// sets the pods' volumes up before their containers start, reading configMaps and
// service account tokens through the node's client (the Node authorizer allows them for
// node1's pods), and updates them in place.

// volumeEnv is a CRI agent with volumes (a root directory, the node's client, an update
// every second) that records its events on the server; it returns the runtime's log root.
func volumeEnv(t *testing.T) (admin kubernetes.Interface, rt *cri.Runtime, image, logRoot, rootDir string) {
	t.Helper()
	admin, nodeClient, ep, image := criEnv(t)
	logRoot, rootDir = t.TempDir(), t.TempDir()
	rt, _ = startCRINode(t, nodeClient, cri.Config{Endpoint: ep, LogRoot: logRoot, RootDir: rootDir,
		Volumes: cri.ClientVolumes(nodeClient), VolumeResync: time.Second}, agent.Config{})
	return admin, rt, image, logRoot, rootDir
}

// waitLog polls the container's log (its first instance) every 100 ms until it has want.
func waitLog(t *testing.T, ctx context.Context, logRoot string, pod *v1.Pod, container, want string) {
	t.Helper()
	waitFile(t, ctx, filepath.Join(logRoot, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID), container, "0.log"), want)
}

func succeeded(es []podEvent) bool {
	return last(es, func(e podEvent) bool { return e.Phase == v1.PodSucceeded })
}

// A pod reads its service account token from the projected volume the ServiceAccount
// admission plugin adds (kube-api-access-*: the token, the cluster CA from the
// kube-root-ca.crt configMap, the namespace; the e2e API server runs without the plugin,
// so the test adds it) and calls the API server with it: GET its own pod, allowed by a
// Role and RoleBinding of the test.
func TestE2ECRIVolumeServiceAccountToken(t *testing.T) {
	admin, rt, image, logRoot, _ := volumeEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	dir := os.Getenv(EnvAPIServer)
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "volume-reader", Namespace: namespace}}
	if _, err := admin.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// A Role of its own: the view ClusterRole's rules are aggregated by the controller
	// manager, which the e2e cluster does not run.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "volume-reader", Namespace: namespace},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}}
	if _, err := admin.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "volume-reader", Namespace: namespace},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: namespace}}}
	if _, err := admin.RbacV1().RoleBindings(namespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	rootCA := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: namespace}, Data: map[string]string{"ca.crt": string(ca)}}
	if _, err := admin.CoreV1().ConfigMaps(namespace).Create(ctx, rootCA, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = admin.CoreV1().ConfigMaps(namespace).Update(ctx, rootCA, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}

	const mount = "/var/run/secrets/kubernetes.io/serviceaccount"
	pod := criPod(t, "cri-volume-token", image, v1.RestartPolicyNever, 2)
	pod.Spec.Containers[0].Args = []string{"-get", restCfg.Host + "/api/v1/namespaces/" + namespace + "/pods/" + pod.Name,
		"-bearer-file", mount + "/token", "-ca-file", mount + "/ca.crt"}
	pod.Spec.ServiceAccountName = sa.Name
	pod.Spec.Volumes = []v1.Volume{{Name: "kube-api-access-e2e", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644), Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "kube-api-access-e2e", MountPath: mount, ReadOnly: true}}
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	events := pw.waitFor(t, ctx, "Succeeded or Failed", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return isTerminal(e.Phase) })
	})
	if got := events[len(events)-1]; got.Phase != v1.PodSucceeded {
		log, _ := os.ReadFile(filepath.Join(logRoot, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID), "main", "0.log"))
		t.Fatalf("the pod's GET with its token failed: %s; its log:\n%s\nevents:\n%s", mainStatus(got.Pod).State.Terminated, log, formatEvents(events))
	}
}

// An emptyDir shared between an init container, which writes a file to it, and the
// container, which finds it.
func TestE2ECRIVolumeEmptyDirInitContainer(t *testing.T) {
	admin, rt, image, _, _ := volumeEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	pod := criPod(t, "cri-volume-emptydir", image, v1.RestartPolicyNever, 2, "-check", "/shared/data")
	pod.Spec.Volumes = []v1.Volume{{Name: "shared", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Image: image, ImagePullPolicy: v1.PullNever,
		Args:         []string{"-write-file", "/shared/data", "-write-bytes", "5", "-exit-after", "1ms"},
		VolumeMounts: []v1.VolumeMount{{Name: "shared", MountPath: "/shared"}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	events := pw.waitFor(t, ctx, "Succeeded or Failed", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return isTerminal(e.Phase) })
	})
	if got := events[len(events)-1]; got.Phase != v1.PodSucceeded {
		t.Fatalf("the container did not find the init container's file: %s; events:\n%s", mainStatus(got.Pod).State.Terminated, formatEvents(events))
	}
}

// A configMap volume: a missing configMap holds the pod with the kubelet's FailedMount
// event; once created the container starts and sees its file; a change of the configMap
// shows up in the mounted file.
func TestE2ECRIVolumeConfigMapUpdate(t *testing.T) {
	admin, rt, image, logRoot, _ := volumeEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	pod := criPod(t, "cri-volume-cm", image, v1.RestartPolicyAlways, 2, "-watch-file", "/etc/cfg/greeting")
	cmName := pod.Name + "-cfg"
	pod.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
		LocalObjectReference: v1.LocalObjectReference{Name: cmName}}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	waitEvent(t, ctx, admin, pod, v1.EventTypeWarning, "FailedMount",
		fmt.Sprintf(`MountVolume.SetUp failed for volume "cfg" : configmap %q not found`, cmName))
	if cs := runtimeContainer(t, ctx, rt, pod, "main"); cs != nil {
		t.Fatalf("the container started without its configMap: %+v", cs)
	}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName, Namespace: namespace}, Data: map[string]string{"greeting": "hello"}}
	if _, err := admin.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().ConfigMaps(namespace).Delete(context.Background(), cmName, metav1.DeleteOptions{})
	})
	pw.waitFor(t, ctx, "Running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodRunning })
	})
	waitLog(t, ctx, logRoot, pod, "main", "watch-file /etc/cfg/greeting: hello")
	cm.Data["greeting"] = "bye"
	start := time.Now()
	if _, err := admin.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, ctx, logRoot, pod, "main", "watch-file /etc/cfg/greeting: bye")
	t.Logf("the change seen in the container after %v", time.Since(start).Round(time.Millisecond))
}

// subPathExpr from the downward API: the container's mount is the emptyDir's
// subdirectory named after the pod; a value of ".." gives CreateContainerConfigError
// with the kubelet's message (the sig-node Variable Expansion test "should fail
// substituting values in a volume subpath with backticks").
func TestE2ECRIVolumeSubPathExpr(t *testing.T) {
	admin, rt, image, _, rootDir := volumeEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	withSubPath := func(prefix string, env v1.EnvVar) *v1.Pod {
		pod := criPod(t, prefix, image, v1.RestartPolicyAlways, 2, "-write-file", "/logscontainer/out", "-write-bytes", "3")
		pod.Spec.Volumes = []v1.Volume{{Name: "workdir1", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		pod.Spec.Containers[0].Env = []v1.EnvVar{env}
		pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "workdir1", MountPath: "/logscontainer", SubPathExpr: "$(POD_NAME)"}}
		return pod
	}
	good := withSubPath("cri-volume-subpath", v1.EnvVar{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{
		FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}})
	bad := withSubPath("cri-volume-subpath-bad", v1.EnvVar{Name: "POD_NAME", Value: ".."})
	gw, bw := watchPod(t, ctx, admin, good.Name), watchPod(t, ctx, admin, bad.Name)
	good, bad = createPod(t, ctx, admin, good), createPod(t, ctx, admin, bad)
	removeLeftovers(t, rt, good, bad)
	gw.waitFor(t, ctx, "Running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodRunning })
	})
	out := filepath.Join(rootDir, "pods", string(good.UID), "volumes", "kubernetes.io~empty-dir", "workdir1", good.Name, "out")
	deadline := time.NewTicker(100 * time.Millisecond)
	defer deadline.Stop()
	for {
		if info, err := os.Stat(out); err == nil && info.Size() == 3 {
			break
		}
		select {
		case <-deadline.C:
		case <-ctx.Done():
			t.Fatalf("the container's file is not in the emptyDir's subdirectory %s", out)
		}
	}
	const want = "unable to provision SubPath `..`: must not contain '..'"
	bw.waitFor(t, ctx, "CreateContainerConfigError", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool {
			w := mainStatus(e.Pod).State.Waiting
			return w != nil && w.Reason == "CreateContainerConfigError" && w.Message == want
		})
	})
	if cs := runtimeContainer(t, ctx, rt, bad, "main"); cs != nil {
		t.Errorf("the container with the bad subPath was created: %+v", cs)
	}
}
