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

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/examples/envvar"
)

// defaultTokenExpiration is the API server's default of a serviceAccountToken
// projection's expirationSeconds.
const defaultTokenExpiration int64 = 3600

func isTrue(b *bool) bool { return b != nil && *b }

// configMapVolumePayload is a configMap volume's files; a missing optional configMap is an
// empty volume.
func (r *Runtime) configMapVolumePayload(ctx context.Context, pod *v1.Pod, src *v1.ConfigMapVolumeSource) (map[string]fileProjection, error) {
	return r.configMapFiles(ctx, pod, src.Name, src.Items, src.DefaultMode, isTrue(src.Optional))
}

func (r *Runtime) configMapFiles(ctx context.Context, pod *v1.Pod, name string, items []v1.KeyToPath, mode *int32, optional bool) (map[string]fileProjection, error) {
	cm, err := r.getConfigMap(ctx, pod.Namespace, name)
	if err != nil {
		if !(apierrors.IsNotFound(err) && optional) {
			return nil, err
		}
		cm = &v1.ConfigMap{}
	}
	return keyPayload(items, configMapData(cm), mode, optional, "configmap references non-existent config key")
}

// secretVolumePayload is a secret volume's files; a missing optional secret is an empty
// volume.
func (r *Runtime) secretVolumePayload(ctx context.Context, pod *v1.Pod, src *v1.SecretVolumeSource) (map[string]fileProjection, error) {
	return r.secretFiles(ctx, pod, src.SecretName, src.Items, src.DefaultMode, isTrue(src.Optional))
}

func (r *Runtime) secretFiles(ctx context.Context, pod *v1.Pod, name string, items []v1.KeyToPath, mode *int32, optional bool) (map[string]fileProjection, error) {
	s, err := r.getSecret(ctx, pod.Namespace, name)
	if err != nil {
		if !(apierrors.IsNotFound(err) && optional) {
			return nil, err
		}
		s = &v1.Secret{}
	}
	return keyPayload(items, s.Data, mode, optional, "references non-existent secret key")
}

// downwardAPIPayload is the kubelet's downwardapi CollectData: each item's field or
// resource (a limit the container does not set is the node's allocatable,
// envvar.ResourceValue), with its mode or the default mode; the errors of all items
// joined.
func downwardAPIPayload(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, defaultMode *int32, allocatable v1.ResourceList) (map[string]fileProjection, error) {
	mode := modeOr(defaultMode, defaultVolumeMode)
	payload := make(map[string]fileProjection, len(items))
	var errs []error
	for _, it := range items {
		f := fileProjection{Mode: modeOr(it.Mode, mode)}
		switch {
		case it.FieldRef != nil:
			v, err := podField(pod, it.FieldRef.FieldPath)
			if err != nil {
				errs = append(errs, err)
			}
			f.Data = []byte(v)
		case it.ResourceFieldRef != nil:
			v, err := envvar.ResourceValue(pod, nil, it.ResourceFieldRef, allocatable)
			if err != nil {
				errs = append(errs, err)
			}
			f.Data = []byte(v)
		}
		payload[filepath.Clean(it.Path)] = f
	}
	return payload, aggregate(errs)
}

// aggregate is utilerrors.NewAggregate's message: the one error, or "[a, b]".
func aggregate(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("[%s]", strings.Join(msgs, ", "))
}

// projectedPayload is the kubelet's projected volume: its secrets, configMaps,
// downwardAPI items and service account tokens in one directory. A token comes from the
// token cache (the TokenRequest API with the audience and expirationSeconds asked, bound
// to the pod), its file the default mode, 0600 with an fsGroup.
func (r *Runtime) projectedPayload(ctx context.Context, pod *v1.Pod, src *v1.ProjectedVolumeSource) (map[string]fileProjection, error) {
	payload := map[string]fileProjection{}
	var errs []error
	add := func(p map[string]fileProjection, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		for k, f := range p {
			payload[k] = f
		}
	}
	mode := modeOr(src.DefaultMode, defaultVolumeMode)
	for _, s := range src.Sources {
		switch {
		case s.Secret != nil:
			add(r.secretFiles(ctx, pod, s.Secret.Name, s.Secret.Items, &mode, isTrue(s.Secret.Optional)))
		case s.ConfigMap != nil:
			add(r.configMapFiles(ctx, pod, s.ConfigMap.Name, s.ConfigMap.Items, &mode, isTrue(s.ConfigMap.Optional)))
		case s.DownwardAPI != nil:
			add(downwardAPIPayload(pod, s.DownwardAPI.Items, &mode, r.cfg.Env.Allocatable))
		case s.ServiceAccountToken != nil:
			tp := s.ServiceAccountToken
			tr, err := r.serviceAccountToken(ctx, pod, tp)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			m := mode
			if pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.FSGroup != nil {
				m = 0o600
			}
			payload[tp.Path] = fileProjection{Data: []byte(tr.Status.Token), Mode: m}
		case s.ClusterTrustBundle != nil:
			errs = append(errs, errors.New("clusterTrustBundle projections are not supported by podlife's cri"))
		}
	}
	return payload, aggregate(errs)
}

