package vk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	plnode "github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

// DefaultPollPeriod is how often StopPod asks a provider whether a stopping pod is
// stopped, when no NotifyPods call tells it first.
const DefaultPollPeriod = time.Second

// ErrNameTaken is wrapped by StartPod's error when the provider holds another pod (another
// UID) under the pod's namespace and name: the pod cannot be created until that one is
// gone. StartPod returns it at once, without waiting; the pod worker retries with its
// backoff, and housekeeping stops a provider pod nothing desires.
var ErrNameTaken = errors.New("vk: the provider holds another pod under this name")

// AdapterConfig configures an Adapter. Zero values take their defaults.
type AdapterConfig struct {
	// Provider is the virtual-kubelet provider. Required. If it also implements
	// node.PodNotifier, its notifications feed the PLEG at once (PushStatuses) and wake a
	// StopPod waiting for the pod.
	Provider node.PodLifecycleHandler
	// Clock times StopPod's polls and grace period; nil means the real clock.
	Clock clock.Clock
	// PollPeriod is how often StopPod asks the provider whether the pod has stopped.
	PollPeriod time.Duration
	// Logger receives the adapter's logs; nil discards them.
	Logger *slog.Logger
	// Recorder, if set, gets virtual-kubelet's pod controller's warning events of the
	// provider's failures (ProviderCreateFailed, ProviderUpdateFailed, with the provider's
	// error as message).
	Recorder plnode.EventRecorder
	// Env, if set, resolves the environment of every container before CreatePod and
	// UpdatePod, as virtual-kubelet's pod controller does (see ClientEnvSource): the
	// provider gets plain env values (envFrom, ConfigMap and Secret keys, fieldRef and
	// resourceFieldRef resolved). A mandatory reference that cannot be resolved refuses
	// the create: the container waits with reason CreateContainerConfigError and the
	// message, a warning event tells why, and the pod worker retries with backoff. nil:
	// the provider gets the pod as it is.
	Env EnvSource
	// Allocatable is the node's allocatable resources: the value of a resourceFieldRef to
	// a limit the container does not set.
	Allocatable v1.ResourceList
}

// Reasons of virtual-kubelet's pod controller (node/pod.go) the adapter uses.
const (
	// ReasonProviderFailed is the status reason of a pod whose CreatePod failed.
	ReasonProviderFailed = "ProviderFailed"
	// ReasonProviderCreateFailed and ReasonProviderUpdateFailed are the reasons of the
	// warning events of a failed CreatePod and UpdatePod.
	ReasonProviderCreateFailed = "ProviderCreateFailed"
	ReasonProviderUpdateFailed = "ProviderUpdateFailed"
)

// Adapter runs the pods of a podlife node (a node.Runtime of package
// github.com/podlife/podlife/node) on a virtual-kubelet provider:
//
//   - StartPod (every SyncPod of a pod that is not terminal) calls CreatePod the first
//     time (unless the provider already holds the pod's UID: an agent restart never
//     re-creates a pod) and UpdatePod when the pod's spec, labels or annotations changed.
//   - StopPod (SyncTerminatingPod) calls DeletePod for every pod that must stop, also one
//     that never reached the provider, and returns once the provider reports the pod
//     stopped (gone, in a terminal phase, or every container terminated) or the grace
//     period is over.
//   - CleanupPod (SyncTerminatedPod) forgets what the adapter kept of the pod;
//     RemovePod (housekeeping) calls DeletePod on a stopped pod nothing knows any more.
//   - ListPods and PodStatus (the PLEG's relist and re-inspection) read GetPods and GetPod
//     (GetPodStatus when the pod carries no status), so the relist replaces
//     virtual-kubelet's 5 s status poll; PushStatuses hands NotifyPods' statuses to the
//     PLEG's push mode. With a provider that notifies, PodStatus answers from the
//     statuses notified since CreatePod (virtual-kubelet relies on them alone) and asks
//     GetPod again after an UpdatePod or DeletePod, or once a relist disagrees with them.
//   - APIStatus is the provider's last reported status of the pod; ReportsStart has the
//     node write a pod's first status once the provider reports the pod (not before
//     CreatePod).
//
// Providers key pods by namespace and name; the adapter checks the UID of what the
// provider returns, so a pod recreated under the same name is never mistaken for the old
// one, and the agent must run with SerializeByName so the two never overlap.
type Adapter struct {
	p        node.PodLifecycleHandler
	notifier node.PodNotifier
	clock    clock.Clock
	poll     time.Duration
	log      *slog.Logger
	rec      plnode.EventRecorder
	env      *envResolver

	mu sync.Mutex
	// pods is what the adapter keeps per pod UID.
	pods map[types.UID]*podRecord
	// seq numbers the adapter's CreatePod, UpdatePod and DeletePod calls (podRecord.seq),
	// its GetPods and the notifications it gets, in the order they begin.
	seq uint64
}

