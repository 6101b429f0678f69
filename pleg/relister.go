package pleg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/internal/validate"
)

// Defaults of Config.
const (
	DefaultRelistPeriod         = time.Second
	DefaultRelistThreshold      = 3 * time.Minute
	DefaultEventChannelCapacity = 1000
)

// Errors of the relister, checked with errors.Is.
var (
	// ErrInvalidConfig wraps every validation error of New.
	ErrInvalidConfig = errors.New("pleg: invalid config")
	// ErrListPods wraps the error of a RuntimeService.ListPods call that failed a relist.
	ErrListPods = errors.New("pleg: listing pods failed")
	// ErrPodStatus wraps the error of a RuntimeService.PodStatus call; the pod is
	// inspected again at the next relist.
	ErrPodStatus = errors.New("pleg: pod status failed")
	// ErrNotHealthy is wrapped by the error of Healthy.
	ErrNotHealthy = errors.New("pleg: relist not healthy")
	// ErrInvalidStatus is returned by PushStatus for a nil status or one without ID.
	ErrInvalidStatus = errors.New("pleg: invalid pod status")
)

// Config configures a Relister. Zero durations and capacities take their defaults.
type Config struct {
	// Runtime is the caller's container runtime. Required.
	Runtime RuntimeService
	// Cache receives every status the relister observes. Required; the pod workers read it.
	Cache *Cache
	// Clock is the time source of relist timestamps, health and Run's timer; nil means
	// the real clock.
	Clock clock.Clock
	// RelistPeriod is the pause between the end of one periodic relist and the start of
	// the next (default 1 s).
	RelistPeriod time.Duration
	// RelistThreshold is how long after the start of the last successful relist the
	// relister still counts as healthy (default 3 min).
	RelistThreshold time.Duration
	// EventChannelCapacity is the buffer of the Events channel (default 1000). When it is
	// full, events are dropped and counted (DroppedEvents); a relist never blocks on it.
	EventChannelCapacity int
	// DeliverContainerChanged sends ContainerChanged events (a container moved to an
	// unknown or created state). The kubelet generates but never delivers them; so does
	// the relister unless this is set.
	DeliverContainerChanged bool
	// Logger receives the relister's logs; nil discards them.
	Logger *slog.Logger
	// Hooks are the relister's observation points (relists, dropped events), each
	// called outside the relister's locks; the zero value observes nothing.
	Hooks Hooks
}

// Hooks are the Relister's observation points, for metrics (package examples/metrics
// turns them into the kubelet's kubelet_pleg_* series). A nil func is skipped. Each is
// called outside the relister's locks, from the goroutine that relisted (Run's, or a
// caller of Relist, Refresh or PushStatus), so it may call the Relister's methods; it
// must be quick, and it delays the next relist by its own duration.
type Hooks struct {
	// Relisted is called after every relist, successful or not.
	Relisted func(Relist)
	// EventsDropped is called after a relist, refresh or push that dropped events
	// because the Events channel was full, with how many it dropped.
	EventsDropped func(n int)
}

// Relist describes one relist, for Hooks.Relisted.
type Relist struct {
	// Start is when the relist started, Duration how long it took (the kubelet's
	// kubelet_pleg_relist_duration_seconds).
	Start    time.Time
	Duration time.Duration
	// Interval is the time from the start of the previous successful relist to the start
	// of this one (kubelet_pleg_relist_interval_seconds); 0 before the first.
	Interval time.Duration
	// LastSeen is the start of the last successful relist, this one's if it succeeded
	// (kubelet_pleg_last_seen_seconds); zero before the first.
	LastSeen time.Time
	// Healthy and HealthErr are Healthy() right after the relist.
	Healthy   bool
	HealthErr error
	// Err is what Relist returned.
	Err error
}

