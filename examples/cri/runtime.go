package cri

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

// Defaults of Config.
const (
	DefaultLogRoot        = "/var/log/pods"
	DefaultConnectTimeout = 10 * time.Second
	// DefaultCallTimeout bounds a RunPodSandbox, CreateContainer or StartContainer call
	// (the kubelet's default runtime-request-timeout).
	DefaultCallTimeout = 2 * time.Minute
	// DefaultBackOffInitial and DefaultBackOffMax are the kubelet's crash-loop back-off.
	DefaultBackOffInitial = 10 * time.Second
	DefaultBackOffMax     = 5 * time.Minute
	// DefaultMaxConcurrentPods is Config.MaxConcurrentPods' default: on a small node,
	// enough pods at once to keep the runtime busy, few enough that each one finishes soon.
	DefaultMaxConcurrentPods = 4
	// DefaultAdmissionLease is Config.AdmissionLease's default.
	DefaultAdmissionLease = 500 * time.Millisecond
	// maxMsgSize is the largest gRPC message accepted (the kubelet's 16 MiB).
	maxMsgSize = 16 << 20
	// inspectQueue and inspectors: the pods waiting to be inspected and pushed after a
	// SyncPod that started something (see PushStatuses), and how many are inspected at once.
	inspectQueue = 256
	inspectors   = 2
)

// PodNetwork says how pods that are not hostNetwork get their network.
type PodNetwork int

const (
	// PodNetworkRefuse refuses them: SyncPod fails with ErrPodNetwork and an event (for
	// runtimes without a CNI setup, like the end-to-end suite's containerd).
	PodNetworkRefuse PodNetwork = iota
	// PodNetworkRuntime gives them their own network namespace, set up by the runtime's
	// CNI plugins (NamespaceMode POD), as the kubelet does.
	PodNetworkRuntime
	// PodNetworkNode runs them in the node's network namespace, like hostNetwork pods.
	PodNetworkNode
)

// String returns the mode's name.
func (m PodNetwork) String() string {
	switch m {
	case PodNetworkRefuse:
		return "refuse"
	case PodNetworkRuntime:
		return "runtime"
	case PodNetworkNode:
		return "node"
	default:
		return fmt.Sprintf("PodNetwork(%d)", int(m))
	}
}

// Errors of the runtime, checked with errors.Is.
var (
	// ErrCrashLoopBackOff: an exited container is not restarted yet (the kubelet's
	// CrashLoopBackOff); SyncPod returns it wrapped in a *node.ContainerError, and the
	// pod workers retry.
	ErrCrashLoopBackOff = errors.New("cri: CrashLoopBackOff")
	// ErrImagePullBackOff: the image's pull failed and its back-off lasts (the
	// kubelet's ImagePullBackOff).
	ErrImagePullBackOff = errors.New("cri: ImagePullBackOff")
	// ErrImageNeverPull: the image is missing and the pull policy is Never.
	ErrImageNeverPull = errors.New("cri: ErrImageNeverPull")
	// ErrPodNetwork: the pod needs its own network and Config.PodNetwork refuses it.
	ErrPodNetwork = errors.New("cri: pod network unavailable")
	// ErrStillRunning: a kill ended with containers or a sandbox still running.
	ErrStillRunning = errors.New("cri: still running")
	// ErrInvalidConfig: New was given a bad Config.
	ErrInvalidConfig = errors.New("cri: invalid config")
)

