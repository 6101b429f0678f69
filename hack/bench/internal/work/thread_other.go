//go:build !linux

package work

import "time"

// ThreadCPU is 0 where a thread's CPU time cannot be read.
func ThreadCPU() time.Duration { return 0 }