// podRecord is what the adapter knows of one pod.
type podRecord struct {
	namespace, name string
	// sent is the pod as last given to CreatePod or UpdatePod (nil: never sent).
	sent *v1.Pod
	// status is the provider's latest status of the pod (nil: none yet); statusSeq is the
	// Adapter.seq when the notification brought it or the read that got it began.
	status    *v1.PodStatus
	statusSeq uint64
	// wake is signalled when the provider notifies a change (for a waiting StopPod).
	wake chan struct{}
	// createErr is the error of the last CreatePod, if it failed ("": none): until the
	// provider holds the pod, its status says so (ReasonProviderFailed).
	createErr string
	// configErr is the error resolving the environment of a container (configFor) the
	// last time the pod was to be created ("": none).
	configErr, configFor string
	// abandoned: StopPod's grace period ran out before the provider reported the pod
	// stopped. A provider has no SIGKILL; like virtual-kubelet, the adapter then takes
	// the pod as stopped, and its runtime view shows the containers exited (137).
	abandoned bool

	// What the adapter may know of the pod without asking (see current).
	// seq is the Adapter.seq of the latest CreatePod, UpdatePod or DeletePod of the pod,
	// calls how many of them are in progress.
	seq   uint64
	calls int
	// fresh: the latest GetPod began after the pod's latest call ended; gone and created
	// are what it found.
	fresh bool
	// changed: UpdatePod or DeletePod was called; a notification sent before the call may
	// arrive after it, so notifications no longer make the status current.
	changed bool
	// current: status (or gone) is the provider's present view of the pod, and PodStatus
	// answers from it without a GetPod. Only for a provider that notifies (it reports
	// every later change): set by a GetPod begun after the pod's latest call ended, and
	// by a notification while CreatePod is the only call the pod had; cleared by every
	// call, by a notification after an UpdatePod or DeletePod (unless a fresh GetPod
	// found the pod gone) and by a relist that disagrees. With a polled provider, only the fresh GetPod
	// that ended StopPod is current, for one PodStatus (once): the node's inspection of
	// the stopped pod right after.
	current, once bool
	// gone: the view is that the provider does not hold the pod.
	gone bool
	// created is the provider pod's creationTimestamp (its sandbox's creation time).
	created metav1.Time
}

var (
	_ plnode.Runtime         = (*Adapter)(nil)
	_ plnode.StatusPusher    = (*Adapter)(nil)
	_ plnode.StatusGenerator = (*Adapter)(nil)
	_ plnode.StartReporter   = (*Adapter)(nil)
)

// ReportsStart is true (node.StartReporter): the provider reports every pod CreatePod
// started (NotifyPods, or GetPods at the relist), and the node writes a pod's first status
// from that report, as virtual-kubelet writes none before the provider reports one. A pod
// the provider runs at once gets one status write, Running, not Pending and then Running.
func (a *Adapter) ReportsStart() bool { return true }

// SyncPod is StartPod (node.Runtime).
func (a *Adapter) SyncPod(ctx context.Context, pod *v1.Pod, _ *pleg.PodStatus) error {
	return a.StartPod(ctx, pod)
}

