// Package agent is a node agent built on podlife, wired the way the kubelet closes its loop:
//
//	API server --watch--> config (Set/Add/Update/Remove) --changes--> sync loop
//	sync loop --UpdatePod--> podworker --PodSyncer--> runtime (start, kill, remove)
//	runtime <--relist-- pleg --events--> sync loop --UpdatePod(sync)--> podworker
//	PodSyncer --SetPodStatus/TerminatePod--> statusmgr --patch, final delete--> API server
//
// A status patch comes back from the API as a Reconcile, a graceful delete as a Delete, and
// the final delete with grace 0 as a Remove; housekeeping (SyncKnownPods) forgets finished
// pods and removes their runtime leftovers.
//
// The API server and the runtime are in-memory by default (statusmgrtest.FakeAPI and
// plegtest.Runtime), so the agent runs anywhere; pods say how their in-memory containers
// behave through annotations (see ContainerBehaviour). Config.Patcher and Config.Source
// connect the agent to a real API server instead (package examples/kube); Config.Backend
// runs the pods elsewhere (package examples/vk: a virtual-kubelet provider). Every step is reported to an Observer, which the nodeagent command
// prints as a timeline.
package agent

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// Defaults of Config.
const (
	DefaultNodeName           = "node1"
	DefaultRelistPeriod       = time.Second
	DefaultHousekeepingPeriod = 2 * time.Second
	DefaultStatusSyncPeriod   = 10 * time.Second
	// eventCapacity is the PLEG channel's: room for every container of a busy node changing
	// in one relist (the kubelet's 1,000 drops events when a thousand pods start at once,
	// and a dropped event delays the pod's sync until the periodic resync).
	eventCapacity = 1 << 16
	// apiSource is the config source of the API server's pods.
	apiSource = "api"
	// hostIP is the node's address as it appears in pod statuses (a documentation address).
	hostIP = "192.0.2.1"
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
	// Source yields the node's pods (kube.Source for a real API server); nil means Server.
	Source Source
	// Runtime is the in-memory container runtime, whose containers behave as Containers and
	// the pods' annotations say. Required unless Backend is set.
	Runtime *plegtest.Runtime
	// Backend runs the pods instead of Runtime (package examples/vk adapts a
	// virtual-kubelet provider); if it implements StatusPusher, its pushed statuses feed
	// the PLEG.
	Backend Backend
	// SerializeByName: a pod does not start while another pod of the same namespace and
	// name is still stopping (podworker.Config.SerializeByName). Backends that key pods by
	// name, like virtual-kubelet providers, need it.
	SerializeByName bool
	// Clock is the time source of every component; nil means the real clock.
	Clock clock.Clock
	// RelistPeriod is the PLEG's relist period (the kubelet's 1 s).
	RelistPeriod time.Duration
	// HousekeepingPeriod is the period of SyncKnownPods and runtime cleanup (the kubelet's 2 s).
	HousekeepingPeriod time.Duration
	// StatusSyncPeriod is the status manager's full-sync period (the kubelet's 10 s).
	StatusSyncPeriod time.Duration
	// Containers is how containers behave unless a pod's annotations say otherwise.
	Containers ContainerBehaviour
	// Observer, if set, receives every step of the lifecycle, in order. It is called from
	// the agent's goroutines and must be quick and safe for concurrent use.
	Observer func(Step)
	// Logger receives the components' logs; nil discards them.
	Logger *slog.Logger
}

// Agent is a running node agent. Create it with New and run it with Run.
type Agent struct {
	cfg     Config
	clock   clock.Clock
	backend Backend
	started time.Time

	mux      *config.Mux
	cache    *pleg.Cache
	relister *pleg.Relister
	workers  *podworker.Runner
	status   *statusmgr.Manager

	mu sync.Mutex
	// pods is the pod manager: the desired pods by UID, as the config last gave them.
	pods map[types.UID]*v1.Pod
}

