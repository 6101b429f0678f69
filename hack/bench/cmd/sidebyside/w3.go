package main

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	containertest "k8s.io/kubernetes/pkg/kubelet/container/testing"
	kpleg "k8s.io/kubernetes/pkg/kubelet/pleg"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/hack/bench/internal/work"
	"github.com/podlife/podlife/pleg"
)

// w3Relists is how many timed relists one W3 run makes (after the warm-up relist).
const w3Relists = 300

// w3Side is one side's relister on the W3 model: list prepares (untimed) what the runtime
// will list at the next relist, relist runs one relist, events drains the events it sent
// and counts them by kind (died, removed, started, other), drain empties the event
// channel in the background during the warm-up.
type w3Side struct {
	list   func(cri bool)
	relist func(ctx context.Context) error
	events func() (died, removed, started, other int)
	drain  func() (stop func())
}

// clone returns a copy of s in new memory (a CRI client decodes every string anew).
func clone(s string, cri bool) string {
	if cri {
		return strings.Clone(s)
	}
	return s
}

// w3Runtime is the kubelet's container runtime for W3: the kubelet's own fake runtime
// (pkg/kubelet/container/testing) with GetPods and GetPodStatus answering from the model.
type w3Runtime struct {
	*containertest.FakeRuntime
	pods     []*kubecontainer.Pod
	statuses map[types.UID]*kubecontainer.PodStatus
}

func (r *w3Runtime) GetPods(context.Context, bool) ([]*kubecontainer.Pod, error) { return r.pods, nil }

func (r *w3Runtime) GetPodStatus(_ context.Context, pod *kubecontainer.Pod) (*kubecontainer.PodStatus, error) {
	return r.statuses[pod.ID], nil
}

func kubeletW3(w *work.W3) *w3Side {
	rt := &w3Runtime{FakeRuntime: &containertest.FakeRuntime{}, statuses: map[types.UID]*kubecontainer.PodStatus{}}
	state := func(running bool) kubecontainer.State {
		if running {
			return kubecontainer.ContainerStateRunning
		}
		return kubecontainer.ContainerStateExited
	}
	build := func(m *work.W3Pod, cri bool) *kubecontainer.Pod {
		p := &kubecontainer.Pod{ID: types.UID(clone(string(m.UID), cri)), Name: clone(m.Name, cri), Namespace: clone(m.Namespace, cri)}
		for _, c := range m.Containers {
			p.Containers = append(p.Containers, &kubecontainer.Container{
				ID: kubecontainer.ContainerID{Type: "containerd", ID: clone(c.ID, cri)}, Name: clone(c.Name, cri), Image: clone(c.Image, cri), State: state(c.Running)})
		}
		p.Sandboxes = []*kubecontainer.Container{{ID: kubecontainer.ContainerID{Type: "containerd", ID: clone(m.Sandbox, cri)}, State: kubecontainer.ContainerStateRunning}}
		return p
	}
	status := func(m *work.W3Pod) {
		s := &kubecontainer.PodStatus{ID: m.UID, Name: m.Name, Namespace: m.Namespace, IPs: []string{"10.0.0.1"}}
		for _, c := range m.Containers {
			s.ContainerStatuses = append(s.ContainerStatuses, &kubecontainer.Status{ID: kubecontainer.ContainerID{Type: "containerd", ID: c.ID}, Name: c.Name, Image: c.Image, State: state(c.Running)})
		}
		s.SandboxStatuses = []*runtimeapi.PodSandboxStatus{{Id: m.Sandbox, State: runtimeapi.PodSandboxState_SANDBOX_READY}}
		rt.statuses[m.UID] = s
	}
	// Ordered mode: two copies of every pod, listed alternately (as podlife's own W3).
	var copies [2][]*kubecontainer.Pod
	for k := range copies {
		for _, m := range w.Pods {
			copies[k] = append(copies[k], build(m, false))
		}
	}
	for _, m := range w.Pods {
		status(m)
	}
	turn := 0
	events := make(chan *kpleg.PodLifecycleEvent, 1000) // the kubelet's plegChannelCapacity
	g := kpleg.NewGenericPLEG(rt, events, &kpleg.RelistDuration{RelistPeriod: time.Second, RelistThreshold: 3 * time.Minute},
		kubecontainer.NewCache(), clock.RealClock{}).(*kpleg.GenericPLEG)
	return &w3Side{
		list: func(cri bool) {
			turn++
			for _, i := range w.Changed {
				status(w.Pods[i])
			}
			if cri {
				rt.pods = make([]*kubecontainer.Pod, 0, work.W3Pods)
				for _, i := range w.Order() {
					rt.pods = append(rt.pods, build(w.Pods[i], true))
				}
				return
			}
			for _, i := range w.Changed {
				for k := range copies {
					copies[k][i] = build(w.Pods[i], false)
				}
			}
			rt.pods = copies[turn%2]
		},
		relist: func(ctx context.Context) error { g.Relist(ctx); return nil },
		events: func() (died, removed, started, other int) {
			for {
				select {
				case e := <-events:
					switch e.Type {
					case kpleg.ContainerDied:
						died++
					case kpleg.ContainerRemoved:
						removed++
					case kpleg.ContainerStarted:
						started++
					default:
						other++
					}
				default:
					return
				}
			}
		},
		drain: func() func() { return drainer(events) },
	}
}

