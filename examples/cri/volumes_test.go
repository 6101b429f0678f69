package cri_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/examples/cri"
	"github.com/podlife/podlife/node"
)

// fakeVolumes is a cri.VolumeClient over maps, answering NotFound as the API server does;
// its tokens say which request they answer.
type fakeVolumes struct {
	clock clock.PassiveClock

	mu         sync.Mutex
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
	tokens     []string // "ns/sa audiences=[...] exp=N pod=name/uid" per request
}

func newFakeVolumes(c clock.PassiveClock) *fakeVolumes {
	return &fakeVolumes{clock: c, configMaps: map[string]*v1.ConfigMap{}, secrets: map[string]*v1.Secret{}}
}

func (f *fakeVolumes) setConfigMap(ns, name string, data map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.configMaps[ns+"/"+name] = &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

func (f *fakeVolumes) GetConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cm := f.configMaps[ns+"/"+name]; cm != nil {
		return cm.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (f *fakeVolumes) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.secrets[ns+"/"+name]; s != nil {
		return s.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func (f *fakeVolumes) CreateToken(_ context.Context, ns, sa string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ref := tr.Spec.BoundObjectRef
	f.tokens = append(f.tokens, fmt.Sprintf("%s/%s audiences=%v exp=%d pod=%s/%s", ns, sa, tr.Spec.Audiences,
		ptr.Deref(tr.Spec.ExpirationSeconds, 0), ref.Name, ref.UID))
	out := tr.DeepCopy()
	out.Status = authenticationv1.TokenRequestStatus{Token: fmt.Sprintf("token-%d", len(f.tokens)),
		ExpirationTimestamp: metav1.NewTime(f.clock.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))}
	return out, nil
}

func (f *fakeVolumes) tokenRequests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.tokens...)
}

// volumeHarness is the fake CRI with a root directory and a fake client; mods change
// the configuration further.
func volumeHarness(t *testing.T, mods ...func(*cri.Config)) (*harness, *fakeVolumes, string) {
	t.Helper()
	root := t.TempDir()
	var vols *fakeVolumes
	h := newHarness(t, func(c *cri.Config) {
		vols = newFakeVolumes(c.Clock)
		c.RootDir, c.Volumes, c.MemoryVolumesOnDisk = root, vols, true
		for _, mod := range mods {
			mod(c)
		}
	})
	return h, vols, root
}

// fileOf is a volume file's content and mode.
func fileOf(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		return "error: " + err.Error()
	}
	info, _ := os.Stat(path)
	return fmt.Sprintf("%s %#o", data, info.Mode().Perm())
}

// mountsOf is the mounts the fake CRI got for the newest container of that name.
func mountsOf(t *testing.T, h *harness, name string) []*runtimeapi.Mount {
	t.Helper()
	cs, _ := h.snapshot()
	if len(cs[name]) == 0 {
		t.Fatalf("no container %s", name)
	}
	return cs[name][len(cs[name])-1].cfg.GetMounts()
}

