package vk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/kube"
	plnode "github.com/podlife/podlife/node"
	"github.com/podlife/podlife/statusmgr"
)

// Config configures Run. Zero values take their defaults.
type Config struct {
	// NodeName is the virtual node's name. Required.
	NodeName string
	// Provider runs the pods. Required.
	Provider node.PodLifecycleHandler
	// Client is the API client (the node's identity) of the pods, their statuses and
	// events. Required unless RESTConfig is set.
	Client kubernetes.Interface
	// RESTConfig, if set, is the node identity's client configuration: Client (if nil) is
	// made from it, and the node controller (the Node object's status and the node lease,
	// the node's heartbeats) gets a clientset of its own, from a copy with its own rate
	// limiter (LeaseQPS, LeaseBurst), so a burst of status patches held back by Client's
	// QPS limit cannot delay a lease renewal and get the node marked NotReady. Without it
	// the node controller shares Client.
	RESTConfig *rest.Config
	// LeaseQPS and LeaseBurst bound the node controller's own client (with RESTConfig);
	// zero takes DefaultLeaseQPS and DefaultLeaseBurst.
	LeaseQPS   float32
	LeaseBurst int
	// Patcher, if set, is what statuses and final deletes go through instead of
	// kube.NewPatcher(Client) (to wrap it, e.g. for metrics or fault injection). When it is
	// a statusmgr.StatusUpdater (kube.Patcher is), a pod's status is written as
	// virtual-kubelet writes it: a status update of the node's copy of the pod, guarded by
	// its resourceVersion (statusmgr.Config.UpdateStatus; a stale copy is read again and
	// patched); otherwise as the kubelet's patch.
	Patcher statusmgr.StatusPatcher
	// NodeProvider keeps the Node object's status (virtual-kubelet's node controller pings
	// it and takes its updates); nil means node.NaiveNodeProvider{}.
	NodeProvider node.NodeProvider
	// Node is the Node object to register; nil means DefaultNode(NodeName).
	Node *v1.Node
	// LeaseDurationSeconds is the node lease's duration (0: virtual-kubelet's default);
	// negative disables the lease.
	LeaseDurationSeconds int32
	// RelistPeriod is how often the PLEG lists the provider's pods (GetPods);
	// agent.DefaultRelistPeriod if 0. With a Provider that notifies (node.PodNotifier),
	// a longer period is reasonable: its statuses come from its notifications.
	RelistPeriod time.Duration
	// PollPeriod: see AdapterConfig.
	PollPeriod time.Duration
	// Clock is the time source of podlife's components; nil means the real clock.
	Clock clock.Clock
	// Observer receives every lifecycle step (agent.Config.Observer).
	Observer func(agent.Step)
	// Logger receives the components' logs; nil discards them.
	Logger *slog.Logger
	// SkipEnvResolution: the provider gets the pods as they are. By default, every
	// container's environment is resolved before CreatePod and UpdatePod, as
	// virtual-kubelet's pod controller does (AdapterConfig.Env, with ConfigMaps and
	// Secrets read through Client).
	SkipEnvResolution bool
	// PodFilter, if set, selects the node's pods podlife runs (FilterSource): the pods it
	// rejects are left alone, neither run nor their statuses written.
	PodFilter func(*v1.Pod) bool
	// Recorder gets the pod events: the kubelet's (agent.Config.Recorder) and
	// virtual-kubelet's pod controller's (AdapterConfig.Recorder: MandatorySecretNotFound,
	// ProviderCreateFailed, ...). Nil means what virtual-kubelet's nodeutil does: Run
	// writes them to the API server through Client (kube.NewRecorder, component
	// EventComponent, host NodeName) and shuts the recorder down before it returns.
	Recorder plnode.EventRecorder
	// NoEvents: no events at all (Recorder must be nil).
	NoEvents bool
}

// EventComponent is the source component of the events Run records when Config.Recorder
// is nil.
const EventComponent = "virtual-kubelet"

// Defaults of the node controller's own client (Config.RESTConfig): a lease renewal every
// 10 s and a node status update now and then need little, but must never wait.
const (
	DefaultLeaseQPS   = 5
	DefaultLeaseBurst = 10
)

// heartbeatClient returns the node controller's own clientset: a copy of rc with its own
// rate limiter and QPS, so other traffic cannot throttle the lease.
func heartbeatClient(rc *rest.Config, qps float32, burst int) (kubernetes.Interface, *rest.Config, error) {
	hc := rest.CopyConfig(rc)
	hc.RateLimiter = nil // a limiter set on rc would be shared
	hc.QPS, hc.Burst = qps, burst
	if hc.QPS == 0 {
		hc.QPS = DefaultLeaseQPS
	}
	if hc.Burst == 0 {
		hc.Burst = DefaultLeaseBurst
	}
	if hc.UserAgent != "" {
		hc.UserAgent += " (node heartbeat)"
	}
	c, err := kubernetes.NewForConfig(hc)
	if err != nil {
		return nil, nil, fmt.Errorf("vk: the node controller's client: %w", err)
	}
	return c, hc, nil
}

