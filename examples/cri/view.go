package cri

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/pleg"
)

// ListPods lists every sandbox and container that carries a pod UID label, grouped by pod
// (two CRI calls). With all=false only pods with a running container or a ready sandbox
// are returned. Containers and sandboxes the runtime no longer lists are dropped from the
// status caches.
func (r *Runtime) ListPods(ctx context.Context, all bool) ([]*pleg.Pod, error) {
	sbs, err := r.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, fmt.Errorf("cri: ListPodSandbox: %w", err)
	}
	cs, err := r.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, fmt.Errorf("cri: ListContainers: %w", err)
	}
	byUID := map[types.UID]*pleg.Pod{}
	pod := func(labels map[string]string) *pleg.Pod {
		uid := types.UID(labels[LabelPodUID])
		if uid == "" {
			return nil
		}
		p := byUID[uid]
		if p == nil {
			p = &pleg.Pod{ID: uid, Name: labels[LabelPodName], Namespace: labels[LabelPodNamespace]}
			byUID[uid] = p
		}
		return p
	}
	for _, sb := range sbs.GetItems() {
		p := pod(sb.GetLabels())
		if p == nil {
			continue
		}
		created := time.Unix(0, sb.GetCreatedAt())
		if p.CreatedAt.IsZero() || created.Before(p.CreatedAt) {
			p.CreatedAt = created
		}
		p.Sandboxes = append(p.Sandboxes, &pleg.Container{ID: sb.GetId(), Name: sb.GetMetadata().GetName(), State: sandboxState(sb.GetState())})
	}
	seen := make(map[string]bool, len(cs.GetContainers())+len(sbs.GetItems()))
	for _, sb := range sbs.GetItems() {
		seen[sb.GetId()] = true
	}
	for _, c := range cs.GetContainers() {
		seen[c.GetId()] = true
		p := pod(c.GetLabels())
		if p == nil {
			continue
		}
		p.Containers = append(p.Containers, &pleg.Container{ID: c.GetId(), Name: c.GetMetadata().GetName(),
			Image: c.GetImage().GetImage(), State: containerState(c.GetState())})
	}
	r.mu.Lock()
	for id := range r.statuses {
		if !seen[id] {
			delete(r.statuses, id)
		}
	}
	for id := range r.sandboxNet {
		if !seen[id] {
			delete(r.sandboxNet, id)
		}
	}
	r.mu.Unlock()
	out := make([]*pleg.Pod, 0, len(byUID))
	for _, p := range byUID {
		if all || podRunning(p) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *pleg.Pod) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

func podRunning(p *pleg.Pod) bool {
	for _, c := range append(slices.Clip(p.Containers), p.Sandboxes...) {
		if c.State == pleg.ContainerStateRunning {
			return true
		}
	}
	return false
}

func sandboxState(s runtimeapi.PodSandboxState) pleg.ContainerState {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return pleg.ContainerStateRunning
	}
	return pleg.ContainerStateExited
}

func containerState(s runtimeapi.ContainerState) pleg.ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return pleg.ContainerStateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return pleg.ContainerStateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return pleg.ContainerStateExited
	default:
		return pleg.ContainerStateUnknown
	}
}

// PodStatus is the pod's detailed status: its sandboxes (newest first; the IPs of the
// newest, when it is ready, from PodSandboxStatus) and each container's ContainerStatus
// (newest instance first for a name), each fetched again only when the list shows its state
// changed. A container that vanishes between the list and its status is left out. A pod the runtime does not know gives an empty status.
func (r *Runtime) PodStatus(ctx context.Context, uid types.UID, name, namespace string) (*pleg.PodStatus, error) {
	st := &pleg.PodStatus{ID: uid, Name: name, Namespace: namespace}
	sel := map[string]string{LabelPodUID: string(uid)}
	sbs, err := r.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}})
	if err != nil {
		return nil, fmt.Errorf("cri: ListPodSandbox: %w", err)
	}
	items := slices.Clone(sbs.GetItems())
	slices.SortStableFunc(items, func(a, b *runtimeapi.PodSandbox) int {
		return cmp.Or(-cmp.Compare(a.GetMetadata().GetAttempt(), b.GetMetadata().GetAttempt()), -cmp.Compare(a.GetCreatedAt(), b.GetCreatedAt()))
	})
	for i, sb := range items {
		ss := &pleg.SandboxStatus{ID: sb.GetId(), State: pleg.SandboxNotReady, CreatedAt: time.Unix(0, sb.GetCreatedAt()),
			Attempt: sb.GetMetadata().GetAttempt()}
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			ss.State = pleg.SandboxReady
		}
		if i == 0 && ss.State == pleg.SandboxReady {
			ips, err := r.sandboxIPs(ctx, sb.GetId())
			switch {
			case isNotFound(err):
				continue
			case err != nil:
				return nil, err
			}
			if len(ips) > 0 {
				ss.IP = ips[0]
				st.IPs = append(st.IPs, ips...)
			}
		}
		st.SandboxStatuses = append(st.SandboxStatuses, ss)
	}
	cs, err := r.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: sel}})
	if err != nil {
		return nil, fmt.Errorf("cri: ListContainers: %w", err)
	}
	for _, c := range cs.GetContainers() {
		s, err := r.containerStatus(ctx, c.GetId(), containerState(c.GetState()))
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		st.ContainerStatuses = append(st.ContainerStatuses, s)
	}
	sortStatuses(st.ContainerStatuses)
	return st, nil
}