// Every volume type set up before the containers: files and modes, the CRI mounts
// (read-only for the API-data volumes, subPath, propagation), the token request; then
// CleanupPod removes the pod's directory.
func TestVolumesSetUpAndCleanedUp(t *testing.T) {
	h, vols, root := volumeHarness(t)
	vols.setConfigMap("ns", "cfg", map[string]string{"a.conf": "A", "b.conf": "B"})
	vols.secrets["ns/sec"] = &v1.Secret{Data: map[string][]byte{"password": []byte("p")}}
	vols.setConfigMap("ns", "kube-root-ca.crt", map[string]string{"ca.crt": "CA"})
	hostDir := filepath.Join(t.TempDir(), "host", "data")
	pod := fakePod(v1.RestartPolicyAlways, "app")
	pod.Spec.ServiceAccountName = "robot"
	pod.Spec.Volumes = []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir, Type: ptr.To(v1.HostPathDirectoryOrCreate)}}},
		{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"},
			Items: []v1.KeyToPath{{Key: "a.conf", Path: "conf/a"}, {Key: "b.conf", Path: "b", Mode: ptr.To[int32](0o600)}}, DefaultMode: ptr.To[int32](0o440)}}},
		{Name: "secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec", DefaultMode: ptr.To[int32](0o400)}}},
		{Name: "missing-optional", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Optional: ptr.To(true)}}},
		{Name: "podinfo", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
		{Name: "kube-api-access-x1", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607), Audience: "api"}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "scratch", MountPath: "/logs", SubPath: "logs/app", MountPropagation: ptr.To(v1.MountPropagationHostToContainer)},
		{Name: "mem", MountPath: "/mem", ReadOnly: true},
		{Name: "host", MountPath: "/host", MountPropagation: ptr.To(v1.MountPropagationBidirectional)},
		{Name: "config", MountPath: "/etc/app"},
		{Name: "secret", MountPath: "/secret"},
		{Name: "podinfo", MountPath: "/podinfo"},
		{Name: "kube-api-access-x1", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
	}
	h.images["img:1"] = true
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	vdir := func(plugin, name string) string {
		return filepath.Join(root, "pods", string(pod.UID), "volumes", "kubernetes.io~"+plugin, name)
	}
	priv, h2c, bidi := runtimeapi.MountPropagation_PROPAGATION_PRIVATE, runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
	want := []*runtimeapi.Mount{
		{ContainerPath: "/scratch", HostPath: vdir("empty-dir", "scratch"), Propagation: priv},
		{ContainerPath: "/logs", HostPath: vdir("empty-dir", "scratch") + "/logs/app", Propagation: h2c},
		{ContainerPath: "/mem", HostPath: vdir("empty-dir", "mem"), Readonly: true, Propagation: priv},
		{ContainerPath: "/host", HostPath: hostDir, Propagation: bidi},
		{ContainerPath: "/etc/app", HostPath: vdir("configmap", "config"), Readonly: true, Propagation: priv},
		{ContainerPath: "/secret", HostPath: vdir("secret", "secret"), Readonly: true, Propagation: priv},
		{ContainerPath: "/podinfo", HostPath: vdir("downward-api", "podinfo"), Readonly: true, Propagation: priv},
		{ContainerPath: "/var/run/secrets/kubernetes.io/serviceaccount", HostPath: vdir("projected", "kube-api-access-x1"), Readonly: true, Propagation: priv},
	}
	if diff := cmp.Diff(want, mountsOf(t, h, "app"), cmp.Comparer(func(a, b *runtimeapi.Mount) bool {
		return a.GetContainerPath() == b.GetContainerPath() && a.GetHostPath() == b.GetHostPath() &&
			a.GetReadonly() == b.GetReadonly() && a.GetPropagation() == b.GetPropagation()
	})); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	files := map[string]string{}
	for _, p := range []string{
		vdir("configmap", "config") + "/conf/a", vdir("configmap", "config") + "/b",
		vdir("secret", "secret") + "/password", vdir("downward-api", "podinfo") + "/labels",
		vdir("projected", "kube-api-access-x1") + "/token", vdir("projected", "kube-api-access-x1") + "/ca.crt",
		vdir("projected", "kube-api-access-x1") + "/namespace",
	} {
		rel, _ := filepath.Rel(filepath.Join(root, "pods", string(pod.UID), "volumes"), p)
		files[rel] = fileOf(t, p)
	}
	wantFiles := map[string]string{
		"kubernetes.io~configmap/config/conf/a":                "A 0440",
		"kubernetes.io~configmap/config/b":                     "B 0600",
		"kubernetes.io~secret/secret/password":                 "p 0400",
		"kubernetes.io~downward-api/podinfo/labels":            `app="web" 0644`,
		"kubernetes.io~projected/kube-api-access-x1/token":     "token-1 0644",
		"kubernetes.io~projected/kube-api-access-x1/ca.crt":    "CA 0644",
		"kubernetes.io~projected/kube-api-access-x1/namespace": "ns 0644",
	}
	if diff := cmp.Diff(wantFiles, files); diff != "" {
		t.Errorf("volume files (-want +got):\n%s", diff)
	}
	for _, d := range []string{vdir("empty-dir", "scratch"), vdir("empty-dir", "mem")} {
		if info, err := os.Stat(d); err != nil || info.Mode().Perm() != 0o777 {
			t.Errorf("emptyDir %s: %v, %v", d, info, err)
		}
	}
	if entries, err := os.ReadDir(vdir("configmap", "missing-optional")); err != nil || len(entries) != 2 || entries[1].Name() != "..data" {
		t.Errorf("the missing optional configMap's volume: %v, %v", entries, err)
	}
	if info, err := os.Stat(hostDir); err != nil || !info.IsDir() {
		t.Errorf("DirectoryOrCreate did not create %s: %v", hostDir, err)
	}
	if diff := cmp.Diff([]string{"ns/robot audiences=[api] exp=3607 pod=web/uid-1"}, vols.tokenRequests()); diff != "" {
		t.Errorf("token requests (-want +got):\n%s", diff)
	}

	// Another sync changes nothing and asks for no new token.
	ts, _ := os.Readlink(vdir("projected", "kube-api-access-x1") + "/..data")
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Readlink(vdir("projected", "kube-api-access-x1") + "/..data"); again != ts || len(vols.tokenRequests()) != 1 {
		t.Errorf("a second sync rewrote the projected volume (%s, was %s) or asked for a token (%v)", again, ts, vols.tokenRequests())
	}

	if err := h.rt.KillPod(t.Context(), pod, nil, 30); err != nil {
		t.Fatal(err)
	}
	if err := h.rt.CleanupPod(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "pods", string(pod.UID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the pod's directory is still there after CleanupPod: %v", err)
	}
	if _, err := os.Stat(hostDir); err != nil {
		t.Errorf("CleanupPod removed the hostPath %s: %v", hostDir, err)
	}
}

