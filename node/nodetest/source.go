package nodetest

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// Watcher yields the pods bound to a node: the pods bound to it now and a channel of
// every later change, in order, closed once ctx ends. statusmgrtest.FakeAPI satisfies it.
type Watcher interface {
	Watch(ctx context.Context, nodeName string) ([]*v1.Pod, <-chan statusmgrtest.Event)
}

// Updater is what a source feeds: (*node.Node).Update.
type Updater interface {
	Update(ctx context.Context, u config.PodUpdate) error
}

var _ Updater = (*node.Node)(nil)

// FeedAPI feeds the node's pods from w into n as the source node.SourceAPI until ctx ends
// or the watch closes: the initial pods as a config.Set, then each event as an
// incremental op (Added: Add, Modified: Update, Deleted: Remove), as a node agent feeds
// the API server's list and watch. It returns nil when ctx ends.
func FeedAPI(ctx context.Context, n Updater, w Watcher, nodeName string) error {
	initial, events := w.Watch(ctx, nodeName)
	if err := n.Update(ctx, config.PodUpdate{Op: config.Set, Source: node.SourceAPI, Pods: initial}); err != nil {
		return ignoreCanceled(ctx, err)
	}
	for ev := range events {
		if err := n.Update(ctx, WatchUpdate(ev)); err != nil {
			return ignoreCanceled(ctx, err)
		}
	}
	return nil
}

// WatchUpdate turns one watch event into an incremental config update of the API source.
func WatchUpdate(ev statusmgrtest.Event) config.PodUpdate {
	op := config.Update
	switch ev.Type {
	case statusmgrtest.Added:
		op = config.Add
	case statusmgrtest.Deleted:
		op = config.Remove
	}
	return config.PodUpdate{Op: op, Source: node.SourceAPI, Pods: []*v1.Pod{ev.Pod}}
}

func ignoreCanceled(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
