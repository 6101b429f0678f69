package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	kubepod "k8s.io/kubernetes/pkg/kubelet/pod"
	"k8s.io/kubernetes/pkg/kubelet/status"

	"github.com/podlife/podlife/examples/kube"
	"github.com/podlife/podlife/hack/bench/internal/work"
	"github.com/podlife/podlife/internal/seedpod"
	"github.com/podlife/podlife/statusmgr"
)

const (
	w4Pods   = 1000
	w4Rounds = 20
)

// w4API is client-go's fake clientset holding the seed pods, with a reactor in front of
// its object tracker that counts GET, PATCH and DELETE calls and patch bytes, checks that
// every pod is deleted with a terminal phase and every container terminated, and closes
// done when every pod is deleted.
type w4API struct {
	client                 *fake.Clientset
	mu                     sync.Mutex
	gets, patches, deletes int
	patchBytes, largest    int
	badDeletes, otherCalls int
	done                   chan struct{}
}

var podsResource = v1.SchemeGroupVersion.WithResource("pods")

func newW4API(seeds []*v1.Pod) *w4API {
	objs := make([]runtime.Object, len(seeds))
	for i, p := range seeds {
		objs[i] = p.DeepCopy()
	}
	a := &w4API{client: fake.NewSimpleClientset(objs...), done: make(chan struct{})}
	tracker := a.client.Tracker()
	serve := clienttesting.ObjectReaction(tracker)
	a.client.PrependReactor("*", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		a.mu.Lock()
		switch action.GetVerb() {
		case "get":
			a.gets++
		case "patch":
			a.patches++
			n := len(action.(clienttesting.PatchAction).GetPatch())
			a.patchBytes += n
			a.largest = max(a.largest, n)
		case "delete":
			d := action.(clienttesting.DeleteAction)
			if o, err := tracker.Get(podsResource, d.GetNamespace(), d.GetName()); err != nil || !deletable(o.(*v1.Pod)) {
				a.badDeletes++
			}
		default:
			a.otherCalls++
		}
		a.mu.Unlock()
		handled, obj, err := serve(action)
		if action.GetVerb() == "delete" && err == nil {
			a.mu.Lock()
			a.deletes++
			if a.deletes == len(seeds) {
				close(a.done)
			}
			a.mu.Unlock()
		}
		return handled, obj, err
	})
	return a
}

// deletable: a terminal phase, every container terminated.
func deletable(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodFailed && p.Status.Phase != v1.PodSucceeded {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Terminated == nil {
			return false
		}
	}
	return p.DeletionTimestamp != nil
}

// markDeleted is the API server's graceful delete: deletionTimestamp and grace 30 set, the
// object stays (straight on the tracker: not an API call of the status manager). It holds
// the fake clientset's lock, under which the clientset serves every call, so it cannot
// land between the read and the write of a PATCH (without it, a PATCH would overwrite it).
func (a *w4API) markDeleted(p *v1.Pod) error {
	a.client.Lock()
	defer a.client.Unlock()
	o, err := a.client.Tracker().Get(podsResource, p.Namespace, p.Name)
	if err != nil {
		return err
	}
	q := o.(*v1.Pod).DeepCopy()
	q.DeletionTimestamp, q.DeletionGracePeriodSeconds = p.DeletionTimestamp, p.DeletionGracePeriodSeconds
	return a.client.Tracker().Update(podsResource, q, q.Namespace)
}

// w4Manager is one side's status manager.
type w4Manager struct {
	set func(pod *v1.Pod, s v1.PodStatus) error
	// deleted: the config merge delivered the pod's graceful deletion.
	deleted   func(pod *v1.Pod)
	terminate func(pod *v1.Pod) error
	stop      func()
	stats     func() string
}

// w4Timeout bounds a W4 run (the kubelet's status manager also syncs every 10 s).
const w4Timeout = 60 * time.Second

type noDeletionSafety struct{}