// A missing mandatory configMap: nothing starts, the kubelet's FailedMount events and the
// ErrVolumes error with "unmounted volumes=[...]"; once it exists the pod starts.
func TestVolumesMissingConfigMap(t *testing.T) {
	h, vols, _ := volumeHarness(t)
	pod := fakePod(v1.RestartPolicyAlways, "app")
	pod.Spec.Volumes = []v1.Volume{
		{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "keys", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec", Items: []v1.KeyToPath{{Key: "k", Path: "k"}}}}},
	}
	vols.secrets["ns/sec"] = &v1.Secret{Data: map[string][]byte{"other": []byte("x")}}
	h.images["img:1"] = true
	err := h.sync(t, pod)
	if !errors.Is(err, cri.ErrVolumes) {
		t.Fatalf("SyncPod = %v, want ErrVolumes", err)
	}
	if cs, sbs := h.snapshot(); len(cs) != 0 || len(sbs) != 0 {
		t.Errorf("started %d containers and %d sandboxes without the volumes", len(cs), len(sbs))
	}
	want := []string{
		`Warning FailedMount: MountVolume.SetUp failed for volume "config" : configmap "cfg" not found`,
		`Warning FailedMount: MountVolume.SetUp failed for volume "keys" : references non-existent secret key: k`,
		`Warning FailedMount: Unable to attach or mount volumes: unmounted volumes=[config keys], unattached volumes=[], failed to process volumes=[]: configmap "cfg" not found`,
	}
	if diff := cmp.Diff(want, h.eventsWith("FailedMount")); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if !strings.Contains(err.Error(), "unmounted volumes=[config keys]") {
		t.Errorf("error %v", err)
	}
	vols.setConfigMap("ns", "cfg", map[string]string{"a": "1"})
	vols.secrets["ns/sec"].Data["k"] = []byte("v")
	if err := h.sync(t, pod); err != nil {
		t.Fatalf("SyncPod with the objects there = %v", err)
	}
	if cs, _ := h.snapshot(); len(cs["app"]) != 1 {
		t.Errorf("containers %v", cs)
	}
}

// A configMap change shows up in the mounted file (a ..data swap), at the next SyncPod
// and at the periodic update; a label change in a downwardAPI volume too.
func TestVolumesUpdatedInPlace(t *testing.T) {
	h, vols, root := volumeHarness(t)
	vols.setConfigMap("ns", "cfg", map[string]string{"a": "1", "gone": "x"})
	pod := fakePod(v1.RestartPolicyAlways, "app")
	pod.Spec.Volumes = []v1.Volume{
		{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "podinfo", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
	}
	h.images["img:1"] = true
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "pods", string(pod.UID), "volumes", "kubernetes.io~configmap", "config")
	info := filepath.Join(root, "pods", string(pod.UID), "volumes", "kubernetes.io~downward-api", "podinfo", "labels")
	ts1, _ := os.Readlink(filepath.Join(dir, "..data"))

	vols.setConfigMap("ns", "cfg", map[string]string{"a": "2"})
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	if got := fileOf(t, filepath.Join(dir, "a")); got != "2 0644" {
		t.Errorf("after SyncPod, a = %s", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the removed key is still there: %v", err)
	}
	if ts2, _ := os.Readlink(filepath.Join(dir, "..data")); ts2 == ts1 {
		t.Errorf("..data still names %s", ts1)
	}

	vols.setConfigMap("ns", "cfg", map[string]string{"a": "3"})
	updated := pod.DeepCopy()
	updated.Labels["tier"] = "front"
	if err := h.sync(t, updated); err != nil { // the node's SyncPod with the new labels
		t.Fatal(err)
	}
	vols.setConfigMap("ns", "cfg", map[string]string{"a": "4"})
	h.rt.ResyncVolumes(t.Context())
	if got := fileOf(t, filepath.Join(dir, "a")); got != "4 0644" {
		t.Errorf("after the periodic update, a = %s", got)
	}
	if got := fileOf(t, info); got != "app=\"web\"\ntier=\"front\" 0644" {
		t.Errorf("labels = %s", got)
	}
	// After CleanupPod the periodic update writes nothing.
	if err := h.rt.KillPod(t.Context(), pod, nil, 30); err != nil {
		t.Fatal(err)
	}
	if err := h.rt.CleanupPod(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	h.rt.ResyncVolumes(t.Context())
	if _, err := os.Stat(filepath.Join(root, "pods", string(pod.UID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the pod's directory came back: %v", err)
	}
}

// The service account token is rotated at 80% of its lifetime by the periodic update
// (fake clock), not before.
func TestVolumesTokenRotated(t *testing.T) {
	h, vols, root := volumeHarness(t)
	pod := fakePod(v1.RestartPolicyAlways, "app")
	pod.Spec.Volumes = []v1.Volume{{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}}}}}}}
	h.images["img:1"] = true
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "pods", string(pod.UID), "volumes", "kubernetes.io~projected", "token", "token")
	h.clock.Step(48*time.Minute - 11*time.Second) // 80% less the largest jitter
	h.rt.ResyncVolumes(t.Context())
	if got := fileOf(t, file); got != "token-1 0644" {
		t.Errorf("before 80%%: %s", got)
	}
	h.clock.Step(12 * time.Second)
	h.rt.ResyncVolumes(t.Context())
	if got := fileOf(t, file); got != "token-2 0644" {
		t.Errorf("past 80%%: %s", got)
	}
	if diff := cmp.Diff([]string{"ns/default audiences=[] exp=3600 pod=web/uid-1", "ns/default audiences=[] exp=3600 pod=web/uid-1"}, vols.tokenRequests()); diff != "" {
		t.Errorf("token requests (-want +got):\n%s", diff)
	}
}