// sortStatuses orders statuses by name, newest instance (highest restart count, then
// latest creation) first.
func sortStatuses(ss []*pleg.ContainerStatus) {
	slices.SortStableFunc(ss, func(a, b *pleg.ContainerStatus) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), -cmp.Compare(a.RestartCount, b.RestartCount), b.CreatedAt.Compare(a.CreatedAt))
	})
}

// containerStatus returns one container's status. A container's status changes only with
// its state (created, running, exited: the times and the exit code are set once), so the
// status fetched last is reused while the list shows the same state.
func (r *Runtime) containerStatus(ctx context.Context, id string, listed pleg.ContainerState) (*pleg.ContainerStatus, error) {
	r.mu.Lock()
	cached := r.statuses[id]
	r.mu.Unlock()
	if cached != nil && cached.State == listed && listed != pleg.ContainerStateUnknown {
		return cached, nil
	}
	resp, err := r.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return nil, fmt.Errorf("cri: ContainerStatus %s: %w", id, err)
	}
	s := convertContainerStatus(resp.GetStatus())
	r.mu.Lock()
	r.statuses[id] = s
	r.mu.Unlock()
	return s, nil
}

// sandboxIPs returns a ready sandbox's IPs (none in the node's network namespace),
// fetched once (PodSandboxStatus): they do not change while it lives.
func (r *Runtime) sandboxIPs(ctx context.Context, id string) ([]string, error) {
	r.mu.Lock()
	ips, ok := r.sandboxNet[id]
	r.mu.Unlock()
	if ok {
		return ips, nil
	}
	resp, err := r.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		if isNotFound(err) {
			return nil, err
		}
		return nil, fmt.Errorf("cri: PodSandboxStatus %s: %w", id, err)
	}
	if net := resp.GetStatus().GetNetwork(); net.GetIp() != "" {
		ips = append(ips, net.GetIp())
		for _, ip := range net.GetAdditionalIps() {
			ips = append(ips, ip.GetIp())
		}
	}
	r.mu.Lock()
	r.sandboxNet[id] = ips
	r.mu.Unlock()
	return ips, nil
}

func convertContainerStatus(c *runtimeapi.ContainerStatus) *pleg.ContainerStatus {
	s := &pleg.ContainerStatus{
		ID:           c.GetId(),
		Name:         c.GetMetadata().GetName(),
		Image:        c.GetImage().GetImage(),
		ImageID:      c.GetImageRef(),
		State:        containerState(c.GetState()),
		ExitCode:     int(c.GetExitCode()),
		RestartCount: restartCountOf(c.GetAnnotations()),
		Reason:       c.GetReason(),
		Message:      c.GetMessage(),
	}
	if n := c.GetLabels()[LabelContainerName]; n != "" {
		s.Name = n
	}
	if u := c.GetImage().GetUserSpecifiedImage(); u != "" {
		s.Image = u
	}
	for _, f := range []struct {
		ns  int64
		dst *time.Time
	}{{c.GetCreatedAt(), &s.CreatedAt}, {c.GetStartedAt(), &s.StartedAt}, {c.GetFinishedAt(), &s.FinishedAt}} {
		if f.ns > 0 {
			*f.dst = time.Unix(0, f.ns)
		}
	}
	return s
}
