package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	kubecontainer "k8s.io/kubernetes/pkg/kubelet/container"
	kprober "k8s.io/kubernetes/pkg/kubelet/prober"
	"k8s.io/kubernetes/pkg/kubelet/prober/results"
	"k8s.io/kubernetes/pkg/kubelet/status"

	"github.com/podlife/podlife/hack/bench/internal/work"
	"github.com/podlife/podlife/prober"
)

// W9 (probes, issue 28): 10,000 running containers, each with a readiness and a liveness
// exec probe every second, on a runtime whose probes answer at once, for w9Run of real
// time; the kubelet's side is its prober manager (pkg/kubelet/prober: one goroutine and
// one ticker per probe worker, its results managers drained as its sync loop drains
// them), podlife's is prober.Runner (one timer, a bounded pool). Lateness is how much
// later than one period after its previous run a probe ran, counted after w9Warmup.
const (
	w9Containers = 10_000
	w9Run        = 12 * time.Second
	w9Warmup     = 2 * time.Second
)

var w9Figures = []figure{
	{"runs/probe-s", "probe runs per probe-second (1 = on schedule)", counts},
	{"late-p50-ms", "lateness p50, ms", counts},
	{"late-p99-ms", "lateness p99, ms", counts},
	{"late-max-ms", "lateness max, ms", counts},
	{"peak-goroutines", "peak goroutines", counts},
	{"peak-heap-B/probe", "peak heap (garbage included) per probe, bytes", counts},
	{"allocs/run", "allocs per probe run", counts},
	{"cpu-us/run", "CPU µs per probe run", cpu},
}

// w9Clock records each probe's runs: slot 2i is container i's readiness probe, 2i+1 its
// liveness probe. A slot is written by one run at a time (both sides run one probe's
// runs one after the other).
type w9Clock struct {
	start time.Time
	last  []time.Time
	late  [][]time.Duration
	runs  atomic.Int64
}

func newW9Clock() *w9Clock {
	return &w9Clock{start: time.Now(), last: make([]time.Time, 2*w9Containers), late: make([][]time.Duration, 2*w9Containers)}
}

func (c *w9Clock) ran(slot int) {
	now := time.Now()
	c.runs.Add(1)
	if prev := c.last[slot]; !prev.IsZero() && now.Sub(c.start) > w9Warmup {
		c.late[slot] = append(c.late[slot], max(now.Sub(prev)-time.Second, 0))
	}
	c.last[slot] = now
}

func (c *w9Clock) figures(res result) {
	var all []time.Duration
	for _, l := range c.late {
		all = append(all, l...)
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
	}
	res["late-p50-ms"], res["late-p99-ms"] = pct(0.5), pct(0.99)
	if len(all) > 0 {
		res["late-max-ms"] = float64(all[len(all)-1].Microseconds()) / 1000
	}
}

// w9Pods are the pods: one container "c" each, readiness (command "ready") and
// liveness ("live") exec probes every second.
func w9Pods() []*v1.Pod {
	pods := make([]*v1.Pod, w9Containers)
	probe := func(cmd string) *v1.Probe {
		return &v1.Probe{PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
			ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{cmd}}}}
	}
	for i := range pods {
		pods[i] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(fmt.Sprintf("uid-%d", i)), Name: fmt.Sprintf("p%d", i), Namespace: "default"},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", ReadinessProbe: probe("ready"), LivenessProbe: probe("live")}}}}
	}
	return pods
}

// w9Slot is the probe's slot from its container ID ("id-<i>") and kind.
func w9Slot(id string, liveness bool) int {
	i, _ := strconv.Atoi(strings.TrimPrefix(id, "id-"))
	if liveness {
		return 2*i + 1
	}
	return 2 * i
}