// subPathExpr from the downward API, and the kubelet's CreateContainerConfigError for a
// subPath that expands to ".." or an absolute path (the sig-node Variable Expansion tests).
func TestVolumesSubPathExpr(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     v1.EnvVar
		want    string // the mount's host path under the emptyDir
		wantErr string
	}{
		{name: "from the pod's name", env: v1.EnvVar{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}, want: "/web"},
		{name: "backsteps", env: v1.EnvVar{Name: "POD_NAME", Value: ".."}, wantErr: "unable to provision SubPath `..`: must not contain '..'"},
		{name: "absolute path", env: v1.EnvVar{Name: "POD_NAME", Value: "/tmp"}, wantErr: "error SubPath `/tmp` must not be an absolute path"},
		{name: "missing variable", env: v1.EnvVar{Name: "OTHER", Value: "x"}, wantErr: "missing value for POD_NAME"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _, root := volumeHarness(t)
			pod := fakePod(v1.RestartPolicyAlways, "app")
			pod.Spec.Volumes = []v1.Volume{{Name: "workdir1", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
			pod.Spec.Containers[0].Env = []v1.EnvVar{tc.env}
			pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "workdir1", MountPath: "/logscontainer", SubPathExpr: "$(POD_NAME)"}}
			h.images["img:1"] = true
			err := h.sync(t, pod)
			if tc.wantErr != "" {
				var ce *node.ContainerError
				if !errors.As(err, &ce) || ce.Reason != node.ReasonCreateContainerConfigError || ce.Message != tc.wantErr || !errors.Is(err, cri.ErrCreateContainerConfig) {
					t.Fatalf("SyncPod = %v, want CreateContainerConfigError %q", err, tc.wantErr)
				}
				if diff := cmp.Diff([]string{"Warning Failed: Error: " + tc.wantErr}, h.eventsWith("Failed")); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(root, "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", "workdir1")
			if got := mountsOf(t, h, "app")[0].GetHostPath(); got != dir+tc.want {
				t.Errorf("mount %s, want %s", got, dir+tc.want)
			}
			if info, err := os.Stat(dir + tc.want); err != nil || !info.IsDir() || info.Mode().Perm() != 0o777 {
				t.Errorf("the subPath directory: %v, %v", info, err)
			}
		})
	}
}