// Relister is the pod lifecycle event generator: it relists the runtime periodically (and
// re-inspects single pods on request), keeps the cache fresh and emits the events of
// every container transition. See the package documentation for the rules. All methods
// are safe for concurrent use.
type Relister struct {
	runtime        RuntimeService
	cache          *Cache
	clock          clock.Clock
	period         time.Duration
	threshold      time.Duration
	deliverChanged bool
	log            *slog.Logger
	hooks          Hooks

	// events is the bounded output channel; it is never closed. dropped counts the
	// events relists dropped because it was full; applies count theirs in their pods'
	// stripes (podStripe.dropped), so that they share no counter (DroppedEvents adds
	// them up).
	events  chan *PodLifecycleEvent
	dropped atomic.Uint64
	// chunk is the chunk that events are carved from (see newEvent).
	chunk atomic.Pointer[eventChunk]

	healthMu sync.Mutex
	// relistTime is the start of the last relist whose ListPods succeeded; zero before.
	relistTime time.Time

	refreshMu sync.Mutex
	// refreshQueue lists, in request order and without duplicates, the pods whose refresh
	// was requested and not yet started; refreshSet holds the same UIDs.
	refreshQueue []types.UID
	refreshSet   map[types.UID]struct{}
	// wake has capacity 1: a pending signal means "the refresh queue may be non-empty".
	wake chan struct{}

	// relistMu serializes relists, and guards prev, next, notes and relistDrops.
	relistMu sync.Mutex
	// prev and next are, by position, the records of the previous and the current list
	// (nil where the list had no valid pod): a pod listed at the same position as before
	// is matched without a map lookup.
	prev, next []*podRecord
	// notes are the log records of the running relist, written once it released its
	// locks (the logger's handler is the caller's code).
	notes []logNote
	// relistDrops counts the events the running relist dropped.
	relistDrops int

	// mu guards every field below. It is never held across a runtime call: a refresh
	// or push waits for one pod's bookkeeping, never for a whole relist. A relist holds
	// it for writing. A refresh or push (apply) holds it for reading, so that those of
	// different pods run in parallel (their runtime calls, statuses, cache writes,
	// records and events), and then the lock of the pod's stripe (podStripe.lock), so
	// that the pod's cache entry and record change together. Applies of different pods
	// share nothing else but the cache's shards, the event channel and atomics.
	mu sync.RWMutex
	// stripes hold the pods' records and locks, by the cache's hash of the UID
	// (stripeOf).
	stripes [podStripes]podStripe
	// gen counts successful ListPods calls; a record listed by the current one has it.
	gen uint64
	// epoch counts the ListPods calls started; a record applied by a refresh or push
	// keeps the epoch it was applied in (see podRecord.epoch).
	epoch uint64
	// changes is a scratch buffer of appendChanges, scratch one of podView.rebuild, both
	// a relist's.
	changes []change
	scratch []viewEntry
}

// podStripes is how many stripes hold a relister's pods: enough that refreshes of
// different pods rarely share one.
const podStripes = 1024

// podStripe holds the records of the pods whose UID hashes to it, and their lock (see
// Relister.mu).
type podStripe struct {
	// lock guards records, the map and the records in it, while Relister.mu is held for
	// reading. An apply of one of the stripe's pods holds it from its cache write until
	// its record and events are done.
	lock sync.Mutex
	// dropped counts the events that applies of the stripe's pods dropped (see
	// Relister.events).
	dropped atomic.Uint64
	// records maps each pod UID of the stripe to the pod as last seen and handled; nil
	// until the first. Invariant: a record's view is the one that was diffed into events
	// and whose status reached the cache, except for a record marked reinspect, whose
	// view is the older one its events will be computed from again.
	records map[types.UID]*podRecord
}