// serviceAccountToken asks for (or reuses) the pod's token of a projection.
func (r *Runtime) serviceAccountToken(ctx context.Context, pod *v1.Pod, tp *v1.ServiceAccountTokenProjection) (*authenticationv1.TokenRequest, error) {
	if r.cfg.Volumes == nil {
		return nil, errors.New("failed to fetch token: no cri.Config.Volumes client")
	}
	var auds []string
	if tp.Audience != "" {
		auds = []string{tp.Audience}
	}
	exp := tp.ExpirationSeconds
	if exp == nil {
		d := defaultTokenExpiration
		exp = &d
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: auds, ExpirationSeconds: exp,
		BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}}
	return r.vols.tokens.get(ctx, pod.Namespace, sa, tr, r.cfg.Volumes.CreateToken)
}

// containerMounts is the kubelet's makeMounts: a CRI mount per volumeMount, the volume's
// host path (joined with the subPath, or the subPathExpr expanded from the container's
// environment), read-only when the mount or the volume type says so, with its
// propagation. Its errors are the kubelet's messages (the container then waits with
// CreateContainerConfigError).
func (r *Runtime) containerMounts(pod *v1.Pod, c *v1.Container) ([]*runtimeapi.Mount, error) {
	var mounts []*runtimeapi.Mount
	var env map[string]string
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Spec.Volumes, func(v v1.Volume) bool { return v.Name == m.Name })
		if i < 0 {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", m.Name, c.Name)
		}
		hostPath, ro, err := r.volumeHostPath(pod, &pod.Spec.Volumes[i])
		if err != nil {
			return nil, err
		}
		subPath := m.SubPath
		if m.SubPathExpr != "" {
			if env == nil {
				env = containerEnv(pod, c, r.cfg.Env.Allocatable)
			}
			if subPath, err = expandSubPath(m.SubPathExpr, env); err != nil {
				return nil, err
			}
		}
		if subPath != "" {
			if err := validateSubPath(subPath); err != nil {
				return nil, err
			}
			if hostPath, err = prepareSubPath(hostPath, subPath, m.Name, c.Name); err != nil {
				return nil, err
			}
		}
		prop, err := mountPropagation(m.MountPropagation)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: m.MountPath, HostPath: hostPath,
			Readonly: m.ReadOnly || ro, Propagation: prop})
	}
	return mounts, nil
}

