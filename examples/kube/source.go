package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// Defaults of SourceConfig.
const (
	DefaultRetryBackoffInitial = 200 * time.Millisecond
	DefaultRetryBackoffMax     = 10 * time.Second
	DefaultWatchTimeoutSeconds = 300
)

// SourceConfig configures a Source. Zero values take their defaults.
type SourceConfig struct {
	// Client is the API client. Required.
	Client kubernetes.Interface
	// Clock times the retry backoff; nil means the real clock.
	Clock clock.Clock
	// RetryBackoffInitial is the wait after the first failed list or watch; it doubles on
	// each further failure up to RetryBackoffMax, and resets once a watch delivers.
	RetryBackoffInitial time.Duration
	// RetryBackoffMax caps the wait between retries.
	RetryBackoffMax time.Duration
	// WatchTimeoutSeconds asks the server to end each watch after this long (the Source
	// then resumes from the last resourceVersion), as client-go's reflector does.
	WatchTimeoutSeconds int64
	// Logger receives retries and re-lists; nil discards them.
	Logger *slog.Logger
}

// Stats counts what a Source did, for tests and metrics.
type Stats struct {
	// Lists counts successful lists (the initial one and every re-list after 410 Gone).
	Lists uint64
	// Watches counts watches opened.
	Watches uint64
	// Failures counts failed list and watch calls and watch error events (each retried).
	Failures uint64
	// Events counts events sent on the channel.
	Events uint64
}

// Source lists and watches the pods bound to a node. Create it with NewSource; it
// satisfies the node agent's Source interface (examples/agent.Source).
type Source struct {
	cfg    SourceConfig
	clock  clock.Clock
	logger *slog.Logger

	lists, watches, failures, events atomic.Uint64
}

// NewSource validates cfg and returns a Source. It starts nothing.
func NewSource(cfg SourceConfig) (*Source, error) {
	if cfg.Client == nil {
		return nil, ErrNilClient
	}
	if cfg.RetryBackoffInitial < 0 || cfg.RetryBackoffMax < 0 || cfg.WatchTimeoutSeconds < 0 {
		return nil, fmt.Errorf("%w: negative backoff or watch timeout", ErrInvalidArgument)
	}
	if cfg.RetryBackoffInitial == 0 {
		cfg.RetryBackoffInitial = DefaultRetryBackoffInitial
	}
	if cfg.RetryBackoffMax == 0 {
		cfg.RetryBackoffMax = DefaultRetryBackoffMax
	}
	if cfg.RetryBackoffMax < cfg.RetryBackoffInitial {
		cfg.RetryBackoffMax = cfg.RetryBackoffInitial
	}
	if cfg.WatchTimeoutSeconds == 0 {
		cfg.WatchTimeoutSeconds = DefaultWatchTimeoutSeconds
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Source{cfg: cfg, clock: cfg.Clock, logger: logger}, nil
}

// Stats returns the Source's counters.
func (s *Source) Stats() Stats {
	return Stats{Lists: s.lists.Load(), Watches: s.watches.Load(), Failures: s.failures.Load(), Events: s.events.Load()}
}

// Watch lists the pods bound to nodeName and returns them with a channel of every later
// change, in order. It blocks until the first list succeeds (retrying failures) or ctx
// ends; then it returns no pods and a closed channel. One goroutine serves the channel until
// ctx ends and closes it. An empty nodeName is refused by returning a closed channel and
// counting a failure.
func (s *Source) Watch(ctx context.Context, nodeName string) ([]*v1.Pod, <-chan statusmgrtest.Event) {
	out := make(chan statusmgrtest.Event)
	if nodeName == "" {
		s.failures.Add(1)
		s.logger.Error("kube: Source.Watch: empty node name")
		close(out)
		return nil, out
	}
	w := &watcher{s: s, node: nodeName, selector: fields.OneTermEqualSelector("spec.nodeName", nodeName).String(),
		known: map[types.UID]*v1.Pod{}, out: out, backoff: s.cfg.RetryBackoffInitial}
	list, ok := w.list(ctx)
	if !ok {
		close(out)
		return nil, out
	}
	initial := make([]*v1.Pod, 0, len(list.Items))
	for i := range list.Items {
		p := &list.Items[i]
		w.known[p.UID] = p
		initial = append(initial, p)
	}
	w.rv = list.ResourceVersion
	go w.serve(ctx)
	return initial, out
}

// watcher is the state of one Watch: the pods sent so far by UID and the resourceVersion to
// resume from.
type watcher struct {
	s        *Source
	node     string
	selector string
	known    map[types.UID]*v1.Pod
	rv       string
	out      chan statusmgrtest.Event
	backoff  time.Duration
}

// list lists the node's pods, retrying failures, until it succeeds or ctx ends.
func (w *watcher) list(ctx context.Context) (*v1.PodList, bool) {
	for {
		list, err := w.s.cfg.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: w.selector})
		if err == nil {
			w.s.lists.Add(1)
			return list, true
		}
		if !w.failed(ctx, "list", err) {
			return nil, false
		}
	}
}

// failed counts and logs a failed call and waits for the backoff; it reports false if ctx
// ended.
func (w *watcher) failed(ctx context.Context, what string, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	w.s.failures.Add(1)
	w.s.logger.Warn("kube: pod "+what+" failed; retrying", "node", w.node, "err", err, "backoff", w.backoff)
	return w.wait(ctx)
}