func runW9(side string) (result, error) {
	klog.SetLogger(klog.Background().V(10)) // no probe logging on either side
	pods := w9Pods()
	clk := newW9Clock()
	sampler := work.StartSampler()
	m0, c0 := work.Mallocs(), work.CPU()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	switch side {
	case kubelet:
		stop := runW9Kubelet(ctx, &wg, pods, clk)
		time.Sleep(w9Run)
		stop()
	default:
		r, err := prober.New(prober.Config{Probe: func(_ context.Context, p prober.Probe) (prober.Result, error) {
			clk.ran(w9Slot(p.ContainerID, p.Key.Kind == prober.Liveness))
			return prober.Success, nil
		}})
		if err != nil {
			return nil, err
		}
		wg.Go(func() { _ = r.Run(ctx) })
		started := time.Now().Add(-time.Hour)
		for i, p := range pods {
			r.SetPod(p, []prober.Instance{{Name: "c", ID: "id-" + strconv.Itoa(i), Running: true, StartedAt: started}})
		}
		time.Sleep(w9Run)
	}
	cpuUsed, allocs := work.CPU()-c0, work.Mallocs()-m0
	goroutines, heap := sampler.Stop()
	cancel()
	wg.Wait()
	runs := clk.runs.Load()
	if runs == 0 {
		return nil, fmt.Errorf("no probe ran")
	}
	res := result{
		"runs/probe-s":      float64(runs) / (2 * w9Containers * w9Run.Seconds()),
		"peak-goroutines":   float64(goroutines),
		"peak-heap-B/probe": float64(heap) / (2 * w9Containers),
		"allocs/run":        float64(allocs) / float64(runs),
		"cpu-us/run":        float64(cpuUsed.Microseconds()) / float64(runs),
	}
	clk.figures(res)
	return res, nil
}

// runW9Kubelet starts the kubelet's prober manager on the pods and returns the func that
// stops it (RemovePod for each, as the kubelet does when pods go).
func runW9Kubelet(ctx context.Context, wg *sync.WaitGroup, pods []*v1.Pod, clk *w9Clock) func() {
	statuses := &w9Statuses{m: map[types.UID]v1.PodStatus{}}
	started := metav1.NewTime(time.Now().Add(-time.Hour))
	for i, p := range pods {
		statuses.m[p.UID] = v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "c",
			ContainerID: "containerd://id-" + strconv.Itoa(i), Started: ptrTrue(),
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}}}}}
	}
	liveness, readiness, startup := results.NewManager(), results.NewManager(), results.NewManager()
	for _, rm := range []results.Manager{liveness, readiness, startup} {
		// The kubelet's sync loop reads the result updates; a full channel blocks workers.
		wg.Go(func() {
			for {
				select {
				case <-rm.Updates():
				case <-ctx.Done():
					return
				}
			}
		})
	}
	runner := w9Runner{clk: clk}
	m := kprober.NewManager(statuses, liveness, readiness, startup, runner, nopRecorder{})
	for _, p := range pods {
		m.AddPod(ctx, p)
	}
	return func() {
		for _, p := range pods {
			m.RemovePod(p)
		}
	}
}

func ptrTrue() *bool { t := true; return &t }

// w9Statuses is the status manager the prober reads (GetPodStatus only).
type w9Statuses struct {
	status.Manager
	mu sync.RWMutex
	m  map[types.UID]v1.PodStatus
}

func (s *w9Statuses) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st, ok := s.m[uid]
	return st, ok
}

// w9Runner answers every exec probe at once with exit 0.
type w9Runner struct{ clk *w9Clock }

func (r w9Runner) RunInContainer(_ context.Context, id kubecontainer.ContainerID, cmd []string, _ time.Duration) ([]byte, error) {
	r.clk.ran(w9Slot(id.ID, len(cmd) > 0 && cmd[0] == "live"))
	return nil, nil
}

// nopRecorder drops events (the kubelet's probes record none on success).
type nopRecorder struct{}

func (nopRecorder) Event(runtime.Object, string, string, string)          {}
func (nopRecorder) Eventf(runtime.Object, string, string, string, ...any) {}
func (nopRecorder) AnnotatedEventf(runtime.Object, map[string]string, string, string, string, ...any) {
}
func (r nopRecorder) WithLogger(klog.Logger) record.EventRecorderLogger { return r }