// DefaultNode is the Node object Run registers when Config.Node is nil: a Ready node
// labelled type=virtual-kubelet, with room for 1,000 pods. It carries only labels a node
// may set on itself (the NodeRestriction admission plugin refuses, for instance,
// virtual-kubelet's usual kubernetes.io/role).
func DefaultNode(name string) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"type": "virtual-kubelet", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
		Status: v1.NodeStatus{
			NodeInfo: v1.NodeSystemInfo{OperatingSystem: "linux", Architecture: "amd64", KubeletVersion: "podlife"},
			Capacity: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100"),
				v1.ResourceMemory: resource.MustParse("1Ti"), v1.ResourcePods: resource.MustParse("1000")},
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100"),
				v1.ResourceMemory: resource.MustParse("1Ti"), v1.ResourcePods: resource.MustParse("1000")},
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
				Message: "podlife runs the virtual-kubelet provider"}},
		},
	}
}

// NewAgent returns a node agent whose pods run on the provider behind adapter, with the
// pods and the status writes of cfg (Server, or Patcher and Source; Backend and
// SerializeByName are set here).
func NewAgent(cfg agent.Config, adapter *Adapter) (*agent.Agent, error) {
	if adapter == nil {
		return nil, errors.New("vk: nil Adapter")
	}
	cfg.Backend, cfg.Runtime, cfg.SerializeByName = adapter, nil, true
	return agent.New(cfg)
}

// Run runs the provider as the virtual node cfg.NodeName until ctx ends: virtual-kubelet's
// node controller keeps the Node object, its status and its lease, and podlife replaces
// virtual-kubelet's pod controller (pods from a list+watch of the node's pods, statuses
// patched so other writers' conditions survive, the final delete with grace 0 and the
// UID precondition only after the provider stopped the pod and its terminal phase is on
// the server); the pod events go to the API server unless Config says otherwise. It
// returns once every goroutine it started has ended, with the first error of either
// controller. It is NewRunner and Runner.Run.
func Run(ctx context.Context, cfg Config) error {
	r, err := NewRunner(cfg)
	if err != nil {
		return err
	}
	return r.Run(ctx)
}

// Runner is a virtual node run by Run, with the readiness and the end of the run to wait
// on (virtual-kubelet's NodeController and PodController have Ready, Done and Err too).
type Runner struct {
	nc     *node.NodeController
	agent  *agent.Agent
	events *runEvents    // Run's own event recorder (Config.Recorder nil); nil if none
	listed chan struct{} // closed once the pod source has listed the node's pods
	ready  chan struct{}
	done   chan struct{}
	ran    atomic.Bool
	err    error // set before done is closed
}

