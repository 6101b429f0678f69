// Package node is the kubelet's sync loop as a library: a node agent is New(cfg) plus
// Run(ctx). The caller gives it a container runtime (Runtime) and an API client
// (statusmgr.StatusPatcher) and feeds it the node's pods per source (Update or Channel:
// the API server's watch, a manifest directory, a test); the node does the rest, with the
// kubelet's rules (syncLoopIteration, the Handle* functions and HandlePodCleanups of
// kubelet.go and kubelet_pods.go, 1.37):
//
//	sources --Update--> config.Mux --changes--> loop --UpdatePod--> podworker
//	podworker --SyncPod/SyncTerminatingPod/...--> the node's PodSyncer --> Runtime
//	Runtime <--relist-- pleg --events--> loop --UpdatePod(sync)--> podworker
//	PodSyncer --SetPodStatus/TerminatePod--> statusmgr --patch, final delete--> API server
//
// # Guarantees
//
//   - One loop goroutine applies, one at a time and in arrival order: config changes
//     (per merge in the kubelet's order REMOVE, ADD, UPDATE, DELETE, RECONCILE), PLEG
//     events and the housekeeping tick. ADD creates a pod worker (oldest pods first) for each pod
//     Config.Admit admits (a refused pod is never started and ends Failed with the
//     handler's reason, as the kubelet's rejectPod writes it);
//     UPDATE and DELETE update it (a graceful delete is an update that carries the
//     deletionTimestamp); REMOVE kills it; RECONCILE (only the status changed) records the
//     pod and syncs it only when its Ready condition disagrees with its containers or it is
//     terminal and deleted. A PLEG event syncs its pod (the events queued right behind it
//     for the same pod from the same inspection are reported with it and ask for no sync
//     of their own: the sync reads a status that holds them); events of pods no source has
//     are dropped.
//   - Nothing is removed or killed for missing from the sources before every source of
//     Config.Sources has delivered its first full list (a config.Set) to the loop: a
//     REMOVE before that is refused (EventError, ErrSourcesNotReady) and housekeeping is
//     skipped. A restart with a slow first list kills nothing, restarts nothing and
//     removes nothing. Ready is closed when the sources are ready.
//   - Housekeeping, every HousekeepingPeriod once the sources are ready, in the kubelet's
//     order: SyncKnownPods with every desired pod (finished pods no longer desired are
//     forgotten); statuses of pods in no source dropped; mirror pods whose static pod is
//     gone (and not terminating) deleted; desired, non-terminal pods unknown to the workers
//     (a UID reused, a static pod with a fixed UID) started again with a fresh status;
//     terminal, deleted pods unknown to the workers handed to them so their objects can be
//     deleted; runtime pods with anything running that no worker owns (or whose worker has
//     finished) killed with grace 1; and the stopped leftovers of runtime pods that no
//     worker and no source knows removed (Runtime.RemovePod), never while anything of them
//     may run. Runtime.ListPods and RemovePod run on a goroutine of their own and the loop
//     goes on meanwhile; what to kill and remove is decided on the loop from the workers'
//     and the sources' state once the list is in, and checked again before each removal.
//     The next round starts HousekeepingPeriod after the previous one ended.
//   - The API status is generated from the runtime status (GenerateAPIStatus: phase,
//     container statuses, conditions, IPs, qosClass from the spec and never changed), then
//     completed by the runtime if it implements StatusGenerator, and handed to the status
//     manager, which patches it and, once the pod is terminal on the server, deleted and
//     finished by its worker, deletes the object with grace 0 and a UID precondition. A
//     pod is never deleted from the API server before its containers are stopped and its
//     terminal phase is on the server.
//   - The PodSyncer (internal): SyncPod writes the status first, reports a terminal pod
//     terminal, then calls Runtime.SyncPod (and keeps a static pod's mirror pod when the
//     Patcher implements MirrorPodClient); with a StartReporter runtime, a pod's first
//     status waits until the runtime reports the pod (or its SyncPod fails). SyncTerminatingPod writes the status (with a
//     kill request's status function applied), calls Runtime.KillPod with the effective
//     grace period, re-inspects the pod and fails while a container still runs, then
//     writes the stopped status (podIsTerminal). SyncTerminatingRuntimePod calls
//     KillRuntimePod. SyncTerminatedPod writes the final status, calls CleanupPod, then
//     statusmgr.TerminatePod. Every failure is retried by the pod workers with back-off and
//     reported as an EventError with the kubelet's reason (FailedSync, FailedKillPod);
//     Config.BackoffInitial and BackoffMax set the back-off, Config.ResyncInterval the
//     period of a running pod's syncs. The ContainerErrors of Runtime.SyncPod's error
//     are kept per pod and container (the kubelet's reason cache) and shown as Waiting
//     reasons by the next status (see Runtime.SyncPod).
//   - Probes (package prober), when the Runtime is a Prober: the node adds a pod's probes
//     and its containers' instances at each SyncPod, runs them on the kubelet's schedule
//     (Prober.Probe, outside every lock, at most prober.DefaultWorkers at once), and
//     writes a readiness or startup result change to the status at once (a sync of the
//     pod, no relist). A container whose liveness or startup probe failed is killed in
//     the pod's next SyncPod (Prober.KillContainer with the probe's kill reason, a Normal
//     Killing event with the kubelet's message) before Runtime.SyncPod starts it again.
//     Failures are recorded as Unhealthy events ("Liveness probe failed: <output>"),
//     warnings as ProbeWarning; a probe that errored is thrown away. SyncTerminatingPod
//     stops the pod's liveness and startup probes; SyncTerminatedPod removes its probes.
//   - activeDeadlineSeconds (the kubelet's active-deadline handler,
//     ActiveDeadlineExceeded): a pod active on the node for its deadline from its
//     startTime gets the status Failed, DeadlineExceeded, "Pod was active on the node
//     longer than the specified deadline", a Normal DeadlineExceeded event, and is
//     killed as any terminal pod. The loop keeps one timer for the earliest deadline and
//     syncs the pod when it passes; each SyncPod sets the pod's deadline again, so a
//     deadline shortened by an update is honoured.
//   - KillPod is the kubelet's killPodNow, the one entry point for ending a pod on the
//     node's own decision (eviction, graceful shutdown, preemption): through the loop,
//     in order with config changes, it hands a kill (a grace override that may only
//     shorten the period in force, a status function, the eviction mark) to the pod's
//     worker and returns once the containers are stopped. A killed pod is never started
//     again while its UID is known, whatever its sources say. Its status function runs
//     on the statuses SyncTerminatingPod writes, and the final status keeps what it set
//     (a terminal phase of the status manager's status is never left), so the API
//     server sees its phase, reason, message and DisruptionTarget condition before the
//     pod's final delete. A status function may set the phase (Failed, or Succeeded),
//     reason, message and kubelet-owned or DisruptionTarget conditions (use
//     SetDisruptionTarget; the status manager stamps the transition time); conditions
//     of other types are the API server's and are not written; container statuses,
//     IPs and qosClass are regenerated. It must be quick and pure: it runs on a pod
//     worker's goroutine, outside every lock, possibly more than once. Shutdown (with
//     ShutdownPlan and ShutdownStatus) is the kubelet's graceful node shutdown on top of
//     KillPod: pods by priority group, lowest first, each group's period at most; from
//     its start on, new pods are refused (NodeShutdownNotAdmittedReason), as the kubelet's.
//   - KillPod may be called from an admit handler of Config.Admit with the handler's
//     context (the kubelet's critical-pod preemption, see Preempt): the kill then goes
//     to the pod workers directly, not through the loop, and the loop stays blocked
//     until the victim's containers are stopped, as the kubelet's sync loop does.
//   - Runtime methods are called outside every lock, at most one at a time per pod UID,
//     with a context that ends when the call returns, is superseded or Run ends (see
//     Runtime: containers that outlive SyncPod are started under the runtime's own
//     lifetime, never SyncPod's ctx). OnEvent is
//     called outside every lock.
//   - Pods are shared and read-only, as in the kubelet: the config merge hands the node
//     its stored objects (config.MuxConfig.SharedPods), which the pod manager, the pod
//     workers, the status manager, the Runtime and every hook then share, and which share
//     memory with the pods passed to Update. No part of the node writes to a pod; user code
//     must not either (DeepCopy first). A change of a pod is a new object (copy on write),
//     so a pod once handed out never changes. Config.CopyPods makes the merge deep-copy
//     every new or changed pod instead.
//   - Run starts the relister, the pod workers, the status manager and the loop, and
//     returns only after every goroutine it started has ended. A runtime that implements
//     StatusPusher has its pushed statuses fed to the PLEG.
//
// # Who calls what
//
// The caller calls New, Run (once), Update or Channel (from any goroutine, before or
// during Run: after it, updates fail with ErrStopped), Ready, and the query methods.
// KillPod and Shutdown may be called from any goroutine (before Run they wait for it;
// after it they fail with ErrStopped) except those they wait for: not from OnEvent (the
// loop's goroutine), a Runtime or StatusGenerator method, a status function or a
// metrics hook, where they would wait for themselves (until their context ends).
// Updates come only from Config.Sources (others fail with ErrUnknownSource); a pod bound
// to another node or without a name is dropped from its update (EventError,
// ReasonDropped) and never runs. The node calls the Runtime (from the pod
// workers' goroutines and, for ListPods and RemovePod in housekeeping, from a goroutine
// of its own, one round at a time: a slow runtime holds up no config change or PLEG event), the
// StatusPatcher (from the status manager's writers: up to statusmgr.DefaultMaxConcurrentWrites
// calls at once, one per pod at a time) and the hooks.
//
// # Observe it: metrics, events, logs
//
//   - Config.Metrics (see Metrics) collects the components' hooks: the pod workers'
//     (podworker.Hooks), the PLEG's (pleg.Hooks), the status manager's write latency, and
//     Housekeeping, called after every housekeeping round with the desired pods, the
//     pod workers' pods in the kubelet's kubelet_working_pods label combinations, the
//     orphaned runtime pods killed and the pods restarted. Package examples/metrics turns
//     them into the kubelet's Prometheus series. Every hook runs outside every lock.
//   - Config.Recorder (see EventRecorder) gets the kubelet's pod events: Killing,
//     FailedKillPod, FailedSync. It must not block. The runtime records its own
//     (Pulled, Created, Started, BackOff, NetworkNotReady, ...). examples/kube.Recorder
//     writes them to the API server through client-go's record package.
//   - Config.Logger gets every component's logs with the same keys everywhere: pod is
//     namespace/name, podUID the UID; what the kubelet logs at V(2) and above is Debug.
//     The *Context methods are used where a context is at hand, so a handler can take
//     values from it. A klog or logr user passes slog.New(logr.ToSlogHandler(logger)).
package node
