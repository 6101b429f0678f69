package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	containertest "k8s.io/kubernetes/pkg/kubelet/container/testing"
	kpleg "k8s.io/kubernetes/pkg/kubelet/pleg"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
)

// w2RelistPeriod is the relist period of W2 with the real cache (the kubelet's default).
const w2RelistPeriod = time.Second

// w2Env is what a side's pod workers run on in W2: the status cache, what the syncer's
// SyncPod and SyncTerminatingPod do to the runtime, and the runtime's status calls.
type w2Env struct {
	// kubeletCache is the kubelet's pod workers' cache; relister is podlife's pod
	// workers' runtime view (nil: the instant one).
	kubeletCache kubecontainer.ROCache
	relister     *pleg.Relister
	// start runs the pod's container (SyncPod), kill stops it (SyncTerminatingPod).
	start func(ctx context.Context, pod *v1.Pod) error
	kill  func(ctx context.Context, uid types.UID, grace int64) error
	// statusCalls is how many runtime status reads the relister (and the pod workers) made.
	statusCalls func() int
	stop        func()
}

// instantEnv is W2's instant cache: nothing runs, every status read answers at once.
func instantEnv() *w2Env {
	return &w2Env{
		kubeletCache: instantCache{&kubecontainer.PodStatus{}},
		start:        func(context.Context, *v1.Pod) error { return nil },
		kill:         func(context.Context, types.UID, int64) error { return nil },
		statusCalls:  func() int { return 0 },
		stop:         func() {},
	}
}

// w2Runtime is the kubelet's container runtime in W2 with the real cache: the kubelet's
// fake runtime (pkg/kubelet/container/testing) with GetPods and GetPodStatus answering from
// the pods it really holds, one container each, running from SyncPod until
// SyncTerminatingPod stops it. Every listing and status is made anew, as a CRI client's.
type w2Runtime struct {
	*containertest.FakeRuntime
	mu       sync.Mutex
	pods     map[types.UID]*w2Pod
	order    []types.UID
	statuses atomic.Int64
}

type w2Pod struct {
	name, namespace string
	id              string
	running         bool
	started         time.Time
}

func newW2Runtime() *w2Runtime {
	return &w2Runtime{FakeRuntime: &containertest.FakeRuntime{}, pods: map[types.UID]*w2Pod{}}
}

func (r *w2Runtime) start(pod *v1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.pods[pod.UID]; ok {
		return
	}
	r.pods[pod.UID] = &w2Pod{name: pod.Name, namespace: pod.Namespace, id: "c-" + string(pod.UID), running: true, started: time.Now()}
	r.order = append(r.order, pod.UID)
}

func (r *w2Runtime) kill(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.pods[uid]; ok {
		p.running = false
	}
}

func state(running bool) kubecontainer.State {
	if running {
		return kubecontainer.ContainerStateRunning
	}
	return kubecontainer.ContainerStateExited
}

func (r *w2Runtime) GetPods(context.Context, bool) ([]*kubecontainer.Pod, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	out := make([]*kubecontainer.Pod, 0, len(r.order))
	for _, uid := range r.order {
		p := r.pods[uid]
		out = append(out, &kubecontainer.Pod{ID: uid, Name: p.name, Namespace: p.namespace, Timestamp: now,
			Containers: []*kubecontainer.Container{{ID: kubecontainer.ContainerID{Type: "containerd", ID: p.id}, Name: "busybox", Image: "busybox", State: state(p.running)}},
			Sandboxes:  []*kubecontainer.Container{{ID: kubecontainer.ContainerID{Type: "containerd", ID: "s-" + string(uid)}, State: kubecontainer.ContainerStateRunning}},
		})
	}
	return out, nil
}

func (r *w2Runtime) GetPodStatus(_ context.Context, pod *kubecontainer.Pod) (*kubecontainer.PodStatus, error) {
	r.statuses.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pods[pod.ID]
	s := &kubecontainer.PodStatus{ID: pod.ID, Name: p.name, Namespace: p.namespace, IPs: []string{"10.0.0.1"},
		SandboxStatuses: []*runtimeapi.PodSandboxStatus{{Id: "s-" + string(pod.ID), State: runtimeapi.PodSandboxState_SANDBOX_READY}}}
	cs := &kubecontainer.Status{ID: kubecontainer.ContainerID{Type: "containerd", ID: p.id}, Name: "busybox", Image: "busybox", State: state(p.running), StartedAt: p.started}
	if !p.running {
		cs.ExitCode, cs.Reason = 143, "Error"
	}
	s.ContainerStatuses = []*kubecontainer.Status{cs}
	return s, nil
}

// kubeletRealEnv is the kubelet's side of W2 with the real cache: its GenericPLEG
// (pleg.NewGenericPLEG, the kubelet's default 1 s relist and 3 min threshold) relisting the
// runtime that holds the pods into kubecontainer.NewCache(), which the pod workers read.
// One relist before the run fills the cache's timestamp (the kubelet's first relist runs
// before its pod workers get any pod); the events are drained and dropped (the kubelet's
// sync loop would dispatch them to the pod workers: not part of W2).
func kubeletRealEnv() *w2Env {
	rt := newW2Runtime()
	cache := kubecontainer.NewCache()
	events := make(chan *kpleg.PodLifecycleEvent, 1000) // the kubelet's plegChannelCapacity
	g := kpleg.NewGenericPLEG(rt, events, &kpleg.RelistDuration{RelistPeriod: w2RelistPeriod, RelistThreshold: 3 * time.Minute},
		cache, clock.RealClock{}).(*kpleg.GenericPLEG)
	ctx := context.Background()
	g.Relist(ctx)
	stopDrain := drainer(events)
	// When the drainer falls behind, the PLEG drops events (as podlife's relister does,
	// counting them) and logs an error for each: not into the run's time.
	g.Start(klog.NewContext(ctx, logr.Discard()))
	return &w2Env{
		kubeletCache: cache,
		start:        func(_ context.Context, pod *v1.Pod) error { rt.start(pod); return nil },
		kill:         func(_ context.Context, uid types.UID, _ int64) error { rt.kill(uid); return nil },
		statusCalls:  func() int { return int(rt.statuses.Load()) },
		stop:         func() { g.Stop(); stopDrain() },
	}
}

// podlifeRealEnv is podlife's side of W2 with the real cache: a pleg.Relister with its
// default configuration (but the 1 s relist) over plegtest's runtime holding the pods (its
// containers stop at once when asked) and its pleg.Cache, the pod workers' runtime view.
// The events are drained and dropped.
func podlifeRealEnv() (*w2Env, error) {
	rt := plegtest.NewRuntime(nil)
	rel, err := pleg.New(pleg.Config{Runtime: rt, Cache: pleg.NewCache(), RelistPeriod: w2RelistPeriod})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); rel.Run(ctx) }()
	stopDrain := drainer(rel.Events())
	return &w2Env{
		relister: rel,
		start: func(ctx context.Context, pod *v1.Pod) error {
			return rt.StartPod(ctx, plegtest.PodSpec{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace,
				Containers: []plegtest.ContainerSpec{{Name: "busybox", Image: "busybox"}}})
		},
		kill: func(ctx context.Context, uid types.UID, grace int64) error {
			return rt.KillPod(ctx, uid, time.Duration(grace)*time.Second)
		},
		statusCalls: func() int { return rt.Calls().PodStatus },
		stop:        func() { cancel(); <-stopped; stopDrain() },
	}, nil
}
