package node

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/admission"
	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/internal/podfacts"
	"github.com/podlife/podlife/internal/validate"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/prober"
	"github.com/podlife/podlife/statusmgr"
)

// Defaults of Config, the kubelet's values.
const (
	DefaultRelistPeriod       = time.Second
	DefaultHousekeepingPeriod = 2 * time.Second
	DefaultStatusSyncPeriod   = 10 * time.Second
	// DefaultEventChannelCapacity is the PLEG channel's: room for every container and
	// sandbox of 100,000 single-container pods changing in one relist (two events each;
	// the buffer takes 2 MiB). The kubelet's 1,000 drops events when a thousand pods start
	// at once, and a dropped event delays the pod's sync to its resync (a minute).
	DefaultEventChannelCapacity = 1 << 18
	// SourceAPI is the name of the API server's pod source (the kubelet's "api"): pods
	// from any other source are static pods.
	SourceAPI = podfacts.APISource
)

// Errors of the package. Every error it returns wraps one of them.
var (
	// ErrInvalidConfig is wrapped by New's validation errors.
	ErrInvalidConfig = errors.New("node: invalid config")
	// ErrInvalidUpdate is wrapped by Update's errors for an update that changes nothing.
	ErrInvalidUpdate = errors.New("node: invalid pod update")
	// ErrAlreadyRunning is returned by a second call of Run.
	ErrAlreadyRunning = errors.New("node: Run called twice")
	// ErrSourcesNotReady is reported (Event.Err) for a removal refused because not every
	// source has delivered its first full list.
	ErrSourcesNotReady = errors.New("node: not every pod source is ready")
	// ErrUnknownSource is wrapped by Update's error (and a Channel's EventError) for an
	// update from a source not in Config.Sources (a misspelt "apiserver", a static-pod
	// source not listed). The update changes nothing.
	ErrUnknownSource = errors.New("node: update from a source not in Config.Sources")
	// ErrOtherNode is reported (an EventError with ReasonDropped) for a pod bound to
	// another node (spec.nodeName set and not Config.NodeName): the pod is dropped from its
	// update and gets no pod worker.
	ErrOtherNode = errors.New("node: pod bound to another node")
	// ErrStopped is wrapped by Update's error (and a Channel's EventError) for an update
	// sent after Run returned, or still waiting when it returned: nobody reads it.
	ErrStopped = errors.New("node: the node has stopped")
)

