package statusmgr_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/internal/seedpod"
	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

func ptrTo[T any](v T) *T { return &v }

// BenchmarkW4StatusManager is BENCHMARKS.md's W4: 1,000 pods, 20 SetPodStatus calls per pod
// interleaved across pods, then TerminatePod for every pod (each carries a deletionTimestamp
// on the server); the fake API answers at once and counts calls. Timed from the first
// SetPodStatus until the API side has deleted every pod (waited on its count).
func BenchmarkW4StatusManager(b *testing.B) {
	benchW4(b, w4Plain(), 0)
}

// BenchmarkW4StatusManager1Writer is W4 with MaxConcurrentWrites 1 (one writer, as before
// issue 16).
func BenchmarkW4StatusManager1Writer(b *testing.B) {
	benchW4(b, w4Plain(), 1)
}

// BenchmarkW4Realistic is BENCHMARKS.md's "W4 on realistic statuses" (seedpod.Realistic,
// seed 1, as hack/bench's side by side): conditions with reasons and messages, containerd
// IDs, terminated states with exit codes, about 40% of the pods deleted during the 20
// steps (on the server, then passed to the setters with their deletionTimestamp) and about
// 10% terminal before TerminatePod. Reports also the largest PATCH.
func BenchmarkW4Realistic(b *testing.B) {
	benchW4(b, w4Realistic(), 0)
}

// w4Start is the time of W4's first status.
var w4Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// w4Input is W4's work: pods[r][i] is the pod passed with pod i's status of round r,
// statuses[r][i] that status, deleting[i] the pod TerminatePod gets, deletedAt[i] the round
// before whose status pod i is deleted on the API server (w4Rounds: before TerminatePod).
type w4Input struct {
	seeds, deleting []*v1.Pod
	deletedAt       []int
	pods            [][]*v1.Pod
	statuses        [][]v1.PodStatus
}

const w4Pods, w4Rounds = 1000, 20

func newW4Input() *w4Input {
	in := &w4Input{seeds: make([]*v1.Pod, w4Pods), deleting: make([]*v1.Pod, w4Pods), deletedAt: make([]int, w4Pods),
		pods: make([][]*v1.Pod, w4Rounds), statuses: make([][]v1.PodStatus, w4Rounds)}
	for r := range w4Rounds {
		in.pods[r], in.statuses[r] = make([]*v1.Pod, w4Pods), make([]v1.PodStatus, w4Pods)
	}
	return in
}

// w4Plain is W4 on w4Status: every pod deleted just before TerminatePod.
func w4Plain() *w4Input {
	in := newW4Input()
	for i := range w4Pods {
		p := seedpod.Merged(i, w4Start)
		d := p.DeepCopy()
		ts := metav1.NewTime(w4Start.Add(time.Hour))
		d.DeletionTimestamp = &ts
		d.DeletionGracePeriodSeconds = ptrTo(int64(30))
		in.seeds[i], in.deleting[i], in.deletedAt[i] = p, d, w4Rounds
		for r := range w4Rounds {
			in.pods[r][i], in.statuses[r][i] = p, seedpod.W4Status(p, r, w4Start)
		}
	}
	return in
}

// w4Realistic is W4 on seedpod.Realistic's statuses (seed 1).
func w4Realistic() *w4Input {
	in := newW4Input()
	for i := range w4Pods {
		h := seedpod.Realistic(1, i, w4Start)
		in.seeds[i], in.deleting[i], in.deletedAt[i] = h.Pod, h.Deleting, h.DeletedAt
		for r := range w4Rounds {
			in.pods[r][i], in.statuses[r][i] = h.PodAt(r), h.Statuses[r]
		}
	}
	return in
}

// asServer gives each pod the resourceVersion of the server's copy, as a node agent's
// pods from the API server have: the manager then patches against the pod without
// reading it first (the FakeAPI stamps versions of its own on the seeds).
func asServer(tb testing.TB, api *statusmgrtest.FakeAPI, pods []*v1.Pod) {
	tb.Helper()
	for _, p := range pods {
		s, ok := api.Pod(p.Namespace, p.Name)
		if !ok {
			tb.Fatalf("pod %s missing", p.Name)
		}
		p.ResourceVersion = s.ResourceVersion
	}
}

// largestPatch is a StatusPatcher over a FakeAPI that records the largest patch sent.
type largestPatch struct {
	*statusmgrtest.FakeAPI
	largest atomic.Int64
}

func (l *largestPatch) PatchPodStatus(ctx context.Context, ns, name string, patch []byte) (*v1.Pod, error) {
	for n := int64(len(patch)); ; {
		cur := l.largest.Load()
		if n <= cur || l.largest.CompareAndSwap(cur, n) {
			break
		}
	}
	return l.FakeAPI.PatchPodStatus(ctx, ns, name, patch)
}

func benchW4(b *testing.B, in *w4Input, maxWrites int) {
	var last statusmgrtest.Counts
	var largest int64
	var wall time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		api := statusmgrtest.NewFakeAPI(in.seeds...)
		for r := range in.pods {
			asServer(b, api, in.pods[r])
		}
		asServer(b, api, in.deleting)
		lp := &largestPatch{FakeAPI: api}
		m, err := statusmgr.New(statusmgr.Config{Patcher: lp, MaxConcurrentWrites: maxWrites})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(b.Context())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		markDeleted := func(i int) {
			d := in.deleting[i]
			if !api.MarkDeleted(d.Namespace, d.Name, *d.DeletionTimestamp, *d.DeletionGracePeriodSeconds) {
				b.Fatalf("pod %d missing", i)
			}
		}
		b.StartTimer()

		t0 := time.Now()
		for r := range w4Rounds {
			for i, pod := range in.pods[r] {
				if in.deletedAt[i] == r {
					markDeleted(i)
				}
				if err := m.SetPodStatus(pod, in.statuses[r][i]); err != nil {
					b.Fatal(err)
				}
			}
		}
		for i, d := range in.deleting {
			if in.deletedAt[i] == w4Rounds {
				markDeleted(i)
			}
			if err := m.TerminatePod(d); err != nil {
				b.Fatal(err)
			}
		}
		if err := api.WaitFor(ctx, func(c statusmgrtest.Counts) bool { return c.Deleted == w4Pods }); err != nil {
			b.Fatal(err)
		}
		wall = time.Since(t0)

		b.StopTimer()
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		last, largest = api.Counts(), lp.largest.Load()
		if api.Len() != 0 || last.Deletes != w4Pods {
			b.Fatalf("left %d pods, %d deletes", api.Len(), last.Deletes)
		}
		for _, p := range api.DeletedPods() {
			if !statusmgr.IsTerminalPhase(p.Status.Phase) || p.Status.ContainerStatuses[0].State.Terminated == nil {
				b.Fatalf("pod %s deleted with status %+v", p.Name, p.Status)
			}
		}
		if s := m.Stats(); s.Errors != 0 || s.Conflicts != 0 || s.Deleted != w4Pods {
			b.Fatalf("stats %+v", s)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(last.Gets)/w4Pods, "GET/pod")
	b.ReportMetric(float64(last.Patches)/w4Pods, "PATCH/pod")
	b.ReportMetric(float64(last.Deletes)/w4Pods, "DELETE/pod")
	b.ReportMetric(float64(last.PatchBytes)/w4Pods, "patchB/pod")
	b.ReportMetric(float64(largest), "max-patchB")
	b.ReportMetric(float64(wall.Milliseconds()), "ms-until-deleted")
}
