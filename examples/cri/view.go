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
	r.mu.Lock()
	start := r.index.gen
	r.mu.Unlock()
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
	listed := make(map[types.UID]*podIDs, len(byUID))
	for uid, p := range byUID {
		ids := &podIDs{sandboxes: make(map[string]uint64, len(p.Sandboxes)), containers: make(map[string]uint64, len(p.Containers))}
		for _, sb := range p.Sandboxes {
			ids.sandboxes[sb.ID] = 0
		}
		for _, c := range p.Containers {
			ids.containers[c.ID] = 0
		}
		listed[uid] = ids
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
	for id := range r.sandboxes {
		if !seen[id] {
			delete(r.sandboxes, id)
		}
	}
	r.index.replace(start, listed)
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
// newest, when it is ready) and each container's status (newest instance first for a name).
// A pod the runtime knows from its last ListPods or its own actions (see podIndex) is read
// by ID, as the kubelet does: PodSandboxStatus and ContainerStatus of each of its objects,
// except those that ended (a stopped sandbox or an exited container does not change; their
// last status is reused). Any other pod is listed by its UID label (ListPodSandbox,
// ListContainers), each container's status fetched again only when the list shows its state
// changed. An object that vanishes meanwhile is left out. A pod the runtime does not have
// gives an empty status.
func (r *Runtime) PodStatus(ctx context.Context, uid types.UID, name, namespace string) (*pleg.PodStatus, error) {
	r.mu.Lock()
	sandboxIDs, containerIDs, known := r.index.ids(uid)
	r.mu.Unlock()
	if known {
		return r.podStatusByID(ctx, &pleg.PodStatus{ID: uid, Name: name, Namespace: namespace}, sandboxIDs, containerIDs)
	}
	return r.podStatusByList(ctx, &pleg.PodStatus{ID: uid, Name: name, Namespace: namespace})
}

// forget drops an object the runtime no longer has from the pod's known objects.
func (r *Runtime) forget(uid types.UID, id string) {
	r.mu.Lock()
	r.index.forget(uid, id)
	r.mu.Unlock()
}

// podStatusByID reads the pod's status from its known objects.
func (r *Runtime) podStatusByID(ctx context.Context, st *pleg.PodStatus, sandboxIDs, containerIDs []string) (*pleg.PodStatus, error) {
	var ips map[string][]string
	for _, id := range sandboxIDs {
		ss, sbIPs, err := r.sandboxStatus(ctx, id)
		if isNotFound(err) {
			r.forget(st.ID, id)
			continue
		}
		if err != nil {
			return nil, err
		}
		if len(sbIPs) > 0 {
			if ips == nil {
				ips = map[string][]string{}
			}
			ips[id] = sbIPs
		}
		st.SandboxStatuses = append(st.SandboxStatuses, ss)
	}
	slices.SortStableFunc(st.SandboxStatuses, func(a, b *pleg.SandboxStatus) int {
		return cmp.Or(-cmp.Compare(a.Attempt, b.Attempt), b.CreatedAt.Compare(a.CreatedAt))
	})
	if len(st.SandboxStatuses) > 0 && st.SandboxStatuses[0].State == pleg.SandboxReady {
		if sbIPs := ips[st.SandboxStatuses[0].ID]; len(sbIPs) > 0 {
			st.IPs = slices.Clone(sbIPs)
		}
	}
	for _, id := range containerIDs {
		// A cached status is reused only once the container exited (it changes no more).
		s, err := r.containerStatus(ctx, id, pleg.ContainerStateExited)
		if isNotFound(err) {
			r.forget(st.ID, id)
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

// sandboxStatus returns a sandbox's status and IPs (PodSandboxStatus), the last one again
// once it is not ready (a stopped sandbox does not come back).
func (r *Runtime) sandboxStatus(ctx context.Context, id string) (*pleg.SandboxStatus, []string, error) {
	r.mu.Lock()
	cached := r.sandboxes[id]
	r.mu.Unlock()
	if cached != nil && cached.State == pleg.SandboxNotReady {
		return cached, nil, nil
	}
	resp, err := r.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		if isNotFound(err) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("cri: PodSandboxStatus %s: %w", id, err)
	}
	s := resp.GetStatus()
	ss := &pleg.SandboxStatus{ID: id, State: pleg.SandboxNotReady, CreatedAt: time.Unix(0, s.GetCreatedAt()),
		Attempt: s.GetMetadata().GetAttempt()}
	var ips []string
	if s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
		ss.State = pleg.SandboxReady
		if net := s.GetNetwork(); net.GetIp() != "" {
			ips = append(ips, net.GetIp())
			for _, ip := range net.GetAdditionalIps() {
				ips = append(ips, ip.GetIp())
			}
			ss.IP = ips[0]
		}
	}
	r.mu.Lock()
	r.sandboxes[id] = ss
	r.mu.Unlock()
	return ss, ips, nil
}

// podStatusByList reads the status of a pod the index does not know by listing its objects,
// and records them in the index.
func (r *Runtime) podStatusByList(ctx context.Context, st *pleg.PodStatus) (*pleg.PodStatus, error) {
	uid := st.ID
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
	if len(st.SandboxStatuses)+len(st.ContainerStatuses) > 0 {
		r.mu.Lock()
		for _, ss := range st.SandboxStatuses {
			r.index.addSandbox(uid, ss.ID)
		}
		for _, cs := range st.ContainerStatuses {
			r.index.addContainer(uid, cs.ID)
		}
		r.mu.Unlock()
	}
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
	s.Message = terminationMessage(resp.GetStatus()) // read once: the status is kept
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
