// Package vktest is an in-memory virtual-kubelet provider like virtual-kubelet's own mock,
// for tests of code that runs providers: pods start and stop at once or after a delay,
// report their status synchronously (Provider: polled through GetPod and GetPods) or
// also asynchronously (NotifyingProvider: node.PodNotifier), and every call is counted
// and reported, in order, to an optional observer.
package vktest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Verbs of the PodLifecycleHandler calls a Provider counts.
const (
	Create    = "CreatePod"
	Update    = "UpdatePod"
	Delete    = "DeletePod"
	Get       = "GetPod"
	GetStatus = "GetPodStatus"
	List      = "GetPods"
)

// Reasons and messages the provider writes into the statuses it makes.
const (
	// ReasonDeleted is the terminated reason of a container stopped by DeletePod.
	ReasonDeleted = "VKTestPodDeleted"
	// ReasonCompleted is the terminated reason of a container that exited on its own.
	ReasonCompleted = "Completed"
)

// Config is how a provider's pods behave. Zero values: start and stop at once, run until
// deleted.
type Config struct {
	// Clock times the delays and stamps the statuses; nil means the real clock.
	Clock clock.WithDelayedExecution
	// StartDelay: a created pod is Pending, its containers waiting, for this long before
	// it runs.
	StartDelay time.Duration
	// StopDelay: after DeletePod the pod runs this long before its containers terminate
	// and it is removed; negative: it never stops on its own (it ignores DeletePod).
	StopDelay time.Duration
	// RunFor: a running pod's containers exit on their own after this long with ExitCode;
	// the pod then keeps its terminal status (Succeeded or Failed) until deleted. 0: run
	// until deleted.
	RunFor   time.Duration
	ExitCode int32
	// Observer, if set, is called for every call after it took effect, in order (with the
	// provider's lock held: it must be quick and must not call the provider).
	Observer func(Call)
}

// Call is one PodLifecycleHandler call the provider received.
type Call struct {
	Verb      string
	Namespace string
	Name      string
	// UID is the UID of the pod passed in (CreatePod, UpdatePod, DeletePod) or returned.
	UID types.UID
	// Err is the call's error.
	Err error
}

func (c Call) String() string {
	s := fmt.Sprintf("%s %s/%s", c.Verb, c.Namespace, c.Name)
	if c.UID != "" {
		s += " (" + string(c.UID) + ")"
	}
	if c.Err != nil {
		s += ": " + c.Err.Error()
	}
	return s
}

// Provider is an in-memory node.PodLifecycleHandler whose pods are keyed by namespace and
// name, as providers' are. It reports statuses only when asked (virtual-kubelet polls
// such a provider). Safe for concurrent use.
type Provider struct {
	cfg   Config
	clock clock.WithDelayedExecution

	mu     sync.Mutex
	pods   map[string]*pod
	counts map[string]int
	byUID  map[types.UID]map[string]int
	// notifying is set by NotifyPods; queue holds the statuses not delivered yet, in
	// order, and wake tells the delivery goroutine of them.
	notifying bool
	queue     []*v1.Pod
	wake      chan struct{}
	errs      map[string]error
	errTimes  map[string]int
	// gen makes each pod's timers act only on the pod they were set for.
	gen uint64
}

type pod struct {
	pod      *v1.Pod
	gen      uint64
	stopping bool
	timers   []clock.Timer
}

var _ node.PodLifecycleHandler = (*Provider)(nil)

// New returns a Provider that reports statuses only when asked.
func New(cfg Config) *Provider {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Provider{cfg: cfg, clock: cfg.Clock, pods: map[string]*pod{}, counts: map[string]int{},
		byUID: map[types.UID]map[string]int{}, errs: map[string]error{}, errTimes: map[string]int{}, wake: make(chan struct{}, 1)}
}

// NotifyingProvider is a Provider that also reports every status change through
// NotifyPods, as asynchronous providers do.
type NotifyingProvider struct{ *Provider }