// KillPod is StopPod with the grace period in seconds (node.Runtime).
func (a *Adapter) KillPod(ctx context.Context, pod *v1.Pod, _ *pleg.PodStatus, gracePeriod int64) error {
	return a.StopPod(ctx, pod, time.Duration(gracePeriod)*time.Second)
}

// KillRuntimePod is StopRuntimePod (node.Runtime).
func (a *Adapter) KillRuntimePod(ctx context.Context, rp *pleg.Pod) error {
	return a.StopRuntimePod(ctx, rp)
}

// NewAdapter validates cfg and returns an Adapter. It starts nothing.
func NewAdapter(cfg AdapterConfig) (*Adapter, error) {
	if cfg.Provider == nil {
		return nil, errors.New("vk: Provider is required")
	}
	if cfg.PollPeriod < 0 {
		return nil, fmt.Errorf("vk: negative PollPeriod %v", cfg.PollPeriod)
	}
	if cfg.PollPeriod == 0 {
		cfg.PollPeriod = DefaultPollPeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &Adapter{p: cfg.Provider, clock: cfg.Clock, poll: cfg.PollPeriod, log: log, rec: cfg.Recorder,
		pods: map[types.UID]*podRecord{}}
	a.notifier, _ = cfg.Provider.(node.PodNotifier)
	if cfg.Env != nil {
		a.env = newEnvResolver(cfg.Env, cfg.Allocatable, func(pod *v1.Pod, reason, message string) {
			a.event(pod, reason, message)
		})
	}
	return a, nil
}

// record returns the pod's record, creating it. a.mu must be held.
func (a *Adapter) record(uid types.UID, namespace, name string) *podRecord {
	r := a.pods[uid]
	if r == nil {
		r = &podRecord{namespace: namespace, name: name, wake: make(chan struct{}, 1)}
		a.pods[uid] = r
	}
	if r.name == "" {
		r.namespace, r.name = namespace, name
	}
	return r
}

// notified keeps the status st of the provider's pod got, which NotifyPods reported for
// a pod the adapter knows: it may make the pod's view current, and it wakes a StopPod
// waiting for the pod.
func (a *Adapter) notified(uid types.UID, got *v1.Pod, st *v1.PodStatus) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.pods[uid]
	if r == nil {
		return
	}
	a.seq++
	r.status, r.statusSeq = st, a.seq
	switch {
	case r.gone:
		// Gone stays gone: the notice is older than the read that found the pod gone.
	case r.changed:
		// The notice may be older than the UpdatePod or DeletePod, or than a read since.
		r.current = false
	default:
		// Every status of the pod the provider notifies follows its CreatePod.
		r.current, r.created = true, got.CreationTimestamp
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// call notes that a CreatePod, UpdatePod or DeletePod (change: one of the last two) of
// the pod begins: what the adapter knew of it is no longer current. The returned
// function notes its end.
func (a *Adapter) call(uid types.UID, change bool) (done func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	r := a.pods[uid]
	if r == nil {
		return func() {}
	}
	r.seq, r.calls, r.current, r.once, r.fresh, r.gone = a.seq, r.calls+1, false, false, false, false
	r.changed = r.changed || change
	return func() {
		a.mu.Lock()
		r.calls--
		a.mu.Unlock()
	}
}

// readMark is taken before a GetPod of a pod: the read is fresh if no call of the pod
// was in progress then or began since.
type readMark struct {
	seq uint64
	ok  bool
}

func (a *Adapter) markRead(uid types.UID) readMark {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.pods[uid]
	return readMark{seq: a.seq, ok: r != nil && r.calls == 0}
}

// observed keeps what a GetPod begun at m found of the pod: got with status st, or
// nothing (got nil: gone). A fresh read of a provider that notifies makes the view
// current.
func (a *Adapter) observed(uid types.UID, m readMark, got *v1.Pod, st *v1.PodStatus) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.pods[uid]
	if r == nil {
		return
	}
	if got != nil {
		r.status, r.statusSeq = st, m.seq
	}
	r.fresh = m.ok && r.calls == 0 && r.seq <= m.seq
	if !r.fresh {
		return
	}
	r.current, r.once, r.gone = a.notifier != nil, false, got == nil
	if got != nil {
		r.created = got.CreationTimestamp
	}
}

// stopSeen makes the fresh GetPod that found the pod stopped current for the next
// PodStatus, with a polled provider (the node inspects the pod right after StopPod).
func (a *Adapter) stopSeen(uid types.UID) {
	if a.notifier != nil {
		return // current already, from the same read
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if r := a.pods[uid]; r != nil && r.fresh && r.calls == 0 {
		r.current, r.once = true, true
	}
}

// isNotFound reports a provider's "no such pod" in either of the ways providers say it.
func isNotFound(err error) bool {
	return errdefs.IsNotFound(err) || apierrors.IsNotFound(err)
}

// providerPod returns the provider's pod of that namespace and name if it is the pod with
// that UID (a pod without UID is taken as it), nil if the provider has no such pod, and
// ErrNameTaken if the provider holds another UID under the name.
func (a *Adapter) providerPod(ctx context.Context, uid types.UID, namespace, name string) (*v1.Pod, error) {
	got, err := a.p.GetPod(ctx, namespace, name)
	switch {
	case isNotFound(err), err == nil && got == nil:
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("vk: GetPod %s/%s: %w", namespace, name, err)
	case got.UID != "" && got.UID != uid:
		return nil, fmt.Errorf("%w: %s/%s is %s, not %s", ErrNameTaken, namespace, name, got.UID, uid)
	}
	return got, nil
}

// StartPod creates the pod in the provider or brings it up to date.
func (a *Adapter) StartPod(ctx context.Context, pod *v1.Pod) error {
	a.mu.Lock()
	sent := a.record(pod.UID, pod.Namespace, pod.Name).sent
	a.mu.Unlock()
	if sent == nil {
		// First time this agent sees the pod: the provider may hold it from before a restart.
		// If it holds another pod under the name (one whose stop was given up at the end
		// of its grace period), fail at once: the pod worker retries with its backoff,
		// and no concurrency slot is held while the name is taken.
		got, _, err := a.read(ctx, pod.UID, pod.Namespace, pod.Name)
		if err != nil {
			return err
		}
		if got == nil {
			want, err := a.resolve(ctx, pod)
			if err != nil {
				return err
			}
			done := a.call(pod.UID, false)
			err = a.p.CreatePod(ctx, want)
			done()
			if err != nil {
				a.providerFailed(pod, err)
				return fmt.Errorf("vk: CreatePod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
			a.setSent(pod)
			return nil
		}
		// Adopted: the provider's pod carries the resolved environment.
		if a.env != nil {
			if want, err := a.env.resolve(ctx, pod); err == nil && sameDesire(got, want) {
				a.setSent(pod)
				return nil
			}
		}
		sent = got
	}
	if sameDesire(sent, pod) {
		a.setSent(pod)
		return nil
	}
	want, err := a.resolve(ctx, pod)
	if err != nil {
		return err
	}
	done := a.call(pod.UID, true)
	err = a.p.UpdatePod(ctx, want)
	done()
	if err != nil {
		a.event(pod, ReasonProviderUpdateFailed, err.Error())
		return fmt.Errorf("vk: UpdatePod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	a.setSent(pod)
	return nil
}

// resolve returns the pod to give the provider: a copy, with its environment resolved
// if the adapter resolves it. An environment that cannot be resolved is kept for the
// pod's status (CreateContainerConfigError) and returned as an error wrapping ErrEnv.
func (a *Adapter) resolve(ctx context.Context, pod *v1.Pod) (*v1.Pod, error) {
	if a.env == nil {
		return pod.DeepCopy(), nil
	}
	want, err := a.env.resolve(ctx, pod)
	if err != nil {
		var ee *EnvError
		if errors.As(err, &ee) {
			a.mu.Lock()
			r := a.record(pod.UID, pod.Namespace, pod.Name)
			r.configErr, r.configFor, r.createErr = ee.Msg, ee.Container, ""
			a.mu.Unlock()
		}
		return nil, fmt.Errorf("vk: the environment of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return want, nil
}

func (a *Adapter) setSent(pod *v1.Pod) {
	a.mu.Lock()
	r := a.record(pod.UID, pod.Namespace, pod.Name)
	r.sent, r.createErr, r.configErr, r.configFor = pod, "", "", ""
	a.mu.Unlock()
}

// providerFailed keeps a CreatePod's error for the pod's status and records the warning
// event, as virtual-kubelet's handleProviderError.
func (a *Adapter) providerFailed(pod *v1.Pod, err error) {
	msg := err.Error()
	if msg == "" {
		msg = "CreatePod failed"
	}
	a.mu.Lock()
	r := a.record(pod.UID, pod.Namespace, pod.Name)
	r.createErr, r.configErr, r.configFor = msg, "", ""
	a.mu.Unlock()
	a.event(pod, ReasonProviderCreateFailed, msg)
}

// event records a warning event about the pod, if there is a recorder.
func (a *Adapter) event(pod *v1.Pod, reason, message string) {
	if a.rec != nil {
		a.rec.Event(pod, v1.EventTypeWarning, reason, message)
	}
}

// sameDesire reports whether the provider need not hear of next: nothing it acts on
// changed since prev (virtual-kubelet's podsEffectivelyEqual: the spec, labels and
// annotations; the status and the deletion fields are the agent's business). The same
// pod object (the pod workers hand the config's shared pod until it changes) is the same
// desire without a comparison.
func sameDesire(prev, next *v1.Pod) bool {
	return prev == next || apiequality.Semantic.DeepEqual(prev.Spec, next.Spec) &&
		apiequality.Semantic.DeepEqual(prev.Labels, next.Labels) &&
		apiequality.Semantic.DeepEqual(prev.Annotations, next.Annotations)
}

// StopPod calls DeletePod and waits until the provider reports the pod stopped, a
// notification or a poll at a time, or the grace period is over. A pod DeletePod answers
// NotFound for is stopped: StopPod returns at once.
func (a *Adapter) StopPod(ctx context.Context, pod *v1.Pod, gracePeriod time.Duration) error {
	a.mu.Lock()
	r := a.record(pod.UID, pod.Namespace, pod.Name)
	sent, wake := r.sent, r.wake
	a.mu.Unlock()
	deadline := a.clock.Now().Add(gracePeriod)
	select {
	case <-wake: // a notice from before this stop
	default:
	}
	if sent == nil {
		// Never sent by this agent: DeletePod only if the name is not another pod's.
		if _, _, err := a.read(ctx, pod.UID, pod.Namespace, pod.Name); err != nil {
			if errors.Is(err, ErrNameTaken) {
				return nil // the provider holds nothing of this pod
			}
			return err
		}
	}
	done := a.call(pod.UID, true)
	err := a.p.DeletePod(ctx, pod.DeepCopy())
	done()
	switch {
	case isNotFound(err):
		return nil // the provider holds nothing of the pod: stopped
	case err != nil:
		return fmt.Errorf("vk: DeletePod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	waitedForNotice := false
	for {
		if a.notifier != nil && a.knownStopped(pod) {
			return nil // notified: no GetPod needed
		}
		got, st, err := a.read(ctx, pod.UID, pod.Namespace, pod.Name)
		switch {
		case errors.Is(err, ErrNameTaken), err == nil && got == nil:
			// Gone. A provider that notifies reports the final status of a deleted pod
			// through NotifyPods, possibly after the pod left GetPod: give the notice
			// one poll period to arrive, so the pod's final status is the provider's
			// (without it, the status manager marks the containers' state unknown).
			if a.notifier == nil || waitedForNotice || a.knownStopped(pod) {
				a.stopSeen(pod.UID)
				return nil
			}
			waitedForNotice = true
		case err == nil && stopped(&got.Spec, st):
			a.stopSeen(pod.UID)
			return nil
		case err != nil:
			a.log.Warn("vk: polling a stopping pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		}
		left := deadline.Sub(a.clock.Now())
		if left <= 0 {
			a.log.Warn("vk: grace period over before the provider reported the pod stopped", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID)
			a.mu.Lock()
			a.record(pod.UID, pod.Namespace, pod.Name).abandoned = true
			a.mu.Unlock()
			return nil
		}
		t := a.clock.NewTimer(min(left, a.poll))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-wake:
			t.Stop()
		case <-t.C():
		}
	}
}

// knownStopped reports whether the provider's last reported status of the pod says it
// is stopped.
func (a *Adapter) knownStopped(pod *v1.Pod) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.pods[pod.UID]
	return r != nil && r.status != nil && stopped(&pod.Spec, r.status)
}

// read is providerPod with the status the provider gives for its pod (GetPodStatus when
// the pod carries none), kept as what the adapter knows of the pod. A pod the provider
// does not hold (got nil, or ErrNameTaken) is kept as gone.
func (a *Adapter) read(ctx context.Context, uid types.UID, namespace, name string) (got *v1.Pod, st *v1.PodStatus, err error) {
	m := a.markRead(uid)
	got, err = a.providerPod(ctx, uid, namespace, name)
	switch {
	case errors.Is(err, ErrNameTaken), err == nil && got == nil:
		a.observed(uid, m, nil, nil)
		return nil, nil, err
	case err != nil:
		return nil, nil, err
	}
	st = &got.Status
	if st.Phase == "" {
		if s, err := a.p.GetPodStatus(ctx, got.Namespace, got.Name); err == nil && s != nil {
			st = s
		}
	}
	a.observed(uid, m, got, st)
	return got, st, nil
}

// StopRuntimePod deletes a pod the provider holds and no configuration knows of.
func (a *Adapter) StopRuntimePod(ctx context.Context, rp *pleg.Pod) error {
	return a.deleteUnknown(ctx, rp)
}

// RemovePod deletes the stopped leftovers of a pod no pod worker knows any more.
func (a *Adapter) RemovePod(ctx context.Context, rp *pleg.Pod) error {
	if err := a.deleteUnknown(ctx, rp); err != nil {
		return err
	}
	a.forget(rp.ID)
	return nil
}

// deleteUnknown calls DeletePod with the provider's own pod of rp, if it still is rp.
func (a *Adapter) deleteUnknown(ctx context.Context, rp *pleg.Pod) error {
	got, err := a.providerPod(ctx, rp.ID, rp.Namespace, rp.Name)
	if errors.Is(err, ErrNameTaken) || err == nil && got == nil {
		return nil
	}
	if err != nil {
		return err
	}
	done := a.call(rp.ID, true)
	err = a.p.DeletePod(ctx, got.DeepCopy())
	done()
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("vk: DeletePod %s/%s: %w", rp.Namespace, rp.Name, err)
	}
	return nil
}

// CleanupPod forgets what the adapter kept of the pod: it is stopped for good.
func (a *Adapter) CleanupPod(_ context.Context, pod *v1.Pod) error {
	a.forget(pod.UID)
	return nil
}

func (a *Adapter) forget(uid types.UID) {
	a.mu.Lock()
	delete(a.pods, uid)
	a.mu.Unlock()
}

// ListPods lists the provider's pods (GetPods) as runtime pods. Pods without UID are
// listed under the UID of the pod the adapter sent under their name, or skipped.
func (a *Adapter) ListPods(ctx context.Context, _ bool) ([]*pleg.Pod, error) {
	a.mu.Lock()
	a.seq++
	seq := a.seq // calls and notifications that come later may not show in the list
	a.mu.Unlock()
	pods, err := a.p.GetPods(ctx)
	if err != nil {
		return nil, fmt.Errorf("vk: GetPods: %w", err)
	}
	out := make([]*pleg.Pod, 0, len(pods))
	uids := make(map[types.UID]struct{}, len(pods))
	for _, p := range pods {
		if p == nil {
			continue
		}
		uid := p.UID
		if uid == "" {
			if uid = a.uidOf(p.Namespace, p.Name); uid == "" {
				continue
			}
		}
		st := &p.Status
		a.listed(uid, st, seq)
		uids[uid] = struct{}{}
		rp := runtimePod(uid, p, st)
		if a.isAbandoned(uid) {
			for _, c := range append(rp.Containers[:len(rp.Containers):len(rp.Containers)], rp.Sandboxes...) {
				if c.State == pleg.ContainerStateRunning {
					c.State = pleg.ContainerStateExited
				}
			}
		}
		out = append(out, rp)
	}
	a.unlisted(uids, seq)
	return out, nil
}

// listed keeps a pod's status st from a GetPods begun at seq, unless a notification or
// a read since brought a newer one. A current view the list disagrees with (other
// container states, or the pod gone) is no longer current and PodStatus asks the
// provider again; a current view keeps its status (a notification may be newer than the
// list).
func (a *Adapter) listed(uid types.UID, st *v1.PodStatus, seq uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.pods[uid]
	switch {
	case r == nil:
	case !r.current:
		if r.statusSeq < seq {
			r.status, r.statusSeq = st, seq
		}
	case r.seq <= seq && (r.gone || !sameStates(r.status, st)):
		r.current = false
	}
}

// unlisted ends the current view of every pod it has held by the provider that a GetPods
// begun at seq did not list (uids: the listed ones).
func (a *Adapter) unlisted(uids map[types.UID]struct{}, seq uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for uid, r := range a.pods {
		if _, ok := uids[uid]; !ok && r.current && !r.gone && r.seq <= seq {
			r.current = false
		}
	}
}

// uidOf returns the UID of the pod the adapter knows under that namespace and name.
func (a *Adapter) uidOf(namespace, name string) types.UID {
	a.mu.Lock()
	defer a.mu.Unlock()
	for uid, r := range a.pods {
		if r.namespace == namespace && r.name == name {
			return uid
		}
	}
	return ""
}

// PodStatus returns the provider's status of the pod (GetPod, checked against the UID):
// an empty status if the provider does not hold it.
func (a *Adapter) PodStatus(ctx context.Context, uid types.UID, name, namespace string) (*pleg.PodStatus, error) {
	if name == "" {
		a.mu.Lock()
		if r := a.pods[uid]; r != nil {
			namespace, name = r.namespace, r.name
		}
		a.mu.Unlock()
	}
	if rs, ok := a.currentStatus(uid); ok {
		return a.view(rs), nil
	}
	empty := &pleg.PodStatus{ID: uid, Name: name, Namespace: namespace}
	if name == "" {
		return empty, nil // never seen: nothing of it can be in the provider
	}
	got, st, err := a.read(ctx, uid, namespace, name)
	switch {
	case errors.Is(err, ErrNameTaken), err == nil && got == nil:
		return empty, nil
	case err != nil:
		return nil, err
	}
	return a.view(runtimeStatus(uid, got, st)), nil
}

// currentStatus is the runtime status of the pod from what the adapter knows, if that is
// current (podRecord.current): the provider's notifications since tell every change,
// or, with a polled provider, the GetPod that ended StopPod just found it (once).
func (a *Adapter) currentStatus(uid types.UID) (*pleg.PodStatus, bool) {
	a.mu.Lock()
	r := a.pods[uid]
	if r == nil || !r.current || !r.gone && (r.status == nil || r.sent == nil) {
		a.mu.Unlock()
		return nil, false
	}
	if r.once {
		r.current, r.once = false, false
	}
	if r.gone {
		defer a.mu.Unlock()
		return &pleg.PodStatus{ID: uid, Name: r.name, Namespace: r.namespace}, true
	}
	// The status and the sent pod are never written once kept: read them unlocked.
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: r.namespace, CreationTimestamp: r.created},
		Spec: r.sent.Spec}
	st := r.status
	a.mu.Unlock()
	return runtimeStatus(uid, p, st), true
}

// isAbandoned reports whether StopPod gave the pod up at the end of its grace period.
func (a *Adapter) isAbandoned(uid types.UID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.pods[uid]
	return r != nil && r.abandoned
}

// view is the runtime status the node sees: an abandoned pod's running containers as
// killed (exit code 137) and its sandbox not ready.
func (a *Adapter) view(rs *pleg.PodStatus) *pleg.PodStatus {
	if rs == nil || !a.isAbandoned(rs.ID) {
		return rs
	}
	for _, c := range rs.ContainerStatuses {
		if c.State == pleg.ContainerStateRunning {
			c.State, c.ExitCode, c.Reason, c.FinishedAt = pleg.ContainerStateExited, 137, "Killed", a.clock.Now()
		}
	}
	for _, sb := range rs.SandboxStatuses {
		sb.State = pleg.SandboxNotReady
	}
	return rs
}

// PushStatuses registers with the provider's NotifyPods, if it has it: every notified pod
// becomes a pushed runtime status and wakes a StopPod waiting for it.
func (a *Adapter) PushStatuses(ctx context.Context, push func(*pleg.PodStatus)) {
	if a.notifier == nil {
		return
	}
	a.notifier.NotifyPods(ctx, func(p *v1.Pod) {
		if p == nil || ctx.Err() != nil {
			return
		}
		uid := p.UID
		if uid == "" {
			if uid = a.uidOf(p.Namespace, p.Name); uid == "" {
				return
			}
		}
		st := p.Status.DeepCopy()
		a.notified(uid, p, st)
		push(a.view(runtimeStatus(uid, p, st)))
	})
}

// APIStatus is the provider's last status of the pod; if it reported none, the server's
// status of a pod that has finished, else a pending one. Once the pod is terminal and every container has terminated, a phase that is
// not terminal becomes Succeeded (every exit code 0) or Failed, as the kubelet decides
// for a terminated pod; the status manager's TerminatePod fails whatever is left.
//
// The status keeps what the API server keeps whatever the provider says: the qosClass
// (from the spec, as the server computed it) and podIPs (from podIP), so a full sync
// never finds a status stale only because the provider left them out.
func (a *Adapter) APIStatus(pod *v1.Pod, _ *pleg.PodStatus, generated v1.PodStatus, podIsTerminal bool) v1.PodStatus {
	st := a.apiStatus(pod, podIsTerminal)
	if st.QOSClass == "" {
		st.QOSClass = generated.QOSClass
	}
	if len(st.PodIPs) == 0 && st.PodIP != "" {
		st.PodIPs = []v1.PodIP{{IP: st.PodIP}}
	}
	return st
}

func (a *Adapter) apiStatus(pod *v1.Pod, podIsTerminal bool) v1.PodStatus {
	now := a.clock.Now()
	a.mu.Lock()
	r := a.record(pod.UID, pod.Namespace, pod.Name)
	var st v1.PodStatus
	if r.status != nil {
		st = *r.status.DeepCopy()
	}
	createErr, configErr, configFor := r.createErr, r.configErr, r.configFor
	a.mu.Unlock()
	switch {
	case st.Phase != "":
	case createErr != "":
		// CreatePod failed (virtual-kubelet's handleProviderError): Pending with the
		// provider's error while the pod worker retries, Failed if the pod never restarts.
		st = pendingStatus(pod, metav1.NewTime(now))
		if pod.Spec.RestartPolicy == v1.RestartPolicyNever {
			st.Phase = v1.PodFailed
		}
		st.Reason, st.Message = ReasonProviderFailed, createErr
	case configErr != "":
		// The environment cannot be resolved (the kubelet's CreateContainerConfigError).
		st = pendingStatus(pod, metav1.NewTime(now))
		for i := range st.ContainerStatuses {
			if cs := &st.ContainerStatuses[i]; cs.Name == configFor {
				cs.State.Waiting = &v1.ContainerStateWaiting{Reason: ReasonCreateContainerConfigError, Message: configErr}
			}
		}
	case pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed:
		// Finished before this agent's time (a restart): the server's status stands.
		st = *pod.Status.DeepCopy()
	default:
		st = pendingStatus(pod, metav1.NewTime(now))
	}
	if podIsTerminal && st.Phase != v1.PodSucceeded && st.Phase != v1.PodFailed {
		if ph, ok := terminatedPhase(pod, &st); ok {
			st.Phase = ph
		}
	}
	return st
}
