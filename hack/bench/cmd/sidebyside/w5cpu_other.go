//go:build !linux

package main

import "time"

// threadCPU is 0 where a thread's CPU time cannot be read: W5's API server CPU is then 0.
func threadCPU() time.Duration { return 0 }