// expandSubPath is the kubelet's ExpandContainerVolumeMounts: $(VAR) from the container's
// environment; a variable missing or empty is an error.
func expandSubPath(expr string, env map[string]string) (string, error) {
	var missing []string
	out := envvar.Expand(expr, func(k string) string {
		v, ok := env[k]
		if !ok || v == "" {
			if !slices.Contains(missing, k) {
				missing = append(missing, k)
			}
		}
		return v
	})
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", fmt.Errorf("missing value for %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// validateSubPath is the kubelet's check of a subPath: relative, without "..".
func validateSubPath(subPath string) error {
	if filepath.IsAbs(subPath) {
		return fmt.Errorf("error SubPath `%s` must not be an absolute path", subPath)
	}
	if slices.Contains(strings.Split(filepath.ToSlash(subPath), "/"), "..") {
		return fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", subPath)
	}
	return nil
}

// prepareSubPath joins the subPath to the volume's path, creates it (a directory with the
// volume's mode) when it is missing, and refuses one that leads out of the volume
// through a symlink. The kubelet bind-mounts the resolved path to close the race between
// this check and the container's mount; this runtime passes the path as it is.
func prepareSubPath(volumePath, subPath, mountName, container string) (string, error) {
	full := filepath.Join(volumePath, subPath)
	base, err := filepath.EvalSymlinks(volumePath)
	if err != nil {
		return "", fmt.Errorf("failed to prepare subPath for volumeMount %q of container %q", mountName, container)
	}
	inside := func(p string) bool {
		resolved, err := filepath.EvalSymlinks(p)
		return err == nil && (resolved == base || strings.HasPrefix(resolved, base+string(os.PathSeparator)))
	}
	if _, err := os.Lstat(full); errors.Is(err, fs.ErrNotExist) {
		existing := filepath.Dir(full)
		for {
			if _, err := os.Lstat(existing); err == nil {
				break
			}
			existing = filepath.Dir(existing)
		}
		info, err := os.Stat(volumePath)
		if err != nil || !inside(existing) {
			return "", fmt.Errorf("failed to create subPath directory for volumeMount %q of container %q", mountName, container)
		}
		if err := os.MkdirAll(full, info.Mode().Perm()); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("failed to create subPath directory for volumeMount %q of container %q", mountName, container)
		}
		// The volume's mode whatever the umask, as the kubelet's SafeMakeDir.
		for d := full; d != existing && len(d) > len(existing); d = filepath.Dir(d) {
			if err := os.Chmod(d, info.Mode().Perm()); err != nil {
				return "", fmt.Errorf("failed to create subPath directory for volumeMount %q of container %q", mountName, container)
			}
		}
	}
	if !inside(full) {
		return "", fmt.Errorf("failed to prepare subPath for volumeMount %q of container %q", mountName, container)
	}
	return full, nil
}

// mountPropagation is the kubelet's translateMountPropagation.
func mountPropagation(m *v1.MountPropagationMode) (runtimeapi.MountPropagation, error) {
	switch {
	case m == nil || *m == v1.MountPropagationNone:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	case *m == v1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, nil
	case *m == v1.MountPropagationBidirectional:
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, nil
	}
	return 0, fmt.Errorf("invalid MountPropagation mode: %q", *m)
}

// cleanupVolumes releases the pod's volumes: its tokens are forgotten, the tmpfs mounts
// under its directory unmounted and the directory removed (hostPath volumes are the
// host's and stay). Nothing is removed while something is still mounted there.
func (r *Runtime) cleanupVolumes(uid types.UID) error {
	r.vols.mu.Lock()
	pv := r.vols.pods[uid]
	delete(r.vols.pods, uid)
	r.vols.mu.Unlock()
	if pv != nil {
		// Wait for a periodic update of the pod writing now.
		pv.write.Lock()
		defer pv.write.Unlock()
		pv.gone = true
	}
	r.vols.tokens.forget(uid)
	dir := r.podDir(uid)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := unmountUnder(dir); err != nil {
		return fmt.Errorf("cri: pod %s's volumes: %w", uid, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("cri: pod %s's directory: %w", uid, err)
	}
	return nil
}

// resyncVolumes brings the configMap, secret, downwardAPI and projected volumes of the
// pods set up already up to date (a changed object, a token to rotate), as the kubelet's
// periodic remount does. Nothing is rewritten when the files are the same.
func (r *Runtime) resyncVolumes(ctx context.Context) {
	r.vols.mu.Lock()
	type item struct {
		pv   *podVolumes
		pod  *v1.Pod
		vols []string
	}
	var items []item
	for _, pv := range r.vols.pods {
		var names []string
		for n := range pv.mounted {
			names = append(names, n)
		}
		items = append(items, item{pv, pv.pod, names})
	}
	r.vols.mu.Unlock()
	for _, it := range items {
		for i := range it.pod.Spec.Volumes {
			v := &it.pod.Spec.Volumes[i]
			if !slices.Contains(it.vols, v.Name) || v.HostPath != nil || v.EmptyDir != nil {
				continue
			}
			if ctx.Err() != nil {
				return
			}
			if err := r.setupVolume(ctx, it.pod, it.pv, v); err != nil {
				r.log.Warn("volume update failed", "pod", it.pod.Namespace+"/"+it.pod.Name, "volume", v.Name, "err", err)
			}
		}
	}
}

// volumeLoop runs resyncVolumes every Config.VolumeResync until stop is closed.
func (r *Runtime) volumeLoop(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-r.clock.After(r.cfg.VolumeResync):
			ctx, cancel := context.WithTimeout(context.Background(), r.cfg.CallTimeout)
			r.resyncVolumes(ctx)
			cancel()
		}
	}
}