var _ node.PodNotifier = NotifyingProvider{}

// NewNotifying returns a provider that reports every status change through NotifyPods.
func NewNotifying(cfg Config) NotifyingProvider { return NotifyingProvider{New(cfg)} }

// NewHandler returns a provider and the handler virtual-kubelet's pod controller (or
// podlife's runner) is given for it: with notify, the provider wrapped as a
// NotifyingProvider; without, the provider itself, whose statuses are polled.
func NewHandler(cfg Config, notify bool) (*Provider, node.PodLifecycleHandler) {
	if notify {
		np := NewNotifying(cfg)
		return np.Provider, np
	}
	p := New(cfg)
	return p, p
}

// NotifyPods registers the callback that receives every later status change, in order,
// from one goroutine that ends with ctx (never with the provider's lock held, so cb may
// call the provider). Call it once.
func (n NotifyingProvider) NotifyPods(ctx context.Context, cb func(*v1.Pod)) {
	n.mu.Lock()
	n.notifying = true
	n.mu.Unlock()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-n.wake:
			}
			n.mu.Lock()
			batch := n.queue
			n.queue = nil
			n.mu.Unlock()
			for _, p := range batch {
				if ctx.Err() != nil {
					return
				}
				cb(p)
			}
		}
	}()
}

func key(namespace, name string) string { return namespace + "/" + name }

// record counts a call and reports it. p.mu must be held.
func (p *Provider) record(c Call) {
	p.counts[c.Verb]++
	if c.UID != "" {
		m := p.byUID[c.UID]
		if m == nil {
			m = map[string]int{}
			p.byUID[c.UID] = m
		}
		m[c.Verb]++
	}
	if p.cfg.Observer != nil {
		p.cfg.Observer(c)
	}
}

// FailNext makes the next call of verb fail with err.
func (p *Provider) FailNext(verb string, err error) { p.FailTimes(verb, 1, err) }

// FailTimes makes the next n calls of verb fail with err; n < 0: every call, until the
// next FailTimes or FailNext of verb (n 0 or err nil clears the injected error).
func (p *Provider) FailTimes(verb string, n int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n == 0 || err == nil {
		delete(p.errs, verb)
		delete(p.errTimes, verb)
		return
	}
	p.errs[verb], p.errTimes[verb] = err, n
}

// failing returns the injected error of verb, if any, and counts it. p.mu must be held.
func (p *Provider) failing(verb string) error {
	err := p.errs[verb]
	if err == nil {
		return nil
	}
	if n := p.errTimes[verb]; n > 0 {
		if n == 1 {
			delete(p.errs, verb)
			delete(p.errTimes, verb)
		} else {
			p.errTimes[verb] = n - 1
		}
	}
	return err
}

// Count returns how many calls of verb the provider received.
func (p *Provider) Count(verb string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[verb]
}

// CountFor returns how many calls of verb the provider received for the pod with uid.
func (p *Provider) CountFor(uid types.UID, verb string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byUID[uid][verb]
}

// Len returns how many pods the provider holds.
func (p *Provider) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pods)
}

// Has returns the UID of the pod the provider holds under that namespace and name.
func (p *Provider) Has(namespace, name string) (types.UID, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if q := p.pods[key(namespace, name)]; q != nil {
		return q.pod.UID, true
	}
	return "", false
}

// Stop makes a pod whose StopDelay is negative (it ignores DeletePod) stop now.
func (p *Provider) Stop(namespace, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if q := p.pods[key(namespace, name)]; q != nil {
		p.finish(q, ReasonDeleted, 0, true)
	}
}

