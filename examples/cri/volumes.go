package cri

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Defaults of the volume part of Config.
const (
	// DefaultRootDir is Config.RootDir's default (the kubelet's is /var/lib/kubelet).
	DefaultRootDir = "/var/lib/podlife"
	// DefaultVolumeResync is Config.VolumeResync's default: how often the configMap,
	// secret, downwardAPI and projected volumes of the running pods are brought up to date
	// (the kubelet's pod resync is 1 min).
	DefaultVolumeResync = time.Minute
	// defaultVolumeMode is the API server's default of a volume's defaultMode (0644).
	defaultVolumeMode int32 = 0o644
)

// ErrVolumes is wrapped by SyncPod's error when a pod's volumes cannot all be set up (a
// mandatory configMap or secret is missing, a hostPath fails its type check, ...): no
// container of the pod is started, and the pod waits (ContainerCreating) until they can.
var ErrVolumes = errors.New("cri: volumes not mounted")

// ErrCreateContainerConfig: a container's mounts cannot be made (a subPath that is
// absolute or has "..", a subPathExpr with a variable missing, ...); SyncPod returns it
// in a *node.ContainerError with reason CreateContainerConfigError and the kubelet's
// message.
var ErrCreateContainerConfig = errors.New("cri: CreateContainerConfigError")

