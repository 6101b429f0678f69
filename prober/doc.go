// Package prober is the kubelet's prober as a library: it decides when each startup,
// liveness and readiness probe of a node's containers runs and what each one's result
// is, and runs them through a caller's function. It does not know how to probe (exec,
// httpGet, tcpSocket, grpc): that is the caller's Config.Probe (package node's Prober).
//
// # Shape
//
// Machine is pure and single-threaded (values in, values out, the time an argument):
// SetPod adds a pod's probes and records its containers' current instances, Due hands
// out the probes due, Report takes their outcomes, Result answers the current results.
// Runner wraps it with a lock, one scheduling goroutine with one timer (a heap orders the
// probes by their next run) and a goroutine per run in flight, at most Config.Workers,
// that calls Config.Probe: 10,000 containers with two probes each are run by at most
// Config.Workers goroutines, not 20,000, and no goroutine waits for an idle probe.
//
// # Rules (the kubelet's pkg/kubelet/prober worker.go, v1.37)
//
//   - A probe first runs when added (after a random part of its period when the agent
//     started less than a period ago: Config.Rand, NewMachine's rand), then every
//     periodSeconds, on the ticks of its period; a run that outlasts a tick is followed
//     at once by one more, and the other ticks it outlasted are dropped (a ticker's).
//   - It does not run, and its tick passes, while its container has no running
//     instance, before initialDelaySeconds (whole seconds since the instance started),
//     while on hold, for liveness and readiness before the container started (its
//     startup probe succeeded), for startup after.
//   - An outcome becomes the result once repeated successThreshold (success) or
//     failureThreshold (failure) times in a row. Unknown counts as failure; an error
//     is thrown away.
//   - Initial results of a new instance (a new container ID): readiness Failure,
//     liveness Success, startup Unknown. An instance that no longer runs has Failure.
//   - A liveness Failure and any startup result put the probe on hold until the next
//     instance: its result is kept, and the caller restarts the container.
//   - A result belongs to the instance it was taken for: a run reported after its
//     container got a new instance, or after its probe was removed, is ignored.
//
// # Guarantees of Runner
//
//   - Config.Probe and Config.OnChange are never called under the Runner's lock.
//   - At most one run per probe is in flight; at most Config.Workers runs in all.
//   - Time only through Config.Clock (each run's timeout with its AfterFunc); every
//     goroutine ends when Run's context ends, and Run returns once they have.
package prober
