package podworker_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/podworker"
)

// The Machine is driven by hand: every decision comes back as a Ready.
func ExampleMachine() {
	m, _ := podworker.NewMachine(podworker.MachineConfig{})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", Name: "web", Namespace: "default"}}

	show := func(rd podworker.Ready) {
		for _, t := range rd.Transitions {
			fmt.Printf("%s: %s -> %s\n", t.UID, t.From, t.To)
		}
		for _, w := range rd.Start {
			fmt.Printf("start %s (grace %d)\n", w.WorkType, w.GracePeriodSeconds)
		}
	}
	rd, _ := m.UpdatePod(now, podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: pod}, podworker.RuntimeUnknown)
	show(rd)

	// The pod is deleted while SyncPod runs: the Machine asks to cancel it.
	deleted := pod.DeepCopy()
	ts, g := metav1.NewTime(now), int64(10)
	deleted.DeletionTimestamp, deleted.DeletionGracePeriodSeconds = &ts, &g
	rd, _ = m.UpdatePod(now, podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: deleted}, podworker.RuntimeUnknown)
	show(rd)
	fmt.Println("cancel:", rd.Cancel)

	rd, _ = m.Complete(now, "u1", podworker.Result{Err: context.Canceled}, 0)
	show(rd)
	rd, _ = m.Complete(now, "u1", podworker.Result{}, 0)
	show(rd)
	rd, _ = m.Complete(now, "u1", podworker.Result{}, 0)
	show(rd)
	_, rd = m.SyncKnownPods(now, nil)
	show(rd)
	// Output:
	// u1: none -> syncing
	// start sync (grace 0)
	// u1: syncing -> terminating
	// cancel: [u1]
	// start terminating (grace 10)
	// u1: terminating -> terminated
	// start terminated (grace 0)
	// u1: terminated -> finished
	// u1: finished -> none
}

// A Runner calls the PodSyncer from its own goroutines; a kill's completion channel
// tells when the pod's containers are stopped.
func ExampleRunner() {
	syncer := podworker.PodSyncerFuncs{
		SyncTerminatingPodFunc: func(_ context.Context, pod *v1.Pod, _ *pleg.PodStatus, grace int64, _ func(*v1.PodStatus)) error {
			fmt.Printf("stopping %s within %ds\n", pod.Name, grace)
			return nil
		},
	}
	r, err := podworker.New(podworker.Config{Syncer: syncer})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = r.Run(ctx) }()

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1", Name: "web", Namespace: "default"}}
	_ = r.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: pod})
	done := podworker.NewCompletion()
	grace := int64(5)
	_ = r.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, Pod: pod,
		KillPodOptions: &podworker.KillPodOptions{Completion: done, PodTerminationGracePeriodSecondsOverride: &grace}})
	<-done.Done()
	fmt.Println("terminated:", r.IsPodKnownTerminated("u1"))

	err = r.UpdatePod(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate})
	fmt.Println(err)
	cancel()
	<-stopped
	// Output:
	// stopping web within 5s
	// terminated: true
	// podworker: nil pod
}