// NewRunner validates cfg and assembles the node controller and the agent of a virtual
// node. It starts nothing; Run runs them.
func NewRunner(cfg Config) (*Runner, error) {
	if cfg.NodeName == "" || cfg.Provider == nil || (cfg.Client == nil && cfg.RESTConfig == nil) {
		return nil, errors.New("vk: NodeName, Provider and Client (or RESTConfig) are required")
	}
	if cfg.LeaseQPS < 0 || cfg.LeaseBurst < 0 {
		return nil, errors.New("vk: negative LeaseQPS or LeaseBurst")
	}
	if cfg.NoEvents && cfg.Recorder != nil {
		return nil, errors.New("vk: NoEvents with a Recorder")
	}
	heartbeats := cfg.Client
	if cfg.RESTConfig != nil {
		if cfg.Client == nil {
			c, err := kubernetes.NewForConfig(cfg.RESTConfig)
			if err != nil {
				return nil, fmt.Errorf("vk: client: %w", err)
			}
			cfg.Client = c
		}
		var err error
		if heartbeats, _, err = heartbeatClient(cfg.RESTConfig, cfg.LeaseQPS, cfg.LeaseBurst); err != nil {
			return nil, err
		}
	}
	np := cfg.NodeProvider
	if np == nil {
		np = node.NaiveNodeProvider{}
	}
	n := cfg.Node
	if n == nil {
		n = DefaultNode(cfg.NodeName)
	}
	if n.Name != cfg.NodeName {
		return nil, fmt.Errorf("vk: Node is named %q, NodeName is %q", n.Name, cfg.NodeName)
	}
	var opts []node.NodeControllerOpt
	if cfg.LeaseDurationSeconds >= 0 {
		opts = append(opts, node.WithNodeEnableLeaseV1(heartbeats.CoordinationV1().Leases(v1.NamespaceNodeLease), cfg.LeaseDurationSeconds))
	}
	nc, err := node.NewNodeController(np, n.DeepCopy(), heartbeats.CoreV1().Nodes(), opts...)
	if err != nil {
		return nil, fmt.Errorf("vk: node controller: %w", err)
	}
	var events *runEvents
	if cfg.Recorder == nil && !cfg.NoEvents {
		events = &runEvents{client: cfg.Client, host: cfg.NodeName}
		cfg.Recorder = events
	}
	acfg := AdapterConfig{Provider: cfg.Provider, Clock: cfg.Clock, PollPeriod: cfg.PollPeriod,
		Logger: cfg.Logger, Recorder: cfg.Recorder}
	if !cfg.SkipEnvResolution {
		acfg.Env, acfg.Allocatable = ClientEnvSource(cfg.Client), n.Status.Allocatable
	}
	adapter, err := NewAdapter(acfg)
	if err != nil {
		return nil, err
	}
	patcher := cfg.Patcher
	if patcher == nil {
		if patcher, err = kube.NewPatcher(cfg.Client); err != nil {
			return nil, err
		}
	}
	source, err := kube.NewSource(kube.SourceConfig{Client: cfg.Client, Clock: cfg.Clock, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	r := &Runner{nc: nc, events: events, listed: make(chan struct{}), ready: make(chan struct{}), done: make(chan struct{})}
	_, update := patcher.(statusmgr.StatusUpdater)
	a, err := NewAgent(agent.Config{NodeName: cfg.NodeName, Patcher: patcher, UpdateStatus: update,
		Source:       &listedSource{src: FilterSource(source, cfg.PodFilter), listed: r.listed},
		RelistPeriod: cfg.RelistPeriod, Clock: cfg.Clock, Observer: cfg.Observer, Logger: cfg.Logger,
		Recorder: cfg.Recorder}, adapter)
	if err != nil {
		return nil, err
	}
	r.agent = a
	return r, nil
}

// Run runs the node controller and the agent until ctx ends or either fails, and returns
// once every goroutine it started has ended, with the first error of either. Its own
// event recorder (Config.Recorder nil) starts before them and is shut down after them. A
// Runner runs once: a second Run returns an error at once.
func (r *Runner) Run(ctx context.Context) error {
	if !r.ran.CompareAndSwap(false, true) {
		return errors.New("vk: Runner.Run called twice")
	}
	stopEvents, err := r.events.start(ctx)
	if err != nil {
		r.err = err
		close(r.done)
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, run := range []func(context.Context) error{r.nc.Run, r.agent.Run} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil && ctx.Err() == nil {
				errs <- err
			}
			cancel() // either one ending stops the other
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, ch := range []<-chan struct{}{r.nc.Ready(), r.listed} {
			select {
			case <-ch:
			case <-ctx.Done():
				return
			}
		}
		close(r.ready)
	}()
	wg.Wait()
	select {
	case r.err = <-errs:
	default:
	}
	stopEvents() // once nothing records any more
	close(r.done)
	return r.err
}

// Ready is closed once the node is registered (the node controller is ready) and the pod
// source has listed the node's pods; never if Run ends first.
func (r *Runner) Ready() <-chan struct{} { return r.ready }

// Done is closed once Run has returned.
func (r *Runner) Done() <-chan struct{} { return r.done }

// Err is Run's error, once Done is closed (nil before).
func (r *Runner) Err() error {
	select {
	case <-r.done:
		return r.err
	default:
		return nil
	}
}

// listedSource closes listed once src has listed the node's pods (its first Set).
type listedSource struct {
	src    agent.Source
	listed chan struct{}
	once   sync.Once
}

func (l *listedSource) Run(ctx context.Context, nodeName string, out chan<- config.PodUpdate) error {
	return relay(ctx, l.src, nodeName, out, func(u config.PodUpdate) (config.PodUpdate, bool) {
		if u.Op == config.Set {
			l.once.Do(func() { close(l.listed) })
		}
		return u, true
	})
}

// runEvents is Run's own event recorder (Config.Recorder nil): events go through a
// kube.Recorder that Run starts before the controllers and shuts down after them, as
// virtual-kubelet's nodeutil.Node.Run does with its event broadcaster. Events recorded
// outside Run are dropped.
type runEvents struct {
	client kubernetes.Interface
	host   string
	rec    atomic.Pointer[kube.Recorder] // set by start, before anything records
}

var _ plnode.EventRecorder = (*runEvents)(nil)

func (e *runEvents) Event(pod *v1.Pod, eventType, reason, message string) {
	if r := e.rec.Load(); r != nil {
		r.Event(pod, eventType, reason, message)
	}
}

// start starts the recorder (e nil: none) and returns what shuts it down and waits for
// it. Its context is ctx's values without its cancellation: the events of the
// controllers' last steps still go out, up to the shutdown.
func (e *runEvents) start(ctx context.Context) (stop func(), err error) {
	if e == nil {
		return func() {}, nil
	}
	recCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rec, err := kube.NewRecorder(recCtx, e.client, EventComponent, e.host)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("vk: events: %w", err)
	}
	e.rec.Store(rec)
	return func() {
		e.rec.Store(nil)
		cancel()
		<-rec.Done()
	}, nil
}