// Config configures a Node. NodeName, Runtime and Patcher are required; everything else
// has the kubelet's default.
//
// Pods are shared and read-only, as in the kubelet: every pod the node hands to user code
// (the Runtime, StatusGenerator, MirrorPodClient, EventRecorder, OnEvent, the metrics
// hooks, Pod) is the object the config merge stores, shared with the node's pod manager,
// pod workers and status manager and, for spec, labels, status and the other fields it
// keeps references to, with the pod passed to Update; nothing may modify it. Copy it
// first (DeepCopy) to change it. CopyPods gives the node private deep copies instead.
type Config struct {
	// NodeName is the node whose pods the agent runs.
	NodeName string
	// Runtime runs the pods. Required.
	Runtime Runtime
	// Patcher is the API client the status manager patches statuses and deletes pods
	// through. Required. If it also implements MirrorPodClient, static pods get mirror
	// pods.
	Patcher statusmgr.StatusPatcher
	// Sources are the pod sources: the only sources Update and Channel accept (an update
	// from any other fails with ErrUnknownSource), and each must deliver a first full
	// list (a config.Set) before housekeeping runs and before a source's removal kills a
	// pod (the kubelet's "all sources ready"). nil means []string{SourceAPI}, so a node
	// with a static-pod source lists both: Sources: []string{SourceAPI, "file"}. A source
	// that has nothing to list yet sends an empty Set. An empty non-nil slice means no
	// source at all.
	Sources []string
	// HostIPs are the node's addresses, primary first, for status.hostIP(s).
	HostIPs []string
	// Clock is the time source of every component; nil means the real clock.
	Clock clock.Clock
	// Logger receives the components' logs; nil discards them.
	Logger *slog.Logger
	// RelistPeriod is the PLEG's relist period (1 s).
	RelistPeriod time.Duration
	// HousekeepingPeriod is the period of the housekeeping round (2 s).
	HousekeepingPeriod time.Duration
	// StatusSyncPeriod is the status manager's full-sync period (10 s).
	StatusSyncPeriod time.Duration
	// EventChannelCapacity is the PLEG's event buffer (DefaultEventChannelCapacity).
	EventChannelCapacity int
	// ResyncInterval is how long after a successful sync a running pod is synced again
	// (podworker.Config.ResyncInterval, jittered downwards by up to half; 0:
	// podworker.DefaultResyncInterval, a minute: the kubelet's syncFrequency, which the
	// kubelet jitters upwards by up to half).
	ResyncInterval time.Duration
	// BackoffInitial and BackoffMax bound the delay before a failed sync, kill or
	// cleanup is retried: it doubles per consecutive failure from BackoffInitial up to
	// BackoffMax, jittered downwards by up to half (podworker.Config; 0:
	// podworker.DefaultBackoffInitial, 1 s, and podworker.DefaultBackoffMax, 10 s, or
	// BackoffInitial if larger). The kubelet retries after a fixed 10 s (its
	// backOffPeriod) jittered upwards by up to half; BackoffInitial = BackoffMax = 10 s
	// comes closest. BackoffMax below BackoffInitial is invalid.
	BackoffInitial time.Duration
	BackoffMax     time.Duration
	// MaxConcurrentSyncs bounds the runtime actions in flight at once
	// (podworker.Config.MaxConcurrentSyncs; 0: podworker.DefaultMaxConcurrentSyncs,
	// podworker.Unbounded: no bound, the kubelet's rule).
	MaxConcurrentSyncs int
	// MaxConcurrentWrites bounds the status manager's API calls in flight at once, one
	// per pod at a time (statusmgr.Config.MaxConcurrentWrites; 0:
	// statusmgr.DefaultMaxConcurrentWrites).
	MaxConcurrentWrites int
	// UpdateStatus has the status manager write a pod's status as a status update guarded
	// by the resourceVersion of the node's copy of the pod from the API server, instead of
	// the kubelet's patch, when it holds such a copy (statusmgr.Config.UpdateStatus; the
	// Patcher must be a statusmgr.StatusUpdater): virtual-kubelet's call. false: patches,
	// as the kubelet.
	UpdateStatus bool
	// FullComparison makes the config merge compare every pod of the "api" source field by
	// field, as the kubelet does. By default the node trusts that source's resourceVersions
	// (config.MuxConfig.TrustResourceVersions, the shortcut the W1 and W6 workloads
	// measure): a pod listed again with an unchanged UID and resourceVersion counts as
	// unchanged. Set it when that source may deliver a pod with changed contents under an
	// unchanged resourceVersion (a hand-made fixture; the API server never does), which the
	// shortcut would not see.
	FullComparison bool
	// CopyPods makes the config merge hand the node a deep copy of every new or changed pod
	// (config.MuxConfig.SharedPods off), as before shared pods: the pods the node hands out
	// then share no memory with the pods passed to Update or with the merge's store. They
	// are still shared within the node and read-only. It costs a deep copy of every new or
	// changed pod; set it only for a Runtime that cannot be kept from modifying the pods
	// it gets.
	CopyPods bool
	// SerializeByName: a pod does not start while another pod of the same namespace and
	// name still runs (podworker.Config.SerializeByName); for runtimes that key pods by
	// name, like virtual-kubelet providers.
	SerializeByName bool
	// Admit are the admit handlers (the kubelet's pod admit handlers, e.g.
	// admission.PredicateHandler): each new pod of a config ADD, oldest first, is
	// admitted against the pods already admitted and still active (not terminal, or
	// still terminating; the pods admitted before it in the same ADD included). They are
	// called in order from the loop goroutine, outside every lock, the first refusal
	// deciding; the loop waits for them. A refused pod is never started and gets no pod
	// worker: its status becomes Failed with the handler's reason and "Pod was rejected: "
	// + its message (admission.RejectedStatus), written to the API server; a Warning
	// event with that reason is recorded and an EventConfig with ReasonRejected
	// reported. Once deleted, its object is deleted as any finished pod's. Static pods
	// are admitted too; a pod already terminal or already terminating is not. nil: every
	// pod is admitted.
	Admit []admission.Handler
	// OnEvent, if set, receives every step of the loop (see Event), outside any lock,
	// from the loop's and the pod workers' goroutines. It must be quick and safe for
	// concurrent use; it may call the Node's query methods.
	OnEvent func(Event)
	// OnTransition, if set, receives every stage change of a pod, in order, outside the
	// pod workers' lock (podworker.Config.OnTransition); Metrics.PodWorkers.Transition
	// gets the same with the time of the change.
	OnTransition func(podworker.Transition)
	// Recorder, if set, receives the Kubernetes events the kubelet records about pods
	// (Killing, FailedKillPod, FailedSync; see EventRecorder), outside every lock. It
	// must not block. nil records none.
	Recorder EventRecorder
	// Metrics are the components' observation points (see Metrics); the zero value
	// observes nothing.
	Metrics Metrics
}

