package prober

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

func readinessPods(n int, liveness bool) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	for i := range pods {
		c := v1.Container{Name: "c", ReadinessProbe: &v1.Probe{PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}}
		if liveness {
			c.LivenessProbe = &v1.Probe{PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
		}
		pods[i] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(fmt.Sprintf("uid-%d", i)), Name: fmt.Sprintf("p%d", i)},
			Spec: v1.PodSpec{Containers: []v1.Container{c}}}
	}
	return pods
}

// TestRunner runs 200 readiness probes on 4 workers for 10 s of fake time: each runs
// about every second, at most 4 at once, each result change reported once, a probe that
// outlives its timeout has its context ended, and Run ends every goroutine it started.
func TestRunner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		var runs, inFlight, maxInFlight, changes, timedOut atomic.Int64
		r, err := New(Config{Clock: clock.RealClock{}, Workers: 4, Rand: func() float64 { return 0 },
			Probe: func(ctx context.Context, p Probe) (Result, error) {
				k := inFlight.Add(1)
				defer inFlight.Add(-1)
				for m := maxInFlight.Load(); k > m && !maxInFlight.CompareAndSwap(m, k); m = maxInFlight.Load() {
				}
				runs.Add(1)
				if p.Key.PodUID == "uid-0" { // a probe that hangs until its timeout
					<-ctx.Done()
					timedOut.Add(1)
					return Unknown, ctx.Err()
				}
				time.Sleep(10 * time.Millisecond)
				return Success, nil
			},
			OnChange: func(Change) { changes.Add(1) }})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := r.Run(ctx); err != nil {
				t.Error(err)
			}
		})
		for _, p := range readinessPods(200, false) {
			r.SetPod(p, []Instance{{Name: "c", ID: "id-" + string(p.UID), Running: true, StartedAt: time.Now()}})
		}
		time.Sleep(10*time.Second - time.Millisecond)
		cancel()
		wg.Wait()
		if got := runs.Load(); got < 200*9 || got > 200*10 {
			t.Errorf("%d runs, want about 2,000", got)
		}
		if got := maxInFlight.Load(); got > 4 {
			t.Errorf("%d runs in flight at once, want at most 4", got)
		}
		if got := changes.Load(); got != 199 {
			t.Errorf("%d changes, want 199 (one per probe that succeeds)", got)
		}
		if timedOut.Load() < 9 {
			t.Errorf("the hanging probe timed out %d times, want 9 or more", timedOut.Load())
		}
		if _, res, _ := r.Result(Key{PodUID: "uid-0", Container: "c", Kind: Readiness}); res != Failure {
			t.Errorf("errored probe: result %v, want its initial failure", res)
		}
		if err := r.Run(t.Context()); !errors.Is(err, ErrAlreadyRunning) {
			t.Errorf("second Run: %v, want ErrAlreadyRunning", err)
		}
	})
}

// TestNewInvalid: New refuses a config without Probe or with negative Workers.
func TestNewInvalid(t *testing.T) {
	for _, cfg := range []Config{{}, {Probe: func(context.Context, Probe) (Result, error) { return Success, nil }, Workers: -1}} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v): %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// BenchmarkManyProbes runs 10,000 containers with a readiness and a liveness probe each,
// every second, for 10 s of fake time (synctest), on probes that answer at once; it
// reports allocations and the probe runs per op.
func BenchmarkManyProbes(b *testing.B) {
	b.ReportAllocs()
	pods := readinessPods(10_000, true)
	for b.Loop() {
		synctest.Test(&testing.T{}, func(*testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var runs atomic.Int64
			r, _ := New(Config{Clock: clock.RealClock{}, Rand: func() float64 { return 0.5 },
				Probe: func(context.Context, Probe) (Result, error) { runs.Add(1); return Success, nil }})
			var wg sync.WaitGroup
			wg.Go(func() { _ = r.Run(ctx) })
			for _, p := range pods {
				r.SetPod(p, []Instance{{Name: "c", ID: "id-" + string(p.UID), Running: true, StartedAt: time.Now()}})
			}
			time.Sleep(10 * time.Second)
			cancel()
			wg.Wait()
			b.ReportMetric(float64(runs.Load()), "probes/op")
		})
	}
}
