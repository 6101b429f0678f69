package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/apimachinery/lease"
	"k8s.io/utils/clock"
)

// Defaults of Config, the kubelet's.
const (
	// DefaultUpdateFrequency is how often the status is computed (nodeStatusUpdateFrequency).
	DefaultUpdateFrequency = 10 * time.Second
	// DefaultReportFrequency is how long an unchanged status goes unreported at most
	// (nodeStatusReportFrequency).
	DefaultReportFrequency = 5 * time.Minute
	// DefaultLeaseDurationSeconds is the Lease's duration (nodeLeaseDurationSeconds).
	DefaultLeaseDurationSeconds = 40
	// DefaultRenewInterval is how often the Lease is renewed: a quarter of its duration,
	// as the kubelet's renewIntervalFraction.
	DefaultRenewInterval = 10 * time.Second
	// DefaultKubeletPort is status.daemonEndpoints.kubeletEndpoint.Port.
	DefaultKubeletPort = 10250
	// LeaseNamespace is where node Leases live.
	LeaseNamespace = v1.NamespaceNodeLease
	// KubeletVersion is status.nodeInfo.kubeletVersion: the kubelet version whose
	// behaviour podlife follows, marked as podlife's.
	KubeletVersion = "v1.37.2-podlife"
)

// nodeStatusUpdateRetry is the kubelet's number of tries of one status update.
const nodeStatusUpdateRetry = 5

// Errors. ErrInvalid is wrapped by New's errors for bad configuration.
var ErrInvalid = errors.New("nodestatus: invalid")

// Config configures a Controller.
type Config struct {
	// Client is the node's client (system:node:<name>). Required.
	Client kubernetes.Interface
	// Node is the node to register: its name (required), labels (each one AllowedLabel),
	// annotations and status (capacity, allocatable and nodeInfo, e.g. from package
	// examples/nodeinfo). Run never changes it.
	Node *v1.Node
	// Addresses are status.addresses (an InternalIP from the host, ...); a Hostname
	// address with the node's name is added when none is given.
	Addresses []v1.NodeAddress
	// KubeletPort is status.daemonEndpoints.kubeletEndpoint.Port; 0 means
	// DefaultKubeletPort.
	KubeletPort int32
	// RuntimeVersion is status.nodeInfo.containerRuntimeVersion ("containerd://2.1.4",
	// see RuntimeVersion); empty keeps Node's.
	RuntimeVersion string
	// Health, when set, is asked at every update: an error makes the node NotReady with
	// its message (the kubelet's runtime and PLEG errors).
	Health func() error
	// Clock is the time source; nil means the real clock.
	Clock clock.WithTicker
	// UpdateFrequency, ReportFrequency, LeaseDurationSeconds and RenewInterval: zero
	// means their defaults.
	UpdateFrequency      time.Duration
	ReportFrequency      time.Duration
	LeaseDurationSeconds int32
	RenewInterval        time.Duration
	// Logger receives what fails and is retried; nil discards it.
	Logger *slog.Logger
}

// Controller registers a node, posts its status and renews its Lease. Create it with
// New and run it with Run, once.
type Controller struct {
	cfg    Config
	name   string
	client kubernetes.Interface
	clock  clock.WithTicker
	log    *slog.Logger

	// lastReport is when the status was last patched (zero: never); only Run's loop
	// touches it.
	lastReport time.Time

	mu  sync.Mutex
	uid types.UID // the registered Node's UID, for the Lease's owner reference
}

