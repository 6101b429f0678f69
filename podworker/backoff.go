package podworker

import "time"

// Backoff computes retry delays: exponential from Initial, doubling per consecutive
// failure, capped at Max, then jittered downwards by up to half (so a delay never
// exceeds Max and retries of many pods spread out).
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
}

// When returns the delay before the retry after the given number of consecutive
// failures (1 for the first). random is a number in [0, 1) from the caller's random
// source (0 gives the un-jittered delay). Out-of-range inputs are clamped; it never
// returns a negative delay.
func (b Backoff) When(failures int, random float64) time.Duration {
	if failures < 1 {
		failures = 1
	}
	d := b.Initial
	for i := 1; i < failures && d < b.Max; i++ {
		d *= 2
	}
	if d > b.Max {
		d = b.Max
	}
	return jitter(d, random)
}

// jitter shortens d by up to half: d * (1 - random/2).
func jitter(d time.Duration, random float64) time.Duration {
	if random < 0 || random != random {
		random = 0
	}
	if random > 1 {
		random = 1
	}
	if d < 0 {
		return 0
	}
	return d - time.Duration(float64(d)*random/2)
}
