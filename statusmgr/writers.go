package statusmgr

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Run is the sync loop. It blocks until ctx ends and then returns nil, once every write it
// started has returned (their calls get ctx). It syncs the statuses that changed as soon
// as they change and, every SyncPeriod, every status that still needs it (failed writes,
// finished pods to delete). Up to MaxConcurrentWrites pods are written at once, at most
// MaxConcurrentStatusWrites of them not finished, at most one call in flight per pod; a
// pod's newer version waits until the call writing its older one returned, and versions
// set meanwhile are coalesced (only the newest is sent). A sync that fails leaves the
// status pending; it is logged, counted and retried by the next full sync. Pods not yet
// written when ctx ends stay queued. The writes are made by at most MaxConcurrentWrites
// goroutines, started as needed and kept (parked when idle) until ctx ends. Run returns
// ErrAlreadyRunning if another Run is active.
func (m *Manager) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.running {
		m.mu.Unlock()
		return ErrAlreadyRunning
	}
	m.running = true
	m.mu.Unlock()
	writers := writerPool{jobs: make(chan writeJob), max: m.maxWrites}
	defer func() {
		writers.wg.Wait()
		m.mu.Lock()
		m.running = false
		m.mu.Unlock()
	}()

	timer := m.clock.NewTimer(m.period)
	defer timer.Stop()
	for {
		m.dispatch(ctx, &writers)
		select {
		case <-ctx.Done():
			return nil
		case <-m.wake:
		case <-timer.C():
			if m.lookup != nil {
				m.reconcile()
			}
			m.mu.Lock()
			m.c.queueAll()
			m.mu.Unlock()
			timer.Reset(m.period)
		}
	}
}

// dispatch starts the writes the cache's policy grants (nextWrite: the pods queued, within
// the bounds of each lane), each on a writer. It does not wait for a write: a write that
// ends wakes the loop, which dispatches again.
func (m *Manager) dispatch(ctx context.Context, writers *writerPool) {
	for ctx.Err() == nil {
		m.mu.Lock()
		s, _, ok := m.c.nextWrite()
		m.mu.Unlock()
		if !ok {
			return
		}
		writers.start(ctx, m, writeJob{s: s})
	}
}

// writeJob is one write Run hands to its writers: a claimed snapshot, holding its slot.
type writeJob struct {
	s snapshot
}

// writerPool runs Run's writes on long-lived goroutines, so that a write does not start
// a goroutine (and grow its stack) of its own. A writer is started when no idle one takes
// a write at once, up to max (MaxConcurrentWrites, the bound on writes in flight); idle
// writers stay parked until Run's context ends. Only Run's goroutine calls start.
type writerPool struct {
	jobs    chan writeJob // unbuffered: a send succeeds when a writer takes the write
	max     int
	started int
	wg      sync.WaitGroup
}

// start has a writer make the write j, which holds its slots. If every writer is busy
// and max are running, it waits for one to finish its write (it holds no slot then);
// if ctx ends first, the write is made here (its calls get the ended ctx, as any write's).
func (w *writerPool) start(ctx context.Context, m *Manager, j writeJob) {
	select {
	case w.jobs <- j:
		return
	default:
	}
	if w.started < w.max {
		w.started++
		w.wg.Go(func() { m.writer(ctx, j, w.jobs) })
		return
	}
	select {
	case w.jobs <- j:
	case <-ctx.Done():
		_ = m.write(ctx, j.s)
	}
}

// writer makes the write first, then every write it takes from jobs, until ctx ends.
func (m *Manager) writer(ctx context.Context, first writeJob, jobs <-chan writeJob) {
	for j := first; ; {
		_ = m.write(ctx, j.s)
		select {
		case j = <-jobs:
		case <-ctx.Done():
			return
		}
	}
}

// write syncs the claimed snapshot s, then ends its claim, which frees its slot.
func (m *Manager) write(ctx context.Context, s snapshot) error {
	err := m.syncPod(ctx, s)
	m.release(s.uid)
	m.signal()
	return err
}

// release ends the claim of a pod's sync (freeing its slot) and wakes Sync's waiters.
func (m *Manager) release(uid types.UID) {
	m.mu.Lock()
	m.c.done(uid)
	if m.idle != nil {
		close(m.idle)
		m.idle = nil
	}
	m.mu.Unlock()
}