func podlifeW3(w *work.W3) (*w3Side, error) {
	var pods []*pleg.Pod
	statuses := map[types.UID]*pleg.PodStatus{}
	state := func(running bool) pleg.ContainerState {
		if running {
			return pleg.ContainerStateRunning
		}
		return pleg.ContainerStateExited
	}
	build := func(m *work.W3Pod, cri bool) *pleg.Pod {
		p := &pleg.Pod{ID: types.UID(clone(string(m.UID), cri)), Name: clone(m.Name, cri), Namespace: clone(m.Namespace, cri)}
		for _, c := range m.Containers {
			p.Containers = append(p.Containers, &pleg.Container{ID: clone(c.ID, cri), Name: clone(c.Name, cri), Image: clone(c.Image, cri), State: state(c.Running)})
		}
		p.Sandboxes = []*pleg.Container{{ID: clone(m.Sandbox, cri), State: pleg.ContainerStateRunning}}
		return p
	}
	status := func(m *work.W3Pod) {
		s := &pleg.PodStatus{ID: m.UID, Name: m.Name, Namespace: m.Namespace, IPs: []string{"10.0.0.1"}}
		for _, c := range m.Containers {
			s.ContainerStatuses = append(s.ContainerStatuses, &pleg.ContainerStatus{ID: c.ID, Name: c.Name, Image: c.Image, State: state(c.Running)})
		}
		s.SandboxStatuses = []*pleg.SandboxStatus{{ID: m.Sandbox, State: pleg.SandboxReady}}
		statuses[m.UID] = s
	}
	var copies [2][]*pleg.Pod
	for k := range copies {
		for _, m := range w.Pods {
			copies[k] = append(copies[k], build(m, false))
		}
	}
	for _, m := range w.Pods {
		status(m)
	}
	turn := 0
	var dropped uint64 // events dropped in the warm-up (the capacity is 1,000, like the kubelet's)
	r, err := pleg.New(pleg.Config{
		Runtime: pleg.RuntimeServiceFuncs{
			ListPodsFunc: func(context.Context, bool) ([]*pleg.Pod, error) { return pods, nil },
			PodStatusFunc: func(_ context.Context, uid types.UID, _, _ string) (*pleg.PodStatus, error) {
				return statuses[uid], nil
			},
		},
		Cache: pleg.NewCache(),
	})
	if err != nil {
		return nil, err
	}
	return &w3Side{
		list: func(cri bool) {
			turn++
			for _, i := range w.Changed {
				status(w.Pods[i])
			}
			if cri {
				pods = make([]*pleg.Pod, 0, work.W3Pods)
				for _, i := range w.Order() {
					pods = append(pods, build(w.Pods[i], true))
				}
				return
			}
			for _, i := range w.Changed {
				for k := range copies {
					copies[k][i] = build(w.Pods[i], false)
				}
			}
			pods = copies[turn%2]
		},
		relist: r.Relist,
		events: func() (died, removed, started, other int) {
			for {
				select {
				case e := <-r.Events():
					switch e.Type {
					case pleg.ContainerDied:
						died++
					case pleg.ContainerRemoved:
						removed++
					case pleg.ContainerStarted:
						started++
					default:
						other++
					}
				default:
					if d := r.DroppedEvents(); d != dropped {
						other = -1 << 20 // fails the check
					}
					return
				}
			}
		},
		drain: func() func() {
			stop := drainer(r.Events())
			return func() { stop(); dropped = r.DroppedEvents() }
		},
	}, nil
}

// drainer empties ch in the background until the returned stop is called.
func drainer[E any](ch <-chan E) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-ch:
			case <-done:
				return
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// runW3 is W3 (BENCHMARKS.md): one warm-up relist (its 4,000 events drained as they come),
// then w3Relists relists, each after 1% of the containers changed; every relist must send
// exactly 10 ContainerDied, 10 ContainerRemoved and 10 ContainerStarted events and nothing
// else. cri: the runtime lists the pods in random order with new strings every relist.
// Timed: the Relist call only (the runtime's list is made before).
func runW3(side string, cri bool) (result, error) {
	w := work.NewW3()
	var s *w3Side
	if side == kubelet {
		s = kubeletW3(w)
	} else {
		var err error
		if s, err = podlifeW3(w); err != nil {
			return nil, err
		}
	}
	ctx := context.Background()
	s.list(cri)
	// The warm-up's 4,000 events overflow the 1,000-event channels of both sides unless the
	// drainer keeps up; the kubelet logs every discarded event: not in the warm-up.
	stop := s.drain()
	if err := s.relist(klog.NewContext(ctx, logr.Discard())); err != nil {
		return nil, err
	}
	stop()
	s.events()
	var wall, cpu time.Duration
	var allocs, bytes uint64
	for i := range w3Relists {
		w.Change()
		s.list(cri)
		runtime.GC()
		a0, b0 := work.AllocStats()
		c0 := work.CPU()
		t0 := time.Now()
		if err := s.relist(ctx); err != nil {
			return nil, err
		}
		wall += time.Since(t0)
		cpu += work.CPU() - c0
		a1, b1 := work.AllocStats()
		allocs += a1 - a0
		bytes += b1 - b0
		if d, r, st, o := s.events(); d != work.W3PerKind || r != work.W3PerKind || st != work.W3PerKind || o != 0 {
			return nil, fmt.Errorf("relist %d: died %d removed %d started %d other %d, want %d %d %d 0", i, d, r, st, o, work.W3PerKind, work.W3PerKind, work.W3PerKind)
		}
	}
	n := float64(w3Relists)
	return result{
		"ns/relist":     float64(wall.Nanoseconds()) / n,
		"cpu-ns/relist": float64(cpu.Nanoseconds()) / n,
		"allocs/relist": float64(allocs) / n,
		"B/relist":      float64(bytes) / n,
		"events/relist": 3 * work.W3PerKind,
	}, nil
}