// A resourceFieldRef in a downwardAPI volume, a projected one and a subPathExpr resolves
// as the kubelet's (ExtractResourceValueByContainerNameAndNodeAllocatable): a limit the
// container does not set is the node's allocatable (Config.Env.Allocatable), not its
// request.
func TestVolumesDownwardAPIResources(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       string // downwardAPI, projected or subPathExpr
		resource string
		divisor  string
		want     string
	}{
		{name: "downwardAPI limits.memory unset", in: "downwardAPI", resource: "limits.memory", want: "8589934592"},
		{name: "downwardAPI limits.memory unset in Mi", in: "downwardAPI", resource: "limits.memory", divisor: "1Mi", want: "8192"},
		{name: "downwardAPI limits.cpu unset", in: "downwardAPI", resource: "limits.cpu", want: "4"},
		{name: "downwardAPI limits.cpu unset in millicores", in: "downwardAPI", resource: "limits.cpu", divisor: "1m", want: "4000"},
		{name: "downwardAPI requests.memory", in: "downwardAPI", resource: "requests.memory", divisor: "1Mi", want: "64"},
		{name: "downwardAPI limits.ephemeral-storage set", in: "downwardAPI", resource: "limits.ephemeral-storage", divisor: "1Gi", want: "2"},
		{name: "projected limits.memory unset", in: "projected", resource: "limits.memory", divisor: "1Gi", want: "8"},
		{name: "projected limits.cpu unset", in: "projected", resource: "limits.cpu", divisor: "1m", want: "4000"},
		{name: "subPathExpr limits.cpu unset", in: "subPathExpr", resource: "limits.cpu", want: "4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _, root := volumeHarness(t, func(c *cri.Config) {
				c.Env.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")}
			})
			pod := fakePod(v1.RestartPolicyAlways, "app")
			app := &pod.Spec.Containers[0]
			app.Resources = v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi"),
					v1.ResourceEphemeralStorage: resource.MustParse("1Gi")},
				Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("2Gi")}}
			ref := &v1.ResourceFieldSelector{ContainerName: "app", Resource: tc.resource}
			if tc.divisor != "" {
				ref.Divisor = resource.MustParse(tc.divisor)
			}
			items := []v1.DownwardAPIVolumeFile{{Path: "value", ResourceFieldRef: ref}}
			var file string
			switch tc.in {
			case "downwardAPI":
				pod.Spec.Volumes = []v1.Volume{{Name: "podinfo", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: items}}}}
				file = "kubernetes.io~downward-api/podinfo/value"
			case "projected":
				pod.Spec.Volumes = []v1.Volume{{Name: "podinfo", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
					Sources: []v1.VolumeProjection{{DownwardAPI: &v1.DownwardAPIProjection{Items: items}}}}}}}
				file = "kubernetes.io~projected/podinfo/value"
			case "subPathExpr":
				pod.Spec.Volumes = []v1.Volume{{Name: "podinfo", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
				app.Env = []v1.EnvVar{{Name: "V", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: tc.resource, Divisor: ref.Divisor}}}}
			}
			mount := v1.VolumeMount{Name: "podinfo", MountPath: "/podinfo"}
			if tc.in == "subPathExpr" {
				mount.SubPathExpr = "$(V)"
			}
			app.VolumeMounts = []v1.VolumeMount{mount}
			h.images["img:1"] = true
			if err := h.sync(t, pod); err != nil {
				t.Fatal(err)
			}
			vols := filepath.Join(root, "pods", string(pod.UID), "volumes")
			var got string
			if tc.in == "subPathExpr" {
				got, _ = filepath.Rel(filepath.Join(vols, "kubernetes.io~empty-dir", "podinfo"), mountsOf(t, h, "app")[0].GetHostPath())
			} else {
				data, err := os.ReadFile(filepath.Join(vols, file))
				if err != nil {
					t.Fatal(err)
				}
				got = string(data)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("value (-want +got):\n%s", diff)
			}
		})
	}
}

