package cri

import (
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

var _ node.StatusGenerator = (*Runtime)(nil)

// APIStatus completes the status the node generated, as the kubelet writes it for a CRI
// runtime: container IDs are <runtime name>://<id> (containerd://...), and a hostNetwork
// pod's IPs are the node's.
func (r *Runtime) APIStatus(pod *v1.Pod, _ *pleg.PodStatus, generated v1.PodStatus, _ bool) v1.PodStatus {
	st := *generated.DeepCopy()
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range list {
			cs := &list[i]
			cs.ContainerID = r.containerID(cs.ContainerID)
			if t := cs.State.Terminated; t != nil {
				t.ContainerID = r.containerID(t.ContainerID)
			}
			if t := cs.LastTerminationState.Terminated; t != nil {
				t.ContainerID = r.containerID(t.ContainerID)
			}
		}
	}
	if pod != nil && pod.Spec.HostNetwork && len(st.PodIPs) == 0 && len(st.HostIPs) > 0 {
		st.PodIP = st.HostIPs[0].IP
		for _, ip := range st.HostIPs {
			st.PodIPs = append(st.PodIPs, v1.PodIP{IP: ip.IP})
		}
	}
	return st
}

// ContainerIDPrefix is "<runtime name>://" (containerd://), the scheme of the container
// IDs in pod statuses.
func (r *Runtime) ContainerIDPrefix() string { return r.runtimeName + "://" }

// containerID rewrites id (bare, or with any scheme) with the runtime's scheme.
func (r *Runtime) containerID(id string) string {
	if id == "" {
		return ""
	}
	if i := strings.Index(id, "://"); i >= 0 {
		id = id[i+3:]
	}
	return r.ContainerIDPrefix() + id
}
