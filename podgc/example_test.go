package podgc_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/podgc"
)

func pod(name, node string, ph v1.PodPhase, created time.Time) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1.PodSpec{NodeName: node},
		Status:     v1.PodStatus{Phase: ph},
	}
}

// Decide on one snapshot: two finished pods over a threshold of one, a pod on a node that
// has been gone for longer than the quarantine, and a pod deleted before it was scheduled.
func ExampleDecide() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	deleted := metav1.NewTime(now)
	unscheduled := pod("never-scheduled", "", v1.PodPending, now)
	unscheduled.DeletionTimestamp = &deleted

	plan := podgc.Decide(podgc.Input{
		Pods: []*v1.Pod{
			pod("job-1", "node-a", v1.PodSucceeded, now.Add(-2*time.Hour)),
			pod("job-2", "node-a", v1.PodSucceeded, now.Add(-time.Hour)),
			pod("web", "node-gone", v1.PodRunning, now),
			unscheduled,
		},
		Nodes:                  []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}},
		GoneNodes:              []string{"node-gone"},
		TerminatedPodThreshold: 1,
		Now:                    now,
	})
	for _, d := range plan.Deletions {
		marked := "as it is"
		if d.Status != nil {
			marked = "after marking it " + string(d.Status.Phase)
		}
		fmt.Printf("%s: delete %s %s\n", d.Reason, d.Pod.Name, marked)
	}
	// Output:
	// terminated: delete job-1 as it is
	// orphaned: delete web after marking it Failed
	// unscheduled: delete never-scheduled after marking it Failed
}

// A Quarantine hands out a missing node only once it has been missing for the period.
func ExampleQuarantine() {
	q, _ := podgc.NewQuarantine(40 * time.Second)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, s := range []int{0, 20, 40} {
		expired := q.Observe([]string{"node-gone"}, start.Add(time.Duration(s)*time.Second))
		fmt.Printf("t=%ds expired=%v\n", s, expired)
	}
	// Output:
	// t=0s expired=[]
	// t=20s expired=[]
	// t=40s expired=[node-gone]
}

// A Runner over in-memory functions; RunOnce runs one cycle (Run would repeat it every
// CheckPeriod until its context ends).
func ExampleRunner_RunOnce() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	deleted := metav1.NewTime(now)
	p := pod("stuck", "", v1.PodPending, now)
	p.DeletionTimestamp = &deleted

	r, err := podgc.New(podgc.Config{
		Lister: podgc.ListerFuncs{
			ListPodsFunc:  func(context.Context) ([]*v1.Pod, error) { return []*v1.Pod{p}, nil },
			ListNodesFunc: func(context.Context) ([]*v1.Node, error) { return nil, nil },
		},
		Writer: podgc.PodWriterFuncs{
			PatchPodStatusFunc: func(_ context.Context, ns, name string, patch []byte) error {
				fmt.Printf("patch %s/%s %s\n", ns, name, patch)
				return nil
			},
			DeletePodFunc: func(_ context.Context, ns, name string, opts metav1.DeleteOptions) error {
				fmt.Printf("delete %s/%s grace=%d uid=%s\n", ns, name, *opts.GracePeriodSeconds, *opts.Preconditions.UID)
				return nil
			},
		},
		Clock: testingclock.NewFakeClock(now),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := r.RunOnce(context.Background())
	fmt.Println("deleted:", len(rep.Deleted), "err:", err)
	// Output:
	// patch default/stuck {"metadata":{"uid":"uid-stuck"},"status":{"phase":"Failed"}}
	// delete default/stuck grace=0 uid=uid-stuck
	// deleted: 1 err: <nil>
}
