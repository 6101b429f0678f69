package pleg_test

import (
	"context"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
)

// w2Pods is how many pods one op of BenchmarkW2Runtime runs, W2's number.
const w2Pods = 10000

// BenchmarkW2Runtime is the runtime side of W2 with the real cache (podworker's
// BenchmarkW2RealCache) without the pod workers, on one goroutine: for each of 10,000
// pods, the status read of its first SyncPod (answered by the cache) and its start in a
// plegtest runtime; then for each, the refresh of its terminating sync (StatusAfter), its
// kill, the refresh of its terminated sync and its removal. Each op has a fresh runtime
// and relister and, like a W2 run, no garbage collection. Reported per pod: the
// goroutine's thread CPU time (a loaded machine inflates the wall time) and the
// allocations.
func BenchmarkW2Runtime(b *testing.B) {
	ctx := context.Background()
	uids, names := make([]types.UID, w2Pods), make([]string, w2Pods)
	for i := range w2Pods {
		uids[i] = types.UID("3f2a1c4e-0000-4000-8000-" + strconv.Itoa(100000000000+i))
		names[i] = "pod-" + strconv.Itoa(i)
	}
	containers := []plegtest.ContainerSpec{{Name: "app"}}
	started := make([]time.Time, w2Pods)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	_, cpuOK := pleg.ThreadCPU()
	var cpu time.Duration
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		runtime.GC() // the garbage of the previous op, outside the timer
		rt := plegtest.NewRuntime(nil)
		r, err := pleg.New(pleg.Config{Runtime: rt, Cache: pleg.NewCache()})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Relist(ctx); err != nil { // the first relist: the cache's timestamp
			b.Fatal(err)
		}
		b.StartTimer()
		cpu0, _ := pleg.ThreadCPU()
		for i, uid := range uids {
			if _, err := r.StatusAfter(ctx, uid, time.Time{}); err != nil {
				b.Fatal(err)
			}
			if err := rt.StartPod(ctx, plegtest.PodSpec{UID: uid, Name: names[i], Namespace: "default", Containers: containers}); err != nil {
				b.Fatal(err)
			}
			started[i] = time.Now()
		}
		for i, uid := range uids {
			if s, err := r.StatusAfter(ctx, uid, started[i]); err != nil || !s.IsRunning() {
				b.Fatalf("pod %d: terminating sync's status %+v, %v; want it running", i, s, err)
			}
			if err := rt.KillPod(ctx, uid, 30*time.Second); err != nil {
				b.Fatal(err)
			}
			if s, err := r.StatusAfter(ctx, uid, time.Now()); err != nil || s.IsRunning() || len(s.IPs) != 1 {
				b.Fatalf("pod %d: terminated sync's status %+v, %v; want it stopped, with its IP", i, s, err)
			}
			rt.RemovePod(uid)
		}
		cpu1, _ := pleg.ThreadCPU()
		b.StopTimer()
		cpu += cpu1 - cpu0
		if got := rt.Calls().PodStatus; got != 2*w2Pods {
			b.Fatalf("%d runtime status calls, want 2 per pod", got)
		}
		b.StartTimer()
	}
	if cpuOK {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*w2Pods), "cpu-ns/pod")
	}
}
