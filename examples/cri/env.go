package cri

import (
	"context"
	"slices"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/examples/envvar"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

// EnvConfig is what the runtime needs to make containers' environments as the kubelet
// does (package examples/envvar): the node's client for ConfigMaps, Secrets and
// services, its allocatable and addresses.
type EnvConfig struct {
	// Getter reads the ConfigMaps and Secrets of env and envFrom (envvar.ClientGetter of
	// the node's client); nil: a container that refers to one fails with
	// CreateContainerConfigError, as on a kubelet without a client.
	Getter envvar.Getter
	// Services lists services for the service environment variables
	// (enableServiceLinks); nil: none.
	Services envvar.ServiceLister
	// Allocatable is the node's allocatable: the value of a resourceFieldRef to a cpu,
	// memory or ephemeral-storage limit the container does not set, in its environment,
	// a subPathExpr and a downwardAPI or projected volume alike (envvar.ResourceValue, as
	// the kubelet's); nil: such a limit is 0 (never the request).
	Allocatable v1.ResourceList
	// HostIPs are the node's addresses (status.hostIP and hostIPs; a hostNetwork pod's
	// podIPs); empty: the pod's status.
	HostIPs []string
}

// containerEnv returns c's environment and its command and args with $(VAR) expanded, as
// the kubelet's generateContainerConfig. An environment that cannot be made (a missing
// mandatory ConfigMap, Secret or key) is a *node.ContainerError with reason
// CreateContainerConfigError and the kubelet's message, and a Failed event.
func (r *Runtime) containerEnv(ctx context.Context, pod *v1.Pod, c *v1.Container, status *pleg.PodStatus,
	sandboxID string) (envs []*runtimeapi.KeyValue, command, args []string, err error) {
	ec := r.cfg.Env
	res := &envvar.Resolver{Getter: ec.Getter, Services: ec.Services, Allocatable: ec.Allocatable, HostIPs: ec.HostIPs}
	env, err := res.Env(ctx, pod, c, r.podIPs(ctx, pod, c, status, sandboxID))
	if err != nil {
		r.event(pod, v1.EventTypeWarning, "Failed", "Error: %v", err)
		return nil, nil, nil, containerError(c, node.ReasonCreateContainerConfigError, err.Error(), err)
	}
	for _, e := range env {
		envs = append(envs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
	}
	command, args = envvar.ExpandCommandAndArgs(c, env)
	return envs, command, args, nil
}

// podIPs are the pod's IPs for status.podIP(s): the sandbox's (read from the CRI when it
// was just created, only if c asks for them), a hostNetwork pod's the node's.
func (r *Runtime) podIPs(ctx context.Context, pod *v1.Pod, c *v1.Container, status *pleg.PodStatus, sandboxID string) []string {
	var ips []string
	switch {
	case pod.Spec.HostNetwork:
		ips = r.cfg.Env.HostIPs
	case status != nil && len(status.SandboxStatuses) > 0 && status.SandboxStatuses[0].ID == sandboxID:
		ips = status.IPs
	case slices.ContainsFunc(c.Env, func(e v1.EnvVar) bool {
		return e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			(e.ValueFrom.FieldRef.FieldPath == "status.podIP" || e.ValueFrom.FieldRef.FieldPath == "status.podIPs")
	}):
		resp, err := r.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sandboxID})
		if err != nil {
			r.log.Debug("PodSandboxStatus for the pod's IPs", "pod", pod.Namespace+"/"+pod.Name, "err", err)
			break
		}
		if n := resp.GetStatus().GetNetwork(); n != nil && n.GetIp() != "" {
			ips = append(ips, n.GetIp())
			for _, ip := range n.GetAdditionalIps() {
				ips = append(ips, ip.GetIp())
			}
		}
	}
	if ips == nil && !pod.Spec.HostNetwork {
		ips = []string{} // not the pod's status, which is older than its sandbox
	}
	return ips
}

// execCommand is an exec probe's or hook's command with $(VAR) expanded from the
// container's literal env values (the kubelet's ExpandContainerCommandOnlyStatic).
func execCommand(c *v1.Container, cmd []string) []string {
	if c == nil {
		return cmd
	}
	return envvar.ExpandCommandOnlyStatic(cmd, c.Env)
}