// Config configures a Runtime.
type Config struct {
	// Endpoint is the CRI socket: unix:///path/to.sock (or an absolute path). Required.
	Endpoint string
	// ConnectTimeout bounds New's first call (Version); 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// CallTimeout bounds each RunPodSandbox, CreateContainer and StartContainer call; 0
	// means DefaultCallTimeout. These calls run under a context that does not end with
	// SyncPod's: a pod deleted while it starts lets them finish (containerd kills a
	// half-started shim otherwise, and reports exit code 128, StartError), and KillPod
	// then stops what started.
	CallTimeout time.Duration
	// LogRoot is where the pods' log directories go; "" means DefaultLogRoot. Must be
	// absolute.
	LogRoot string
	// PodNetwork: how pods that are not hostNetwork get their network (default: refused).
	PodNetwork PodNetwork
	// RuntimeHandler is the CRI runtime handler of every sandbox ("" is the default).
	RuntimeHandler string
	// BackOffInitial and BackOffMax are the crash-loop back-off; 0 means the defaults.
	BackOffInitial, BackOffMax time.Duration
	// MaxConcurrentPods bounds how many pods have their sandbox and containers started at
	// once, and, separately, how many have them stopped at once (KillPod, KillRuntimePod);
	// the others wait in arrival order. 0 means DefaultMaxConcurrentPods; negative means no
	// bound (every pod at once, as the kubelet does). See AdmissionLease.
	MaxConcurrentPods int
	// AdmissionLease is how long a pod keeps its place among MaxConcurrentPods at most: a
	// slow start (an image pull) or stop (a container that waits out its grace period)
	// lets the next pod in after this long and goes on. 0 means DefaultAdmissionLease.
	AdmissionLease time.Duration
	// Clock is the time source of the back-off, the preStop hooks, the admission leases
	// and sleeps; nil means the real clock.
	Clock clock.Clock
	// Event, if set, is told of what a user of the pod should see (the kubelet runtime's
	// events: Pulling, Pulled, Created, Started, BackOff, NetworkNotReady,
	// FailedCreatePodSandBox, FailedPreStopHook, ...). It must not block. Pass the
	// node's recorder (node.EventRecorder's Event method, e.g. kube.Recorder.Event); the
	// node records Killing, FailedKillPod and FailedSync itself.
	Event func(pod *v1.Pod, eventType, reason, message string)
	// Logger; nil discards.
	Logger *slog.Logger

	// Volumes (volumes.go). RootDir holds the pods' volume directories,
	// RootDir/pods/<uid>/volumes/<plugin>/<name> as the kubelet's /var/lib/kubelet; ""
	// means DefaultRootDir. Must be absolute.
	RootDir string
	// Volumes reads the ConfigMaps, Secrets and service account tokens of the pods'
	// volumes (the node's client: ClientVolumes); nil fails those volumes.
	Volumes VolumeClient
	// VolumeResync is how often the configMap, secret, downwardAPI and projected volumes
	// of the pods are brought up to date (besides each SyncPod); 0 means
	// DefaultVolumeResync.
	VolumeResync time.Duration
	// MemoryVolumesOnDisk keeps Memory-medium emptyDirs, secret and projected volumes in
	// plain directories instead of tmpfs mounts (which need root; without the right to
	// mount they are plain directories anyway).
	MemoryVolumesOnDisk bool
	// Env: the node's client, allocatable and addresses for the containers'
	// environments (ConfigMaps, Secrets, services, the downward API).
	Env EnvConfig
}

