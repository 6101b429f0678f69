package cri

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/types"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ErrNotFound is returned by the kubelet API accessors when the pod or container has no
// sandbox or container on the runtime.
var ErrNotFound = errors.New("cri: not found")

// StreamContainer is one of a pod's containers as the kubelet API needs it: its ID (for
// Exec and Attach), its log file and whether it still runs (a followed log ends when it
// does not).
type StreamContainer struct {
	ID      string
	LogPath string
	Running bool
}

// FindContainer returns the container named container of the pod namespace/name: the
// newest attempt, or with previous the one before it (the kubelet's "previous" log).
func (r *Runtime) FindContainer(ctx context.Context, namespace, name, container string, previous bool) (StreamContainer, error) {
	cs, err := r.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{LabelPodNamespace: namespace, LabelPodName: name, LabelContainerName: container}}})
	if err != nil {
		return StreamContainer{}, fmt.Errorf("cri: ListContainers: %w", err)
	}
	list := cs.GetContainers()
	// Newest attempt first: the restart count, then the creation time.
	sort.SliceStable(list, func(i, j int) bool {
		ri, rj := restartCountOf(list[i].GetAnnotations()), restartCountOf(list[j].GetAnnotations())
		if ri != rj {
			return ri > rj
		}
		return list[i].GetCreatedAt() > list[j].GetCreatedAt()
	})
	i := 0
	if previous {
		i = 1
	}
	if i >= len(list) {
		what := "container"
		if previous {
			what = "previous terminated container"
		}
		return StreamContainer{}, fmt.Errorf("%w: %s %q in pod %s/%s", ErrNotFound, what, container, namespace, name)
	}
	c := list[i]
	l := c.GetLabels()
	path := filepath.Join(podLogDir(r.cfg.LogRoot, namespace, name, types.UID(l[LabelPodUID])),
		containerLogPath(container, restartCountOf(c.GetAnnotations())))
	return StreamContainer{ID: c.GetId(), LogPath: path, Running: c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING}, nil
}

// ContainerRunning reports whether the container with this ID is still running (a
// container gone from the runtime is not).
func (r *Runtime) ContainerRunning(ctx context.Context, id string) (bool, error) {
	st, err := r.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return false, fmt.Errorf("cri: ContainerStatus: %w", err)
	}
	return st.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING, nil
}

// PodSandboxID returns the ready sandbox of the pod namespace/name (for PortForward).
func (r *Runtime) PodSandboxID(ctx context.Context, namespace, name string) (string, error) {
	sbs, err := r.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{LabelPodNamespace: namespace, LabelPodName: name},
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}})
	if err != nil {
		return "", fmt.Errorf("cri: ListPodSandbox: %w", err)
	}
	items := sbs.GetItems()
	if len(items) == 0 {
		return "", fmt.Errorf("%w: no ready sandbox for pod %s/%s", ErrNotFound, namespace, name)
	}
	sort.Slice(items, func(i, j int) bool { return items[i].GetCreatedAt() > items[j].GetCreatedAt() })
	return items[0].GetId(), nil
}

// RuntimeService is the runtime's CRI client, for Exec, Attach and PortForward (each
// returns the URL of the runtime's streaming server, which the kubelet API proxies to).
func (r *Runtime) RuntimeService() runtimeapi.RuntimeServiceClient { return r.rt }