// VolumeClient reads what the pods' volumes project: ConfigMaps, Secrets and service
// account tokens (the TokenRequest API). A node's client may: the Node authorizer lets
// it GET the ConfigMaps and Secrets and request tokens for the service accounts of the
// pods bound to it. ClientVolumes wraps a client-go clientset.
type VolumeClient interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
	// CreateToken is POST serviceaccounts/<serviceAccount>/token.
	CreateToken(ctx context.Context, namespace, serviceAccount string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// errVolumesGone: a periodic update came after the pod's cleanup.
var errVolumesGone = errors.New("cri: the pod's volumes were cleaned up")

// The kubelet's volume plugin directory names under a pod's volumes directory.
const (
	pluginEmptyDir    = "kubernetes.io~empty-dir"
	pluginConfigMap   = "kubernetes.io~configmap"
	pluginSecret      = "kubernetes.io~secret"
	pluginDownwardAPI = "kubernetes.io~downward-api"
	pluginProjected   = "kubernetes.io~projected"
)

// volumeManager keeps which volumes of which pods are set up, and the last pod object
// of each for the periodic update.
type volumeManager struct {
	tokens *tokenCache

	mu   sync.Mutex
	pods map[types.UID]*podVolumes
}

type podVolumes struct {
	pod     *v1.Pod         // the last one SyncPod saw; guarded by volumeManager.mu
	mounted map[string]bool // volumes set up once; guarded by volumeManager.mu
	// write serializes the writes to this pod's volume directories (SyncPod and the
	// periodic update). The client is never called under it.
	write sync.Mutex
	// gone: the pod's volumes were cleaned up; guarded by write.
	gone bool
}

func newVolumeManager(r *Runtime) *volumeManager {
	return &volumeManager{tokens: newTokenCache(r.clock), pods: map[types.UID]*podVolumes{}}
}

// track records pod as its UID's latest object.
func (m *volumeManager) track(pod *v1.Pod) *podVolumes {
	m.mu.Lock()
	defer m.mu.Unlock()
	pv := m.pods[pod.UID]
	if pv == nil {
		pv = &podVolumes{mounted: map[string]bool{}}
		m.pods[pod.UID] = pv
	}
	pv.pod = pod
	return pv
}

func (m *volumeManager) isMounted(pv *podVolumes, name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return pv.mounted[name]
}

func (m *volumeManager) setMounted(pv *podVolumes, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pv.mounted[name] = true
}

// podDir is the pod's directory under the root, as the kubelet's pods/<uid>.
func (r *Runtime) podDir(uid types.UID) string {
	return filepath.Join(r.cfg.RootDir, "pods", string(uid))
}

// volumeDir is where a volume of a plugin lives: pods/<uid>/volumes/<plugin>/<name>.
func (r *Runtime) volumeDir(uid types.UID, plugin, name string) string {
	return filepath.Join(r.podDir(uid), "volumes", plugin, name)
}

// volumeHostPath is the host path of v and whether the runtime mounts it read-only
// whatever the volumeMount says (the kubelet's API-data volumes are).
func (r *Runtime) volumeHostPath(pod *v1.Pod, v *v1.Volume) (string, bool, error) {
	switch {
	case v.HostPath != nil:
		return v.HostPath.Path, false, nil
	case v.EmptyDir != nil:
		return r.volumeDir(pod.UID, pluginEmptyDir, v.Name), false, nil
	case v.ConfigMap != nil:
		return r.volumeDir(pod.UID, pluginConfigMap, v.Name), true, nil
	case v.Secret != nil:
		return r.volumeDir(pod.UID, pluginSecret, v.Name), true, nil
	case v.DownwardAPI != nil:
		return r.volumeDir(pod.UID, pluginDownwardAPI, v.Name), true, nil
	case v.Projected != nil:
		return r.volumeDir(pod.UID, pluginProjected, v.Name), true, nil
	}
	return "", false, fmt.Errorf("volume %q: unsupported volume type (podlife's cri mounts emptyDir, hostPath, configMap, secret, downwardAPI and projected)", v.Name)
}

// setupVolumes sets the pod's volumes up before any of its containers starts, and brings
// the contents of those set up already up to date, as the kubelet's volume manager does
// before a pod's sync goes on (WaitForAttachAndMount). A volume that cannot be set up
// gets the kubelet's FailedMount event (`MountVolume.SetUp failed for volume "x" : ...`),
// and the pod the kubelet's "Unable to attach or mount volumes: unmounted volumes=[...]"
// event and error (ErrVolumes): SyncPod starts nothing. A volume set up before that fails
// to update keeps its contents (logged).
func (r *Runtime) setupVolumes(ctx context.Context, pod *v1.Pod) error {
	if len(pod.Spec.Volumes) == 0 {
		return nil
	}
	pv := r.vols.track(pod)
	var failed []string
	var first error
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if err := r.setupVolume(ctx, pod, pv, v); err != nil {
			if r.vols.isMounted(pv, v.Name) || r.writtenBefore(pod, v) {
				r.log.Warn("volume update failed", "pod", pod.Namespace+"/"+pod.Name, "volume", v.Name, "err", err)
				continue
			}
			r.event(pod, v1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed for volume %q : %v", v.Name, err)
			failed = append(failed, v.Name)
			if first == nil {
				first = err
			}
			continue
		}
		r.vols.setMounted(pv, v.Name)
	}
	if len(failed) == 0 {
		return nil
	}
	slices.Sort(failed)
	msg := fmt.Sprintf("unmounted volumes=%v, unattached volumes=[], failed to process volumes=[]: %v", failed, first)
	r.event(pod, v1.EventTypeWarning, "FailedMount", "Unable to attach or mount volumes: %s", msg)
	return fmt.Errorf("%w: pod %s/%s: %s", ErrVolumes, pod.Namespace, pod.Name, msg)
}

// writtenBefore reports whether an API-data volume has contents from before (a runtime
// started again over running pods): like the kubelet's reconstructed volumes, it counts
// as mounted, and a failed update keeps its contents.
func (r *Runtime) writtenBefore(pod *v1.Pod, v *v1.Volume) bool {
	if v.ConfigMap == nil && v.Secret == nil && v.DownwardAPI == nil && v.Projected == nil {
		return false
	}
	dir, _, err := r.volumeHostPath(pod, v)
	if err != nil {
		return false
	}
	_, err = os.Lstat(filepath.Join(dir, dataDirName))
	return err == nil
}

// setupVolume sets one volume up (or updates it). The API objects are read first, the
// files written afterwards under the pod's write lock.
func (r *Runtime) setupVolume(ctx context.Context, pod *v1.Pod, pv *podVolumes, v *v1.Volume) error {
	switch {
	case v.HostPath != nil:
		return checkHostPath(v.HostPath)
	case v.EmptyDir != nil:
		pv.write.Lock()
		defer pv.write.Unlock()
		if pv.gone {
			return errVolumesGone
		}
		return r.setupEmptyDir(pod, v)
	}
	dir, _, err := r.volumeHostPath(pod, v)
	if err != nil {
		return err
	}
	var payload map[string]fileProjection
	memory := false
	switch {
	case v.ConfigMap != nil:
		payload, err = r.configMapVolumePayload(ctx, pod, v.ConfigMap)
	case v.Secret != nil:
		payload, err = r.secretVolumePayload(ctx, pod, v.Secret)
		memory = true
	case v.DownwardAPI != nil:
		payload, err = downwardAPIPayload(pod, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode, r.cfg.Env.Allocatable)
	case v.Projected != nil:
		payload, err = r.projectedPayload(ctx, pod, v.Projected)
		memory = true
	}
	if err != nil {
		return err
	}
	pv.write.Lock()
	defer pv.write.Unlock()
	if pv.gone {
		return errVolumesGone
	}
	if err := r.volumeDirFor(dir, memory, nil); err != nil {
		return err
	}
	_, err = writeAtomic(dir, payload, r.clock.Now())
	return err
}

// volumeDirFor makes a volume's directory (mode 0777, as the kubelet's emptyDir and the
// API-data volumes' wrapped emptyDir), on a tmpfs when memory is set unless
// Config.MemoryVolumesOnDisk says otherwise or mounting is not allowed (then on disk,
// logged once per directory).
func (r *Runtime) volumeDirFor(dir string, memory bool, size *int64) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if !memory || r.cfg.MemoryVolumesOnDisk {
		return nil
	}
	if mounted, err := isMountPoint(dir); err != nil || mounted {
		return err
	}
	if err := mountTmpfs(dir, size); err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, errNoMount) {
			r.log.Warn("volume on disk: cannot mount a tmpfs", "dir", dir, "err", err)
			return nil
		}
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// setupEmptyDir makes an emptyDir: a 0777 directory, on a tmpfs for medium Memory (its
// size the sizeLimit when set). A disk emptyDir's sizeLimit is not enforced here (the
// kubelet's eviction manager does it).
func (r *Runtime) setupEmptyDir(pod *v1.Pod, v *v1.Volume) error {
	dir := r.volumeDir(pod.UID, pluginEmptyDir, v.Name)
	switch v.EmptyDir.Medium {
	case v1.StorageMediumDefault:
		return r.volumeDirFor(dir, false, nil)
	case v1.StorageMediumMemory:
		var size *int64
		if l := v.EmptyDir.SizeLimit; l != nil && !l.IsZero() {
			s := l.Value()
			size = &s
		}
		return r.volumeDirFor(dir, true, size)
	}
	return fmt.Errorf("unsupported emptyDir medium %q", v.EmptyDir.Medium)
}

