package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"

	"github.com/podlife/podlife/hack/bench/internal/work"
	kpw "github.com/podlife/podlife/hack/bench/kubelet/podworkers"
	"github.com/podlife/podlife/internal/seedpod"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/podworker"
)

// w2Pods is W2's number of pods.
const w2Pods = 10000

// w2Syncer is what W2's syncer callbacks do on both sides: count, sample and signal.
type w2Syncer struct {
	index                          map[types.UID]int
	first                          []atomic.Bool
	synced, finished               *countdown
	syncs, terminating, terminated atomic.Int64
	badGrace                       atomic.Int64
	runtimeErrs                    atomic.Int64
	sampler                        *work.Sampler
}

// check counts a runtime call's error.
func (s *w2Syncer) check(err error) {
	if err != nil {
		s.runtimeErrs.Add(1)
	}
}

func (s *w2Syncer) syncPod(pod *v1.Pod) {
	s.syncs.Add(1)
	s.sampler.Sample()
	if !s.first[s.index[pod.UID]].Swap(true) {
		s.synced.hit()
	}
}

func (s *w2Syncer) syncTerminating(grace int64) {
	if grace != 30 {
		s.badGrace.Add(1)
	}
	s.terminating.Add(1)
	s.sampler.Sample()
}

func (s *w2Syncer) syncTerminated() {
	s.terminated.Add(1)
	s.finished.hit()
}

// countdown closes done when it has been hit n times.
type countdown struct {
	left atomic.Int64
	done chan struct{}
}

func newCountdown(n int) *countdown {
	c := &countdown{done: make(chan struct{})}
	c.left.Store(int64(n))
	return c
}

func (c *countdown) hit() {
	if c.left.Add(-1) == 0 {
		close(c.done)
	}
}

// w2Workers is one side's pod workers.
type w2Workers struct {
	create, update func(*v1.Pod)
	finished       func(types.UID) bool
	forget         func() (left int)
	known          func() int
	stop           func()
}

// instantCache is the kubelet's status cache of W2: it answers at once, with no
// containers (so a terminating pod has nothing running).
type instantCache struct{ s *kubecontainer.PodStatus }

func (c instantCache) Get(types.UID) (*kubecontainer.PodStatus, error) { return c.s, nil }
func (c instantCache) GetNewerThan(types.UID, time.Time) (*kubecontainer.PodStatus, error) {
	return c.s, nil
}

func kubeletW2(s *w2Syncer, env *w2Env) *w2Workers {
	ctx := context.Background()
	logger := klog.Background()
	w := kpw.NewWorkers(logger, kpw.SyncFuncs{
		SyncPod: func(ctx context.Context, _ kubetypes.SyncPodType, pod, _ *v1.Pod, _ *kubecontainer.PodStatus) (bool, func(), error) {
			s.check(env.start(ctx, pod))
			s.syncPod(pod)
			return false, nil, nil
		},
		SyncTerminatingPod: func(ctx context.Context, pod *v1.Pod, _ *kubecontainer.PodStatus, grace *int64, _ func(*v1.PodStatus)) error {
			g := int64(-1)
			if grace != nil {
				g = *grace
			}
			s.check(env.kill(ctx, pod.UID, g))
			s.syncTerminating(g)
			return nil
		},
		SyncTerminatingRuntimePod: func(context.Context, *kubecontainer.Pod) error { return nil },
		SyncTerminatedPod: func(context.Context, *v1.Pod, *kubecontainer.PodStatus) error {
			s.syncTerminated()
			return nil
		},
	}, env.kubeletCache)
	return &w2Workers{
		// As the kubelet's HandlePodAdditions and HandlePodUpdates (a DELETE is handled as an
		// update: graceful deletion) dispatch them.
		create: func(p *v1.Pod) {
			w.UpdatePod(ctx, kpw.UpdatePodOptions{Pod: p, UpdateType: kubetypes.SyncPodCreate, StartTime: time.Now()})
		},
		update: func(p *v1.Pod) {
			w.UpdatePod(ctx, kpw.UpdatePodOptions{Pod: p, UpdateType: kubetypes.SyncPodUpdate, StartTime: time.Now()})
		},
		finished: w.Finished,
		forget:   func() int { return len(w.SyncKnownPods(logger, nil)) },
		known:    w.Len,
		stop:     func() {},
	}
}

