// Package agent is a node agent built on podlife's node package, with an in-memory API
// server and container runtime by default so it runs anywhere:
//
//	API server --list, watch--> Source --> node.Channel("api") (a Set per list, then Add/Update/Remove per event)
//	node (the kubelet's sync loop) --Runtime--> the in-memory runtime, or a Backend
//	node --status patches, final delete--> API server
//
// Everything lifecycle-related (the sync loop, housekeeping once every source is ready,
// the pod workers, the PLEG, the status manager) is package node's; this package wires
// the node to its sources and reports every step to an Observer, which the nodeagent
// command prints as a timeline. A status patch comes back from the API as a Reconcile, a
// graceful delete as a Delete, and the final delete with grace 0 as a Remove.
//
// The API server and the runtime are in-memory by default (statusmgrtest.FakeAPI and
// nodetest.Runtime over plegtest.Runtime); pods say how their in-memory containers behave
// through annotations (see ContainerBehaviour). Config.Patcher and Config.Source connect
// the agent to a real API server instead (package examples/kube); Config.Backend runs the
// pods elsewhere (package examples/vk: a virtual-kubelet provider; package examples/cri:
// a CRI runtime such as containerd).
//
// Config.NodeStatus makes the agent a node the cluster can use (package
// examples/nodestatus): it registers the Node object, posts its status (Ready while the
// node's PLEG is healthy) and renews its Lease while Run runs.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/podlife/podlife/admission"
	"github.com/podlife/podlife/examples/manifest"
	"github.com/podlife/podlife/examples/nodeinfo"
	"github.com/podlife/podlife/examples/nodestatus"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// Defaults of Config.
const (
	DefaultNodeName           = "node1"
	DefaultRelistPeriod       = node.DefaultRelistPeriod
	DefaultHousekeepingPeriod = node.DefaultHousekeepingPeriod
	DefaultStatusSyncPeriod   = node.DefaultStatusSyncPeriod
)

// Config configures an Agent. Zero durations take their defaults.
type Config struct {
	// NodeName is the node whose pods the agent runs.
	NodeName string
	// Server is the in-memory API server. It is the default Patcher and Source; required
	// unless both Patcher and Source are set.
	Server *statusmgrtest.FakeAPI
	// Patcher is the API the status manager patches statuses and deletes pods through
	// (kube.Patcher for a real API server); nil means Server.
	Patcher statusmgr.StatusPatcher
	// UpdateStatus writes statuses as status updates where the node holds the pod's
	// fresh copy (node.Config.UpdateStatus; the Patcher must be a
	// statusmgr.StatusUpdater): virtual-kubelet's call instead of the kubelet's patch.
	UpdateStatus bool
	// Source feeds the node's pods (kube.Source for a real API server); nil means
	// WatchSource(Server).
	Source Source
	// Runtime is the in-memory container runtime, whose containers behave as Containers and
	// the pods' annotations say. Required unless Backend is set.
	Runtime *plegtest.Runtime
	// Backend runs the pods instead of Runtime.
	Backend Backend
	// SerializeByName: see node.Config.SerializeByName.
	SerializeByName bool
	// Clock is the time source of every component; nil means the real clock.
	Clock clock.Clock
	// RelistPeriod, HousekeepingPeriod and StatusSyncPeriod: see node.Config.
	RelistPeriod       time.Duration
	HousekeepingPeriod time.Duration
	StatusSyncPeriod   time.Duration
	// MaxConcurrentSyncs: see node.Config.
	MaxConcurrentSyncs int
	// Containers is how containers behave unless a pod's annotations say otherwise.
	Containers ContainerBehaviour
	// Observer, if set, receives every step of the lifecycle, in order. It is called from
	// the agent's goroutines and must be quick and safe for concurrent use.
	Observer func(Step)
	// Logger receives the components' logs; nil discards them.
	Logger *slog.Logger
	// Recorder and Metrics: see node.Config (the kubelet's pod events; the observation
	// hooks, e.g. package examples/metrics).
	Recorder node.EventRecorder
	Metrics  node.Metrics
	// Admit: see node.Config.Admit (the kubelet's admit handlers, e.g.
	// admission.PredicateHandler over a node of package examples/nodeinfo): a refused pod
	// is never started and ends Failed with the handler's reason. nil admits every pod.
	Admit []admission.Handler
	// HostIPs are the node's addresses in pod statuses (status.hostIP and hostIPs, a
	// hostNetwork pod's podIPs; node.Config.HostIPs). nil: the host's own
	// (nodeinfo.HostIPs: its first global unicast address per family, 127.0.0.1 without
	// one).
	HostIPs []string
	// StaticSources are pod sources besides the API server's (node.Config.Sources is
	// node.SourceAPI and these), e.g. "file": their pods are static pods, fed with
	// Node().Update, and have mirror pods on the server when the Patcher is a
	// node.MirrorPodClient (kube.Patcher is).
	StaticSources []string
	// NodeStatus, if set, registers the node, posts its status and renews its Lease
	// while Run runs (package examples/nodestatus; its Client is the node's). Its
	// Node's name must be NodeName (empty: NodeName); Health defaults to the PLEG's
	// ("PLEG is not healthy: ..." makes the node NotReady) and Clock to Clock.
	NodeStatus *nodestatus.Config
	// ManifestDir, if set, is a static pod manifest directory (or file), the kubelet's
	// --pod-manifest-path: New adds "file" to StaticSources and Run runs a
	// manifest.Source over it, which re-lists it every ManifestPeriod (0:
	// manifest.DefaultPeriod, 20 s) on Clock and feeds its pods to Node().Update.
	ManifestDir    string
	ManifestPeriod time.Duration
}

