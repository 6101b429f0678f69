package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/internal/validate"
)

// MuxConfig configures a Mux.
type MuxConfig struct {
	// Sources are the sources that must each have sent a Set before SeenAllSources
	// reports true (the kubelet's "all sources ready"). Names must be non-empty and
	// distinct. Other sources may send updates too (they just are not waited for),
	// unless OnlySources is set.
	Sources []string
	// OnlySources makes an update from a source not in Sources fail with an error
	// wrapping ErrUnknownSource (it changes nothing): a misspelt source name is an error,
	// not a source nobody waits for.
	OnlySources bool
	// Accept, if set, is asked about every pod of a Set, Add, Update or Delete that has a
	// UID (before the store sees the update, outside the Mux's lock, from the goroutine
	// that sent it): a non-nil error drops the pod as the store drops a pod without a UID
	// (Drop.Err is the error, which should wrap a sentinel of the caller's). A node agent
	// refuses pods bound to another node here. It must be quick and safe for concurrent
	// use.
	Accept func(source string, pod *v1.Pod) error
	// UpdatesBufferLen is the capacity of the Updates channel. 0 means 50, the kubelet's
	// value; negative values are invalid.
	UpdatesBufferLen int
	// Clock stamps first-seen times. nil means the real clock.
	Clock clock.PassiveClock
	// TrustResourceVersions turns on the store's resourceVersion shortcut (and pointer
	// rule) for APISource, for a source that is the API server: see
	// StoreConfig.TrustResourceVersions. Without it (the zero MuxConfig) every pod is
	// compared field by field and classified exactly as the kubelet does.
	TrustResourceVersions bool
	// SharedPods makes the Mux deliver the store's own pods instead of deep copies: shared
	// with the store, with each other and with the inputs they came from, and read-only
	// for every receiver (see StoreConfig.SharedPods).
	SharedPods bool
	// Logger receives dropped pods and invalid updates. nil discards.
	Logger *slog.Logger
	// OnDrop, if set, is called for every dropped pod, outside the Mux's lock, from the
	// goroutine that sent the update.
	OnDrop func(Drop)
	// OnError, if set, is called with the error of every update that arrived through a
	// channel from Channel and failed (ErrUnknownOp, ErrInvalidOp, a context error), outside
	// the Mux's lock. Updates sent with Update return their error instead.
	OnError func(source string, err error)
}

// DefaultUpdatesBufferLen is the capacity of a Mux's output channel when
// MuxConfig.UpdatesBufferLen is 0.
const DefaultUpdatesBufferLen = 50

// Errors of the Mux.
var (
	// ErrInvalidConfig is wrapped by NewMux's validation errors.
	ErrInvalidConfig = errors.New("config: invalid MuxConfig")
	// ErrUnknownSource: an update from a source not in MuxConfig.Sources, with
	// MuxConfig.OnlySources set.
	ErrUnknownSource = errors.New("config: update from a source not in MuxConfig.Sources")
	// ErrClosed: an update sent after Close (or whose delivery Close ended).
	ErrClosed = errors.New("config: Mux closed")
	// ErrEmptyName: a pod without metadata.name, dropped by the Mux (Drop.Err) before the
	// store sees it: no pod worker, status or API call can address it.
	ErrEmptyName = errors.New("config: pod without name")
)

// Mux merges the updates of several pod sources into one stream of changes, like the
// kubelet's PodConfig. It is safe for concurrent use.
//
// Each merge's changes are delivered on Updates as PodUpdates, in the kubelet's order:
// Remove, Add, Update, Delete, Reconcile (empty categories are skipped), plus an empty Add
// on the first Set of a source that added, updated and deleted nothing, as the ready
// signal the kubelet sends. Merges are delivered whole and in the order they were merged,
// across all sources.
type Mux struct {
	updates chan PodUpdate
	logger  *slog.Logger
	onDrop  func(Drop)
	onError func(string, error)
	accept  func(string, *v1.Pod) error
	// known holds the names of Sources when OnlySources is set (nil otherwise); it is
	// never written after NewMux.
	known map[string]bool
	// closed is closed by Close.
	closed    chan struct{}
	closeOnce sync.Once

	// turn is a lock that can be given up when a context ends: held (one token inside)
	// from the start of a merge until its changes are delivered. It guards store.
	turn  chan struct{}
	store *Store

	// mu guards the fields below; it is never held while blocking.
	mu       sync.Mutex
	expected []string
	ready    map[string]chan struct{} // closed once the source's first Set is merged
	// delivered holds the sources whose first Set's changes were all delivered on
	// Updates.
	delivered map[string]bool
	// allDelivered is closed once every expected source is in delivered.
	allDelivered chan struct{}
	channels     map[string]chan PodUpdate
	drops        uint64
}