// Runtime is a node.Runtime over a CRI endpoint. Create it with New; it is safe for
// concurrent use; Close it when done.
type Runtime struct {
	cfg     Config
	clock   clock.Clock
	log     *slog.Logger
	conn    *grpc.ClientConn
	rt      runtimeapi.RuntimeServiceClient
	img     runtimeapi.ImageServiceClient
	version string
	// runtimeName is the runtime's name from Version (containerd), the scheme of the
	// container IDs in pod statuses.
	runtimeName string

	statsMu sync.Mutex
	stats   map[string]int64         // CRI calls by method name
	spent   map[string]time.Duration // their total duration (the wall clock's)

	// starting and stopping admit the pods whose containers are started, or stopped (nil:
	// no bound).
	starting, stopping *admission
	// inspect queues the pods to inspect and push after a SyncPod (nil until
	// PushStatuses).
	inspect chan podRef

	mu      sync.Mutex
	backOff *BackOff // guarded by mu
	// pullBackOff is the image-pull back-off, keyed by pod and image; guarded by mu.
	pullBackOff *BackOff
	// statuses are the containers' last fetched statuses by ID, and sandboxNet the ready
	// sandboxes' IPs by ID; both guarded by mu, pruned by ListPods and RemovePod.
	statuses   map[string]*pleg.ContainerStatus
	startups   sync.Map // container ID → struct{}: its startup probe succeeded (sidecar.go)
	sandboxNet map[string][]string
	// sandboxes are the sandboxes' last PodSandboxStatus by ID (read again while ready), and
	// index the pods' known sandbox and container IDs; both guarded by mu.
	sandboxes map[string]*pleg.SandboxStatus
	index     podIndex
	// probeKilled are the containers KillContainer stopped for a failed liveness or
	// startup probe (restarted whatever their exit code), true until their pod's next
	// SyncPod (takeProbeKilledUnsynced); guarded by mu, pruned by RemovePod.
	probeKilled map[string]bool

	// vols are the pods' volumes (volumes.go); stopVols ends their periodic update.
	vols      *volumeManager
	stopVols  chan struct{}
	closeOnce sync.Once
}

var _ node.Runtime = (*Runtime)(nil)

// New validates cfg, connects to the endpoint and checks that it speaks CRI v1 (a
// Version call).
func New(cfg Config) (*Runtime, error) {
	target, err := endpointTarget(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if cfg.LogRoot == "" {
		cfg.LogRoot = DefaultLogRoot
	}
	if !filepath.IsAbs(cfg.LogRoot) {
		return nil, fmt.Errorf("%w: LogRoot %q is not absolute", ErrInvalidConfig, cfg.LogRoot)
	}
	if cfg.PodNetwork < PodNetworkRefuse || cfg.PodNetwork > PodNetworkNode {
		return nil, fmt.Errorf("%w: unknown %v", ErrInvalidConfig, cfg.PodNetwork)
	}
	if cfg.CallTimeout < 0 || cfg.ConnectTimeout < 0 || cfg.BackOffInitial < 0 || cfg.BackOffMax < 0 || cfg.AdmissionLease < 0 {
		return nil, fmt.Errorf("%w: negative duration", ErrInvalidConfig)
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.BackOffInitial == 0 {
		cfg.BackOffInitial = DefaultBackOffInitial
	}
	if cfg.BackOffMax == 0 {
		cfg.BackOffMax = DefaultBackOffMax
	}
	if cfg.MaxConcurrentPods == 0 {
		cfg.MaxConcurrentPods = DefaultMaxConcurrentPods
	}
	if cfg.AdmissionLease == 0 {
		cfg.AdmissionLease = DefaultAdmissionLease
	}
	if cfg.RootDir == "" {
		cfg.RootDir = DefaultRootDir
	}
	if !filepath.IsAbs(cfg.RootDir) {
		return nil, fmt.Errorf("%w: RootDir %q is not absolute", ErrInvalidConfig, cfg.RootDir)
	}
	if cfg.VolumeResync < 0 {
		return nil, fmt.Errorf("%w: negative VolumeResync", ErrInvalidConfig)
	}
	if cfg.VolumeResync == 0 {
		cfg.VolumeResync = DefaultVolumeResync
	}
	if cfg.BackOffMax < cfg.BackOffInitial {
		return nil, fmt.Errorf("%w: BackOffMax %v < BackOffInitial %v", ErrInvalidConfig, cfg.BackOffMax, cfg.BackOffInitial)
	}
	r := &Runtime{cfg: cfg, clock: cfg.Clock, log: cfg.Logger, stats: map[string]int64{}, spent: map[string]time.Duration{},
		statuses: map[string]*pleg.ContainerStatus{}, sandboxNet: map[string][]string{},
		sandboxes: map[string]*pleg.SandboxStatus{}, index: newPodIndex(), probeKilled: map[string]bool{}}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.backOff = NewBackOff(cfg.BackOffInitial, cfg.BackOffMax)
	r.pullBackOff = NewBackOff(cfg.BackOffInitial, cfg.BackOffMax)
	r.starting = newAdmission(cfg.MaxConcurrentPods, cfg.AdmissionLease, r.clock)
	r.stopping = newAdmission(cfg.MaxConcurrentPods, cfg.AdmissionLease, r.clock)
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)),
		grpc.WithChainUnaryInterceptor(r.count))
	if err != nil {
		return nil, fmt.Errorf("cri: %s: %w", cfg.Endpoint, err)
	}
	r.conn = conn
	r.rt = runtimeapi.NewRuntimeServiceClient(conn)
	r.img = runtimeapi.NewImageServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ConnectTimeout)
	defer cancel()
	v, err := r.rt.Version(ctx, &runtimeapi.VersionRequest{}, grpc.WaitForReady(true))
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("cri: %s does not answer CRI v1: %w", cfg.Endpoint, err)
	}
	r.vols, r.stopVols = newVolumeManager(r), make(chan struct{})
	go r.volumeLoop(r.stopVols)
	r.version = v.GetRuntimeName() + " " + v.GetRuntimeVersion()
	r.runtimeName = v.GetRuntimeName()
	if r.runtimeName == "" {
		r.runtimeName = "cri"
	}
	return r, nil
}

