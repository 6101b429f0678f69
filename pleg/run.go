package pleg

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Run relists at once, then every RelistPeriod after the end of the previous relist, and
// handles RequestRefresh calls as soon as they arrive (between relists; a refresh waits for
// a relist in progress). It blocks until ctx ends, then returns; runtime calls in flight
// get ctx and should return when it ends. Errors are logged and retried by the next
// relist. Call Run once.
func (r *Relister) Run(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	r.relistAndLog(ctx)
	t := r.clock.NewTimer(r.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
			r.refreshPending(ctx)
		case <-t.C():
			r.relistAndLog(ctx)
			t.Reset(r.period)
		}
	}
}

func (r *Relister) relistAndLog(ctx context.Context) {
	if err := r.Relist(ctx); err != nil && ctx.Err() == nil {
		r.log.DebugContext(ctx, "pleg: relist incomplete", "err", err)
	}
}

// RequestRefresh asks Run to re-inspect one pod at once instead of at the next relist:
// fetch its status, cache it (timestamp = now, which wakes GetNewerThan waiters) and send
// the events of its container changes. The pod workers call it after a pod's containers
// were started or stopped, so the transition never waits for a periodic relist. It never
// blocks; requests for a pod already waiting are merged. An empty UID is ignored.
func (r *Relister) RequestRefresh(uid types.UID) {
	if uid == "" {
		return
	}
	r.refreshMu.Lock()
	if _, ok := r.refreshSet[uid]; !ok {
		r.refreshSet[uid] = struct{}{}
		r.refreshQueue = append(r.refreshQueue, uid)
	}
	r.refreshMu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Refresh re-inspects one pod now and returns its status: RequestRefresh done synchronously,
// for a caller that must act on the pod's state as it is after its own action (the pod
// workers, right after stopping a pod's containers). The status is fetched, cached (the
// cache keeps a newer observation if it has one, and that is returned instead) and diffed
// against the pod's record, whose events are sent; the caller gets the cached status
// without comparing timestamps, which on a fake clock may not have moved since its action.
// A failed fetch returns an error wrapping ErrPodStatus, and the next relist inspects the
// pod again. It does not wait for a relist in progress (no lock is held across runtime
// calls; the cache keeps the newer of the two observations). An empty UID is an error
// wrapping ErrInvalidStatus.
func (r *Relister) Refresh(ctx context.Context, uid types.UID) (*PodStatus, error) {
	if uid == "" {
		return nil, fmt.Errorf("%w: empty pod UID", ErrInvalidStatus)
	}
	return r.refreshStatus(ctx, uid, r.cache.podHash(uid))
}

// refreshStatus is Refresh of pod uid, not empty, whose podHash is h.
func (r *Relister) refreshStatus(ctx context.Context, uid types.UID, h uint64) (*PodStatus, error) {
	status, err := r.refresh(ctx, uid, h)
	if err != nil {
		return nil, err
	}
	if status != nil {
		return status, nil
	}
	status, err = r.cache.Get(uid) // the newer observation the cache kept
	if err != nil {
		return nil, fmt.Errorf("%w: pod %s: %w", ErrPodStatus, uid, err)
	}
	return status, nil
}

// StatusAfter returns the pod's status observed after minTime; *Relister is the pod
// workers' view of the runtime (podworker.RuntimeView). It never waits for a relist: the
// cached status if it was observed after minTime, otherwise the pod is re-inspected now
// (Refresh). If the inspection fails, it waits for the cache (Cache.GetNewerThan)
// until ctx ends.
func (r *Relister) StatusAfter(ctx context.Context, uid types.UID, minTime time.Time) (*PodStatus, error) {
	h := r.cache.podHash(uid)
	if a, ok := r.cache.shardOf(h).newerThan(uid, minTime); ok {
		return a.status, a.err
	}
	if uid != "" {
		if s, err := r.refreshStatus(ctx, uid, h); err == nil {
			return s, nil
		}
	}
	return r.cache.GetNewerThan(ctx, uid, minTime)
}

// LastStatus returns the pod's last cached status without waiting (Cache.Get).
func (r *Relister) LastStatus(uid types.UID) (*PodStatus, error) { return r.cache.Get(uid) }

// refreshPending refreshes every pod whose refresh was requested, in request order.
func (r *Relister) refreshPending(ctx context.Context) {
	r.refreshMu.Lock()
	queue := r.refreshQueue
	r.refreshQueue = nil
	clear(r.refreshSet)
	r.refreshMu.Unlock()
	for _, uid := range queue {
		if ctx.Err() != nil {
			return
		}
		if _, err := r.refresh(ctx, uid, r.cache.podHash(uid)); err != nil {
			r.log.DebugContext(ctx, "pleg: refresh incomplete", "podUID", uid, "err", err)
		}
	}
}

// refresh re-inspects one pod: the status the runtime reports now replaces the pod's
// record, as if a relist had listed the pod with the containers and sandboxes of that
// status. It returns the status cached, or nil when the cache kept a newer observation. A
// failure caches the error and leaves the pod to be inspected again by the next relist.
// No lock is held during the runtime call. h is the pod's podHash.
func (r *Relister) refresh(ctx context.Context, uid types.UID, h uint64) (*PodStatus, error) {
	s := r.stripeOf(h)
	known, name, namespace := r.recordName(s, uid)
	ts := r.clock.Now()
	status, err := r.runtime.PodStatus(ctx, uid, name, namespace)
	if err == nil {
		cached, dropped := r.apply(h, known, uid, status, name, namespace, ts)
		r.reportDrops(ctx, "refresh", dropped)
		return cached, nil
	}
	r.mu.Lock()
	rec := s.record(uid)
	if rec == nil {
		// Never listed: remember it, so that a relist that does not list it deletes the
		// cache entry made here like any vanished pod's.
		rec = s.newRecord(uid)
	}
	r.cache.Set(uid, status, err, ts)
	rec.reinspect = true
	r.mu.Unlock()
	err = fmt.Errorf("%w: pod %s/%s (%s): %w", ErrPodStatus, namespace, name, uid, err)
	r.log.WarnContext(ctx, "pleg: refresh: pod status failed", "pod", podName(namespace, name), "podUID", uid, "err", err)
	return nil, err
}

// recordName returns uid's record in s, its stripe, and the record's name and namespace;
// nil and "" for a pod without one. The record is only a hint once the locks are
// released: apply finds it again if it vanished meanwhile.
func (r *Relister) recordName(s *podStripe, uid types.UID) (rec *podRecord, name, namespace string) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s.lock.Lock()
	defer s.lock.Unlock()
	if rec = s.record(uid); rec != nil {
		return rec, rec.view.name, rec.view.namespace
	}
	return nil, "", ""
}