// wait waits for the backoff, which then doubles up to its cap; it reports false if ctx
// ended.
func (w *watcher) wait(ctx context.Context) bool {
	t := w.s.clock.NewTimer(w.backoff)
	defer t.Stop()
	w.backoff = min(2*w.backoff, w.s.cfg.RetryBackoffMax)
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// serve watches from w.rv until ctx ends, resuming after every watch end and re-listing
// after 410 Gone.
func (w *watcher) serve(ctx context.Context) {
	defer close(w.out)
	for ctx.Err() == nil {
		timeout := w.s.cfg.WatchTimeoutSeconds
		wi, err := w.s.cfg.Client.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{
			FieldSelector: w.selector, ResourceVersion: w.rv, AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
		switch {
		case err == nil:
			w.s.watches.Add(1)
			var delivered bool
			delivered, err = w.consume(ctx, wi)
			wi.Stop()
			if err == nil {
				// The server ended the watch: resume from w.rv, at once if it delivered
				// something, after the backoff if not (a server ending every watch at once
				// must not make this a busy loop).
				if !delivered && !w.wait(ctx) {
					return
				}
				continue
			}
		case ctx.Err() != nil:
			return
		}
		if isGone(err) {
			w.s.logger.Info("kube: watch expired; listing again", "node", w.node, "rv", w.rv)
			if !w.relist(ctx) {
				return
			}
			continue
		}
		if !w.failed(ctx, "watch", err) {
			return
		}
	}
}

// errWatchClosed is consume's answer when ctx ended.
var errWatchClosed = errors.New("kube: watch stopped")

// consume sends the watch's events until the server ends it (nil), an error event arrives
// (its error) or ctx ends (errWatchClosed). delivered reports whether any pod event or
// bookmark arrived.
func (w *watcher) consume(ctx context.Context, wi watch.Interface) (delivered bool, err error) {
	for {
		var ev watch.Event
		var ok bool
		select {
		case ev, ok = <-wi.ResultChan():
		case <-ctx.Done():
			return delivered, errWatchClosed
		}
		if !ok {
			return delivered, nil
		}
		switch ev.Type {
		case watch.Error:
			return delivered, apierrors.FromObject(ev.Object)
		case watch.Bookmark:
			if m, err := metaOf(ev.Object); err == nil {
				w.rv = m.GetResourceVersion()
				w.backoff, delivered = w.s.cfg.RetryBackoffInitial, true
			}
			continue
		}
		pod, isPod := ev.Object.(*v1.Pod)
		if !isPod || pod.UID == "" {
			w.s.failures.Add(1)
			w.s.logger.Error("kube: dropped a watch event that is not a pod with a UID", "type", ev.Type, "object", fmt.Sprintf("%T", ev.Object))
			continue
		}
		w.backoff, delivered = w.s.cfg.RetryBackoffInitial, true
		w.rv = pod.ResourceVersion
		var t statusmgrtest.EventType
		switch ev.Type {
		case watch.Added:
			t = statusmgrtest.Added
			w.known[pod.UID] = pod
		case watch.Modified:
			t = statusmgrtest.Modified
			w.known[pod.UID] = pod
		case watch.Deleted:
			t = statusmgrtest.Deleted
			delete(w.known, pod.UID)
		default:
			w.s.failures.Add(1)
			w.s.logger.Error("kube: dropped a watch event of unknown type", "type", ev.Type)
			continue
		}
		if !w.send(ctx, statusmgrtest.Event{Type: t, Pod: pod}) {
			return delivered, errWatchClosed
		}
	}
}

// relist lists again and sends the difference from what was sent: Deleted for pods gone,
// Added for new UIDs, Modified for pods whose resourceVersion changed.
func (w *watcher) relist(ctx context.Context) bool {
	w.backoff = w.s.cfg.RetryBackoffInitial
	list, ok := w.list(ctx)
	if !ok {
		return false
	}
	listed := make(map[types.UID]bool, len(list.Items))
	for i := range list.Items {
		listed[list.Items[i].UID] = true
	}
	// Removals first, so that a name taken over by a new UID is freed before the new pod
	// arrives, as the config store expects.
	for uid, old := range w.known {
		if listed[uid] {
			continue
		}
		delete(w.known, uid)
		if !w.send(ctx, statusmgrtest.Event{Type: statusmgrtest.Deleted, Pod: old}) {
			return false
		}
	}
	for i := range list.Items {
		p := &list.Items[i]
		old, had := w.known[p.UID]
		w.known[p.UID] = p
		var ev statusmgrtest.Event
		switch {
		case !had:
			ev = statusmgrtest.Event{Type: statusmgrtest.Added, Pod: p}
		case old.ResourceVersion != p.ResourceVersion:
			ev = statusmgrtest.Event{Type: statusmgrtest.Modified, Pod: p}
		default:
			continue
		}
		if !w.send(ctx, ev) {
			return false
		}
	}
	w.rv = list.ResourceVersion
	return true
}

func (w *watcher) send(ctx context.Context, ev statusmgrtest.Event) bool {
	select {
	case w.out <- ev:
		w.s.events.Add(1)
		return true
	case <-ctx.Done():
		return false
	}
}

// isGone reports whether err says the resourceVersion is too old (410 Gone / Expired).
func isGone(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

func metaOf(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%w: %T has no object metadata", ErrInvalidArgument, obj)
	}
	return m, nil
}