// endpointTarget turns unix:///path or /path into gRPC's target.
func endpointTarget(ep string) (string, error) {
	switch {
	case ep == "":
		return "", fmt.Errorf("%w: Endpoint is required", ErrInvalidConfig)
	case strings.HasPrefix(ep, "unix://"):
		if !filepath.IsAbs(strings.TrimPrefix(ep, "unix://")) {
			return "", fmt.Errorf("%w: Endpoint %q: the socket path is not absolute", ErrInvalidConfig, ep)
		}
		return ep, nil
	case filepath.IsAbs(ep):
		return "unix://" + ep, nil
	default:
		return "", fmt.Errorf("%w: Endpoint %q: want unix:///path/to.sock", ErrInvalidConfig, ep)
	}
}

// Close closes the connection. The runtime must not be used afterwards.
func (r *Runtime) Close() error {
	r.closeOnce.Do(func() { close(r.stopVols) })
	return r.conn.Close()
}

// RuntimeVersion is the runtime's name and version as Version reported them.
func (r *Runtime) RuntimeVersion() string { return r.version }

// count is a unary interceptor counting calls per method.
func (r *Runtime) count(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	name := method[strings.LastIndex(method, "/")+1:]
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	took := time.Since(start)
	r.statsMu.Lock()
	r.stats[name]++
	r.spent[name] += took
	r.statsMu.Unlock()
	return err
}

// Stats returns how many CRI calls the runtime made, by method name (ListPodSandbox,
// CreateContainer, ...), since New. A call is counted once it returned.
func (r *Runtime) Stats() map[string]int64 {
	r.statsMu.Lock()
	defer r.statsMu.Unlock()
	return maps.Clone(r.stats)
}

// Spent returns how long the CRI calls counted by Stats took in total, by method name
// (measured on the wall clock, whatever Config.Clock is).
func (r *Runtime) Spent() map[string]time.Duration {
	r.statsMu.Lock()
	defer r.statsMu.Unlock()
	return maps.Clone(r.spent)
}

// event reports an event to Config.Event.
func (r *Runtime) event(pod *v1.Pod, eventType, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.log.Debug("event", "pod", pod.Namespace+"/"+pod.Name, "type", eventType, "reason", reason, "message", msg)
	if r.cfg.Event != nil && pod != nil {
		r.cfg.Event(pod, eventType, reason, msg)
	}
}