// CreatePod stores the pod: Running at once, or Pending for StartDelay.
func (p *Provider) CreatePod(_ context.Context, in *v1.Pod) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := Call{Verb: Create, Namespace: in.Namespace, Name: in.Name, UID: in.UID}
	if c.Err = p.failing(Create); c.Err == nil {
		if q := p.pods[key(in.Namespace, in.Name)]; q != nil {
			c.Err = errdefs.InvalidInputf("pod %s/%s already exists (%s)", in.Namespace, in.Name, q.pod.UID)
		}
	}
	p.record(c)
	if c.Err != nil {
		return c.Err
	}
	p.gen++
	q := &pod{pod: in.DeepCopy(), gen: p.gen}
	p.pods[key(in.Namespace, in.Name)] = q
	now := metav1.NewTime(p.clock.Now())
	q.pod.Status = v1.PodStatus{Phase: v1.PodPending, HostIP: "192.0.2.10", StartTime: &now,
		Conditions: []v1.PodCondition{
			{Type: v1.PodInitialized, Status: v1.ConditionTrue},
			{Type: v1.PodReady, Status: v1.ConditionFalse},
			{Type: v1.PodScheduled, Status: v1.ConditionTrue}}}
	for _, ct := range in.Spec.Containers {
		q.pod.Status.ContainerStatuses = append(q.pod.Status.ContainerStatuses, v1.ContainerStatus{Name: ct.Name, Image: ct.Image,
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}})
	}
	if p.cfg.StartDelay == 0 {
		p.run(q)
		return nil
	}
	p.notifyLocked(q)
	p.after(q, p.cfg.StartDelay, func() { p.run(q) })
	return nil
}

// after runs f after d with the provider's lock held, unless the pod was replaced.
func (p *Provider) after(q *pod, d time.Duration, f func()) {
	gen := q.gen
	q.timers = append(q.timers, p.clock.AfterFunc(d, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if cur := p.pods[key(q.pod.Namespace, q.pod.Name)]; cur == q && q.gen == gen {
			f()
		}
	}))
}

// run makes a pending pod run. p.mu must be held.
func (p *Provider) run(q *pod) {
	if q.stopping || q.pod.Status.Phase != v1.PodPending {
		return
	}
	now := metav1.NewTime(p.clock.Now())
	st := &q.pod.Status
	st.Phase, st.PodIP, st.PodIPs = v1.PodRunning, "198.51.100.7", []v1.PodIP{{IP: "198.51.100.7"}}
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		cs.Ready, cs.Started = true, ptr(true)
		cs.State = v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}}
	}
	setCondition(st, v1.PodReady, v1.ConditionTrue)
	setCondition(st, v1.ContainersReady, v1.ConditionTrue)
	p.notifyLocked(q)
	if p.cfg.RunFor > 0 {
		p.after(q, p.cfg.RunFor, func() { p.finish(q, ReasonCompleted, p.cfg.ExitCode, false) })
	}
}

// finish terminates the pod's containers, notifies, and removes the pod if it was
// deleted (a pod that exited on its own keeps its terminal status). p.mu must be held.
func (p *Provider) finish(q *pod, reason string, exitCode int32, remove bool) {
	now := metav1.NewTime(p.clock.Now())
	st := &q.pod.Status
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		if cs.State.Terminated != nil {
			continue
		}
		started := now
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.Ready, cs.Started = false, ptr(false)
		cs.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: exitCode, Reason: reason,
			StartedAt: started, FinishedAt: now}}
	}
	if exitCode == 0 {
		st.Phase = v1.PodSucceeded
	} else {
		st.Phase = v1.PodFailed
	}
	setCondition(st, v1.PodReady, v1.ConditionFalse)
	setCondition(st, v1.ContainersReady, v1.ConditionFalse)
	p.notifyLocked(q)
	if remove {
		for _, t := range q.timers {
			t.Stop()
		}
		delete(p.pods, key(q.pod.Namespace, q.pod.Name))
	}
}

