package work

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// CPU is the process's user+system CPU time so far.
func CPU() time.Duration { return rusageCPU(syscall.RUSAGE_SELF) }

// rusageCPU is the user+system CPU time so far of who (a getrusage target); 0 if it
// cannot be read.
func rusageCPU(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Mallocs is the number of heap allocations so far.
func Mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// AllocStats is the number and bytes of heap allocations so far.
func AllocStats() (n, bytes uint64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs, ms.TotalAlloc
}

// HeapAfterGC is the live heap after a GC.
func HeapAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// Sampler samples goroutines and the heap (objects, live or not yet swept: garbage
// included) every 200 µs until Stop, and keeps the peaks; Sample adds a sample at once.
type Sampler struct {
	peakG, peakHeap atomic.Int64
	stop            chan struct{}
	wg              sync.WaitGroup
}

const heapObjects = "/memory/classes/heap/objects:bytes"

// StartSampler starts sampling.
func StartSampler() *Sampler {
	s := &Sampler{stop: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		sample := []metrics.Sample{{Name: heapObjects}}
		for {
			s.Sample()
			metrics.Read(sample)
			if h := int64(sample[0].Value.Uint64()); h > s.peakHeap.Load() {
				s.peakHeap.Store(h)
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Sample records the number of goroutines now.
func (s *Sampler) Sample() {
	if g := int64(runtime.NumGoroutine()); g > s.peakG.Load() {
		s.peakG.Store(g)
	}
}

// Stop stops sampling and returns the peaks.
func (s *Sampler) Stop() (goroutines int, heap uint64) {
	close(s.stop)
	s.wg.Wait()
	return int(s.peakG.Load()), uint64(s.peakHeap.Load())
}
