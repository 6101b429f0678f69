package kube

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DefaultEventQueue is EventWriter's default queue length.
const DefaultEventQueue = 1000

// EventWriter writes pod events (v1.Event, as the kubelet's recorder does: Pulled, Started,
// Killing, BackOff, NetworkNotReady, ...) to the API server from one goroutine, so that the
// code that reports them never waits for the API. Events beyond the queue are dropped and
// counted; a failed write is counted and not retried.
type EventWriter struct {
	client    kubernetes.Interface
	component string
	host      string
	queue     chan *v1.Event
	dropped   atomic.Int64
	failed    atomic.Int64
}

// NewEventWriter returns a writer of events from component (e.g. "kubelet") on host
// (the node's name). queue <= 0 means DefaultEventQueue.
func NewEventWriter(client kubernetes.Interface, component, host string, queue int) (*EventWriter, error) {
	if client == nil {
		return nil, errors.New("kube: NewEventWriter: nil client")
	}
	if queue <= 0 {
		queue = DefaultEventQueue
	}
	return &EventWriter{client: client, component: component, host: host, queue: make(chan *v1.Event, queue)}, nil
}

// Event queues an event about the pod. It never blocks; it is safe for concurrent use
// and has the signature of cri.Config.Event.
func (w *EventWriter) Event(pod *v1.Pod, eventType, reason, message string) {
	if pod == nil {
		return
	}
	now := metav1.NewTime(time.Now())
	ev := &v1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pod.Name, now.UnixNano()), Namespace: pod.Namespace},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		Type: eventType, Reason: reason, Message: message,
		Source:         v1.EventSource{Component: w.component, Host: w.host},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: w.component, ReportingInstance: w.host,
	}
	select {
	case w.queue <- ev:
	default:
		w.dropped.Add(1)
	}
}

// Run writes the queued events until ctx ends.
func (w *EventWriter) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-w.queue:
			if _, err := w.client.CoreV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
				w.failed.Add(1)
			}
		}
	}
}

// Dropped and Failed count the events dropped for a full queue and those the API refused.
func (w *EventWriter) Dropped() int64 { return w.dropped.Load() }
func (w *EventWriter) Failed() int64  { return w.failed.Load() }