// notifyLocked queues a copy of the pod for the NotifyPods callback, if one is
// registered. p.mu must be held.
func (p *Provider) notifyLocked(q *pod) {
	if !p.notifying {
		return
	}
	p.queue = append(p.queue, q.pod.DeepCopy())
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// UpdatePod replaces the stored pod's spec and metadata, keeping its status.
func (p *Provider) UpdatePod(_ context.Context, in *v1.Pod) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := Call{Verb: Update, Namespace: in.Namespace, Name: in.Name, UID: in.UID, Err: p.failing(Update)}
	q := p.pods[key(in.Namespace, in.Name)]
	if c.Err == nil && (q == nil || q.pod.UID != in.UID) {
		c.Err = errdefs.NotFoundf("pod %s/%s (%s) is not known to the provider", in.Namespace, in.Name, in.UID)
	}
	p.record(c)
	if c.Err != nil {
		return c.Err
	}
	st := q.pod.Status
	q.pod = in.DeepCopy()
	q.pod.Status = st
	p.notifyLocked(q)
	return nil
}

// DeletePod stops the pod: its containers terminate (ReasonDeleted) and it is removed, at
// once or after StopDelay. A pod the provider does not hold is NotFound.
func (p *Provider) DeletePod(_ context.Context, in *v1.Pod) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := Call{Verb: Delete, Namespace: in.Namespace, Name: in.Name, UID: in.UID, Err: p.failing(Delete)}
	q := p.pods[key(in.Namespace, in.Name)]
	if c.Err == nil && q == nil {
		c.Err = errdefs.NotFoundf("pod %s/%s is not known to the provider", in.Namespace, in.Name)
	}
	p.record(c)
	if c.Err != nil || q.stopping {
		return c.Err
	}
	q.stopping = true
	switch {
	case p.cfg.StopDelay == 0:
		p.finish(q, ReasonDeleted, 0, true)
	case p.cfg.StopDelay > 0:
		p.after(q, p.cfg.StopDelay, func() { p.finish(q, ReasonDeleted, 0, true) })
	}
	return nil
}

// GetPod returns a copy of the stored pod, or NotFound.
func (p *Provider) GetPod(_ context.Context, namespace, name string) (*v1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := Call{Verb: Get, Namespace: namespace, Name: name, Err: p.failing(Get)}
	q := p.pods[key(namespace, name)]
	switch {
	case c.Err != nil:
	case q == nil:
		c.Err = errdefs.NotFoundf("pod %s/%s is not known to the provider", namespace, name)
	default:
		c.UID = q.pod.UID
	}
	p.record(c)
	if c.Err != nil {
		return nil, c.Err
	}
	return q.pod.DeepCopy(), nil
}

// GetPodStatus returns a copy of the stored pod's status, or NotFound.
func (p *Provider) GetPodStatus(_ context.Context, namespace, name string) (*v1.PodStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := Call{Verb: GetStatus, Namespace: namespace, Name: name, Err: p.failing(GetStatus)}
	q := p.pods[key(namespace, name)]
	if c.Err == nil && q == nil {
		c.Err = errdefs.NotFoundf("pod %s/%s is not known to the provider", namespace, name)
	}
	p.record(c)
	if c.Err != nil {
		return nil, c.Err
	}
	return q.pod.Status.DeepCopy(), nil
}

// GetPods returns copies of every stored pod.
func (p *Provider) GetPods(context.Context) ([]*v1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := Call{Verb: List, Err: p.failing(List)}
	p.record(c)
	if c.Err != nil {
		return nil, c.Err
	}
	out := make([]*v1.Pod, 0, len(p.pods))
	for _, q := range p.pods {
		out = append(out, q.pod.DeepCopy())
	}
	return out, nil
}

func setCondition(st *v1.PodStatus, t v1.PodConditionType, s v1.ConditionStatus) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			st.Conditions[i].Status = s
			return
		}
	}
	st.Conditions = append(st.Conditions, v1.PodCondition{Type: t, Status: s})
}

func ptr[T any](v T) *T { return &v }