// PodCouldHaveRunningContainers: the containers have stopped (W4's pods are terminated).
func (noDeletionSafety) PodCouldHaveRunningContainers(*v1.Pod) bool { return false }

type noStartupLatency struct{}

func (noStartupLatency) RecordStatusUpdated(klog.Logger, *v1.Pod) {}
func (noStartupLatency) DeletePodStartupState(types.UID)          {}

func kubeletW4(a *w4API, seeds []*v1.Pod) *w4Manager {
	logger := klog.Background()
	pm := kubepod.NewBasicPodManager()
	for _, p := range seeds {
		pm.AddPod(p)
	}
	m := status.NewManager(a.client, pm, noDeletionSafety{}, noStartupLatency{})
	m.Start(context.Background()) // its goroutine never ends (wait.Forever): the process does
	return &w4Manager{
		set:     func(pod *v1.Pod, s v1.PodStatus) error { m.SetPodStatus(logger, pod, s); return nil },
		deleted: pm.UpdatePod, // the kubelet's pod manager holds what the config merge delivered
		terminate: func(pod *v1.Pod) error {
			m.TerminatePod(logger, pod)
			return nil
		},
		stop:  func() {},
		stats: func() string { return "" },
	}
}

func podlifeW4(a *w4API) (*w4Manager, error) {
	p, err := kube.NewPatcher(a.client)
	if err != nil {
		return nil, err
	}
	m, err := statusmgr.New(statusmgr.Config{Patcher: p})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	return &w4Manager{
		set:       m.SetPodStatus,
		deleted:   func(*v1.Pod) {},
		terminate: m.TerminatePod,
		stop:      func() { cancel(); <-done },
		stats:     func() string { return fmt.Sprintf("podlife stats %+v", m.Stats()) },
	}, nil
}

// w4Input is W4's work: steps[j][i] is the pod passed with pod i's status of step j,
// deletedAt[i] the step before whose status pod i is deleted on the API server
// (w4Rounds: before TerminatePod).
type w4Input struct {
	seeds     []*v1.Pod
	deleting  []*v1.Pod
	deletedAt []int
	pods      [][]*v1.Pod
	statuses  [][]v1.PodStatus
}

// w4Plain is podlife's own W4 input (statusmgr/bench_test.go): every pod deleted only
// before TerminatePod, statuses from seedpod.W4Status.
func w4Plain(start time.Time) *w4Input {
	in := &w4Input{seeds: make([]*v1.Pod, w4Pods), deleting: make([]*v1.Pod, w4Pods), deletedAt: make([]int, w4Pods),
		pods: make([][]*v1.Pod, w4Rounds), statuses: make([][]v1.PodStatus, w4Rounds)}
	for i := range in.seeds {
		in.seeds[i] = seedpod.Merged(i, start)
		d := in.seeds[i].DeepCopy()
		ts := metav1.NewTime(start.Add(time.Hour))
		g := int64(30)
		d.DeletionTimestamp, d.DeletionGracePeriodSeconds = &ts, &g
		in.deleting[i], in.deletedAt[i] = d, w4Rounds
	}
	for r := range w4Rounds {
		in.pods[r], in.statuses[r] = in.seeds, make([]v1.PodStatus, w4Pods)
		for i, p := range in.seeds {
			in.statuses[r][i] = seedpod.W4Status(p, r, start)
		}
	}
	return in
}

// w4RealisticSeed is the seed of W4's realistic statuses.
const w4RealisticSeed = 1

