package podgc

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// benchSnapshot is a 10,000-pod cluster on 100 nodes: 60% running, 30% terminated (a tenth
// of those evicted), 5% terminating on node-0 (out of service), 4% on gone nodes, 1%
// terminating and unscheduled.
func benchSnapshot() Input {
	const nPods, nNodes = 10000, 100
	in := Input{TerminatedPodThreshold: 1000, Now: t0}
	for i := range nNodes {
		n := mkNode(fmt.Sprintf("node-%d", i), ready(v1.ConditionTrue))
		if i == 0 {
			n = mkNode("node-0", ready(v1.ConditionFalse), outOfService())
		}
		in.Nodes = append(in.Nodes, n)
	}
	in.GoneNodes = []string{"gone-0", "gone-1"}
	for i := range nPods {
		node := fmt.Sprintf("node-%d", 1+i%(nNodes-1))
		var opts []podOpt
		switch k := i % 100; {
		case k < 60:
		case k < 90:
			opts = append(opts, phase(v1.PodSucceeded))
			if k < 63 {
				opts = append(opts, evicted())
			}
		case k < 95:
			node = "node-0"
			opts = append(opts, terminating())
		case k < 99:
			node = fmt.Sprintf("gone-%d", i%2)
		default:
			node = ""
			opts = append(opts, terminating(), phase(v1.PodPending))
		}
		in.Pods = append(in.Pods, mkPod(fmt.Sprintf("p-%05d", i), (i*7919)%nPods, append(opts, onNode(node))...))
	}
	return in
}

// BenchmarkDecide10k measures one cycle's decision over 10,000 pods and checks its result.
func BenchmarkDecide10k(b *testing.B) {
	in := benchSnapshot()
	want := map[Reason]int{
		ReasonTerminated:              3000 - 1000,
		ReasonTerminatingOutOfService: 500,
		ReasonOrphaned:                400,
		ReasonTerminatingUnscheduled:  100,
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		plan := Decide(in)
		got := map[Reason]int{}
		for _, d := range plan.Deletions {
			got[d.Reason]++
		}
		for r, n := range want {
			if got[r] != n {
				b.Fatalf("%v: %d deletions, want %d", r, got[r], n)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(in.Pods)), "ns/pod")
}

// BenchmarkMissingNodesAndQuarantine10k measures the per-cycle orphan bookkeeping.
func BenchmarkMissingNodesAndQuarantine10k(b *testing.B) {
	in := benchSnapshot()
	q, _ := NewQuarantine(DefaultQuarantinePeriod)
	b.ReportAllocs()
	for b.Loop() {
		missing := MissingNodes(in.Pods, in.Nodes)
		q.Observe(missing, t0)
		if len(missing) != 2 {
			b.Fatalf("missing = %v, want 2 names", missing)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(in.Pods)), "ns/pod")
}