// PushStatus is the push mode: a caller whose runtime emits container events (like the
// CRI event stream, which carries the pod's full status) hands the status in as observed
// at observedAt. Unless the cache already holds a newer observation of the pod, the status
// is cached and diffed against the pod's record, whose events are sent at once; periodic
// relisting goes on as the fallback (a longer RelistPeriod is then reasonable). It returns
// whether the status was applied, or an error wrapping ErrInvalidStatus for a nil status
// or one without ID. It does not wait for a relist in progress. The status must not be
// modified afterwards (see RuntimeService.PodStatus).
func (r *Relister) PushStatus(status *PodStatus, observedAt time.Time) (applied bool, err error) {
	if status == nil {
		return false, fmt.Errorf("%w: nil status", ErrInvalidStatus)
	}
	if status.ID == "" {
		return false, fmt.Errorf("%w: empty pod UID", ErrInvalidStatus)
	}
	cached, dropped := r.apply(r.cache.podHash(status.ID), nil, status.ID, status, status.Name, status.Namespace, observedAt)
	r.reportDrops(context.Background(), "push", dropped)
	return cached != nil, nil
}

// apply caches a freshly fetched status of uid observed at ts (setObserved) and, if the cache
// took it, replaces the pod's record with the view of the status's pod and sends the
// events of the difference. name and namespace complete a status that lacks them. The
// record keeps the current epoch: a relist whose list was taken meanwhile leaves the pod
// alone. It returns the status cached, nil if the cache kept a newer one, and how many
// of its events were dropped. It holds r.mu for reading and the lock of the pod's
// stripe: applies of pods of different stripes run in parallel. h is the pod's
// podHash; known, if not nil, its record as found before (see recordName).
func (r *Relister) apply(h uint64, known *podRecord, uid types.UID, status *PodStatus, name, namespace string, ts time.Time) (cached *PodStatus, dropped int) {
	sc := scratchPool.Get().(*applyScratch)
	defer sc.release()
	cur := sc.podOf(uid, status, name, namespace)
	s := r.stripeOf(h)
	r.mu.RLock()
	defer r.mu.RUnlock()
	s.lock.Lock()
	defer s.lock.Unlock()
	if status = r.cache.shardOf(h).setObserved(uid, status, ts); status == nil {
		return nil, 0
	}
	rec := known
	if rec == nil || rec.vanished {
		rec = s.record(uid)
	}
	if rec == nil {
		// Not listed yet (or never): remember it; a relist that does not list it deletes
		// the record and the cache entry like any vanished pod's.
		rec = s.newRecord(uid)
	}
	var same bool
	sc.changes, same = appendChanges(sc.changes[:0], &rec.view, cur)
	if same && cur.Name == rec.view.name && cur.Namespace == rec.view.namespace {
		rec.view.setStates(cur) // what rebuild would do, without building the view again
	} else {
		rec.view, sc.view = rec.view.rebuild(cur, sc.view)
	}
	rec.epoch = r.epoch
	rec.reinspect = false
	if dropped = r.emit(uid, sc.changes, &rec.view); dropped > 0 {
		s.dropped.Add(uint64(dropped))
	}
	return status, dropped
}