// w4Realistic is W4 on realistic statuses (seedpod.Realistic): reasons and messages,
// containerd IDs, exit codes, about 40% of the pods deleted during the 20 steps and about
// 10% terminal before TerminatePod.
func w4Realistic(start time.Time) *w4Input {
	in := &w4Input{seeds: make([]*v1.Pod, w4Pods), deleting: make([]*v1.Pod, w4Pods), deletedAt: make([]int, w4Pods),
		pods: make([][]*v1.Pod, w4Rounds), statuses: make([][]v1.PodStatus, w4Rounds)}
	for r := range w4Rounds {
		in.pods[r], in.statuses[r] = make([]*v1.Pod, w4Pods), make([]v1.PodStatus, w4Pods)
	}
	for i := range w4Pods {
		h := seedpod.Realistic(w4RealisticSeed, i, start)
		in.seeds[i], in.deleting[i], in.deletedAt[i] = h.Pod, h.Deleting, h.DeletedAt
		for r := range w4Rounds {
			in.pods[r][i], in.statuses[r][i] = h.PodAt(r), h.Statuses[r]
		}
	}
	return in
}

// runW4 is W4 (BENCHMARKS.md): 1,000 seed pods (as the config merge delivers them) on
// client-go's fake clientset, 20 SetPodStatus calls per pod interleaved across pods, then
// TerminatePod for every pod. A pod's graceful delete (deletionTimestamp, grace 30) is
// written on the API server and delivered to the status manager before the step it is
// due (realistic: some during the 20 steps; otherwise just before TerminatePod). Timed
// from the first SetPodStatus until the API side deleted every pod (waited on its count).
func runW4(side string, realistic bool) (result, error) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	in := w4Plain(start)
	if realistic {
		in = w4Realistic(start)
	}
	seeds := in.seeds
	a := newW4API(seeds)
	var m *w4Manager
	if side == kubelet {
		m = kubeletW4(a, seeds)
	} else {
		var err error
		if m, err = podlifeW4(a); err != nil {
			return nil, err
		}
	}
	deleted := func(i int) error {
		if err := a.markDeleted(in.deleting[i]); err != nil {
			return err
		}
		m.deleted(in.deleting[i])
		return nil
	}
	m0 := work.Mallocs()
	c0 := work.CPU()
	t0 := time.Now()
	for r := range w4Rounds {
		for i, pod := range in.pods[r] {
			if in.deletedAt[i] == r {
				if err := deleted(i); err != nil {
					return nil, err
				}
			}
			if err := m.set(pod, in.statuses[r][i]); err != nil {
				return nil, err
			}
		}
	}
	for i, d := range in.deleting {
		if in.deletedAt[i] == w4Rounds {
			if err := deleted(i); err != nil {
				return nil, err
			}
		}
		if err := m.terminate(d); err != nil {
			return nil, err
		}
	}
	select {
	case <-a.done:
	case <-time.After(w4Timeout):
		var left []string
		for _, p := range seeds {
			if o, err := a.client.Tracker().Get(podsResource, p.Namespace, p.Name); err == nil {
				q := o.(*v1.Pod)
				left = append(left, fmt.Sprintf("%s (phase %s, deletionTimestamp %v, containers terminated %v)",
					q.Name, q.Status.Phase, q.DeletionTimestamp != nil, deletable(q)))
			}
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		return nil, fmt.Errorf("only %d of %d pods deleted after %s (%d GET, %d PATCH); left on the server: %v; %s",
			a.deletes, w4Pods, w4Timeout, a.gets, a.patches, left, m.stats())
	}
	wall := time.Since(t0)
	cpu := work.CPU() - c0
	mallocs := work.Mallocs() - m0
	m.stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.badDeletes != 0 || a.otherCalls != 0 {
		return nil, fmt.Errorf("%d deletes of a pod not terminal, %d calls other than GET, PATCH, DELETE", a.badDeletes, a.otherCalls)
	}
	return result{
		"get/pod":       float64(a.gets) / w4Pods,
		"patch/pod":     float64(a.patches) / w4Pods,
		"delete/pod":    float64(a.deletes) / w4Pods,
		"patch-B/pod":   float64(a.patchBytes) / w4Pods,
		"largest-patch": float64(a.largest),
		"allocs/pod":    float64(mallocs) / w4Pods,
		"cpu-ms":        float64(cpu.Microseconds()) / 1000,
		"wall-ms":       float64(wall.Microseconds()) / 1000,
	}, nil
}
