package kube

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
)

// TestRecorder: an event reaches the API with the kubelet's source and the pod as its
// involved object. (client-go's broadcaster runs goroutines of its own outside a synctest
// bubble, so the test waits on a watch of the fake clientset instead.)
func TestRecorder(t *testing.T) {
	if _, err := NewRecorder(t.Context(), nil, "kubelet", "node1"); err == nil {
		t.Error("nil client accepted")
	}
	client := fake.NewClientset()
	w, err := client.CoreV1().Events("ns").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	rec, err := NewRecorder(ctx, client, "kubelet", "node1")
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}}
	rec.Event(nil, v1.EventTypeNormal, "Started", "ignored")
	rec.Event(pod, v1.EventTypeWarning, "FailedSync", "error syncing pod: boom")
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	select {
	case ev := <-w.ResultChan():
		e, ok := ev.Object.(*v1.Event)
		if ev.Type != watch.Added || !ok {
			t.Fatalf("watch: %s %T", ev.Type, ev.Object)
		}
		if e.Reason != "FailedSync" || e.Type != v1.EventTypeWarning || e.InvolvedObject.UID != "u1" || e.InvolvedObject.Kind != "Pod" ||
			e.Source.Component != "kubelet" || e.Source.Host != "node1" || e.ReportingController != "kubelet" || e.ReportingInstance != "node1" {
			t.Errorf("event = %+v", e)
		}
	case <-timeout.C:
		t.Fatal("no event written")
	}
	cancel()
	<-rec.Done()
}