// Agent is a running node agent. Create it with New and run it with Run.
type Agent struct {
	cfg        Config
	clock      clock.Clock
	started    time.Time
	node       *node.Node
	nodeStatus *nodestatus.Controller // nil without Config.NodeStatus
}

// New validates cfg and assembles the agent. It starts nothing.
func New(cfg Config) (*Agent, error) {
	if cfg.Backend == nil {
		if cfg.Runtime == nil {
			return nil, errors.New("agent: Runtime or Backend is required")
		}
		cfg.Backend = nodetest.NewRuntime(cfg.Runtime, cfg.Containers)
	}
	if cfg.Server != nil {
		if cfg.Patcher == nil {
			cfg.Patcher = cfg.Server
		}
		if cfg.Source == nil {
			cfg.Source = WatchSource(cfg.Server)
		}
	}
	if cfg.Patcher == nil || cfg.Source == nil {
		return nil, errors.New("agent: Server, or both Patcher and Source, are required")
	}
	if cfg.NodeName == "" {
		cfg.NodeName = DefaultNodeName
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.HostIPs == nil {
		ips, err := nodeinfo.HostIPs()
		if err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		cfg.HostIPs = ips
	}
	if cfg.ManifestDir != "" && !slices.Contains(cfg.StaticSources, manifest.SourceName) {
		cfg.StaticSources = append(slices.Clip(cfg.StaticSources), manifest.SourceName)
	}
	if _, ok := cfg.Patcher.(statusmgr.StatusUpdater); cfg.UpdateStatus && !ok {
		return nil, fmt.Errorf("agent: UpdateStatus needs a Patcher that is a statusmgr.StatusUpdater, %T is not", cfg.Patcher)
	}
	a := &Agent{cfg: cfg, clock: cfg.Clock, started: cfg.Clock.Now()}
	patcher := cfg.Patcher
	if cfg.Observer != nil && cfg.Server == nil {
		// No in-memory server reports the patches and deletes: observe the calls instead.
		patcher = observingPatcher{next: cfg.Patcher, a: a}
		if mc, ok := cfg.Patcher.(node.MirrorPodClient); ok {
			// Keep the mirror pods of static pods (StaticSources).
			patcher = mirroringPatcher{observingPatcher: patcher.(observingPatcher), MirrorPodClient: mc}
		}
	}
	var onTransition func(podworker.Transition)
	if cfg.Observer != nil {
		onTransition = a.onTransition
	}
	n, err := node.New(node.Config{
		NodeName: cfg.NodeName, Runtime: cfg.Backend, Patcher: patcher, HostIPs: cfg.HostIPs,
		Clock: cfg.Clock, Logger: cfg.Logger, RelistPeriod: cfg.RelistPeriod,
		HousekeepingPeriod: cfg.HousekeepingPeriod, StatusSyncPeriod: cfg.StatusSyncPeriod,
		MaxConcurrentSyncs: cfg.MaxConcurrentSyncs, SerializeByName: cfg.SerializeByName,
		OnEvent: a.onEvent, OnTransition: onTransition, Recorder: cfg.Recorder, Metrics: cfg.Metrics,
		Admit: cfg.Admit, Sources: sources(cfg.StaticSources), UpdateStatus: cfg.UpdateStatus,
	})
	if err != nil {
		return nil, err
	}
	a.node = n
	if cfg.NodeStatus != nil {
		if a.nodeStatus, err = newNodeStatus(*cfg.NodeStatus, cfg.NodeName, cfg.Clock, n.Relister()); err != nil {
			return nil, err
		}
	}
	if cfg.Observer != nil && cfg.Server != nil {
		cfg.Server.SetObserver(a.observeServer)
	}
	return a, nil
}

// sources is node.Config.Sources for the static sources (nil: the default, the API's).
func sources(static []string) []string {
	if len(static) == 0 {
		return nil
	}
	return append([]string{node.SourceAPI}, static...)
}

// Run runs the agent until ctx ends, then waits for every goroutine it started.
func (a *Agent) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var sourceErr error
	wg.Go(func() {
		if err := a.cfg.Source.Run(ctx, a.cfg.NodeName, a.node.Channel(ctx, node.SourceAPI)); err != nil {
			sourceErr = err
			cancel()
		}
	})
	if a.nodeStatus != nil {
		wg.Go(func() { _ = a.nodeStatus.Run(ctx) }) // nil once ctx ends
	}
	var manifestErr error
	if a.cfg.ManifestDir != "" {
		ms := &manifest.Source{Path: a.cfg.ManifestDir, NodeName: a.cfg.NodeName, Update: a.node.Update,
			Period: a.cfg.ManifestPeriod, Clock: a.clock, Logger: a.cfg.Logger}
		wg.Go(func() {
			// ErrStopped: the node stopped first, as Run ends.
			if err := ms.Run(ctx); err != nil && !errors.Is(err, node.ErrStopped) {
				manifestErr = err
				cancel()
			}
		})
	}
	err := a.node.Run(ctx)
	cancel()
	wg.Wait()
	return errors.Join(err, sourceErr, manifestErr)
}

