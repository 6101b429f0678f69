package apitest

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// Watch returns copies of the pods bound to nodeName now and a channel of every later event
// of pods bound to it, in order; the channel is closed once ctx ends. Events queue without
// bound, so the Server never waits for a slow watcher. One goroutine serves the channel
// until ctx ends.
func (s *Server) Watch(ctx context.Context, nodeName string) ([]*v1.Pod, <-chan Event) {
	w := &watcher{node: nodeName, wake: make(chan struct{}, 1)}
	out := make(chan Event)
	s.mu.Lock()
	var initial []*v1.Pod
	for _, p := range s.pods {
		if p.Spec.NodeName == nodeName {
			initial = append(initial, p.DeepCopy())
		}
	}
	w.since = s.rv // later changes only: the list holds the earlier ones
	s.watchers[w] = struct{}{}
	s.mu.Unlock()
	go func() {
		defer close(out)
		defer func() {
			s.mu.Lock()
			delete(s.watchers, w)
			s.mu.Unlock()
		}()
		for {
			ev, ok := w.pop()
			if !ok {
				select {
				case <-w.wake:
					continue
				case <-ctx.Done():
					return
				}
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return initial, out
}

// watcher is one Watch's queue of events.
type watcher struct {
	node string
	// since is the resourceVersion of the Watch's list: the watcher hears of later
	// changes only. Set before the watcher is registered, then read-only.
	since int64

	mu    sync.Mutex
	queue []Event
	// wake holds a signal when the queue may have grown.
	wake chan struct{}
}

// push queues ev.
func (w *watcher) push(ev Event) {
	w.mu.Lock()
	w.queue = append(w.queue, ev)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher) pop() (Event, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		return Event{}, false
	}
	ev := w.queue[0]
	w.queue[0] = Event{}
	w.queue = w.queue[1:]
	return ev, true
}