// Node is a running node agent: the kubelet's sync loop around podlife's parts. Create
// it with New, feed it pods with Update or Channel, and run it with Run.
type Node struct {
	cfg     Config
	clock   clock.Clock
	log     *slog.Logger
	runtime Runtime
	mirrors MirrorPodClient // nil unless the Patcher implements it
	gen     StatusGenerator // nil unless the Runtime implements it
	prober  Prober          // nil unless the Runtime implements it
	// reportsStart: the Runtime is a StartReporter that reports starts (see syncer's
	// SyncPod).
	reportsStart bool
	// probes runs the containers' probes through prober; nil without one.
	probes *prober.Runner

	mux      *config.Mux
	cache    *pleg.Cache
	relister *pleg.Relister
	workers  *podworker.Runner
	status   *statusmgr.Manager
	pods     *podManager
	// stopped holds, per pod, the status SyncTerminatingPod inspected after a successful
	// kill, until the terminated work takes it (see statusAfter).
	stopped stoppedStatuses
	// reasons holds the ContainerErrors of each pod's last SyncPod (the kubelet's
	// ReasonCache).
	reasons reasonCache
	// deadlines holds when each pod's active deadline passes, for the loop's timer.
	deadlines deadlines
	// kills carries KillPod's requests to the loop; ended is closed when the loop ends.
	kills chan *killRequest
	ended chan struct{}
	// shuttingDown is set once Shutdown started: admission refuses every new pod.
	shuttingDown atomic.Bool

	ready     chan struct{} // closed once every source delivered its first full list
	readyOnce sync.Once
	running   chan struct{} // holds a token once Run was called
}