// NewMux returns a Mux, or an error wrapping ErrInvalidConfig (a negative buffer, an empty
// or repeated source, a Clock holding a nil pointer).
func NewMux(cfg MuxConfig) (*Mux, error) {
	if cfg.UpdatesBufferLen < 0 {
		return nil, fmt.Errorf("%w: UpdatesBufferLen %d is negative", ErrInvalidConfig, cfg.UpdatesBufferLen)
	}
	if bad := validate.TypedNils(validate.Field{Name: "Clock", Value: cfg.Clock}); len(bad) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalidConfig, bad[0])
	}
	if cfg.UpdatesBufferLen == 0 {
		cfg.UpdatesBufferLen = DefaultUpdatesBufferLen
	}
	m := &Mux{
		updates:  make(chan PodUpdate, cfg.UpdatesBufferLen),
		logger:   cfg.Logger,
		onDrop:   cfg.OnDrop,
		onError:  cfg.OnError,
		accept:   cfg.Accept,
		closed:   make(chan struct{}),
		turn:     make(chan struct{}, 1),
		store:    NewStoreWithConfig(StoreConfig{Clock: cfg.Clock, TrustResourceVersions: cfg.TrustResourceVersions, SharedPods: cfg.SharedPods}),
		ready:    map[string]chan struct{}{},
		channels: map[string]chan PodUpdate{},
	}
	if m.logger == nil {
		m.logger = slog.New(slog.DiscardHandler)
	}
	for _, s := range cfg.Sources {
		if s == "" {
			return nil, fmt.Errorf("%w: empty source name", ErrInvalidConfig)
		}
		if _, dup := m.ready[s]; dup {
			return nil, fmt.Errorf("%w: source %q listed twice", ErrInvalidConfig, s)
		}
		m.ready[s] = make(chan struct{})
		m.expected = append(m.expected, s)
	}
	if cfg.OnlySources {
		m.known = make(map[string]bool, len(cfg.Sources))
		for _, s := range cfg.Sources {
			m.known[s] = true
		}
	}
	return m, nil
}

// Close makes every later Update fail with ErrClosed, and ends the waits of the Updates
// under way (for their turn, or for room on Updates) with it: the consumer is gone. The
// changes an interrupted Update merged stay merged. Updates is not closed. Close may be
// called more than once.
func (m *Mux) Close() { m.closeOnce.Do(func() { close(m.closed) }) }

// Updates returns the stream of changes. Reading it is the consumer's only duty: a full
// channel blocks every source.
func (m *Mux) Updates() <-chan PodUpdate { return m.updates }

// Update merges u and delivers its changes on Updates before it returns. It returns an
// error wrapping ErrUnknownOp, ErrInvalidOp or ErrEmptySource for an invalid update (which
// changes nothing), or ctx's error if ctx ends first. If ctx ends during delivery, the
// changes not yet delivered are lost to the consumer (the store has merged them); the
// error says how many updates were undelivered. After Close, and when Close ends its wait,
// it returns an error wrapping ErrClosed; with MuxConfig.OnlySources, an update from a
// source not in Sources returns an error wrapping ErrUnknownSource. Dropped pods (the
// store's drops, pods without a name: ErrEmptyName, and pods MuxConfig.Accept refuses) are
// logged, counted and passed to OnDrop; they do not make Update fail.
func (m *Mux) Update(ctx context.Context, u PodUpdate) error {
	if ctx.Err() != nil {
		return fmt.Errorf("config: update from source %q not merged: %w", u.Source, context.Cause(ctx))
	}
	select {
	case <-m.closed:
		return fmt.Errorf("%w: update from source %q not merged", ErrClosed, u.Source)
	default:
	}
	if m.known != nil && u.Source != "" && !m.known[u.Source] {
		return fmt.Errorf("%w: %q (sources: %q)", ErrUnknownSource, u.Source, m.expected)
	}
	u, accepted, refused := m.acceptPods(u)
	select {
	case m.turn <- struct{}{}: // no merge under way: taken without a wait (and a select)
	default:
		select {
		case m.turn <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("config: update from source %q not merged: %w", u.Source, context.Cause(ctx))
		case <-m.closed:
			return fmt.Errorf("%w: update from source %q not merged", ErrClosed, u.Source)
		}
	}
	firstSet := u.Op == Set && !m.store.SeenSource(u.Source)
	c, drops, err := m.store.Apply(u)
	if err != nil {
		<-m.turn
		return err
	}
	if refused != nil {
		drops = mergeDrops(refused, drops, accepted)
	}
	if firstSet {
		m.markReady(u.Source)
	}
	var buf [maxStream]PodUpdate // on the stack: out does not outlive the call
	out := stream(buf[:0], u.Source, c, firstSet)
	sent, closed := 0, false
deliver:
	for _, pu := range out {
		select {
		case m.updates <- pu: // room in the buffer: sent without a wait (and a select)
			sent++
			continue
		default:
		}
		select {
		case m.updates <- pu:
			sent++
		case <-ctx.Done():
			break deliver
		case <-m.closed:
			closed = true
			break deliver
		}
	}
	if firstSet && sent == len(out) {
		m.markDelivered(u.Source)
	}
	<-m.turn
	m.reportDrops(drops)
	if sent < len(out) {
		if closed {
			return fmt.Errorf("%w: %d of %d updates from source %q undelivered", ErrClosed, len(out)-sent, len(out), u.Source)
		}
		return fmt.Errorf("config: %d of %d updates from source %q undelivered: %w", len(out)-sent, len(out), u.Source, context.Cause(ctx))
	}
	return nil
}

