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
			m.mach.QueueAll()
			m.mu.Unlock()
			timer.Reset(m.period)
		}
	}
}

// dispatch starts the writes the Machine's policy grants (NextWrite: the pods queued,
// within the bounds of each lane), each on a writer. It does not wait for a write: a
// write that ends wakes the loop, which dispatches again.
func (m *Manager) dispatch(ctx context.Context, writers *writerPool) {
	for ctx.Err() == nil {
		m.mu.Lock()
		w, ok := m.mach.NextWrite()
		m.mu.Unlock()
		if !ok {
			return
		}
		writers.start(ctx, m, writeJob{w: w})
	}
}

// writeJob is one write Run hands to its writers: a granted write, holding its slot.
type writeJob struct {
	w Write
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
		_ = m.write(ctx, j.w)
	}
}

// writer makes the write first, then every write it takes from jobs, until ctx ends.
func (m *Manager) writer(ctx context.Context, first writeJob, jobs <-chan writeJob) {
	for j := first; ; {
		_ = m.write(ctx, j.w)
		select {
		case j = <-jobs:
		case <-ctx.Done():
			return
		}
	}
}

// write makes the write w, which the Machine granted: it asks the PodLookup and
// CouldHaveRunningContainers what the write needs, starts the write, makes the calls it
// asks for and hands each answer back until the write is done, then ends it (which frees
// its slot) and wakes Sync's waiters and the loop. The lock is held only to start and to
// end the write: its steps in between touch the write's own state alone (Machine.end).
func (m *Manager) write(ctx context.Context, w Write) error {
	f := m.facts(w)
	m.mu.Lock()
	ps, err := m.mach.starting(w.UID, f)
	m.mu.Unlock()
	if err != nil { // not a write the Machine granted: a bug of the runner
		m.log.Error("status write refused", "pod", w.Pod.Namespace+"/"+w.Pod.Name, "podUID", w.UID, "err", err)
		return err
	}
	var a Answer
	for {
		st := ps.Step(a, m.clock.Now())
		if st.Done() {
			break
		}
		a = m.call(ctx, st.Call)
	}
	ps.settle()
	m.mu.Lock()
	end := m.mach.end(ps)
	if m.idle != nil {
		close(m.idle)
		m.idle = nil
	}
	m.mu.Unlock()
	m.signal()
	m.ended(end)
	return end.Err
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
	m.mach.QueueAll()
	uids := m.mach.c.takeQueue()
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
			w   Write
			ok  bool
			err = ctx.Err()
		)
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrInterrupted, err)
		} else {
			w, ok, err = m.claim(ctx, uid)
		}
		if err != nil {
			// Not synced: put the rest back for Run or the next Sync.
			m.mu.Lock()
			for _, u := range uids[i:] {
				if e := m.mach.c.entries[u]; e != nil && e.needsUpdate() {
					m.mach.c.enqueue(u, e)
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
			if err := m.write(ctx, w); err != nil {
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
func (m *Manager) claim(ctx context.Context, uid types.UID) (Write, bool, error) {
	for {
		m.mu.Lock()
		w, res := m.mach.claim(uid)
		if res != claimBusy {
			m.mu.Unlock()
			return w, res == claimed, nil
		}
		if m.idle == nil {
			m.idle = make(chan struct{})
		}
		idle := m.idle
		m.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return Write{}, false, fmt.Errorf("%w: %w", ErrInterrupted, ctx.Err())
		}
	}
}
