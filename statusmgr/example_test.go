package statusmgr_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// A pod's life as the status manager sees it: running, deleted by a user, terminated by the
// node agent, then deleted from the API server.
func Example() {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-1"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app"}}},
		Status:     v1.PodStatus{Phase: v1.PodPending},
	}
	api := statusmgrtest.NewFakeAPI(pod)
	m, err := statusmgr.New(statusmgr.Config{Patcher: api})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	_ = m.SetPodStatus(pod, v1.PodStatus{
		Phase: v1.PodRunning,
		ContainerStatuses: []v1.ContainerStatus{{Name: "app", Ready: true,
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}},
	})
	_ = m.Sync(ctx) // Run would do this at once, in the background
	server, _ := api.Pod("default", "web")
	fmt.Println("on the server:", server.Status.Phase)

	// A user deletes the pod; once its containers have stopped, the node agent says so.
	api.MarkDeleted("default", "web", metav1.NewTime(time.Now()), 30)
	server, _ = api.Pod("default", "web")
	_ = m.TerminatePod(server)
	_ = m.Sync(ctx)

	gone := api.DeletedPods()[0]
	fmt.Println("deleted with phase:", gone.Status.Phase)
	fmt.Println("container:", gone.Status.ContainerStatuses[0].State.Terminated.Reason)
	c := api.Counts()
	fmt.Printf("calls: %d GET, %d PATCH, %d DELETE\n", c.Gets, c.Patches, c.Deletes)
	// Output:
	// on the server: Running
	// deleted with phase: Failed
	// container: ContainerStatusUnknown
	// calls: 1 GET, 2 PATCH, 1 DELETE
}

// MergePodStatusAt is pure: the terminal phase waits until no container can run.
func ExampleMergePodStatusAt() {
	server := v1.PodStatus{Phase: v1.PodRunning}
	node := v1.PodStatus{Phase: v1.PodSucceeded}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fmt.Println(statusmgr.MergePodStatusAt(nil, server, node, true, now).Phase)
	fmt.Println(statusmgr.MergePodStatusAt(nil, server, node, false, now).Phase)
	// Output:
	// Running
	// Succeeded
}

// CanBeDeleted looks at the server's copy of the pod.
func ExampleCanBeDeleted() {
	at := metav1.Now()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &at}, Status: v1.PodStatus{Phase: v1.PodRunning}}
	fmt.Println(statusmgr.CanBeDeleted(pod, v1.PodStatus{}, true))
	pod.Status.Phase = v1.PodFailed
	fmt.Println(statusmgr.CanBeDeleted(pod, v1.PodStatus{}, false))
	fmt.Println(statusmgr.CanBeDeleted(pod, v1.PodStatus{}, true))
	// Output:
	// false
	// false
	// true
}