// New validates cfg and assembles the agent. It starts nothing.
func New(cfg Config) (*Agent, error) {
	if cfg.Backend == nil {
		if cfg.Runtime == nil {
			return nil, errors.New("agent: Runtime or Backend is required")
		}
		cfg.Backend = memBackend{rt: cfg.Runtime, def: cfg.Containers}
	}
	if cfg.Server != nil {
		if cfg.Patcher == nil {
			cfg.Patcher = cfg.Server
		}
		if cfg.Source == nil {
			cfg.Source = cfg.Server
		}
	}
	if cfg.Patcher == nil || cfg.Source == nil {
		return nil, errors.New("agent: Server, or both Patcher and Source, are required")
	}
	if cfg.NodeName == "" {
		cfg.NodeName = DefaultNodeName
	}
	if cfg.RelistPeriod == 0 {
		cfg.RelistPeriod = DefaultRelistPeriod
	}
	if cfg.HousekeepingPeriod == 0 {
		cfg.HousekeepingPeriod = DefaultHousekeepingPeriod
	}
	if cfg.StatusSyncPeriod == 0 {
		cfg.StatusSyncPeriod = DefaultStatusSyncPeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	a := &Agent{cfg: cfg, clock: cfg.Clock, backend: cfg.Backend,
		cache: pleg.NewCache(), pods: map[types.UID]*v1.Pod{},
		started: cfg.Clock.Now()}
	var err error
	a.mux, err = config.NewMux(config.MuxConfig{Sources: []string{apiSource}, Clock: cfg.Clock, Logger: cfg.Logger,
		OnDrop: func(d config.Drop) { a.observe(KindError, d.Pod, "config dropped the pod: %v", d.Err) }})
	if err != nil {
		return nil, err
	}
	a.relister, err = pleg.New(pleg.Config{Runtime: cfg.Backend, Cache: a.cache, Clock: cfg.Clock,
		RelistPeriod: cfg.RelistPeriod, EventChannelCapacity: eventCapacity, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	a.workers, err = podworker.New(podworker.Config{Syncer: a, Cache: a.cache, Refresher: a.relister,
		SerializeByName: cfg.SerializeByName, Clock: cfg.Clock, Logger: cfg.Logger, OnTransition: a.onTransition})
	if err != nil {
		return nil, err
	}
	patcher := cfg.Patcher
	if cfg.Observer != nil && cfg.Server == nil {
		// No in-memory server reports the patches and deletes: observe the calls instead.
		patcher = observingPatcher{next: cfg.Patcher, a: a}
	}
	a.status, err = statusmgr.New(statusmgr.Config{
		Patcher:                    patcher,
		Lookup:                     statusmgr.PodLookupFuncs{GetPodByUIDFunc: a.pod},
		CouldHaveRunningContainers: a.workers.CouldHaveRunningContainers,
		Clock:                      cfg.Clock, SyncPeriod: cfg.StatusSyncPeriod, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	if cfg.Observer != nil && cfg.Server != nil {
		cfg.Server.SetObserver(a.observeServer)
	}
	return a, nil
}

// pod returns the desired pod with the UID.
func (a *Agent) pod(uid types.UID) (*v1.Pod, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.pods[uid]
	return p, ok
}

// Run runs the agent until ctx ends, then waits for every goroutine it started.
func (a *Agent) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	run := func(f func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil {
				errs <- err
				cancel()
			}
		}()
	}
	if p, ok := a.backend.(StatusPusher); ok {
		p.PushStatuses(ctx, func(s *pleg.PodStatus) {
			if s == nil {
				return
			}
			if _, err := a.relister.PushStatus(s, a.clock.Now()); err != nil {
				a.observeUID(KindError, s.ID, "pushed status: %v", err)
			}
		})
	}
	run(func(ctx context.Context) error { a.relister.Run(ctx); return nil })
	run(a.workers.Run)
	run(a.status.Run)

	run(a.apiSource)
	a.syncLoop(ctx)
	cancel()
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// apiSource feeds the API server's pods for this node into the config mux: the initial list
// as a Set, then every watch event as an incremental update, so the cost of a change does
// not grow with the number of pods.
func (a *Agent) apiSource(ctx context.Context) error {
	initial, watch := a.cfg.Source.Watch(ctx, a.cfg.NodeName)
	if err := a.mux.Update(ctx, config.PodUpdate{Op: config.Set, Source: apiSource, Pods: initial}); err != nil {
		return ignoreCanceled(ctx, err)
	}
	for ev := range watch {
		if err := a.mux.Update(ctx, watchUpdate(ev)); err != nil {
			return ignoreCanceled(ctx, err)
		}
	}
	return nil
}

// ignoreCanceled drops the error of an update interrupted by the agent's own stop.
func ignoreCanceled(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// syncLoop is the kubelet's syncLoopIteration: config changes, PLEG events and housekeeping.
func (a *Agent) syncLoop(ctx context.Context) {
	housekeeping := a.clock.NewTimer(a.cfg.HousekeepingPeriod)
	defer housekeeping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-a.mux.Updates():
			a.dispatch(u)
		case ev := <-a.relister.Events():
			a.handlePLEG(ev)
		case <-housekeeping.C():
			a.housekeeping()
			housekeeping.Reset(a.cfg.HousekeepingPeriod)
		}
	}
}

// watchUpdate turns one watch event into an incremental config update.
func watchUpdate(ev statusmgrtest.Event) config.PodUpdate {
	op := config.Update
	switch ev.Type {
	case statusmgrtest.Added:
		op = config.Add
	case statusmgrtest.Deleted:
		op = config.Remove
	}
	return config.PodUpdate{Op: op, Source: apiSource, Pods: []*v1.Pod{ev.Pod}}
}

// dispatch hands one category of changes to the pod workers, as the kubelet's
// HandlePod{Removes,Additions,Updates,Reconcile} do (the mux delivers them in the kubelet's
// order: removes, adds, updates, deletes, reconciles).
func (a *Agent) dispatch(u config.PodUpdate) {
	for _, p := range u.Pods {
		switch u.Op {
		case config.Remove:
			a.observe(KindConfig, p, "REMOVE")
			a.mu.Lock()
			delete(a.pods, p.UID)
			a.mu.Unlock()
			a.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, Pod: p})
		case config.Add:
			a.observe(KindConfig, p, "ADD")
			a.setPod(p)
			a.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: p})
		case config.Update:
			a.observe(KindConfig, p, "UPDATE")
			a.setPod(p)
			a.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: p})
		case config.Delete:
			// A graceful delete is an update whose deletionTimestamp makes the pod terminate.
			a.observe(KindConfig, p, "DELETE (graceful, %ds)", derefOr(p.DeletionGracePeriodSeconds, -1))
			a.setPod(p)
			a.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: p})
		case config.Reconcile:
			// Only the status changed (usually our own patch coming back).
			a.observe(KindConfig, p, "RECONCILE (phase %s)", p.Status.Phase)
			a.setPod(p)
		}
	}
}

