package statusmgr_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/seedpod"
	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// BenchmarkSetPodStatusParallel measures SetPodStatus with the default configuration from
// many goroutines at once, each setting the statuses of its own pods (as pod workers do):
// 1,000 seed pods, the W4 statuses in turn. No sync loop runs: the setter alone, and the
// manager's lock every pod takes. ns/op is per SetPodStatus call.
func BenchmarkSetPodStatusParallel(b *testing.B) {
	const pods, rounds = 1000, 20
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	seeds := make([]*v1.Pod, pods)
	statuses := make([][]v1.PodStatus, pods)
	for i := range seeds {
		seeds[i] = seedpod.Merged(i, start)
		for r := range rounds {
			statuses[i] = append(statuses[i], seedpod.W4Status(seeds[i], r, start))
		}
	}
	m, err := statusmgr.New(statusmgr.Config{Patcher: statusmgrtest.NewFakeAPI()})
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		// Each goroutine owns a disjoint slice of pods.
		g := int(next.Add(1))
		r := 0
		for pb.Next() {
			i := (g*37 + r*101) % pods
			if err := m.SetPodStatus(seeds[i], statuses[i][r%rounds]); err != nil {
				panic(fmt.Sprint(err))
			}
			r++
		}
	})
}

// BenchmarkNormalizeStatus measures NormalizeStatus on a W4 status with a terminated
// container (every time field set).
func BenchmarkNormalizeStatus(b *testing.B) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := seedpod.Merged(0, start)
	st := seedpod.W4Status(pod, 7, start.Add(123456789*time.Nanosecond))
	statuses := make([]v1.PodStatus, 64)
	for i := range statuses {
		statuses[i] = *st.DeepCopy()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		statusmgr.NormalizeStatus(pod, &statuses[i%len(statuses)])
	}
}
