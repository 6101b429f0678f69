package config_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/config"
)

func pod(name string, phase v1.PodPhase) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
		Status:     v1.PodStatus{Phase: phase},
	}
}

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// A Store classifies each Set of a source against what it holds.
func ExampleStore_Merge() {
	s := config.NewStoreWithClock(clocktesting.NewFakePassiveClock(time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)))

	c := s.Merge(config.PodUpdate{Op: config.Set, Source: "api", Pods: []*v1.Pod{pod("web", v1.PodRunning), pod("db", v1.PodRunning)}})
	fmt.Println("adds:", names(c.Adds), c.Adds[0].Annotations[config.ConfigFirstSeenAnnotationKey])

	deleting := pod("web", v1.PodRunning)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 11, 26, 0, 1, 0, 0, time.UTC)}
	c = s.Merge(config.PodUpdate{Op: config.Set, Source: "api", Pods: []*v1.Pod{deleting, pod("db", v1.PodSucceeded)}})
	fmt.Println("deletes:", names(c.Deletes), "reconciles:", names(c.Reconciles))

	c = s.Merge(config.PodUpdate{Op: config.Set, Source: "api", Pods: []*v1.Pod{pod("db", v1.PodSucceeded)}})
	fmt.Println("removes:", names(c.Removes), "seen:", s.SeenSource("api"))
	// Output:
	// adds: [web db] 2026-11-26T00:00:00.000000000Z
	// deletes: [web] reconciles: [db]
	// removes: [web] seen: true
}

// A Mux delivers each source's changes in the kubelet's order and says when sources are
// ready.
func ExampleMux() {
	ctx := context.Background()
	m, err := config.NewMux(config.MuxConfig{Sources: []string{"api", "file"}})
	if err != nil {
		panic(err)
	}
	_ = m.Update(ctx, config.PodUpdate{Op: config.Set, Source: "api", Pods: []*v1.Pod{pod("web", v1.PodRunning)}})
	_ = m.Update(ctx, config.PodUpdate{Op: config.Set, Source: "file"}) // no static pods
	fmt.Println("all sources seen:", m.SeenAllSources())
	_ = m.Update(ctx, config.PodUpdate{Op: config.Set, Source: "api", Pods: []*v1.Pod{pod("web", v1.PodFailed), pod("job", v1.PodPending)}})
	for range 4 {
		u := <-m.Updates()
		fmt.Println(u.Source, u.Op, names(u.Pods))
	}
	err = m.Update(ctx, config.PodUpdate{Op: config.Reconcile, Source: "api"})
	fmt.Println(err)
	// Output:
	// all sources seen: true
	// api add [web]
	// file add []
	// api add [job]
	// api reconcile [web]
	// config: op not valid as input: reconcile from source "api"
}
