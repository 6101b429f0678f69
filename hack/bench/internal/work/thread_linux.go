package work

import (
	"syscall"
	"time"
)

// ThreadCPU is the calling thread's user+system CPU time so far (lock the goroutine to
// its thread around the work measured).
func ThreadCPU() time.Duration { return rusageCPU(syscall.RUSAGE_THREAD) }