// acceptPods returns u without its pods that have a UID and no name (ErrEmptyName) or that
// MuxConfig.Accept refuses, and the Drops of those pods. accepted maps the returned
// update's pod indexes to u's (nil, and u returned as it is, when nothing is dropped).
// Nil pods and pods without a UID are left to the store, which drops them.
func (m *Mux) acceptPods(u PodUpdate) (out PodUpdate, accepted []int, refused []Drop) {
	switch u.Op {
	case Set, Add, Update, Delete:
	default:
		return u, nil, nil
	}
	for i, p := range u.Pods {
		if p == nil || p.UID == "" {
			if accepted != nil {
				accepted = append(accepted, i)
				out.Pods = append(out.Pods, p)
			}
			continue
		}
		err := error(nil)
		if p.Name == "" {
			err = fmt.Errorf("%w: uid %s in namespace %q", ErrEmptyName, p.UID, p.Namespace)
		} else if m.accept != nil {
			err = m.accept(u.Source, p)
		}
		if err == nil {
			if accepted != nil {
				accepted = append(accepted, i)
				out.Pods = append(out.Pods, p)
			}
			continue
		}
		if accepted == nil {
			// The first refusal: the pods before it are all accepted.
			out = u
			out.Pods = make([]*v1.Pod, i, len(u.Pods)-1)
			copy(out.Pods, u.Pods[:i])
			accepted = make([]int, i, len(u.Pods)-1)
			for j := range i {
				accepted[j] = j
			}
		}
		refused = append(refused, Drop{Source: u.Source, Index: i, Pod: p, Err: err})
	}
	if accepted == nil {
		return u, nil, nil
	}
	return out, accepted, refused
}

// mergeDrops returns refused and the store's drops (whose indexes are accepted's: turned
// into the input's), in input order.
func mergeDrops(refused, drops []Drop, accepted []int) []Drop {
	all := make([]Drop, 0, len(refused)+len(drops))
	all = append(all, refused...)
	for _, d := range drops {
		if d.Index >= 0 && d.Index < len(accepted) {
			d.Index = accepted[d.Index]
		}
		all = append(all, d)
	}
	slices.SortStableFunc(all, func(a, b Drop) int { return a.Index - b.Index })
	return all
}

// maxStream is the most updates stream makes of one merge: one per op (the first Set's
// empty Add comes only when the merge has no Add).
const maxStream = 5

// stream appends one merge's changes to out, ordered the kubelet's way, and returns it.
func stream(out []PodUpdate, source string, c Changes, firstSet bool) []PodUpdate {
	add := func(op Op, pods []*v1.Pod) {
		if len(pods) > 0 {
			out = append(out, PodUpdate{Pods: pods, Op: op, Source: source})
		}
	}
	add(Remove, c.Removes)
	add(Add, c.Adds)
	add(Update, c.Updates)
	add(Delete, c.Deletes)
	if firstSet && len(c.Adds) == 0 && len(c.Updates) == 0 && len(c.Deletes) == 0 {
		out = append(out, PodUpdate{Op: Add, Source: source})
	}
	add(Reconcile, c.Reconciles)
	return out
}