// applyScratch is the memory an apply reuses: the pod of the status, its changes and the
// view entries being built.
type applyScratch struct {
	pod     Pod
	parts   []Container
	ptrs    []*Container
	changes []change
	view    []viewEntry
}

var scratchPool = sync.Pool{New: func() any { return new(applyScratch) }}

// podOf returns the runtime pod uid that a detailed status describes, in sc's memory (valid
// until release): its containers with their states, its sandboxes as running while ready
// and exited otherwise. name and namespace complete a status that lacks them.
func (sc *applyScratch) podOf(uid types.UID, s *PodStatus, name, namespace string) *Pod {
	sc.pod = Pod{ID: uid, Name: name, Namespace: namespace}
	p := &sc.pod
	if s == nil {
		return p
	}
	if s.Name != "" {
		p.Name, p.Namespace = s.Name, s.Namespace
	}
	parts := sc.parts[:0]
	for _, cs := range s.ContainerStatuses {
		if cs != nil {
			parts = append(parts, Container{ID: cs.ID, Name: cs.Name, Image: cs.Image, State: cs.State})
		}
	}
	containers := len(parts)
	for _, sb := range s.SandboxStatuses {
		if sb == nil {
			continue
		}
		state := ContainerStateExited
		if sb.State == SandboxReady {
			state = ContainerStateRunning
		}
		parts = append(parts, Container{ID: sb.ID, State: state})
	}
	ptrs := sc.ptrs[:0]
	for i := range parts {
		ptrs = append(ptrs, &parts[i])
	}
	sc.parts, sc.ptrs = parts, ptrs
	p.Containers, p.Sandboxes = ptrs[:containers:containers], ptrs[containers:]
	return p
}

// release clears sc, so that it keeps no status's strings alive, and puts it back in the
// pool.
func (sc *applyScratch) release() {
	sc.pod = Pod{}
	clear(sc.parts)
	clear(sc.ptrs)
	clear(sc.changes)
	scratchPool.Put(sc)
}

// podName is the log value of a pod's "pod" key: namespace/name, or "" when unknown.
func podName(namespace, name string) string {
	if name == "" {
		return ""
	}
	return namespace + "/" + name
}