// A subPath that leads out of the volume through a symlink is refused.
func TestVolumesSubPathSymlinkEscape(t *testing.T) {
	h, _, root := volumeHarness(t)
	pod := fakePod(v1.RestartPolicyAlways, "app")
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/x", SubPath: "link/inner"}}
	h.images["img:1"] = true
	dir := filepath.Join(root, "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", "data")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	err := h.sync(t, pod)
	var ce *node.ContainerError
	if !errors.As(err, &ce) || ce.Message != `failed to create subPath directory for volumeMount "data" of container "app"` {
		t.Fatalf("SyncPod = %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "inner")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("created outside the volume: %v", err)
	}
}

// A hostPath that fails its type check keeps the pod from starting, with the kubelet's
// message.
func TestVolumesHostPathTypeCheck(t *testing.T) {
	h, _, _ := volumeHarness(t)
	pod := fakePod(v1.RestartPolicyAlways, "app")
	missing := filepath.Join(t.TempDir(), "nope")
	pod.Spec.Volumes = []v1.Volume{{Name: "sock", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: missing, Type: ptr.To(v1.HostPathSocket)}}}}
	h.images["img:1"] = true
	if err := h.sync(t, pod); !errors.Is(err, cri.ErrVolumes) {
		t.Fatalf("SyncPod = %v", err)
	}
	want := fmt.Sprintf(`Warning FailedMount: MountVolume.SetUp failed for volume "sock" : hostPath type check failed, %s is not a socket file, unable to determine its type: stat %s: no such file or directory`, missing, missing)
	if got := h.eventsWith("FailedMount"); len(got) == 0 || got[0] != want {
		t.Errorf("events %q, want first %q", got, want)
	}
}

// As root, a Memory emptyDir is a tmpfs of its sizeLimit, unmounted by CleanupPod.
func TestVolumesMemoryTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	root := t.TempDir()
	h := newHarness(t, func(c *cri.Config) { c.RootDir = root })
	pod := fakePod(v1.RestartPolicyAlways, "app")
	limit := resource.MustParse("8Mi")
	pod.Spec.Volumes = []v1.Volume{{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &limit}}}}
	h.images["img:1"] = true
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", "mem")
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if !strings.Contains(string(mounts), " "+dir+" ") {
		// No right to mount here (a container without CAP_SYS_ADMIN): a directory.
		t.Logf("no tmpfs mounted on %s (no right to mount?)", dir)
	} else if !strings.Contains(string(mounts), "size=8192k") {
		t.Errorf("the tmpfs's size is not the sizeLimit:\n%s", mounts)
	}
	if err := h.rt.KillPod(t.Context(), pod, nil, 30); err != nil {
		t.Fatal(err)
	}
	if err := h.rt.CleanupPod(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), dir) {
		t.Errorf("still mounted after CleanupPod")
	}
	if _, err := os.Stat(filepath.Join(root, "pods", string(pod.UID))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the pod's directory is still there: %v", err)
	}
}

// A runtime started again over a running pod whose configMap is gone keeps the volume's
// contents and starts the pod's containers (the kubelet's reconstructed volumes).
func TestVolumesKeptAcrossRestart(t *testing.T) {
	h, vols, root := volumeHarness(t)
	vols.setConfigMap("ns", "cfg", map[string]string{"a": "1"})
	pod := fakePod(v1.RestartPolicyAlways, "app")
	pod.Spec.Volumes = []v1.Volume{{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}}
	h.images["img:1"] = true
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	h.exitContainer(t, "app", 1)
	vols.mu.Lock()
	delete(vols.configMaps, "ns/cfg")
	vols.mu.Unlock()
	again, err := cri.New(cri.Config{Endpoint: h.endpoint, LogRoot: h.logRoot, Clock: h.clock, RootDir: root, Volumes: vols, MemoryVolumesOnDisk: true})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	st, err := again.PodStatus(t.Context(), pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if err := again.SyncPod(t.Context(), pod, st); err != nil {
		t.Fatalf("SyncPod after a restart with the configMap gone = %v", err)
	}
	if cs, _ := h.snapshot(); len(cs["app"]) != 2 {
		t.Errorf("the exited container was not started again: %d instances", len(cs["app"]))
	}
	file := filepath.Join(root, "pods", string(pod.UID), "volumes", "kubernetes.io~configmap", "config", "a")
	if got := fileOf(t, file); got != "1 0644" {
		t.Errorf("a = %s", got)
	}
}