// newNodeStatus is the node status controller of cfg for the node nodeName, healthy
// while relister is.
func newNodeStatus(cfg nodestatus.Config, nodeName string, clk clock.Clock, relister node.RelisterQueries) (*nodestatus.Controller, error) {
	if cfg.Node == nil {
		return nil, errors.New("agent: NodeStatus.Node is required")
	}
	cfg.Node = cfg.Node.DeepCopy()
	if cfg.Node.Name == "" {
		cfg.Node.Name = nodeName
	}
	if cfg.Node.Name != nodeName {
		return nil, fmt.Errorf("agent: NodeStatus.Node is %q, not the agent's node %q", cfg.Node.Name, nodeName)
	}
	if cfg.Health == nil {
		cfg.Health = func() error {
			if ok, err := relister.Healthy(); !ok {
				return fmt.Errorf("PLEG is not healthy: %w", err)
			}
			return nil
		}
	}
	if cfg.Clock == nil {
		if c, ok := clk.(clock.WithTicker); ok {
			cfg.Clock = c
		}
	}
	return nodestatus.New(cfg)
}

// Started is the instant Step.Since counts from (when New assembled the agent), on its
// clock: an observer's own lines placed on Since's scale measure from it.
func (a *Agent) Started() time.Time { return a.started }

// Node returns the agent's node, for queries, tests and observers, and for what ends
// pods by the node's own decision while Run runs: KillPod, and Shutdown (the kubelet's
// graceful node shutdown).
func (a *Agent) Node() *node.Node { return a.node }

// Workers, Status and Relister are the node's read-only queries, for tests and observers.
func (a *Agent) Workers() node.WorkerQueries    { return a.node.Workers() }
func (a *Agent) Status() node.StatusQueries     { return a.node.Status() }
func (a *Agent) Relister() node.RelisterQueries { return a.node.Relister() }
