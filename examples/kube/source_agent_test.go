package kube_test

import (
	"context"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/kube"
	"github.com/podlife/podlife/pleg/plegtest"
)

// TestSourceFeedsAnAgent wires a Source and a Patcher over client-go's fake clientset
// into an agent: the pod listed is run and its Running status is written back, and the
// agent stops with its context.
func TestSourceFeedsAnAgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset(&v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-web"},
			Spec:       v1.PodSpec{NodeName: "node1", Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
		})
		source, err := kube.NewSource(kube.SourceConfig{Client: client})
		if err != nil {
			t.Fatal(err)
		}
		patcher, err := kube.NewPatcher(client)
		if err != nil {
			t.Fatal(err)
		}
		a, err := agent.New(agent.Config{NodeName: "node1", Patcher: patcher, Source: source, Runtime: plegtest.NewRuntime(nil)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*v1.Pod); ok && ev.Type == watch.Modified && p.Status.Phase == v1.PodRunning {
				break
			}
		}
		w.Stop()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent.Run = %v, want nil", err)
		}
	})
}