// podRecord is the relister's memory of one pod.
type podRecord struct {
	// uid is the key of the record in its stripe's records.
	uid types.UID
	// view is the last handled view of the pod; the zero view before the first. Its
	// entries are inline while they fit, in the record's memory.
	view podView
	// gen is the relist generation that last listed the pod.
	gen uint64
	// epoch is the relister's epoch when a refresh or push last applied an observation
	// of the pod. Equal to the current epoch, that observation overlaps the list in
	// progress (it may be newer), which then leaves the pod alone (no diff, not
	// vanished): the next relist compares them again.
	epoch uint64
	// reinspect is set while the pod's last status fetch failed: the next relist
	// fetches it again.
	reinspect bool
	// vanished is set when the record left its stripe (the pod vanished from a list):
	// one who kept it from before must look the pod up again.
	vanished bool
	// inline holds the view's entries of a pod with at most inlineEntries containers
	// and sandboxes.
	inline [inlineEntries]viewEntry
}

// inlineEntries is how many view entries a record holds in its own memory: enough for
// most pods' containers and sandbox (a larger array costs every pod memory).
const inlineEntries = 4

// stripeOf returns the stripe of the pod whose podHash (in the relister's cache) is h.
func (r *Relister) stripeOf(h uint64) *podStripe { return &r.stripes[h%podStripes] }

// stripe returns the stripe of pod uid.
func (r *Relister) stripe(uid types.UID) *podStripe { return r.stripeOf(r.cache.podHash(uid)) }

// record returns the record of uid, nil if none. r.mu must be held for writing, or for
// reading together with s.lock.
func (s *podStripe) record(uid types.UID) *podRecord { return s.records[uid] }

// newRecord records pod uid, with an empty view whose entries are inline. r.mu must be
// held for writing, or for reading together with s.lock.
func (s *podStripe) newRecord(uid types.UID) *podRecord {
	rec := &podRecord{uid: uid}
	rec.view.entries = rec.inline[:0]
	if s.records == nil {
		s.records = make(map[types.UID]*podRecord)
	}
	s.records[uid] = rec
	return rec
}

// recordCount returns how many records the relister has. r.mu must be held for writing.
func (r *Relister) recordCount() int {
	n := 0
	for i := range r.stripes {
		n += len(r.stripes[i].records)
	}
	return n
}

// setView replaces rec's view with the view of cur, a pod with rec's UID, built in the
// relist's scratch buffer. r.mu must be held.
func (r *Relister) setView(rec *podRecord, cur *Pod) {
	rec.view, r.scratch = rec.view.rebuild(cur, r.scratch)
}