// TakeSyncs is Sync's first half, for a caller that makes the API calls itself (a test
// harness, a runner of its own): it claims every pod that needs a sync and has no write in
// flight (reconciling first, as a full sync does) and returns their PodSyncs, in the order
// Sync would write them (the finished pods first). The caller steps each one to its end,
// making the calls it asks for, and hands it back with FinishSync; until then the pod is
// not written by Run or Sync. A pod whose write is in flight is left to that write's owner
// (it is written again after it if it still needs it). The statuses and pods in each
// PodSync's Input are the manager's own (shared, not copied): read-only.
func (m *Manager) TakeSyncs() []*PodSync {
	if m.lookup != nil {
		m.reconcile()
	}
	m.mu.Lock()
	m.c.queueAll()
	var snaps []snapshot
	for _, uid := range m.c.takeQueue() {
		switch s, res := m.c.claim(uid, false); res {
		case claimed:
			snaps = append(snaps, s)
		case claimBusy:
			w := m.c.writing[uid]
			w.again = true // queued again when its write ends
			m.c.writing[uid] = w
		}
	}
	m.mu.Unlock()
	out := make([]*PodSync, len(snaps))
	for i, s := range snaps {
		out[i] = m.podSync(s)
	}
	return out
}

// FinishSync records the outcome of a PodSync that TakeSyncs returned, once it is done,
// ends its claim and returns its error (the Outcome's Err). It returns an error wrapping
// ErrUnknownPod, and changes nothing, for a PodSync that is not done or not from TakeSyncs.
func (m *Manager) FinishSync(ps *PodSync) error {
	if ps == nil || ps.snap.e == nil || !ps.done {
		return fmt.Errorf("%w: the sync is not done, or not from TakeSyncs", ErrUnknownPod)
	}
	err := m.finish(ps)
	m.release(ps.snap.uid)
	m.signal()
	return err
}

// Sync syncs, once and synchronously, every status that needs it (as Run's periodic sync
// does) and returns the errors of the pods that failed, joined. It writes the finished
// pods first, in parallel (up to MaxConcurrentWrites at once, MaxConcurrentStatusWrites
// for the pods not finished, the slots shared with Run's writes) and waits for a pod whose
// write Run has in flight to end before it syncs that pod again if it still needs it. If
// ctx ends, the pods not synced stay queued and an error wrapping ErrInterrupted and ctx's
// error is among the errors returned; with a ctx that has already ended, Sync returns that
// error alone, every time, and writes nothing. Useful without Run (tools, tests,
// examples).
func (m *Manager) Sync(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrInterrupted, err)
	}
	if m.lookup != nil {
		m.reconcile()
	}
	m.mu.Lock()
	m.c.queueAll()
	uids := m.c.takeQueue()
	m.mu.Unlock()

	var (
		writes sync.WaitGroup
		emu    sync.Mutex
		errs   []error
	)
	for i, uid := range uids {
		// An ended ctx is checked first: claim and acquire find a free pod and a free
		// slot as ready as ctx.Done, and a select picks at random.
		var (
			s   snapshot
			ok  bool
			err = ctx.Err()
		)
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrInterrupted, err)
		} else {
			s, ok, err = m.claim(ctx, uid)
		}
		if err != nil {
			// Not synced: put the rest back for Run or the next Sync.
			m.mu.Lock()
			for _, u := range uids[i:] {
				if e := m.c.entries[u]; e != nil && e.needsUpdate() {
					m.c.enqueue(u, e)
				}
			}
			m.mu.Unlock()
			emu.Lock()
			errs = append(errs, err)
			emu.Unlock()
			break
		}
		if !ok {
			continue
		}
		writes.Go(func() {
			if err := m.write(ctx, s); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		})
	}
	writes.Wait()
	return errors.Join(errs...)
}

// claim waits until no write of the pod with the UID is in flight and its lane has a free
// slot, and claims it (the write then holds that slot); false when it needs no sync (or is
// gone). It returns ctx's error if ctx ends first.
func (m *Manager) claim(ctx context.Context, uid types.UID) (snapshot, bool, error) {
	for {
		m.mu.Lock()
		s, res := m.c.claim(uid, true)
		if res != claimBusy {
			m.mu.Unlock()
			return s, res == claimed, nil
		}
		if m.idle == nil {
			m.idle = make(chan struct{})
		}
		idle := m.idle
		m.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return snapshot{}, false, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
		}
	}
}
