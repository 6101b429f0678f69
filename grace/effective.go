package grace

import (
	"math"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/internal/podfacts"
)

// Effective returns the grace period, in seconds, that a terminating pod is given, and whether
// it shortened the period already in force.
//
// current is the period in force (0, or any value below 1, when none is yet). pod supplies
// DeletionGracePeriodSeconds (set by the API server on a graceful delete) and
// Spec.TerminationGracePeriodSeconds. override is an extra bound from the caller, typically an
// eviction's grace period; nil means none.
//
// The rules, which are the kubelet's calculateEffectiveGracePeriod with one decision of
// podlife's (a deletion grace of 0 is a value in force, so a later override cannot raise it):
//
//  1. A deletion grace period replaces the current one when there is none yet or it is
//     smaller: it is bedrock, even when it exceeds the spec.
//  2. An override replaces the result of 1 only when nothing is in force yet or it is smaller:
//     it may only shorten.
//  3. Only when none of current, deletion grace and override supplied a value does the spec's
//     terminationGracePeriodSeconds count; a pod without one has the API server's default,
//     30 (the kubelet only sees defaulted pods; a nil pod has no spec and gets 1).
//  4. The result is never below 1 (zero and negative values become 1) and never above
//     MaxSeconds (larger values, current included, count as MaxSeconds), so
//     time.Duration(seconds)*time.Second never overflows.
//
// shortened is true only when a period was already in force (current >= 1) and the result
// differs from it (a current above MaxSeconds counting as MaxSeconds), which by the rules
// above means it is smaller. The pod is not modified; a nil pod supplies nothing (as a pod
// without deletion grace and spec period).
func Effective(current int64, pod *v1.Pod, override *int64) (seconds int64, shortened bool) {
	current = min(current, MaxSeconds)
	g, set := current, current > 0
	if pod != nil && pod.DeletionGracePeriodSeconds != nil {
		if dgp := *pod.DeletionGracePeriodSeconds; !set || dgp < g {
			g, set = dgp, true
		}
	}
	if override != nil && (!set || *override < g) {
		g, set = *override, true
	}
	if !set && pod != nil {
		g = podfacts.TerminationGracePeriodSeconds(&pod.Spec)
	}
	g = max(min(g, MaxSeconds), 1)
	return g, current > 0 && g != current
}

// MaxSeconds is the largest grace period, in seconds, that any function of this package
// returns: the largest whole number of seconds a time.Duration holds (about 292 years),
// so that time.Duration(s)*time.Second never overflows. Larger inputs (a
// terminationGracePeriodSeconds of math.MaxInt64, say) are cut to it.
const MaxSeconds = int64(math.MaxInt64 / int64(time.Second))
