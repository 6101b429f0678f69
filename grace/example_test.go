package grace_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/grace"
)

func Example() {
	thirty, zero, five := int64(30), int64(0), int64(5)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{DeletionGracePeriodSeconds: &thirty},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: &thirty},
	}

	// A graceful delete: the deletion grace is in force.
	g, shortened := grace.Effective(0, pod, nil)
	fmt.Println(g, shortened)

	// An eviction asks for 5 s: shortened.
	g, shortened = grace.Effective(g, pod, &five)
	fmt.Println(g, shortened)

	// A force delete (deletion grace 0): 1 s, never 0.
	pod.DeletionGracePeriodSeconds = &zero
	g, shortened = grace.Effective(g, pod, nil)
	fmt.Println(g, shortened)

	// Output:
	// 30 false
	// 5 true
	// 1 true
}
