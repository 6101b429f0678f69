package pleg

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// fakeRuntime is a RuntimeService over a list of pods that tests edit. ListPods returns
// fresh copies, as a real runtime does; PodStatus derives the status from the same pods.
type fakeRuntime struct {
	mu          sync.Mutex
	pods        []*Pod
	listErr     error
	statusErr   map[types.UID]error
	listCalls   int
	statusCalls map[types.UID]int
}

var _ RuntimeService = (*fakeRuntime)(nil)

func newFakeRuntime(pods ...*Pod) *fakeRuntime {
	return &fakeRuntime{pods: pods, statusErr: map[types.UID]error{}, statusCalls: map[types.UID]int{}}
}

// set replaces the runtime's pods.
func (f *fakeRuntime) set(pods ...*Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = pods
}

// setPod replaces the pod with p's UID, or adds p.
func (f *fakeRuntime) setPod(p *Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, q := range f.pods {
		if q != nil && q.ID == p.ID {
			f.pods[i] = p
			return
		}
	}
	f.pods = append(f.pods, p)
}

// removePod removes the pod uid.
func (f *fakeRuntime) removePod(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = slices.DeleteFunc(f.pods, func(p *Pod) bool { return p != nil && p.ID == uid })
}

func (f *fakeRuntime) failStatus(uid types.UID, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.statusErr, uid)
	} else {
		f.statusErr[uid] = err
	}
}

func (f *fakeRuntime) ListPods(ctx context.Context, all bool) ([]*Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listCalls++
	if f.listErr != nil {
		return nil, f.listErr
	}
	out := make([]*Pod, len(f.pods))
	for i, p := range f.pods {
		out[i] = copyPod(p)
	}
	return out, nil
}

func (f *fakeRuntime) PodStatus(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusCalls[uid]++
	if err := f.statusErr[uid]; err != nil {
		return nil, err
	}
	for _, p := range f.pods {
		if p != nil && p.ID == uid {
			return statusOf(p), nil
		}
	}
	return &PodStatus{ID: uid, Name: name, Namespace: namespace}, nil
}

func copyPod(p *Pod) *Pod {
	if p == nil {
		return nil
	}
	cp := *p
	cp.Containers = copyContainers(p.Containers)
	cp.Sandboxes = copyContainers(p.Sandboxes)
	return &cp
}

func copyContainers(cs []*Container) []*Container {
	if cs == nil {
		return nil
	}
	out := make([]*Container, len(cs))
	for i, c := range cs {
		if c != nil {
			cp := *c
			cp.ID = strings.Clone(c.ID)
			out[i] = &cp
		}
	}
	return out
}

// statusOf is the detailed status a runtime would report for p: a ready sandbox gives
// the pod the IP 10.0.0.1.
func statusOf(p *Pod) *PodStatus {
	s := &PodStatus{ID: p.ID, Name: p.Name, Namespace: p.Namespace}
	for _, c := range p.Containers {
		if c != nil {
			s.ContainerStatuses = append(s.ContainerStatuses, &ContainerStatus{ID: c.ID, Name: c.Name, Image: c.Image, State: c.State})
		}
	}
	for _, sb := range p.Sandboxes {
		if sb == nil {
			continue
		}
		state := SandboxNotReady
		if sb.State == ContainerStateRunning {
			state = SandboxReady
			s.IPs = []string{"10.0.0.1"}
		}
		s.SandboxStatuses = append(s.SandboxStatuses, &SandboxStatus{ID: sb.ID, State: state})
	}
	return s
}

// mkPod builds a pod: each spec is "kind:id:state" with kind c (container) or s (sandbox)
// and state r(unning), e(xited), c(reated) or u(nknown).
func mkPod(uid types.UID, specs ...string) *Pod {
	p := &Pod{ID: uid, Name: "name-" + string(uid), Namespace: "default"}
	for _, spec := range specs {
		parts := strings.Split(spec, ":")
		if len(parts) != 3 {
			panic("bad container spec " + spec)
		}
		c := &Container{ID: parts[1], Name: "n-" + parts[1], State: shortState(parts[2])}
		if parts[0] == "s" {
			p.Sandboxes = append(p.Sandboxes, c)
		} else {
			p.Containers = append(p.Containers, c)
		}
	}
	return p
}

func shortState(s string) ContainerState {
	switch s {
	case "r":
		return ContainerStateRunning
	case "e":
		return ContainerStateExited
	case "c":
		return ContainerStateCreated
	case "u":
		return ContainerStateUnknown
	}
	return ContainerState(s)
}

// drain returns the events waiting on ch as "pod type container" lines, stably sorted by
// pod (the order of different pods is not specified; the order within a pod is).
func drain(ch <-chan *PodLifecycleEvent) []string {
	var out []string
	for _, e := range drainEvents(ch) {
		if e.Data == nil {
			out = append(out, fmt.Sprintf("%s %s", e.ID, e.Type))
		} else {
			out = append(out, fmt.Sprintf("%s %s %v", e.ID, e.Type, e.Data))
		}
	}
	slices.SortStableFunc(out, func(a, b string) int {
		return strings.Compare(strings.Fields(a)[0], strings.Fields(b)[0])
	})
	return out
}
