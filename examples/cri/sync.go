package cri

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	grpcstatus "google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

// SyncPod brings the pod to its spec (see computePodActions): it kills what is left of a
// sandbox that is not ready, creates a new one, starts the next init container or the
// containers that must (re)start. A container that is not started says why as a
// *node.ContainerError with the kubelet's reason and message (CrashLoopBackOff,
// ErrImagePull, ImagePullBackOff, ErrImageNeverPull, InvalidImageName,
// CreateContainerError, RunContainerError); the others are started, and the errors are
// joined with errors.Join. A nil status is read from the runtime.
func (r *Runtime) SyncPod(ctx context.Context, pod *v1.Pod, status *pleg.PodStatus) error {
	if pod == nil || pod.UID == "" {
		return errors.New("cri: SyncPod: pod without a UID")
	}
	if status == nil {
		var err error
		if status, err = r.PodStatus(ctx, pod.UID, pod.Name, pod.Namespace); err != nil {
			return err
		}
	}
	justKilled := r.takeProbeKilledUnsynced(status)
	a := computePodActionsStartup(pod, status, r.startupResult, r.killedByProbe)
	r.log.Debug("SyncPod", "pod", pod.Namespace+"/"+pod.Name, "actions", fmt.Sprintf("%+v", a))
	if a.CreateSandbox {
		if err := r.checkNetwork(pod); err != nil {
			return err
		}
	}
	if a.KillPod {
		if err := r.killPod(ctx, pod, status, podGrace(pod)); err != nil {
			return err
		}
	}
	if a.InitFailed {
		return nil // the pod is done; the node sees it Failed
	}
	if err := r.setupVolumes(ctx, pod); err != nil {
		return err // nothing starts before the pod's volumes are set up
	}
	if !a.CreateSandbox && (a.SandboxID == "" || (a.NextInit < 0 && len(a.InitStart) == 0 && len(a.Start) == 0 && len(a.StartEphemeral) == 0)) {
		return nil
	}
	leave, err := r.starting.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	started := false
	defer func() {
		if started {
			r.queueInspection(pod)
		}
	}()
	sandboxID := a.SandboxID
	var sandboxCfg *runtimeapi.PodSandboxConfig
	if a.CreateSandbox {
		sandboxCfg = r.sandboxConfig(pod, a.Attempt)
		if sandboxID, err = r.createSandbox(ctx, pod, sandboxCfg); err != nil {
			return err
		}
		started = true
		// A new sandbox starts its containers' history over only for the kubelet's
		// restart counts; the statuses of the old one's containers stay relevant.
	} else {
		sandboxCfg = r.sandboxConfig(pod, a.Attempt)
		sandboxCfg.Metadata.Attempt = status.SandboxStatuses[0].Attempt
	}

	var errs []error
	start := func(c *v1.Container) {
		if err := r.startContainer(ctx, pod, c, status, justKilled, sandboxID, sandboxCfg); err != nil {
			errs = append(errs, err)
		} else {
			started = true
		}
	}
	for _, i := range a.StartEphemeral { // first, as the kubelet: they run even if an init container fails
		start((*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	if a.NextInit >= 0 {
		errs = append(errs, r.killInit(ctx, pod, a.InitKill)...) // order.Init's kills (sidecar.go)
		start(&pod.Spec.InitContainers[a.NextInit])
	}
	for _, i := range a.InitStart {
		start(&pod.Spec.InitContainers[i])
	}
	for _, i := range a.Start {
		if ctx.Err() != nil {
			break
		}
		start(&pod.Spec.Containers[i])
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// lastExited is the newest exited instance of the named container in status that is not
// one of skip; nil if none.
func lastExited(status *pleg.PodStatus, name string, skip map[string]bool) *pleg.ContainerStatus {
	for _, cs := range status.ContainerStatuses {
		if cs != nil && cs.Name == name && cs.State == pleg.ContainerStateExited && !skip[cs.ID] {
			return cs
		}
	}
	return nil
}

// uncancelled is the context of a RunPodSandbox, CreateContainer or StartContainer call:
// ctx's values without its cancellation, bounded by Config.CallTimeout. A call cut short
// makes containerd kill the shim it is starting and report the container terminated with
// exit code 128, reason StartError; the kubelet lets the call finish and stops the
// container afterwards, as KillPod does here.
func (r *Runtime) uncancelled(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), r.cfg.CallTimeout)
}

// podGrace is the pod's own grace period (for killing what is left of a dead sandbox).
func podGrace(pod *v1.Pod) int64 {
	g := int64(v1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		g = *pod.Spec.TerminationGracePeriodSeconds
	}
	if pod.DeletionGracePeriodSeconds != nil {
		g = *pod.DeletionGracePeriodSeconds
	}
	return max(g, 1)
}

// checkNetwork refuses a pod that needs its own network when PodNetwork says so.
func (r *Runtime) checkNetwork(pod *v1.Pod) error {
	if pod.Spec.HostNetwork || r.cfg.PodNetwork != PodNetworkRefuse {
		return nil
	}
	r.event(pod, v1.EventTypeWarning, "NetworkNotReady",
		"pod %s/%s needs its own network, and this node runs pods only with hostNetwork (no CNI setup; cri.Config.PodNetwork)", pod.Namespace, pod.Name)
	return fmt.Errorf("%w: pod %s/%s is not hostNetwork and the node has no pod network (cri.Config.PodNetwork is %v)",
		ErrPodNetwork, pod.Namespace, pod.Name, r.cfg.PodNetwork)
}

// namespaceOptions are the sandbox's and its containers' namespaces.
func (r *Runtime) namespaceOptions(pod *v1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER,
		Ipc: runtimeapi.NamespaceMode_POD}
	if pod.Spec.HostNetwork || r.cfg.PodNetwork == PodNetworkNode {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostPID {
		ns.Pid = runtimeapi.NamespaceMode_NODE
	} else if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	return ns
}

func (r *Runtime) sandboxConfig(pod *v1.Pod, attempt uint32) *runtimeapi.PodSandboxConfig {
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		LogDirectory: podLogDir(r.cfg.LogRoot, pod.Namespace, pod.Name, pod.UID),
		Labels:       sandboxLabels(pod),
		Annotations:  pod.Annotations,
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: r.namespaceOptions(pod)}},
	}
	if !pod.Spec.HostNetwork {
		// The kubelet's hostname: spec.hostname or the pod's name, cut to 63 characters
		// (a longer one makes RunPodSandbox fail with "sethostname: invalid argument").
		// A pod name is never empty, so the error cannot occur for an admitted pod.
		cfg.Hostname, _ = node.PodHostname(pod)
	}
	return cfg
}