// New validates cfg and returns a relister. It starts nothing: call Run, or Relist. A nil
// Runtime or Cache, an interface field holding a nil pointer or the like, or a negative
// value is an error wrapping ErrInvalidConfig.
func New(cfg Config) (*Relister, error) {
	var errs []error
	if cfg.Runtime == nil {
		errs = append(errs, errors.New("Runtime is nil"))
	}
	if cfg.Cache == nil {
		errs = append(errs, errors.New("Cache is nil"))
	}
	for _, bad := range validate.TypedNils(
		validate.Field{Name: "Runtime", Value: cfg.Runtime},
		validate.Field{Name: "Clock", Value: cfg.Clock},
	) {
		errs = append(errs, errors.New(bad))
	}
	if cfg.RelistPeriod < 0 {
		errs = append(errs, fmt.Errorf("RelistPeriod %v is negative", cfg.RelistPeriod))
	}
	if cfg.RelistThreshold < 0 {
		errs = append(errs, fmt.Errorf("RelistThreshold %v is negative", cfg.RelistThreshold))
	}
	if cfg.EventChannelCapacity < 0 {
		errs = append(errs, fmt.Errorf("EventChannelCapacity %d is negative", cfg.EventChannelCapacity))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	r := &Relister{
		runtime:        cfg.Runtime,
		cache:          cfg.Cache,
		clock:          cfg.Clock,
		period:         cfg.RelistPeriod,
		threshold:      cfg.RelistThreshold,
		deliverChanged: cfg.DeliverContainerChanged,
		log:            cfg.Logger,
		hooks:          cfg.Hooks,
		refreshSet:     make(map[types.UID]struct{}),
		wake:           make(chan struct{}, 1),
	}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	if r.period == 0 {
		r.period = DefaultRelistPeriod
	}
	if r.threshold == 0 {
		r.threshold = DefaultRelistThreshold
	}
	capacity := cfg.EventChannelCapacity
	if capacity == 0 {
		capacity = DefaultEventChannelCapacity
	}
	r.events = make(chan *PodLifecycleEvent, capacity)
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	return r, nil
}

// Events returns the channel of lifecycle events. It is never closed; a consumer stops
// reading when its own context ends.
func (r *Relister) Events() <-chan *PodLifecycleEvent { return r.events }

// DroppedEvents returns how many events were dropped because the channel was full. The
// drops of a relist in progress are counted when it ends; those of a refresh or push at once.
func (r *Relister) DroppedEvents() uint64 {
	n := r.dropped.Load()
	for i := range r.stripes {
		n += r.stripes[i].dropped.Load()
	}
	return n
}

// Healthy reports whether the last successful relist started no longer than
// RelistThreshold ago. It is false, with an error wrapping ErrNotHealthy, before the first
// successful relist and once a relist is overdue (a runtime that hangs or keeps failing).
// It never blocks on a relist in progress.
func (r *Relister) Healthy() (bool, error) {
	r.healthMu.Lock()
	last := r.relistTime
	r.healthMu.Unlock()
	if last.IsZero() {
		return false, fmt.Errorf("%w: no successful relist yet", ErrNotHealthy)
	}
	if elapsed := r.clock.Since(last); elapsed > r.threshold {
		return false, fmt.Errorf("%w: last relist started %v ago; threshold is %v", ErrNotHealthy, elapsed, r.threshold)
	}
	return true, nil
}

// Relist lists the runtime once and handles every difference, synchronously: Run calls it
// every RelistPeriod; tests and benchmarks call it directly. It returns an error wrapping
// ErrListPods when the list failed (then nothing else happened), or the errors, each
// wrapping ErrPodStatus, of the pods whose status could not be fetched (their events wait
// for the next relist, which inspects them again); the relist itself completed. If ctx
// ends during the relist, it stops and returns ctx.Err(); the next relist picks up.
func (r *Relister) Relist(ctx context.Context) error {
	r.relistMu.Lock()
	start := r.clock.Now()
	r.healthMu.Lock()
	prev := r.relistTime
	r.healthMu.Unlock()
	err := r.relist(ctx, start)
	dropped := r.relistDrops
	r.relistDrops = 0
	r.dropped.Add(uint64(dropped))
	notes := r.notes
	r.notes = nil
	r.relistMu.Unlock()
	for _, n := range notes {
		r.log.Log(ctx, n.level, n.msg, n.args...)
	}
	r.reportDrops(ctx, "relist", dropped)
	if r.hooks.Relisted != nil {
		info := Relist{Start: start, Duration: r.clock.Since(start), Err: err}
		if !prev.IsZero() {
			info.Interval = start.Sub(prev)
		}
		r.healthMu.Lock()
		info.LastSeen = r.relistTime
		r.healthMu.Unlock()
		info.Healthy, info.HealthErr = r.Healthy()
		r.hooks.Relisted(info)
	}
	return err
}

// logNote is a log record kept until the locks are released.
type logNote struct {
	level slog.Level
	msg   string
	args  []any
}

// note keeps a log record of the running relist (r.relistMu held) for Relist to write
// after unlocking.
func (r *Relister) note(level slog.Level, msg string, args ...any) {
	r.notes = append(r.notes, logNote{level: level, msg: msg, args: args})
}

// reportDrops logs, once, the n events dropped during a relist, refresh or
// push, and reports them to the hook; outside the locks, as the logger's handler and the
// hook are the caller's code.
func (r *Relister) reportDrops(ctx context.Context, during string, n int) {
	if n == 0 {
		return
	}
	if r.log.Enabled(ctx, slog.LevelWarn) { // the arguments cost allocations
		r.log.WarnContext(ctx, "pleg: event channel full; events dropped", "during", during, "dropped", n, "droppedTotal", r.DroppedEvents())
	}
	if r.hooks.EventsDropped != nil {
		r.hooks.EventsDropped(n)
	}
}

// relistYield is how many listed pods a relist handles between two releases of r.mu.
const relistYield = 256

// prepare returns the status to cache for pod uid, observed at ts, in place of old (the
// zero entry if none): status itself, or a shallow copy when it lacks the pod's ID, its
// observation time or IPs worth keeping. The runtime's status is never modified. Like
// the kubelet, a status without IPs whose pod has no ready sandbox keeps the IPs of the
// status it replaces (unless that one came with an error), so an exited pod still
// reports its address.
func prepare(uid types.UID, status *PodStatus, ts time.Time, old cacheEntry) *PodStatus {
	if status == nil {
		return &PodStatus{ID: uid, TimeStamp: ts}
	}
	ips := status.IPs
	if len(ips) == 0 && old.err == nil && old.status != nil && !hasReadySandbox(status) {
		ips = old.status.IPs
	}
	if status.ID == uid && !status.TimeStamp.IsZero() && len(ips) == len(status.IPs) {
		return status
	}
	cp := *status
	cp.ID = uid
	cp.IPs = ips
	if cp.TimeStamp.IsZero() {
		cp.TimeStamp = ts
	}
	return &cp
}

func hasReadySandbox(s *PodStatus) bool {
	for _, sb := range s.SandboxStatuses {
		if sb != nil && sb.State == SandboxReady {
			return true
		}
	}
	return false
}

// emit sends the events of changes for pod uid, ContainerChanged only if configured, and
// returns how many it dropped because the channel was full. Their Data comes boxed from
// the change or from view, the pod's view that has the new IDs.
func (r *Relister) emit(uid types.UID, changes []change, view *podView) (dropped int) {
	for _, c := range changes {
		ts, k := transition(c.old, c.new)
		for _, t := range ts[:k] {
			if !r.delivers(t) {
				continue
			}
			if len(r.events) == cap(r.events) { // send would drop it: no need to box the ID
				dropped++
				continue
			}
			data := c.data
			if data == nil {
				data = view.dataOf(c.id)
			}
			if !r.send(uid, t, data) {
				dropped++
			}
		}
	}
	return dropped
}

// eventChunkSize is how many events one allocation provides.
const eventChunkSize = 32

// eventChunk is one allocation of events, handed out in order.
type eventChunk struct {
	// taken counts the events handed out (it goes past eventChunkSize once all are).
	taken  atomic.Int32
	events [eventChunkSize]PodLifecycleEvent
}

// newEvent returns a zero event carved from a chunk, so events cost one allocation per
// eventChunkSize. Safe for concurrent use.
func (r *Relister) newEvent() *PodLifecycleEvent {
	for {
		c := r.chunk.Load()
		if c != nil {
			if i := c.taken.Add(1) - 1; i < eventChunkSize {
				return &c.events[i]
			}
		}
		fresh := new(eventChunk)
		fresh.taken.Store(1)
		if r.chunk.CompareAndSwap(c, fresh) {
			return &fresh.events[0]
		}
	}
}

func (r *Relister) delivers(t EventType) bool {
	return t != ContainerChanged || r.deliverChanged
}

// send puts the event on the channel and reports whether it did: it drops it when the
// channel is full (then the event is not even made: the pod workers of a busy node may
// leave the channel full for long). The caller counts the drop.
func (r *Relister) send(uid types.UID, t EventType, data any) bool {
	if len(r.events) == cap(r.events) {
		return false
	}
	e := r.newEvent()
	*e = PodLifecycleEvent{ID: uid, Type: t, Data: data}
	select {
	case r.events <- e:
		return true
	default:
		return false
	}
}