func podlifeW2(s *w2Syncer, env *w2Env) (*w2Workers, error) {
	empty := &pleg.PodStatus{}
	cfg := podworker.Config{
		Syncer: podworker.PodSyncerFuncs{
			SyncPodFunc: func(ctx context.Context, _ podworker.SyncPodType, pod, _ *v1.Pod, _ *pleg.PodStatus) (bool, error) {
				s.check(env.start(ctx, pod))
				s.syncPod(pod)
				return false, nil
			},
			SyncTerminatingPodFunc: func(ctx context.Context, pod *v1.Pod, _ *pleg.PodStatus, g int64, _ func(*v1.PodStatus)) error {
				s.check(env.kill(ctx, pod.UID, g))
				s.syncTerminating(g)
				return nil
			},
			SyncTerminatedPodFunc: func(context.Context, *v1.Pod, *pleg.PodStatus) error {
				s.syncTerminated()
				return nil
			},
		},
		View: podworker.RuntimeViewFuncs{
			StatusAfterFunc: func(context.Context, types.UID, time.Time) (*pleg.PodStatus, error) { return empty, nil },
			LastStatusFunc:  func(types.UID) (*pleg.PodStatus, error) { return empty, nil },
		},
	}
	if env.relister != nil {
		cfg.View = env.relister
	}
	r, err := podworker.New(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = r.Run(ctx) }()
	update := func(t podworker.SyncPodType) func(*v1.Pod) {
		return func(p *v1.Pod) {
			if err := r.UpdatePod(podworker.UpdatePodOptions{UpdateType: t, Pod: p}); err != nil {
				panic(err)
			}
		}
	}
	return &w2Workers{
		create: update(podworker.SyncPodCreate),
		update: update(podworker.SyncPodUpdate),
		finished: func(uid types.UID) bool {
			st, ok := r.PodState(uid)
			return ok && st.Stage == podworker.StageFinished
		},
		forget: func() int { return len(r.SyncKnownPods(nil)) },
		known:  r.Len,
		stop:   func() { cancel(); <-stopped },
	}, nil
}

// runW2 is W2 (BENCHMARKS.md) with each side's default configuration: 10,000 seed pods as
// the config merge delivers them; all creates, wait until every pod's SyncPod ran; all
// graceful deletes (grace 30), wait until every SyncTerminatedPod ran and every worker is
// finished; then SyncKnownPods with no desired pods must forget them all. Timed: from the
// first UpdatePod until SyncKnownPods returned. realCache: the pod workers read the status
// cache a relister fills from a runtime that really holds the pods (SyncPod starts the
// pod's container, SyncTerminatingPod stops it: kubeletRealEnv, podlifeRealEnv); else the
// instant cache.
func runW2(side string, realCache bool) (result, error) {
	seen := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	creates := make([]*v1.Pod, w2Pods)
	deletes := make([]*v1.Pod, w2Pods)
	s := &w2Syncer{index: make(map[types.UID]int, w2Pods), first: make([]atomic.Bool, w2Pods),
		synced: newCountdown(w2Pods), finished: newCountdown(w2Pods)}
	for i := range w2Pods {
		creates[i] = seedpod.Merged(i, seen)
		d := creates[i].DeepCopy()
		ts := metav1.NewTime(seen.Add(time.Hour))
		g := int64(30)
		d.DeletionTimestamp, d.DeletionGracePeriodSeconds = &ts, &g
		deletes[i] = d
		s.index[creates[i].UID] = i
	}
	base := work.HeapAfterGC()
	s.sampler = work.StartSampler()
	env := instantEnv()
	var err error
	switch {
	case realCache && side == kubelet:
		env = kubeletRealEnv()
	case realCache:
		if env, err = podlifeRealEnv(); err != nil {
			return nil, err
		}
	}
	var w *w2Workers
	if side == kubelet {
		w = kubeletW2(s, env)
	} else if w, err = podlifeW2(s, env); err != nil {
		return nil, err
	}
	m0 := work.Mallocs()
	c0 := work.CPU()
	t0 := time.Now()
	for _, p := range creates {
		w.create(p)
	}
	<-s.synced.done
	for _, p := range deletes {
		w.update(p)
	}
	<-s.finished.done
	// Every SyncTerminatedPod returned; wait until every worker has also recorded it.
	for _, p := range creates {
		for !w.finished(p.UID) {
			time.Sleep(10 * time.Microsecond)
		}
	}
	left := w.forget()
	wall := time.Since(t0)
	cpu := work.CPU() - c0
	mallocs := work.Mallocs() - m0
	goroutines, heap := s.sampler.Stop()
	w.stop()
	env.stop()
	switch {
	case s.runtimeErrs.Load() != 0:
		return nil, fmt.Errorf("%d runtime calls failed", s.runtimeErrs.Load())
	case left != 0 || w.known() != 0:
		return nil, fmt.Errorf("SyncKnownPods left %d pods (%d known)", left, w.known())
	case s.terminating.Load() != w2Pods || s.terminated.Load() != w2Pods:
		return nil, fmt.Errorf("SyncTerminatingPod ran %d times, SyncTerminatedPod %d, want %d", s.terminating.Load(), s.terminated.Load(), w2Pods)
	case s.syncs.Load() < w2Pods:
		return nil, fmt.Errorf("SyncPod ran %d times, want >= %d", s.syncs.Load(), w2Pods)
	case s.badGrace.Load() != 0:
		return nil, fmt.Errorf("%d terminations with a grace period other than 30", s.badGrace.Load())
	}
	return result{
		"wall-ms":         float64(wall.Microseconds()) / 1000,
		"cpu-ms":          float64(cpu.Microseconds()) / 1000,
		"pods/s":          w2Pods / wall.Seconds(),
		"peak-goroutines": float64(goroutines),
		"peak-heap-B/pod": float64(int64(heap)-int64(base)) / w2Pods,
		"allocs/pod":      float64(mallocs) / w2Pods,
		"syncpod/pod":     float64(s.syncs.Load()) / w2Pods,
		"status/pod":      float64(env.statusCalls()) / w2Pods,
	}, nil
}

