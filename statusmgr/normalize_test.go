package statusmgr

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/statusmgr/internal/statustest"
)

// randomTime is a time with nanoseconds in one of several locations, years 0-9999 mostly,
// sometimes outside, sometimes with a monotonic reading.
func randomTime(r *rand.Rand, locs []*time.Location) metav1.Time {
	var t time.Time
	switch r.IntN(10) {
	case 0:
		t = time.Date(r.IntN(40)-20, time.January, 1, 0, 0, 0, r.IntN(1e9), time.UTC) // around year 0
	case 1:
		t = time.Date(9990+r.IntN(20), time.December, 31, 23, 59, 59, r.IntN(1e9), time.UTC) // around 9999
	case 2:
		t = time.Now().Add(time.Duration(r.Int64N(int64(1000 * time.Hour)))) // monotonic reading
	default:
		t = time.Unix(r.Int64N(1<<34)-1<<33, r.Int64N(1e9))
	}
	return metav1.NewTime(t.In(locs[r.IntN(len(locs))]))
}

// rfc3339Copy gives exactly metav1.Time.Rfc3339Copy's result (same instant, same location,
// no monotonic reading: the same time.Time fields) for random times in many locations.
func TestRfc3339CopyMatchesFormatAndParse(t *testing.T) {
	locs := []*time.Location{time.UTC, time.Local, time.FixedZone("IST", 5*3600+1800),
		time.FixedZone("LMT", -(17*60 + 30)), time.FixedZone("Z0", 0)}
	for _, name := range []string{"Europe/Berlin", "America/New_York", "Asia/Kathmandu"} {
		if l, err := time.LoadLocation(name); err == nil {
			locs = append(locs, l)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200000 {
		tm := randomTime(r, locs)
		got, want := rfc3339Copy(tm), tm.Rfc3339Copy()
		// DeepEqual: a zone Parse fabricates is a new *Location each time.
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%d: rfc3339Copy(%v) = %#v, Rfc3339Copy = %#v", i, tm, got, want)
		}
	}
}

// oldNormalizeStatus is the old NormalizeStatus's truncations (every time through
// Rfc3339Copy, termination messages cut); the sort is NormalizeStatus's own, unchanged.
func oldNormalizeStatus(pod *v1.Pod, status *v1.PodStatus) {
	trunc := func(t *metav1.Time) {
		if t != nil && !t.IsZero() {
			*t = t.Rfc3339Copy()
		}
	}
	budget := MaxTerminationMessageBytes
	if n := containerCount(pod, status); n > 0 {
		budget /= n
	}
	trunc(status.StartTime)
	for i := range status.Conditions {
		trunc(&status.Conditions[i].LastProbeTime)
		trunc(&status.Conditions[i].LastTransitionTime)
	}
	for _, list := range [...][]v1.ContainerStatus{status.ContainerStatuses, status.InitContainerStatuses, status.EphemeralContainerStatuses} {
		for i := range list {
			for _, s := range []*v1.ContainerState{&list[i].State, &list[i].LastTerminationState} {
				if s.Running != nil {
					trunc(&s.Running.StartedAt)
				}
				if tt := s.Terminated; tt != nil {
					trunc(&tt.StartedAt)
					trunc(&tt.FinishedAt)
					if len(tt.Message) > budget {
						tt.Message = tt.Message[:budget]
					}
				}
			}
		}
	}
}

// NormalizeStatus gives exactly the old result on random statuses with random times.
func TestNormalizeStatusMatchesOld(t *testing.T) {
	locs := []*time.Location{time.UTC, time.Local, time.FixedZone("IST", 5*3600+1800)}
	r := rand.New(rand.NewPCG(3, 4))
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}, {Name: "b"}}}}
	for i := range 20000 {
		s := statustest.RandomStatus(uint64(i))
		// Sub-second times everywhere a time is.
		set := func(tm *metav1.Time) {
			if r.IntN(5) > 0 {
				*tm = randomTime(r, locs)
			}
		}
		st := randomTime(r, locs)
		s.StartTime = &st
		for j := range s.Conditions {
			set(&s.Conditions[j].LastProbeTime)
			set(&s.Conditions[j].LastTransitionTime)
		}
		for _, list := range [][]v1.ContainerStatus{s.ContainerStatuses, s.InitContainerStatuses, s.EphemeralContainerStatuses} {
			for j := range list {
				if rs := list[j].State.Running; rs != nil {
					set(&rs.StartedAt)
				}
				if ts := list[j].State.Terminated; ts != nil {
					set(&ts.StartedAt)
					set(&ts.FinishedAt)
				}
			}
		}
		got, want := *s.DeepCopy(), *s.DeepCopy()
		NormalizeStatus(pod, &got)
		oldNormalizeStatus(pod, &want)
		NormalizeStatus(pod, &want) // the sort (times are whole seconds by now: unchanged)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%d: NormalizeStatus differs from the old one:\ngot  %+v\nwant %+v", i, got, want)
		}
	}
}