func (a *Agent) setPod(p *v1.Pod) {
	a.mu.Lock()
	a.pods[p.UID] = p
	a.mu.Unlock()
}

func (a *Agent) updatePod(opts podworker.UpdatePodOptions) {
	if err := a.workers.UpdatePod(opts); err != nil {
		a.observe(KindError, opts.Pod, "UpdatePod: %v", err)
	}
}

// handlePLEG syncs the pod of a lifecycle event, as the kubelet's HandlePodSyncs does.
func (a *Agent) handlePLEG(ev *pleg.PodLifecycleEvent) {
	p, ok := a.pod(ev.ID)
	if !ok {
		a.observeUID(KindPLEG, ev.ID, "%s %v (pod unknown)", ev.Type, ev.Data)
		return
	}
	a.observe(KindPLEG, p, "%s %v", ev.Type, ev.Data)
	a.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodSync, Pod: p})
}

// housekeeping forgets finished pods that are no longer desired, drops their statuses,
// stops runtime pods nothing knows of and removes the runtime leftovers of forgotten pods.
func (a *Agent) housekeeping() {
	a.mu.Lock()
	desired := make([]*v1.Pod, 0, len(a.pods))
	uids := make(map[types.UID]bool, len(a.pods))
	for uid, p := range a.pods {
		desired = append(desired, p)
		uids[uid] = true
	}
	a.mu.Unlock()
	before := a.workers.Len()
	known := a.workers.SyncKnownPods(desired)
	if n := before - len(known); n > 0 {
		a.observeUID(KindHousekeeping, "", "forgot %d finished pod(s)", n)
	}
	a.status.RemoveOrphanedStatuses(uids)

	ctx := context.Background()
	pods, err := a.backend.ListPods(ctx, true)
	if err != nil {
		return
	}
	for _, rp := range pods {
		if _, ok := known[rp.ID]; ok {
			continue // the pod worker owns it; its leftovers go once it is forgotten
		}
		if isRunning(rp) {
			// Nothing desires it: an orphan, stopped with grace 1 as a runtime-only pod.
			a.updatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, RunningPod: rp})
			continue
		}
		if err := a.backend.RemovePod(ctx, rp); err != nil {
			a.observeUID(KindError, rp.ID, "removing the leftovers of %s/%s: %v", rp.Namespace, rp.Name, err)
			continue
		}
		a.observeUID(KindRuntime, rp.ID, "removed the containers and sandbox of %s/%s", rp.Namespace, rp.Name)
	}
}

func isRunning(rp *pleg.Pod) bool {
	for _, c := range append(rp.Containers[:len(rp.Containers):len(rp.Containers)], rp.Sandboxes...) {
		if c.State == pleg.ContainerStateRunning {
			return true
		}
	}
	return false
}

func (a *Agent) onTransition(t podworker.Transition) {
	a.observeUID(KindWorker, t.UID, "%s -> %s", t.From, t.To)
}

func derefOr(p *int64, def int64) int64 {
	if p == nil {
		return def
	}
	return *p
}

// Workers, Status and Relister expose the agent's components, for tests and observers.
func (a *Agent) Workers() *podworker.Runner { return a.workers }
func (a *Agent) Status() *statusmgr.Manager { return a.status }
func (a *Agent) Relister() *pleg.Relister   { return a.relister }
