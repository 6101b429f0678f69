//go:build !linux

package pleg

import "time"

// threadCPU reports false: a thread's CPU time is read on Linux only.
func threadCPU() (time.Duration, bool) { return 0, false }