// runW2Hot is W2-hot: one pod receives 100,000 UpdatePod calls (a create, then updates;
// the last one a distinct object) while each SyncPod takes 1 ms. Timed until SyncPod ran
// with the last update. Reported: SyncPod calls (coalescing) and the wall time.
func runW2Hot(side string) (result, error) {
	const updates = 100000
	p := seedpod.Merged(0, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	last := p.DeepCopy()
	last.ResourceVersion = "last"
	var calls atomic.Int64
	done := make(chan struct{})
	var once atomic.Bool
	sync := func(ctx context.Context, pod *v1.Pod) error {
		calls.Add(1)
		t := time.NewTimer(time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		if pod.ResourceVersion == "last" && !once.Swap(true) {
			close(done)
		}
		return nil
	}
	var create, update func(*v1.Pod)
	stop := func() {}
	if side == kubelet {
		ctx := context.Background()
		w := kpw.NewWorkers(klog.Background(), kpw.SyncFuncs{
			SyncPod: func(ctx context.Context, _ kubetypes.SyncPodType, pod, _ *v1.Pod, _ *kubecontainer.PodStatus) (bool, func(), error) {
				return false, nil, sync(ctx, pod)
			},
			SyncTerminatingPod: func(context.Context, *v1.Pod, *kubecontainer.PodStatus, *int64, func(*v1.PodStatus)) error {
				return nil
			},
			SyncTerminatingRuntimePod: func(context.Context, *kubecontainer.Pod) error { return nil },
			SyncTerminatedPod:         func(context.Context, *v1.Pod, *kubecontainer.PodStatus) error { return nil },
		}, instantCache{&kubecontainer.PodStatus{}})
		create = func(p *v1.Pod) {
			w.UpdatePod(ctx, kpw.UpdatePodOptions{Pod: p, UpdateType: kubetypes.SyncPodCreate, StartTime: time.Now()})
		}
		update = func(p *v1.Pod) {
			w.UpdatePod(ctx, kpw.UpdatePodOptions{Pod: p, UpdateType: kubetypes.SyncPodUpdate, StartTime: time.Now()})
		}
	} else {
		r, err := podworker.New(podworker.Config{Syncer: podworker.PodSyncerFuncs{
			SyncPodFunc: func(ctx context.Context, _ podworker.SyncPodType, pod, _ *v1.Pod, _ *pleg.PodStatus) (bool, error) {
				return false, sync(ctx, pod)
			},
		}})
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { defer close(stopped); _ = r.Run(ctx) }()
		stop = func() { cancel(); <-stopped }
		create = func(p *v1.Pod) {
			_ = r.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: p})
		}
		update = func(p *v1.Pod) {
			_ = r.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: p})
		}
	}
	c0 := work.CPU()
	t0 := time.Now()
	create(p)
	for range updates - 2 {
		update(p)
	}
	update(last)
	<-done
	wall := time.Since(t0)
	cpu := work.CPU() - c0
	stop()
	return result{
		"syncpod-calls": float64(calls.Load()),
		"wall-ms":       float64(wall.Microseconds()) / 1000,
		"cpu-ms":        float64(cpu.Microseconds()) / 1000,
	}, nil
}
