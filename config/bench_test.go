package config

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/internal/seedpod"
)

// byKind is c as seedpod.W1's kinds.
func byKind(c Changes) (out [seedpod.W1Kinds][]*v1.Pod) {
	out[seedpod.W1Add], out[seedpod.W1Update], out[seedpod.W1Delete] = c.Adds, c.Updates, c.Deletes
	out[seedpod.W1Remove], out[seedpod.W1Reconcile] = c.Removes, c.Reconciles
	return out
}

// benchmarkW1 runs W1: the initial Set of seedpod.W1Pods pods, reported per pod (initial-*), then
// seedpod.W1Rounds checked rounds, reported per pod-round. Making the input is not timed.
// Without full, the store trusts the api source's resourceVersions
// (StoreConfig.TrustResourceVersions), as a node configures it; with full, it compares every
// pod, as the kubelet and the zero StoreConfig.
// With shared, it returns its own pods instead of deep copies (StoreConfig.SharedPods), as
// a node does.
func benchmarkW1(b *testing.B, fresh, full, shared bool) {
	var (
		mallocs, initMallocs uint64
		ms                   runtime.MemStats
		cpu, initCPU, init   time.Duration
	)
	for b.Loop() {
		b.StopTimer()
		g := seedpod.NewW1(fresh)
		s := NewStoreWithConfig(StoreConfig{TrustResourceVersions: !full, SharedPods: shared})
		initial := PodUpdate{Op: Set, Source: "api", Pods: g.List()}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before, cpu0, wall0 := ms.Mallocs, processCPU(), b.Elapsed()
		b.StartTimer()
		c := s.Merge(initial)
		b.StopTimer()
		initCPU += processCPU() - cpu0
		init += b.Elapsed() - wall0
		runtime.ReadMemStats(&ms)
		initMallocs += ms.Mallocs - before
		if len(c.Adds) != seedpod.W1Pods || c.Len() != seedpod.W1Pods {
			b.Fatalf("initial Set: %d adds, %d changes, want %d adds only", len(c.Adds), c.Len(), seedpod.W1Pods)
		}
		for round := range seedpod.W1Rounds {
			u := PodUpdate{Op: Set, Source: "api", Pods: g.Round()}
			runtime.GC() // the garbage of making the input is not Merge's
			runtime.ReadMemStats(&ms)
			before, cpu0 := ms.Mallocs, processCPU()
			b.StartTimer()
			c := s.Merge(u)
			b.StopTimer()
			cpu += processCPU() - cpu0
			runtime.ReadMemStats(&ms)
			mallocs += ms.Mallocs - before
			if msg := g.Check(byKind(c)); msg != "" {
				b.Fatalf("round %d: %s", round, msg)
			}
		}
		b.StartTimer()
	}
	podRounds := float64(b.N) * seedpod.W1Rounds * seedpod.W1Pods
	b.ReportMetric(float64((b.Elapsed()-init).Nanoseconds())/podRounds, "ns/pod-round")
	b.ReportMetric(float64(mallocs)/podRounds, "allocs/pod-round")
	b.ReportMetric(float64(cpu.Nanoseconds())/podRounds, "cpu-ns/pod-round")
	initPods := float64(b.N) * seedpod.W1Pods
	b.ReportMetric(float64(init.Nanoseconds())/initPods, "initial-ns/pod")
	b.ReportMetric(float64(initMallocs)/initPods, "initial-allocs/pod")
	b.ReportMetric(float64(initCPU.Nanoseconds())/initPods, "initial-cpu-ns/pod")
}

// benchmarkW1Modes runs W1 with deep copies returned (shared=false, the default store)
// and with shared pods (shared=true, a node's store).
func benchmarkW1Modes(b *testing.B, fresh, full bool) {
	for _, shared := range []bool{false, true} {
		b.Run(fmt.Sprintf("shared=%v", shared), func(b *testing.B) { benchmarkW1(b, fresh, full, shared) })
	}
}

// BenchmarkW1Informer is W1 with unchanged pods passed as the same objects every round.
func BenchmarkW1Informer(b *testing.B) { benchmarkW1Modes(b, false, false) }

// BenchmarkW1Fresh is W1 with every pod a new deep copy every round.
func BenchmarkW1Fresh(b *testing.B) { benchmarkW1Modes(b, true, false) }

// BenchmarkW1InformerFull is BenchmarkW1Informer without the resourceVersion shortcut.
func BenchmarkW1InformerFull(b *testing.B) { benchmarkW1Modes(b, false, true) }