// New validates cfg and assembles the node. It starts nothing.
func New(cfg Config) (*Node, error) {
	if err := validateConfig(&cfg); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, clock: cfg.Clock, log: cfg.Logger, runtime: cfg.Runtime,
		cache: pleg.NewCache(), pods: newPodManager(),
		ready: make(chan struct{}), running: make(chan struct{}, 1),
		kills: make(chan *killRequest), ended: make(chan struct{}),
		deadlines: deadlines{wake: make(chan struct{}, 1)}}
	n.stopped.seed = maphash.MakeSeed()
	n.mirrors, _ = cfg.Patcher.(MirrorPodClient)
	n.gen, _ = cfg.Runtime.(StatusGenerator)
	n.prober, _ = cfg.Runtime.(Prober)
	if sr, ok := cfg.Runtime.(StartReporter); ok {
		n.reportsStart = sr.ReportsStart()
	}
	var err error
	n.mux, err = config.NewMux(config.MuxConfig{Sources: cfg.Sources, OnlySources: true, Clock: cfg.Clock, Logger: cfg.Logger,
		TrustResourceVersions: !cfg.FullComparison, SharedPods: !cfg.CopyPods, Accept: n.accept,
		OnDrop: func(d config.Drop) {
			n.emit(Event{Kind: EventError, Pod: d.Pod, Reason: ReasonDropped, Err: d.Err})
		},
		OnError: func(source string, err error) {
			n.emit(Event{Kind: EventError, Reason: ReasonUpdateFailed, Err: updateError(source, err)})
		}})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	n.relister, err = pleg.New(pleg.Config{Runtime: cfg.Runtime, Cache: n.cache, Clock: cfg.Clock,
		RelistPeriod: cfg.RelistPeriod, EventChannelCapacity: cfg.EventChannelCapacity, Logger: cfg.Logger,
		Hooks: cfg.Metrics.PLEG})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	n.workers, err = podworker.New(podworker.Config{Syncer: (*syncer)(n),
		View:            podworker.RuntimeViewFuncs{StatusAfterFunc: n.statusAfter, LastStatusFunc: n.relister.LastStatus},
		SerializeByName: cfg.SerializeByName, MaxConcurrentSyncs: cfg.MaxConcurrentSyncs,
		ResyncInterval: cfg.ResyncInterval, BackoffInitial: cfg.BackoffInitial, BackoffMax: cfg.BackoffMax,
		Clock: cfg.Clock, Logger: cfg.Logger, OnTransition: cfg.OnTransition, Hooks: n.podWorkerHooks()})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if n.probes, err = n.newProbes(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	n.status, err = statusmgr.New(statusmgr.Config{
		Patcher:                    cfg.Patcher,
		Lookup:                     n.pods,
		CouldHaveRunningContainers: n.workers.CouldHaveRunningContainers,
		Clock:                      cfg.Clock, SyncPeriod: cfg.StatusSyncPeriod, Logger: cfg.Logger,
		MaxConcurrentWrites: cfg.MaxConcurrentWrites,
		UpdateStatus:        cfg.UpdateStatus,
		ObserveSyncLatency:  cfg.Metrics.StatusSyncLatency,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return n, nil
}

// validateConfig checks cfg and fills in the defaults.
func validateConfig(cfg *Config) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case cfg.NodeName == "":
		return bad("NodeName is required")
	case validate.IsNil(cfg.Runtime):
		return bad("Runtime is required (got %T)", cfg.Runtime)
	case validate.IsNil(cfg.Patcher):
		return bad("Patcher is required (got %T)", cfg.Patcher)
	case cfg.Clock != nil && validate.IsNil(cfg.Clock):
		return bad("Clock is a nil %T", cfg.Clock)
	case cfg.Recorder != nil && validate.IsNil(cfg.Recorder):
		return bad("Recorder is a nil %T", cfg.Recorder)
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"RelistPeriod", &cfg.RelistPeriod, DefaultRelistPeriod},
		{"HousekeepingPeriod", &cfg.HousekeepingPeriod, DefaultHousekeepingPeriod},
		{"StatusSyncPeriod", &cfg.StatusSyncPeriod, DefaultStatusSyncPeriod},
		{"ResyncInterval", &cfg.ResyncInterval, podworker.DefaultResyncInterval},
		{"BackoffInitial", &cfg.BackoffInitial, podworker.DefaultBackoffInitial},
		{"BackoffMax", &cfg.BackoffMax, max(podworker.DefaultBackoffMax, cfg.BackoffInitial)},
	} {
		if *d.v < 0 {
			return bad("%s %v is negative", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if cfg.EventChannelCapacity < 0 {
		return bad("EventChannelCapacity %d is negative", cfg.EventChannelCapacity)
	}
	if cfg.EventChannelCapacity == 0 {
		cfg.EventChannelCapacity = DefaultEventChannelCapacity
	}
	if cfg.MaxConcurrentSyncs < 0 && cfg.MaxConcurrentSyncs != podworker.Unbounded {
		return bad("MaxConcurrentSyncs %d is negative and not podworker.Unbounded", cfg.MaxConcurrentSyncs)
	}
	if cfg.MaxConcurrentWrites < 0 {
		return bad("MaxConcurrentWrites %d is negative", cfg.MaxConcurrentWrites)
	}
	if cfg.Sources == nil {
		cfg.Sources = []string{SourceAPI}
	}
	seen := map[string]bool{}
	for _, s := range cfg.Sources {
		if s == "" || seen[s] {
			return bad("Sources %q: names must be non-empty and distinct", cfg.Sources)
		}
		seen[s] = true
	}
	for _, ip := range cfg.HostIPs {
		if ip == "" {
			return bad("HostIPs holds an empty address")
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Update merges one update of a pod source (the API server's watch, a manifest
// directory, a test) and hands its changes to the loop; it returns once they are queued
// for it, or with ctx's error. A config.Set replaces everything the source had; the
// first Set of a source makes it ready. It fails, and the update changes nothing, with
// an error wrapping
//   - ErrInvalidUpdate for an invalid update (no source, an unknown op, Reconcile);
//   - ErrUnknownSource for a source not in Config.Sources;
//   - ErrStopped once Run has returned (an update still waiting for room then fails
//     too, its changes lost).
//
// Pods the update cannot run are dropped from it, each reported as an EventError with
// ReasonDropped, and get no pod worker (in a Set, a dropped pod counts as not listed):
// nil, without a UID or a name (config.ErrNilPod, ErrEmptyUID, ErrEmptyName), a full
// name or UID an earlier pod of the update has, or bound to another node (ErrOtherNode;
// a pod without spec.nodeName is taken as this node's, as static pods and test fixtures
// come). It may be called before Run (it then blocks once the buffer of 50 updates is
// full) and from any goroutine.
func (n *Node) Update(ctx context.Context, u config.PodUpdate) error {
	if u.Source == "" {
		return fmt.Errorf("%w: the update names no source", ErrInvalidUpdate)
	}
	if err := n.mux.Update(ctx, u); err != nil {
		return updateError(u.Source, err)
	}
	return nil
}

// updateError is the node's error of a failed update of the config merge.
func updateError(source string, err error) error {
	switch {
	case errors.Is(err, config.ErrUnknownOp) || errors.Is(err, config.ErrInvalidOp) || errors.Is(err, config.ErrEmptySource):
		return fmt.Errorf("%w: %w", ErrInvalidUpdate, err)
	case errors.Is(err, config.ErrUnknownSource):
		return fmt.Errorf("%w: %w", ErrUnknownSource, err)
	case errors.Is(err, config.ErrClosed):
		return fmt.Errorf("%w: update from source %q: %w", ErrStopped, source, err)
	}
	return fmt.Errorf("node: update from source %q: %w", source, err)
}

// accept is the config merge's Accept: it refuses a pod bound to another node.
func (n *Node) accept(_ string, p *v1.Pod) error {
	if p.Spec.NodeName != "" && p.Spec.NodeName != n.cfg.NodeName {
		return fmt.Errorf("%w: %s/%s (uid %s) is bound to %q, this is %q", ErrOtherNode, p.Namespace, p.Name, p.UID, p.Spec.NodeName, n.cfg.NodeName)
	}
	return nil
}

// Channel returns the channel through which source sends its updates (see Update); the
// goroutine serving it stops when ctx ends. Failed updates are reported as EventError
// with ReasonUpdateFailed and Update's error (ErrUnknownSource for a source not in
// Config.Sources, ErrStopped after Run returned, ...); dropped pods as Update's are.
func (n *Node) Channel(ctx context.Context, source string) chan<- config.PodUpdate {
	return n.mux.Channel(ctx, source)
}

// Ready is closed once every source of Config.Sources has delivered its first full
// list to the loop: from then on, housekeeping runs and removals kill pods.
func (n *Node) Ready() <-chan struct{} { return n.ready }

// Run runs the node until ctx ends, then stops every goroutine it started and returns
// nil (or the error of a component that failed). It may be called once. Once it has
// returned, Update fails with ErrStopped.
func (n *Node) Run(ctx context.Context) error {
	select {
	case n.running <- struct{}{}:
	default:
		return ErrAlreadyRunning
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	run := func(f func(context.Context) error) {
		wg.Go(func() {
			if err := f(ctx); err != nil && ctx.Err() == nil {
				errs <- err
				cancel()
			}
		})
	}
	if p, ok := n.runtime.(StatusPusher); ok {
		p.PushStatuses(ctx, n.push)
	}
	run(func(ctx context.Context) error { n.relister.Run(ctx); return nil })
	run(n.workers.Run)
	run(n.status.Run)
	if n.probes != nil {
		run(n.probes.Run)
	}
	n.loop(ctx)
	close(n.ended) // KillPod's requests fail with ErrStopped
	n.mux.Close()  // nobody reads the merge's changes any more: updates fail with ErrStopped
	cancel()
	wg.Wait()
	select {
	case err := <-errs:
		return fmt.Errorf("node: %w", err)
	default:
		return nil
	}
}

// push feeds a status the runtime pushed into the PLEG.
func (n *Node) push(s *pleg.PodStatus) {
	if s == nil {
		return
	}
	if _, err := n.relister.PushStatus(s, n.clock.Now()); err != nil {
		n.emit(Event{Kind: EventError, UID: s.ID, Reason: ReasonFailedSync, Err: err})
	}
}

// WorkerQueries are the pod workers' read-only queries (see podworker.Runner), with the
// kubelet's meanings. They take the workers' lock, never wait for the loop, and may be
// called from any goroutine.
type WorkerQueries interface {
	Len() int
	PodState(uid types.UID) (podworker.PodState, bool)
	IsPodKnownTerminated(uid types.UID) bool
	CouldHaveRunningContainers(uid types.UID) bool
	ShouldPodBeFinished(uid types.UID) bool
	IsPodTerminationRequested(uid types.UID) bool
	ShouldPodContainersBeTerminating(uid types.UID) bool
	ShouldPodRuntimeBeRemoved(uid types.UID) bool
	ShouldPodContentBeRemoved(uid types.UID) bool
}

// StatusQueries are the status manager's read-only queries (see statusmgr.Manager's
// GetPodStatus and PodStatusView).
type StatusQueries interface {
	GetPodStatus(uid types.UID) (v1.PodStatus, bool)
	PodStatusView(uid types.UID) (v1.PodStatus, bool)
}

// RelisterQueries are the PLEG's read-only queries (see pleg.Relister's Healthy and
// DroppedEvents).
type RelisterQueries interface {
	Healthy() (bool, error)
	DroppedEvents() uint64
}

// workerQueries, statusQueries and relisterQueries hide the live components behind the
// queries: a caller cannot reach their mutating methods (a type assertion finds none).
type (
	workerQueries   struct{ r *podworker.Runner }
	statusQueries   struct{ m *statusmgr.Manager }
	relisterQueries struct{ r *pleg.Relister }
)

func (q workerQueries) Len() int { return q.r.Len() }
func (q workerQueries) PodState(uid types.UID) (podworker.PodState, bool) {
	return q.r.PodState(uid)
}
func (q workerQueries) IsPodKnownTerminated(uid types.UID) bool { return q.r.IsPodKnownTerminated(uid) }
func (q workerQueries) CouldHaveRunningContainers(uid types.UID) bool {
	return q.r.CouldHaveRunningContainers(uid)
}
func (q workerQueries) ShouldPodBeFinished(uid types.UID) bool { return q.r.ShouldPodBeFinished(uid) }
func (q workerQueries) IsPodTerminationRequested(uid types.UID) bool {
	return q.r.IsPodTerminationRequested(uid)
}
func (q workerQueries) ShouldPodContainersBeTerminating(uid types.UID) bool {
	return q.r.ShouldPodContainersBeTerminating(uid)
}
func (q workerQueries) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	return q.r.ShouldPodRuntimeBeRemoved(uid)
}
func (q workerQueries) ShouldPodContentBeRemoved(uid types.UID) bool {
	return q.r.ShouldPodContentBeRemoved(uid)
}

func (q statusQueries) GetPodStatus(uid types.UID) (v1.PodStatus, bool) { return q.m.GetPodStatus(uid) }
func (q statusQueries) PodStatusView(uid types.UID) (v1.PodStatus, bool) {
	return q.m.PodStatusView(uid)
}
func (q relisterQueries) Healthy() (bool, error) { return q.r.Healthy() }
func (q relisterQueries) DroppedEvents() uint64  { return q.r.DroppedEvents() }

// Workers returns the pod workers' read-only queries. To end a pod, call KillPod.
func (n *Node) Workers() WorkerQueries {
	return workerQueries{n.workers}
}

// Status returns the status manager's read-only queries.
func (n *Node) Status() StatusQueries { return statusQueries{n.status} }

// Relister returns the PLEG's read-only queries (its health for /healthz).
func (n *Node) Relister() RelisterQueries { return relisterQueries{n.relister} }

// Pod returns the desired pod with the UID as the sources last gave it (a static pod by
// its own UID, never a mirror pod).
func (n *Node) Pod(uid types.UID) (*v1.Pod, bool) { return n.pods.GetPodByUID(uid) }