func (r *Runtime) createSandbox(ctx context.Context, pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) (string, error) {
	if err := os.MkdirAll(cfg.LogDirectory, 0o755); err != nil {
		return "", fmt.Errorf("cri: pod log directory: %w", err)
	}
	ctx, cancel := r.uncancelled(ctx)
	defer cancel()
	resp, err := r.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: r.cfg.RuntimeHandler})
	if err != nil {
		r.event(pod, v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		return "", fmt.Errorf("cri: RunPodSandbox %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	r.mu.Lock()
	r.index.addSandbox(pod.UID, resp.GetPodSandboxId())
	r.mu.Unlock()
	return resp.GetPodSandboxId(), nil
}

// pullPolicy is the container's policy, defaulted as the API server does.
func pullPolicy(c *v1.Container) v1.PullPolicy {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	img := c.Image
	if i := strings.LastIndex(img, "@"); i >= 0 {
		return v1.PullIfNotPresent
	}
	if i := strings.LastIndex(img, ":"); i < 0 || strings.Contains(img[i:], "/") || img[i+1:] == "latest" {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// imageRefRE is the image reference grammar (distribution/reference: an optional domain,
// lowercase path components, an optional tag and digest).
var imageRefRE = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?/)?` +
	`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` +
	`(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`)

// checkImageName is the kubelet's applyDefaultImageTag check: an error for a reference
// that does not parse.
func checkImageName(img string) error {
	if img == "" || !imageRefRE.MatchString(img) {
		if img != "" && imageRefRE.MatchString(strings.ToLower(img)) {
			return errors.New("invalid reference format: repository name must be lowercase")
		}
		return errors.New("invalid reference format")
	}
	return nil
}

// podDesc is the kubelet's format.Pod: name_namespace(uid).
func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// containerError is why container c does not run, in the kubelet's words.
func containerError(c *v1.Container, reason, msg string, err error) *node.ContainerError {
	return &node.ContainerError{Container: c.Name, Reason: reason, Message: msg, Err: err}
}

// grpcMessage is a CRI error's message without gRPC's "rpc error: code = ..." prefix,
// as the kubelet shows it.
func grpcMessage(err error) string {
	if s, ok := grpcstatus.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}

// ensureImage makes the container's image present as its pull policy says and returns
// the image reference to create the container with. Its errors are the kubelet's
// image manager's: InvalidImageName, ErrImageNeverPull, ErrImagePull and, while the
// pull back-off (per pod and image) lasts, ImagePullBackOff.
func (r *Runtime) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container, sandboxCfg *runtimeapi.PodSandboxConfig) (string, error) {
	if err := checkImageName(c.Image); err != nil {
		msg := fmt.Sprintf("Failed to apply default image tag %q: %v", c.Image, err)
		r.event(pod, v1.EventTypeWarning, "InspectFailed", "%s", msg)
		return "", containerError(c, node.ReasonInvalidImageName, msg, err)
	}
	spec := &runtimeapi.ImageSpec{Image: c.Image, UserSpecifiedImage: c.Image}
	policy := pullPolicy(c)
	if policy != v1.PullAlways {
		resp, err := r.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec})
		if err != nil {
			return "", fmt.Errorf("cri: ImageStatus %s: %w", c.Image, err)
		}
		if img := resp.GetImage(); img != nil && img.GetId() != "" {
			r.event(pod, v1.EventTypeNormal, "Pulled", "Container image %q already present on machine", c.Image)
			return img.GetId(), nil
		}
		if policy == v1.PullNever {
			msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
			r.event(pod, v1.EventTypeWarning, "ErrImageNeverPull", "%s", msg)
			return "", containerError(c, node.ReasonErrImageNeverPull, msg, ErrImageNeverPull)
		}
	}
	key := backOffKey(pod.Namespace, pod.Name, string(pod.UID), c.Image)
	r.mu.Lock()
	wait, prev := r.pullBackOff.Pending(key, r.clock.Now())
	r.mu.Unlock()
	if wait > 0 {
		msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
		r.event(pod, v1.EventTypeNormal, "BackOff", "%s", msg)
		if prev != "" {
			msg += ": " + prev
		}
		return "", containerError(c, node.ReasonImagePullBackOff, msg, ErrImagePullBackOff)
	}
	r.event(pod, v1.EventTypeNormal, "Pulling", "Pulling image %q", c.Image)
	resp, err := r.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec, SandboxConfig: sandboxCfg})
	if err != nil {
		r.event(pod, v1.EventTypeWarning, "Failed", "Failed to pull image %q: %v", c.Image, err)
		if ctx.Err() != nil {
			return "", fmt.Errorf("cri: PullImage %s: %w", c.Image, err) // cut short, not failed
		}
		r.mu.Lock()
		r.pullBackOff.Failed(key, r.clock.Now(), err.Error())
		r.mu.Unlock()
		return "", containerError(c, node.ReasonErrImagePull, err.Error(), fmt.Errorf("cri: PullImage %s: %w", c.Image, err))
	}
	r.event(pod, v1.EventTypeNormal, "Pulled", "Successfully pulled image %q", c.Image)
	return resp.GetImageRef(), nil
}

// startContainer creates and starts one container, unless it is in crash-loop back-off.
// The back-off is the kubelet's doBackOff: counted from the finish of the container's
// newest exited instance, past the instances justKilled (killed for a probe since the
// last SyncPod: takeProbeKilledUnsynced). Its errors are *node.ContainerError with the
// kubelet's reasons (CrashLoopBackOff, the image's, CreateContainerError,
// RunContainerError).
func (r *Runtime) startContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, status *pleg.PodStatus,
	justKilled map[string]bool, sandboxID string, sandboxCfg *runtimeapi.PodSandboxConfig) error {
	restartCount := 0
	if newest := status.FindContainerStatusByName(c.Name); newest != nil {
		restartCount = newest.RestartCount + 1
		if prev := lastExited(status, c.Name, justKilled); prev != nil && !prev.FinishedAt.IsZero() {
			key := backOffKey(pod.Namespace, pod.Name, string(pod.UID), c.Name)
			r.mu.Lock()
			wait := r.backOff.Wait(key, prev.FinishedAt, r.clock.Now())
			delay := r.backOff.Delay(key)
			if wait == 0 {
				r.backOff.Restarted(key, prev.FinishedAt)
			}
			r.mu.Unlock()
			if wait > 0 {
				r.event(pod, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.Name, podDesc(pod))
				return containerError(c, node.ReasonCrashLoopBackOff,
					fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", delay, c.Name, podDesc(pod)), ErrCrashLoopBackOff)
			}
		}
	}
	imageRef, err := r.ensureImage(ctx, pod, c, sandboxCfg)
	if err != nil {
		return err
	}
	mounts, err := r.containerMounts(pod, c)
	if err == nil {
		mounts, err = r.withTerminationLog(pod, c, mounts)
	}
	if err != nil {
		r.event(pod, v1.EventTypeWarning, "Failed", "Error: %v", err)
		return containerError(c, node.ReasonCreateContainerConfigError, err.Error(), fmt.Errorf("%w: %w", ErrCreateContainerConfig, err))
	}
	envs, command, args, err := r.containerEnv(ctx, pod, c, status, sandboxID)
	if err != nil {
		return err
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(restartCount)},
		Image:       &runtimeapi.ImageSpec{Image: imageRef, UserSpecifiedImage: c.Image},
		Command:     command,
		Args:        args,
		WorkingDir:  c.WorkingDir,
		Labels:      containerLabels(pod, c),
		Annotations: containerAnnotations(pod, c, restartCount),
		LogPath:     containerLogPath(c.Name, restartCount),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Mounts:      mounts,
		Envs:        envs,
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: r.namespaceOptions(pod)}},
	}
	if err := os.MkdirAll(sandboxCfg.LogDirectory+"/"+c.Name, 0o755); err != nil {
		return fmt.Errorf("cri: container log directory: %w", err)
	}
	// Create and start as one step that SyncPod's end does not cut short.
	ctx, cancel := r.uncancelled(ctx)
	defer cancel()
	created, err := r.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sandboxID, Config: cfg, SandboxConfig: sandboxCfg})
	if err != nil {
		r.event(pod, v1.EventTypeWarning, "Failed", "Error: %v", grpcMessage(err))
		return containerError(c, node.ReasonCreateContainerError, grpcMessage(err),
			fmt.Errorf("cri: CreateContainer %s in %s/%s: %w", c.Name, pod.Namespace, pod.Name, err))
	}
	r.mu.Lock()
	r.index.addContainer(pod.UID, created.GetContainerId())
	r.mu.Unlock()
	r.event(pod, v1.EventTypeNormal, "Created", "Created container %s", c.Name)
	if _, err := r.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: created.GetContainerId()}); err != nil {
		r.event(pod, v1.EventTypeWarning, "Failed", "Error: %v", grpcMessage(err))
		return containerError(c, node.ReasonRunContainerError, grpcMessage(err),
			fmt.Errorf("cri: StartContainer %s in %s/%s: %w", c.Name, pod.Namespace, pod.Name, err))
	}
	r.event(pod, v1.EventTypeNormal, "Started", "Started container %s", c.Name)
	return r.runPostStart(ctx, pod, c, created.GetContainerId())
}