// New validates cfg and returns its controller. It starts nothing.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("%w: no Client", ErrInvalid)
	}
	if cfg.Node == nil || cfg.Node.Name == "" {
		return nil, fmt.Errorf("%w: no Node name", ErrInvalid)
	}
	var bad []string
	for k := range cfg.Node.Labels {
		if !AllowedLabel(k) {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return nil, fmt.Errorf("%w: NodeRestriction does not let a node set the labels %s", ErrInvalid, strings.Join(bad, ", "))
	}
	if cfg.UpdateFrequency < 0 || cfg.ReportFrequency < 0 || cfg.RenewInterval < 0 || cfg.LeaseDurationSeconds < 0 || cfg.KubeletPort < 0 {
		return nil, fmt.Errorf("%w: negative period, duration or port", ErrInvalid)
	}
	if cfg.UpdateFrequency == 0 {
		cfg.UpdateFrequency = DefaultUpdateFrequency
	}
	if cfg.ReportFrequency == 0 {
		cfg.ReportFrequency = DefaultReportFrequency
	}
	if cfg.LeaseDurationSeconds == 0 {
		cfg.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	if cfg.RenewInterval == 0 {
		cfg.RenewInterval = DefaultRenewInterval
	}
	if cfg.KubeletPort == 0 {
		cfg.KubeletPort = DefaultKubeletPort
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg.Node = cfg.Node.DeepCopy()
	return &Controller{cfg: cfg, name: cfg.Node.Name, client: cfg.Client, clock: cfg.Clock, log: log}, nil
}

// Run registers the node, then posts its status and renews its Lease until ctx ends;
// it returns once every goroutine it started has returned (nil when ctx ended).
func (c *Controller) Run(ctx context.Context) error {
	if !c.register(ctx) {
		return nil
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		lease.NewController(c.clock, c.client, c.name, c.cfg.LeaseDurationSeconds, nil, c.cfg.RenewInterval,
			c.name, LeaseNamespace, c.setOwner).Run(ctx)
	})
	t := c.clock.NewTicker(c.cfg.UpdateFrequency)
	defer t.Stop()
	for {
		c.updateStatus(ctx)
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-t.C():
		}
	}
}

// register creates or adopts the Node, retrying with the kubelet's backoff; false when
// ctx ended first.
func (c *Controller) register(ctx context.Context) bool {
	step := 100 * time.Millisecond
	for {
		err := c.tryRegister(ctx)
		if err == nil {
			return true
		}
		c.log.Error("nodestatus: registering the node", "node", c.name, "err", err)
		select {
		case <-ctx.Done():
			return false
		case <-c.clock.After(step):
		}
		step = min(2*step, 7*time.Second)
	}
}

