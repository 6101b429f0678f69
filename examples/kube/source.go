package kube

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/node"
)

// SourceConfig configures a Source.
type SourceConfig struct {
	// Client is the API client. Required.
	Client kubernetes.Interface
	// Clock times the Reflector's retry backoff and watch timeouts; nil means the real
	// clock.
	Clock clock.Clock
	// Logger receives the Reflector's logs (failed lists and watches, re-lists); nil
	// discards them.
	Logger *slog.Logger
}

// Source lists and watches the pods bound to a node with client-go's Reflector and sends
// them on as config.PodUpdates of the source "api" (node.SourceAPI). Create it with
// NewSource and run it with Run.
type Source struct {
	client kubernetes.Interface
	clock  clock.Clock
	logger *slog.Logger
}

// NewSource validates cfg and returns a Source. It starts nothing.
func NewSource(cfg SourceConfig) (*Source, error) {
	if cfg.Client == nil {
		return nil, ErrNilClient
	}
	s := &Source{client: cfg.Client, clock: cfg.Clock, logger: cfg.Logger}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Run lists and watches the pods bound to nodeName (fieldSelector spec.nodeName=<node>)
// and sends what it learns to out until ctx ends: a config.Set with every pod after each
// list (the first, and every re-list after a failed or expired watch), then a config.Add,
// Update or Remove for each watch event. Every update names the source node.SourceAPI.
// Run blocks until ctx ends and returns nil then (a list request in flight, cancelled with
// ctx, ends its goroutine when it returns); it returns an error at once for an empty
// nodeName or a nil out. A send to out waits for the receiver (or ctx), as a node's
// Channel(ctx, node.SourceAPI) expects.
func (s *Source) Run(ctx context.Context, nodeName string, out chan<- config.PodUpdate) error {
	if nodeName == "" {
		return fmt.Errorf("%w: Source.Run: empty node name", ErrInvalidArgument)
	}
	if out == nil {
		return fmt.Errorf("%w: Source.Run: nil channel", ErrInvalidArgument)
	}
	selector := fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
	pods := s.client.CoreV1().Pods(metav1.NamespaceAll)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			return pods.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			return pods.Watch(ctx, opts)
		},
	}
	logger := logr.FromSlogHandler(s.logger.With("node", nodeName).Handler())
	r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, s.client), &v1.Pod{},
		&updateStore{ctx: ctx, out: out}, cache.ReflectorOptions{Name: "pods of node " + nodeName, Logger: &logger, Clock: s.clock})
	r.RunWithContext(klog.NewContext(ctx, logger))
	return nil
}

// updateStore is the Reflector's store: instead of keeping the pods, it turns each call
// into a config.PodUpdate on out. config.Store, downstream, keeps them and derives what
// changed.
type updateStore struct {
	ctx context.Context
	out chan<- config.PodUpdate
}

var _ cache.ReflectorStore = (*updateStore)(nil)

// Add sends a watch's Added pod.
func (u *updateStore) Add(obj any) error { return u.sendOne(config.Add, obj) }

// Update sends a watch's Modified pod.
func (u *updateStore) Update(obj any) error { return u.sendOne(config.Update, obj) }

// Delete sends a watch's Deleted pod as a Remove: the object is gone from the server.
func (u *updateStore) Delete(obj any) error { return u.sendOne(config.Remove, obj) }

// Replace sends a list as a Set.
func (u *updateStore) Replace(list []any, _ string) error {
	pods := make([]*v1.Pod, 0, len(list))
	for _, obj := range list {
		p, err := asPod(obj)
		if err != nil {
			return err
		}
		pods = append(pods, p)
	}
	return u.send(config.PodUpdate{Op: config.Set, Source: node.SourceAPI, Pods: pods})
}

// Resync does nothing: the Reflector runs without a resync period.
func (u *updateStore) Resync() error { return nil }

func (u *updateStore) sendOne(op config.Op, obj any) error {
	p, err := asPod(obj)
	if err != nil {
		return err
	}
	return u.send(config.PodUpdate{Op: op, Source: node.SourceAPI, Pods: []*v1.Pod{p}})
}

// send waits until out takes upd or ctx ends.
func (u *updateStore) send(upd config.PodUpdate) error {
	select {
	case u.out <- upd:
		return nil
	case <-u.ctx.Done():
		return u.ctx.Err()
	}
}

// asPod returns obj as a pod; the Reflector hands the store only pods (its expected
// type), so anything else is a bug.
func asPod(obj any) (*v1.Pod, error) {
	p, ok := obj.(*v1.Pod)
	if !ok {
		return nil, fmt.Errorf("%w: the Reflector handed %T, not a pod", ErrInvalidArgument, obj)
	}
	return p, nil
}
