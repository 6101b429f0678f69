package config

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/internal/seedpod"
)

// w1 generates BENCHMARKS.md's W1 workload: a source "api" of N seed pods and rounds of
// Sets in which 1% of the pods changed status only, 1% changed a label, 1% newly got a
// deletionTimestamp with grace 30, 1% are missing and 1% are new.
type w1 struct {
	r     *rand.Rand
	next  int       // seed number of the next new pod
	seq   int       // makes every status and label change unique
	pods  []*v1.Pod // the source's current objects, as an informer holds them
	fresh bool      // every pod a new deep copy every round
	// want is what the last round must classify, by category.
	want map[Op]map[types.UID]bool
}

const (
	w1Pods    = 5000
	w1Rounds  = 50
	w1Percent = w1Pods / 100
)

func newW1(fresh bool) *w1 {
	g := &w1{r: rand.New(rand.NewPCG(1, 1)), fresh: fresh}
	for range w1Pods {
		g.pods = append(g.pods, seedpod.New(g.next))
		g.next++
	}
	return g
}

// list returns the current objects (deep copies in fresh mode).
func (g *w1) list() []*v1.Pod {
	if !g.fresh {
		return append([]*v1.Pod(nil), g.pods...)
	}
	out := make([]*v1.Pod, len(g.pods))
	for i, p := range g.pods {
		out[i] = p.DeepCopy()
	}
	return out
}

// round makes one round's changes and returns the Set to merge.
func (g *w1) round() PodUpdate {
	// Candidates: pods not yet deleting, in random order.
	var live []int
	for i, p := range g.pods {
		if p.DeletionTimestamp == nil {
			live = append(live, i)
		}
	}
	g.r.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	g.want = map[Op]map[types.UID]bool{Add: {}, Update: {}, Delete: {}, Remove: {}, Reconcile: {}}
	changed := func(k int, op Op, edit func(*v1.Pod)) {
		p := g.pods[live[k]].DeepCopy()
		edit(p)
		g.pods[live[k]] = p
		g.want[op][p.UID] = true
	}
	for k := range w1Percent {
		g.seq++
		mark := strconv.Itoa(g.seq)
		changed(k, Reconcile, func(p *v1.Pod) {
			p.Status.Conditions[1].Status = v1.ConditionFalse
			p.Status.Conditions[1].Reason = "Change" + mark
			p.ResourceVersion += "r"
		})
		changed(w1Percent+k, Update, func(p *v1.Pod) {
			p.Labels = map[string]string{"app": "busybox", "change": mark}
			p.ResourceVersion += "u"
		})
		changed(2*w1Percent+k, Delete, func(p *v1.Pod) {
			p.DeletionTimestamp = ts(1_800_000_000)
			p.DeletionGracePeriodSeconds = i64(30)
			p.ResourceVersion += "d"
		})
	}
	removed := map[int]bool{}
	for k := range w1Percent {
		i := live[3*w1Percent+k]
		removed[i] = true
		g.want[Remove][g.pods[i].UID] = true
	}
	kept := g.pods[:0]
	for i, p := range g.pods {
		if !removed[i] {
			kept = append(kept, p)
		}
	}
	g.pods = kept
	for range w1Percent {
		p := seedpod.New(g.next)
		g.next++
		g.pods = append(g.pods, p)
		g.want[Add][p.UID] = true
	}
	return PodUpdate{Op: Set, Source: "api", Pods: g.list()}
}

// check reports a classification that differs from the round's changes.
func (g *w1) check(b *testing.B, round int, c Changes) {
	for op, pods := range map[Op][]*v1.Pod{Add: c.Adds, Update: c.Updates, Delete: c.Deletes, Remove: c.Removes, Reconcile: c.Reconciles} {
		if len(pods) != len(g.want[op]) {
			b.Fatalf("round %d: %d %v, want %d", round, len(pods), op, len(g.want[op]))
		}
		for _, p := range pods {
			if !g.want[op][p.UID] {
				b.Fatalf("round %d: %s classified %v wrongly", round, p.Name, op)
			}
		}
	}
}

// benchmarkW1 runs W1: the initial Set of w1Pods pods, reported per pod (initial-*), then
// w1Rounds checked rounds, reported per pod-round. Making the input is not timed.
// With full, the store compares every pod (StoreConfig.FullComparison), as the kubelet.
func benchmarkW1(b *testing.B, fresh, full bool) {
	var (
		mallocs, initMallocs uint64
		ms                   runtime.MemStats
		cpu, initCPU, init   time.Duration
	)
	for b.Loop() {
		b.StopTimer()
		g := newW1(fresh)
		s := NewStoreWithConfig(StoreConfig{FullComparison: full})
		initial := PodUpdate{Op: Set, Source: "api", Pods: g.list()}
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
		if len(c.Adds) != w1Pods || c.Len() != w1Pods {
			b.Fatalf("initial Set: %d adds, %d changes, want %d adds only", len(c.Adds), c.Len(), w1Pods)
		}
		for round := range w1Rounds {
			u := g.round()
			runtime.GC() // the garbage of making the input is not Merge's
			runtime.ReadMemStats(&ms)
			before, cpu0 := ms.Mallocs, processCPU()
			b.StartTimer()
			c := s.Merge(u)
			b.StopTimer()
			cpu += processCPU() - cpu0
			runtime.ReadMemStats(&ms)
			mallocs += ms.Mallocs - before
			g.check(b, round, c)
		}
		b.StartTimer()
	}
	podRounds := float64(b.N) * w1Rounds * w1Pods
	b.ReportMetric(float64((b.Elapsed()-init).Nanoseconds())/podRounds, "ns/pod-round")
	b.ReportMetric(float64(mallocs)/podRounds, "allocs/pod-round")
	b.ReportMetric(float64(cpu.Nanoseconds())/podRounds, "cpu-ns/pod-round")
	initPods := float64(b.N) * w1Pods
	b.ReportMetric(float64(init.Nanoseconds())/initPods, "initial-ns/pod")
	b.ReportMetric(float64(initMallocs)/initPods, "initial-allocs/pod")
	b.ReportMetric(float64(initCPU.Nanoseconds())/initPods, "initial-cpu-ns/pod")
}

// BenchmarkW1Informer is W1 with unchanged pods passed as the same objects every round.
func BenchmarkW1Informer(b *testing.B) { benchmarkW1(b, false, false) }

// BenchmarkW1Fresh is W1 with every pod a new deep copy every round.
func BenchmarkW1Fresh(b *testing.B) { benchmarkW1(b, true, false) }

// BenchmarkW1InformerFull is BenchmarkW1Informer without the resourceVersion shortcut.
func BenchmarkW1InformerFull(b *testing.B) { benchmarkW1(b, false, true) }

// BenchmarkW1FreshFull is BenchmarkW1Fresh without the resourceVersion shortcut.
func BenchmarkW1FreshFull(b *testing.B) { benchmarkW1(b, true, true) }