func (m *Mux) markReady(source string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := m.readyChanLocked(source)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

func (m *Mux) markDelivered(source string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.delivered == nil {
		m.delivered = map[string]bool{}
	}
	m.delivered[source] = true
	select {
	case <-m.allDeliveredLocked():
		return
	default:
	}
	for _, s := range m.expected {
		if !m.delivered[s] {
			return
		}
	}
	close(m.allDeliveredLocked())
}

func (m *Mux) allDeliveredLocked() chan struct{} {
	if m.allDelivered == nil {
		m.allDelivered = make(chan struct{})
	}
	return m.allDelivered
}

// AllSourcesDelivered returns a channel that is closed once every source of
// MuxConfig.Sources has had the changes of its first Set delivered on Updates (see
// SourcesDelivered): a consumer selects on it next to Updates, then drains Updates
// without blocking. With no Sources it is closed at once.
func (m *Mux) AllSourcesDelivered() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	ch := m.allDeliveredLocked()
	if len(m.expected) == 0 {
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
	return ch
}

// SourcesDelivered reports whether every one of sources (MuxConfig.Sources if none are
// given) has had the changes of its first Set delivered on Updates, not only merged (see
// SeenAllSources). A consumer that sees true and then drains Updates without blocking
// has received every pod of those first full lists: this is the safe test before work
// that treats pods missing from the sources as gone, such as a node's housekeeping.
func (m *Mux) SourcesDelivered(sources ...string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(sources) == 0 {
		sources = m.expected
	}
	for _, s := range sources {
		if !m.delivered[s] {
			return false
		}
	}
	return true
}

func (m *Mux) reportDrops(drops []Drop) {
	if len(drops) == 0 {
		return
	}
	m.mu.Lock()
	m.drops += uint64(len(drops))
	m.mu.Unlock()
	for _, d := range drops {
		m.logger.Warn("pod dropped", "source", d.Source, "index", d.Index, "err", d.Err)
		if m.onDrop != nil {
			m.onDrop(d)
		}
	}
}

// Dropped returns how many pods have been dropped so far (see Drop).
func (m *Mux) Dropped() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.drops
}

// SourceReady returns a channel that is closed once a Set of source has been merged.
func (m *Mux) SourceReady(source string) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.readyChanLocked(source)
}

// readyChanLocked returns the source's ready channel, made on first use. m.mu must be held.
func (m *Mux) readyChanLocked(source string) chan struct{} {
	ch, ok := m.ready[source]
	if !ok {
		ch = make(chan struct{})
		m.ready[source] = ch
	}
	return ch
}

// SeenAllSources reports whether every one of sources (MuxConfig.Sources if none are
// given) has had a Set merged, like the kubelet's PodConfig.SeenAllSources.
func (m *Mux) SeenAllSources(sources ...string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(sources) == 0 {
		sources = m.expected
	}
	for _, s := range sources {
		ch, ok := m.ready[s]
		if !ok {
			return false
		}
		select {
		case <-ch:
		default:
			return false
		}
	}
	return true
}

// Channel returns the channel through which source sends updates, creating it and the
// goroutine that serves it on the first call for source. The goroutine merges each update
// with Update (the PodUpdate's Source is overwritten with source) and stops when ctx ends;
// until then, later calls for the same source return the same channel whatever their ctx,
// and after it a call starts a new channel and goroutine. Errors go to MuxConfig.OnError
// and the logger (after Close, every update sent fails with ErrClosed). The channel is unbuffered: a send blocks until the previous update of
// the source has been delivered, so a sender should select on its own context too.
func (m *Mux) Channel(ctx context.Context, source string) chan<- PodUpdate {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ch, ok := m.channels[source]; ok {
		return ch
	}
	ch := make(chan PodUpdate)
	m.channels[source] = ch
	go m.serve(ctx, source, ch)
	return ch
}

// serve merges the updates of one source's channel until ctx ends.
func (m *Mux) serve(ctx context.Context, source string, ch chan PodUpdate) {
	defer func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.channels[source] == ch {
			delete(m.channels, source)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-ch:
			u.Source = source
			if err := m.Update(ctx, u); err != nil {
				m.logger.Warn("pod update failed", "source", source, "err", err)
				if m.onError != nil {
					m.onError(source, err)
				}
			}
		}
	}
}
