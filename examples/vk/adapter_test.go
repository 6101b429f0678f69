package vk_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/examples/vk"
	"github.com/podlife/podlife/examples/vk/vktest"
	"github.com/podlife/podlife/pleg"
)

func namedPod(uid types.UID) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: uid},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}}}
}

// TestStartPodNameTaken: a pod whose name the provider still holds for another pod (one
// still stopping) is not created: StartPod returns ErrNameTaken at once, without waiting
// (the pod worker retries with its backoff), and creates the pod once the name is free.
func TestStartPodNameTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := vktest.New(vktest.Config{StopDelay: 5 * time.Second})
		if err := p.CreatePod(ctx, namedPod("old")); err != nil {
			t.Fatal(err)
		}
		if err := p.DeletePod(ctx, namedPod("old")); err != nil {
			t.Fatal(err)
		}
		ad, err := vk.NewAdapter(vk.AdapterConfig{Provider: p})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := ad.StartPod(ctx, namedPod("new")); !errors.Is(err, vk.ErrNameTaken) {
			t.Fatalf("StartPod = %v, want ErrNameTaken", err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("StartPod returned after %v, want at once", took)
		}
		if n := p.CountFor("new", vktest.Create); n != 0 {
			t.Errorf("CreatePod of the new pod while the name is taken: %d calls", n)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait() // the provider's stop timer has fired
		if err := ad.StartPod(ctx, namedPod("new")); err != nil {
			t.Fatalf("StartPod once the name is free = %v", err)
		}
		if n := p.CountFor("new", vktest.Create); n != 1 {
			t.Errorf("CreatePod of the new pod: %d calls, want 1", n)
		}
	})
}

// TestStopPodNotFound: a pod DeletePod answers NotFound for is stopped: StopPod returns
// at once, without polling the provider again, with either kind of provider.
func TestStopPodNotFound(t *testing.T) {
	for _, notify := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var p node.PodLifecycleHandler
			base := vktest.New(vktest.Config{})
			p = base
			if notify {
				np := vktest.NotifyingProvider{Provider: base}
				p = np
			}
			ad, err := vk.NewAdapter(vk.AdapterConfig{Provider: p})
			if err != nil {
				t.Fatal(err)
			}
			if notify {
				ad.PushStatuses(ctx, func(*pleg.PodStatus) {})
			}
			pod := namedPod("gone")
			if err := ad.StartPod(ctx, pod); err != nil {
				t.Fatal(err)
			}
			base.Stop("default", "web") // the provider drops the pod on its own
			gets := base.Count(vktest.Get)
			start := time.Now()
			if err := ad.StopPod(ctx, pod, 30*time.Second); err != nil {
				t.Fatalf("StopPod = %v", err)
			}
			if took := time.Since(start); took != 0 {
				t.Errorf("notify=%v: StopPod returned after %v, want at once", notify, took)
			}
			if n := base.Count(vktest.Get) - gets; n != 0 {
				t.Errorf("notify=%v: StopPod polled GetPod %d times after DeletePod's NotFound", notify, n)
			}
			cancel()
		})
	}
}
