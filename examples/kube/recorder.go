package kube

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/podlife/podlife/node"
)

// Recorder is a node.EventRecorder over client-go's record package, the kubelet's own
// event machinery: an EventBroadcaster writing to the API server (with its correlator:
// repeated events are aggregated into one whose count grows, and a burst is rate
// limited) and an EventRecorder with the source component and host of the kubelet
// (reportingController and reportingInstance too). Event never blocks: events beyond
// the broadcaster's queue (1,000) are dropped, and a failed write is retried a few times
// and then dropped, as the kubelet's. Pass it as node.Config.Recorder (agent.Config.Recorder)
// and its Event method as cri.Config.Event.
type Recorder struct {
	b    record.EventBroadcaster
	r    record.EventRecorder
	done chan struct{}
}

var _ node.EventRecorder = (*Recorder)(nil)

// NewRecorder starts a broadcaster that writes the events of component (the kubelet's is
// "kubelet") on host (the node's name) through client, until ctx ends; Done is closed
// once it has shut down.
func NewRecorder(ctx context.Context, client kubernetes.Interface, component, host string) (*Recorder, error) {
	if client == nil {
		return nil, errors.New("kube: NewRecorder: nil client")
	}
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	rec := &Recorder{b: b, r: b.NewRecorder(scheme.Scheme, v1.EventSource{Component: component, Host: host}),
		done: make(chan struct{})}
	go func() {
		defer close(rec.done)
		<-ctx.Done()
		b.Shutdown()
	}()
	return rec, nil
}

// Event records an event about the pod (nil: ignored). It never blocks.
func (r *Recorder) Event(pod *v1.Pod, eventType, reason, message string) {
	if pod == nil {
		return
	}
	r.r.Event(pod, eventType, reason, message)
}

// Done is closed once the recorder shut down after its context ended.
func (r *Recorder) Done() <-chan struct{} { return r.done }