// checkHostPath is the kubelet's hostPath SetUp: no ".." in the path, then the type check
// (the OrCreate types create a missing directory 0755 or an empty file 0644).
func checkHostPath(hp *v1.HostPathVolumeSource) error {
	if slices.Contains(strings.Split(filepath.ToSlash(hp.Path), "/"), "..") {
		return fmt.Errorf("invalid HostPath `%s`: must not contain '..'", hp.Path)
	}
	if hp.Type == nil || *hp.Type == v1.HostPathUnset {
		return nil
	}
	p := hp.Path
	exists := false
	if _, err := os.Stat(p); err == nil {
		exists = true
	}
	matches := func(want v1.HostPathType, expected string) error {
		got, err := fileType(p)
		if err != nil {
			return fmt.Errorf("hostPath type check failed, %s is not a %s, unable to determine its type: %w", p, expected, err)
		}
		if got != want {
			return fmt.Errorf("hostPath type check failed: %s is not a %s, it's a %s", p, expected, got)
		}
		return nil
	}
	switch *hp.Type {
	case v1.HostPathDirectoryOrCreate:
		if !exists {
			return os.MkdirAll(p, 0o755)
		}
		return matches(v1.HostPathDirectory, "directory")
	case v1.HostPathDirectory:
		return matches(v1.HostPathDirectory, "directory")
	case v1.HostPathFileOrCreate:
		if !exists {
			f, err := os.OpenFile(p, os.O_CREATE, 0o644)
			if f != nil {
				f.Close()
			}
			if err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			return nil
		}
		return matches(v1.HostPathFile, "file")
	case v1.HostPathFile:
		return matches(v1.HostPathFile, "file")
	case v1.HostPathSocket:
		return matches(v1.HostPathSocket, "socket file")
	case v1.HostPathCharDev:
		return matches(v1.HostPathCharDev, "character device")
	case v1.HostPathBlockDev:
		return matches(v1.HostPathBlockDev, "block device")
	}
	return fmt.Errorf("%s is an invalid volume type", *hp.Type)
}

