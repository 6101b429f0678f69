//go:build unix

package config

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used (all threads, GC included), so
// that benchmarks on a shared machine can report a figure less inflated by other load.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