// BenchmarkW1FreshFull is BenchmarkW1Fresh without the resourceVersion shortcut.
func BenchmarkW1FreshFull(b *testing.B) { benchmarkW1Modes(b, true, true) }

// watchPods is the number of pods of BenchmarkWatchEvents.
const watchPods = 10000

// BenchmarkWatchEvents is the config side of W6: a node's store (shared pods, the "api"
// source) fed one pod per update, as a watch delivers them: every pod's Add, then three
// rounds of status changes (an Update whose new object differs in its status and
// resourceVersion: a Reconcile), then its graceful delete (an Update with a
// deletionTimestamp: a Delete), then its Remove. Each update's result is checked. Making
// the inputs (shallow copies) is not timed. Reported per update (allocations: the
// update's one-pod slice included).
func BenchmarkWatchEvents(b *testing.B) {
	base := make([]*v1.Pod, watchPods)
	for i := range base {
		p := seedpod.New(i)
		p.ResourceVersion, p.Status = "1", v1.PodStatus{}
		base[i] = p
	}
	rv := 1
	// next is pods[i] as the API server's next write leaves it: a new object.
	next := func(p *v1.Pod, edit func(*v1.Pod)) *v1.Pod {
		np := *p
		rv++
		np.ResourceVersion = fmt.Sprint(rv)
		edit(&np)
		return &np
	}
	phases := []struct {
		op   Op
		want func(Changes) []*v1.Pod
		edit func(*v1.Pod)
	}{
		{Add, func(c Changes) []*v1.Pod { return c.Adds }, nil},
		{Update, func(c Changes) []*v1.Pod { return c.Reconciles }, func(p *v1.Pod) { p.Status.Phase = v1.PodPending }},
		{Update, func(c Changes) []*v1.Pod { return c.Reconciles }, func(p *v1.Pod) { p.Status.Phase = v1.PodRunning }},
		{Update, func(c Changes) []*v1.Pod { return c.Reconciles }, func(p *v1.Pod) { p.Status.Message = "terminating" }},
		{Update, func(c Changes) []*v1.Pod { return c.Deletes }, func(p *v1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }},
		{Remove, func(c Changes) []*v1.Pod { return c.Removes }, nil},
	}
	var (
		events  int
		mallocs uint64
		ms      runtime.MemStats
	)
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		s := NewStoreWithConfig(StoreConfig{TrustResourceVersions: true, SharedPods: true})
		s.Merge(PodUpdate{Op: Set, Source: "api"})
		cur := append([]*v1.Pod(nil), base...)
		for _, ph := range phases {
			if ph.edit != nil {
				for i, p := range cur {
					cur[i] = next(p, ph.edit)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&ms)
			before := ms.Mallocs
			b.StartTimer()
			for _, p := range cur {
				c := s.Merge(PodUpdate{Op: ph.op, Source: "api", Pods: []*v1.Pod{p}})
				if got := ph.want(c); len(got) != 1 || got[0].UID != p.UID || c.Len() != 1 {
					b.Fatalf("%v of %s: %+v", ph.op, p.Name, c)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms)
			mallocs += ms.Mallocs - before
			events += len(cur)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/update")
	b.ReportMetric(float64(mallocs)/float64(events), "allocs/update")
}

// BenchmarkMuxReconciles is the Mux's own cost per update as a node's watch feeds it: one
// pod per Update, each a status change (a Reconcile), merged by a shared-pods store and
// delivered to a consumer goroutine. It checks that every update was delivered once.
func BenchmarkMuxReconciles(b *testing.B) {
	m, err := NewMux(MuxConfig{TrustResourceVersions: true, SharedPods: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case u := <-m.Updates():
				if u.Op == Reconcile {
					n++
				}
			case <-ctx.Done():
				got <- n
				return
			}
		}
	}()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid", ResourceVersion: "1"}}
	q := p.DeepCopy()
	q.ResourceVersion, q.Status.Phase = "2", v1.PodRunning
	if err := m.Update(ctx, PodUpdate{Op: Add, Source: APISource, Pods: []*v1.Pod{p}}); err != nil {
		b.Fatal(err)
	}
	versions, updates := [2][]*v1.Pod{{q}, {p}}, 0
	for b.Loop() {
		if err := m.Update(ctx, PodUpdate{Op: Update, Source: APISource, Pods: versions[updates%2]}); err != nil {
			b.Fatal(err)
		}
		updates++
	}
	b.StopTimer()
	// The buffer may still hold the last updates: wait until the consumer took them.
	for len(m.Updates()) > 0 {
		runtime.Gosched()
	}
	cancel()
	if n := <-got; n != updates {
		b.Fatalf("%d reconciles delivered, want %d", n, updates)
	}
}
