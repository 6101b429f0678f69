package examples_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/grace"
)

// Example_terminationTimeline shows the grace period a pod worker gives a pod through a
// graceful delete, an eviction that shortens it, and a force delete.
func Example_terminationTimeline() {
	i64 := func(v int64) *int64 { return &v }
	pod := &v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: i64(30)}}
	steps := []struct {
		what     string
		deletion *int64
		override *int64
	}{
		{"kubectl delete", i64(30), nil},
		{"eviction, 10 s", i64(30), i64(10)},
		{"second delete, 60 s", i64(60), nil},
		{"force delete", i64(0), nil},
	}
	current := int64(0)
	for _, s := range steps {
		pod.ObjectMeta = metav1.ObjectMeta{DeletionGracePeriodSeconds: s.deletion}
		g, shortened := grace.Effective(current, pod, s.override)
		fmt.Printf("%-20s grace %2ds shortened=%t\n", s.what, g, shortened)
		current = g
	}
	// Output:
	// kubectl delete       grace 30s shortened=false
	// eviction, 10 s       grace 10s shortened=true
	// second delete, 60 s  grace 10s shortened=false
	// force delete         grace  1s shortened=true
}