// Setters of one pod racing each other: each distinct status becomes a version of its
// own (a setter whose entry changed while it prepared prepares again; nothing is lost).
func TestConcurrentSettersOfOnePod(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "u1",
		Annotations: map[string]string{ConfigSourceAnnotationKey: APISource}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	m, err := New(Config{Patcher: StatusPatcherFuncs{}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	done := make(chan struct{})
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			if err := m.SetPodStatus(pod, v1.PodStatus{Phase: v1.PodRunning, Message: fmt.Sprint(i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	for range n {
		<-done
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if v := m.mach.c.entries["u1"].version; v != n {
		t.Errorf("version %d after %d distinct statuses, want %d", v, n, n)
	}
}

// BenchmarkLockHeldPerSet measures the work SetPodStatus does under the manager's lock for
// one new version of a W4-like status (1,000 pods, statuses alternating per pod):
// "whole" is everything (compare, normalize, copy: what was under the lock before issue
// 16), "read+store" what is left under it now (reading the entry, storing the prepared
// version); the rest runs without the lock.
func BenchmarkLockHeldPerSet(b *testing.B) {
	const pods = 1000
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(i int) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprint("p", i), UID: types.UID(fmt.Sprint("u", i)),
			Annotations: map[string]string{ConfigSourceAnnotationKey: APISource}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	}
	status := func(r int) v1.PodStatus {
		ready := v1.ConditionFalse
		if r%2 == 1 {
			ready = v1.ConditionTrue
		}
		return v1.PodStatus{Phase: v1.PodRunning, HostIP: "10.0.0.1", PodIP: "10.1.0.1",
			Conditions: []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue}, {Type: v1.PodReady, Status: ready},
				{Type: v1.ContainersReady, Status: ready}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "c", Image: "busybox", ContainerID: "containerd://c1", Ready: r%2 == 1,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(base.Add(1500 * time.Millisecond))}}}}}
	}
	podList := make([]*v1.Pod, pods)
	for i := range podList {
		podList[i] = mk(i)
	}
	b.Run("whole", func(b *testing.B) {
		c := newCache()
		b.ReportAllocs()
		for i := range b.N {
			p := podList[i%pods]
			if _, err := c.set(p, status(i/pods), &p.Status, setIfChanged, base); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read+store", func(b *testing.B) {
		c := newCache()
		b.ReportAllocs()
		for i := range b.N {
			p := podList[i%pods]
			b.StopTimer()
			st := status(i / pods)
			nv, err := prepare(p, &st, &p.Status, c.current(p.UID), setIfChanged, base)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			_ = c.current(p.UID)
			if _, stale := c.store(nv); stale {
				b.Fatal("stale")
			}
		}
	})
}

// cutsNoMessage says whether NormalizeStatus leaves every termination message as it is,
// for each container count of the spec and message length around the budget.
func TestCutsNoMessage(t *testing.T) {
	for containers := 1; containers <= 3; containers++ {
		pod := &v1.Pod{}
		for i := range containers {
			pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: fmt.Sprint("c", i)})
		}
		budget := MaxTerminationMessageBytes / containers
		for _, n := range []int{0, budget - 1, budget, budget + 1} {
			for _, last := range []bool{false, true} {
				term := &v1.ContainerStateTerminated{Message: strings.Repeat("m", n)}
				cs := v1.ContainerStatus{Name: "c0"}
				if last {
					cs.LastTerminationState.Terminated = term
				} else {
					cs.State.Terminated = term
				}
				s := v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{cs}}
				got := cutsNoMessage(pod, &s)
				NormalizeStatus(pod, &s)
				if want := len(term.Message) == n; got != want {
					t.Errorf("%d containers, message of %d bytes (last state %v): cutsNoMessage %v, want %v", containers, n, last, got, want)
				}
			}
		}
	}
}
