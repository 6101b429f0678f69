// Package grace holds the grace-period arithmetic of pod termination, as pure functions.
//
// Two levels exist, as in the kubelet:
//
//   - Pod level (Effective): how long a terminating pod is given, in whole seconds. The pod
//     worker recomputes it on every termination request (a graceful delete, a second delete
//     with a shorter grace, an eviction) and passes it to PodSyncer.SyncTerminatingPod. It
//     only ever decreases once a period is in force, so a second delete or an eviction can
//     hurry a pod along but never give it more time.
//
//   - Container level (ContainerGracePeriod, StopTimeout, ContainerStopTimeout): for runtimes
//     that stop containers one by one, how long one container's stop may take: the budget is
//     the pod's deletion grace, else the spec's terminationGracePeriodSeconds (or, for a kill
//     caused by a failed liveness or startup probe, that probe's terminationGracePeriodSeconds),
//     or an override (the pod-level period during pod termination) in place of all of that;
//     the time the preStop hook took comes out of it; at least 2 s remain.
//
// Every function returning seconds returns at most MaxSeconds (about 292 years, the
// largest whole number of seconds a time.Duration holds), whatever its input, so
// time.Duration(seconds)*time.Second never overflows.
//
// A pod without terminationGracePeriodSeconds has the API server's default, 30 s (the
// kubelet only ever sees defaulted pods; apitest.DefaultPod), at both levels.
//
// Nothing here reads a clock, keeps state or panics; a nil pod or container is treated as
// one without any of the fields consulted (a nil pod has no spec to default: 1 s at pod
// level, MinContainerStopSeconds at container level).
package grace
