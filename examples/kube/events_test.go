package kube

import (
	"context"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestEventWriter(t *testing.T) {
	if _, err := NewEventWriter(nil, "kubelet", "node1", 0); err == nil {
		t.Error("nil client accepted")
	}
	// In a bubble, Wait returns once Run is blocked again: the queued event was written.
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		w, err := NewEventWriter(client, "kubelet", "node1", 1)
		if err != nil {
			t.Fatal(err)
		}
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"}}
		w.Event(pod, v1.EventTypeWarning, "NetworkNotReady", "no network")
		w.Event(pod, v1.EventTypeNormal, "Started", "dropped: the queue holds one")
		w.Event(nil, v1.EventTypeNormal, "Started", "ignored")
		if w.Dropped() != 1 {
			t.Errorf("dropped = %d, want 1", w.Dropped())
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { w.Run(ctx); close(done) }()
		synctest.Wait()
		evs, err := client.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs.Items) != 1 {
			t.Fatalf("%d events written, want 1", len(evs.Items))
		}
		ev := evs.Items[0]
		if ev.Reason != "NetworkNotReady" || ev.InvolvedObject.UID != "u1" || ev.Source.Host != "node1" || ev.Type != v1.EventTypeWarning || w.Failed() != 0 {
			t.Errorf("event = %+v (failed %d)", ev, w.Failed())
		}
		cancel()
		<-done
	})
}