// tryRegister creates the Node, or adopts the existing one and reconciles its labels.
func (c *Controller) tryRegister(ctx context.Context) error {
	nodes := c.client.CoreV1().Nodes()
	initial := c.initialNode()
	created, err := nodes.Create(ctx, initial, metav1.CreateOptions{})
	if err == nil {
		c.setUID(created.UID)
		c.log.Info("nodestatus: registered the node", "node", c.name)
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing, err := nodes.Get(ctx, c.name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("getting the existing node: %w", err)
	}
	reconciled := existing.DeepCopy()
	if ReconcileLabels(initial, reconciled) {
		if _, err := c.patchStatus(ctx, existing, reconciled); err != nil {
			return fmt.Errorf("reconciling the existing node: %w", err)
		}
	}
	c.setUID(existing.UID)
	c.log.Info("nodestatus: adopted the existing node", "node", c.name)
	return nil
}

// initialNode is the Node to create: Config.Node with its status computed.
func (c *Controller) initialNode() *v1.Node {
	n := c.cfg.Node.DeepCopy()
	n.ResourceVersion, n.UID = "", ""
	n.Status.Conditions = nil
	c.setStatus(n)
	return n
}

// reconciledLabels are the labels the kubelet reconciles on an existing Node
// (updateDefaultLabels).
var reconciledLabels = []string{
	v1.LabelHostname,
	v1.LabelTopologyZone,
	v1.LabelTopologyRegion,
	v1.LabelFailureDomainBetaZone,
	v1.LabelFailureDomainBetaRegion,
	v1.LabelInstanceTypeStable,
	v1.LabelInstanceType,
	v1.LabelOSStable,
	v1.LabelArchStable,
	v1.LabelWindowsBuild,
	"beta.kubernetes.io/os",
	"beta.kubernetes.io/arch",
}

// ReconcileLabels sets on existing the labels of initial the kubelet reconciles when it
// adopts an existing Node (a label initial carries replaces existing's, an empty one
// removes it; every other label is kept) and reports whether existing changed.
func ReconcileLabels(initial, existing *v1.Node) bool {
	changed := false
	for _, k := range reconciledLabels {
		want, ok := initial.Labels[k]
		if !ok {
			continue
		}
		if existing.Labels == nil {
			existing.Labels = map[string]string{}
		}
		if existing.Labels[k] != want {
			changed = true
		}
		if want == "" {
			delete(existing.Labels, k)
		} else {
			existing.Labels[k] = want
		}
	}
	return changed
}

// AllowedLabel reports whether the NodeRestriction admission lets a node set the label
// key on its own Node: not in the node-restriction.kubernetes.io namespace, and in the
// kubernetes.io and k8s.io namespaces only the kubelet's labels (hostname, os, arch,
// instance type, topology zone and region and their beta forms) and those under
// kubelet.kubernetes.io and node.kubernetes.io.
func AllowedLabel(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	under := func(domain string) bool { return ns == domain || strings.HasSuffix(ns, "."+domain) }
	if under(v1.LabelNamespaceNodeRestriction) {
		return false
	}
	if !under("kubernetes.io") && !under("k8s.io") {
		return true
	}
	switch key {
	case v1.LabelHostname, v1.LabelTopologyZone, v1.LabelTopologyRegion, v1.LabelFailureDomainBetaZone,
		v1.LabelFailureDomainBetaRegion, v1.LabelInstanceType, v1.LabelInstanceTypeStable,
		v1.LabelOSStable, v1.LabelArchStable, "beta.kubernetes.io/os", "beta.kubernetes.io/arch":
		return true
	}
	return under(v1.LabelNamespaceSuffixKubelet) || under(v1.LabelNamespaceSuffixNode)
}

// updateStatus is one status update: up to nodeStatusUpdateRetry tries.
func (c *Controller) updateStatus(ctx context.Context) {
	for range nodeStatusUpdateRetry {
		if ctx.Err() != nil {
			return
		}
		err := c.tryUpdateStatus(ctx)
		if err == nil {
			return
		}
		c.log.Error("nodestatus: updating the node status, will retry", "node", c.name, "err", err)
	}
}

// tryUpdateStatus reads the Node (registering it again if it is gone) and patches its
// status if it changed or was last reported ReportFrequency ago.
func (c *Controller) tryUpdateStatus(ctx context.Context) error {
	nodes := c.client.CoreV1().Nodes()
	original, err := nodes.Get(ctx, c.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		c.log.Info("nodestatus: the node is gone, registering it again", "node", c.name)
		if !c.register(ctx) {
			return ctx.Err()
		}
		original, err = nodes.Get(ctx, c.name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("getting node %q: %w", c.name, err)
	}
	c.setUID(original.UID)
	n := original.DeepCopy()
	labelsMissing := false
	for _, kv := range [][2]string{{v1.LabelOSStable, c.cfg.Node.Labels[v1.LabelOSStable]}, {v1.LabelArchStable, c.cfg.Node.Labels[v1.LabelArchStable]}} {
		if kv[1] == "" {
			continue
		}
		if n.Labels[kv[0]] != kv[1] {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[kv[0]] = kv[1]
			labelsMissing = true
		}
	}
	c.setStatus(n)
	changed := labelsMissing || StatusChanged(&original.Status, &n.Status)
	if !changed && !c.lastReport.IsZero() && c.clock.Since(c.lastReport) < c.cfg.ReportFrequency {
		return nil
	}
	if _, err := c.patchStatus(ctx, original, n); err != nil {
		return err
	}
	c.lastReport = c.clock.Now()
	return nil
}

// setStatus sets n's status as the kubelet's setters would now.
func (c *Controller) setStatus(n *v1.Node) {
	tmpl := &c.cfg.Node.Status
	n.Status.Capacity = tmpl.Capacity.DeepCopy()
	n.Status.Allocatable = tmpl.Allocatable.DeepCopy()
	addrs := slices.Clone(c.cfg.Addresses)
	if !slices.ContainsFunc(addrs, func(a v1.NodeAddress) bool { return a.Type == v1.NodeHostName }) {
		addrs = append(addrs, v1.NodeAddress{Type: v1.NodeHostName, Address: c.name})
	}
	n.Status.Addresses = addrs
	info := tmpl.NodeInfo
	info.KubeletVersion = KubeletVersion
	if c.cfg.RuntimeVersion != "" {
		info.ContainerRuntimeVersion = c.cfg.RuntimeVersion
	}
	n.Status.NodeInfo = info
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = c.cfg.KubeletPort
	var health error
	if c.cfg.Health != nil {
		health = c.cfg.Health()
	}
	n.Status.Conditions = Conditions(n.Status.Conditions, c.clock.Now(), health, n.Status.Capacity)
}

// requiredCapacities are the resources whose absence makes the kubelet's node NotReady
// (ephemeral-storage with local storage capacity isolation, on by default).
var requiredCapacities = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods, v1.ResourceEphemeralStorage}

// Conditions returns the node conditions the kubelet would post at now over old (the
// Node's current ones; other types are kept, in place): MemoryPressure, DiskPressure
// and PIDPressure False, Ready last, False with health's message and the missing
// capacities when there are any, True otherwise. A condition's lastTransitionTime
// moves only when its status changes.
func Conditions(old []v1.NodeCondition, now time.Time, health error, capacity v1.ResourceList) []v1.NodeCondition {
	t := metav1.NewTime(now)
	var errs []string
	if health != nil {
		errs = append(errs, health.Error())
	}
	var missing []string
	for _, r := range requiredCapacities {
		if _, ok := capacity[r]; !ok {
			missing = append(missing, string(r))
		}
	}
	if len(missing) > 0 {
		errs = append(errs, "missing node capacity for resources: "+strings.Join(missing, ", "))
	}
	ready := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	if len(errs) > 0 {
		msg := errs[0]
		if len(errs) > 1 {
			msg = "[" + strings.Join(errs, ", ") + "]"
		}
		ready = v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady", Message: msg}
	}
	want := []v1.NodeCondition{
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		ready,
	}
	out := slices.Clone(old)
	for _, w := range want {
		w.LastHeartbeatTime = t
		w.LastTransitionTime = t
		i := slices.IndexFunc(out, func(c v1.NodeCondition) bool { return c.Type == w.Type })
		if i < 0 {
			out = append(out, w)
			continue
		}
		if out[i].Status == w.Status && !out[i].LastTransitionTime.IsZero() {
			w.LastTransitionTime = out[i].LastTransitionTime
		}
		out[i] = w
	}
	// Ready last, as the kubelet keeps it.
	if i := slices.IndexFunc(out, func(c v1.NodeCondition) bool { return c.Type == v1.NodeReady }); i >= 0 && i != len(out)-1 {
		r := out[i]
		out = append(slices.Delete(out, i, i+1), r)
	}
	return out
}

// StatusChanged reports whether status differs from original, the conditions'
// heartbeat times aside (the kubelet's nodeStatusHasChanged).
func StatusChanged(original, status *v1.NodeStatus) bool {
	a, b := original.DeepCopy(), status.DeepCopy()
	if len(a.Conditions) != len(b.Conditions) {
		return true
	}
	sortByType := func(cs []v1.NodeCondition) {
		slices.SortStableFunc(cs, func(x, y v1.NodeCondition) int { return strings.Compare(string(x.Type), string(y.Type)) })
		for i := range cs {
			cs[i].LastHeartbeatTime = metav1.Time{}
		}
	}
	sortByType(a.Conditions)
	sortByType(b.Conditions)
	return !apiequality.Semantic.DeepEqual(a, b)
}

// setUID records the registered Node's UID.
func (c *Controller) setUID(uid types.UID) {
	c.mu.Lock()
	c.uid = uid
	c.mu.Unlock()
}

// setOwner is the lease controller's post-process: the Lease is owned by the Node
// (kubelet's setNodeOwnerFunc), set again when the Node has another UID.
func (c *Controller) setOwner(l *coordinationv1.Lease) error {
	c.mu.Lock()
	uid := c.uid
	c.mu.Unlock()
	if uid == "" {
		return nil
	}
	if len(l.OwnerReferences) == 1 && l.OwnerReferences[0].UID == uid {
		return nil
	}
	l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: c.name, UID: uid}}
	return nil
}

// RuntimeVersion is status.nodeInfo.containerRuntimeVersion for the CRI Version call's
// runtime name and version, as the kubelet writes it: "containerd://2.1.4" (a leading
// "v" dropped).
func RuntimeVersion(name, version string) string {
	return name + "://" + strings.TrimPrefix(version, "v")
}