// fileType is the kubelet's hostutil GetFileType.
func fileType(p string) (v1.HostPathType, error) {
	info, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	switch m := info.Mode(); {
	case m.IsDir():
		return v1.HostPathDirectory, nil
	case m.IsRegular():
		return v1.HostPathFile, nil
	case m&fs.ModeSocket != 0:
		return v1.HostPathSocket, nil
	case m&fs.ModeCharDevice != 0:
		return v1.HostPathCharDev, nil
	case m&fs.ModeDevice != 0:
		return v1.HostPathBlockDev, nil
	}
	return "", fmt.Errorf("only recognise file, directory, socket, block device and character device")
}

// getConfigMap and getSecret read through Config.Volumes; a missing object's error reads
// as the kubelet's (configmap "y" not found).
func (r *Runtime) getConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	if r.cfg.Volumes == nil {
		return nil, fmt.Errorf("cannot get configmap %q: no cri.Config.Volumes client", name)
	}
	cm, err := r.cfg.Volumes.GetConfigMap(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmap"}, name)
	}
	if err == nil && cm == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmap"}, name)
	}
	return cm, err
}

func (r *Runtime) getSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	if r.cfg.Volumes == nil {
		return nil, fmt.Errorf("cannot get secret %q: no cri.Config.Volumes client", name)
	}
	s, err := r.cfg.Volumes.GetSecret(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secret"}, name)
	}
	if err == nil && s == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secret"}, name)
	}
	return s, err
}

func modeOr(m *int32, def int32) int32 {
	if m != nil {
		return *m
	}
	return def
}

// keyPayload is the kubelet's configmap/secret MakePayload: every key, or the items (a
// missing key is an error unless optional), each with its mode or the default mode.
func keyPayload(items []v1.KeyToPath, data map[string][]byte, defaultMode *int32, optional bool, missing string) (map[string]fileProjection, error) {
	mode := modeOr(defaultMode, defaultVolumeMode)
	payload := make(map[string]fileProjection, len(data))
	if len(items) == 0 {
		for k, d := range data {
			payload[k] = fileProjection{Data: d, Mode: mode}
		}
		return payload, nil
	}
	for _, it := range items {
		d, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%s: %s", missing, it.Key)
		}
		payload[it.Path] = fileProjection{Data: d, Mode: modeOr(it.Mode, mode)}
	}
	return payload, nil
}

func configMapData(cm *v1.ConfigMap) map[string][]byte {
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		if _, ok := data[k]; !ok {
			data[k] = v
		}
	}
	return data
}
