package vktest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func testPod(uid string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID("uid-" + uid)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}}}
}

func phase(t *testing.T, p *Provider) v1.PodPhase {
	t.Helper()
	got, err := p.GetPod(context.Background(), "default", "web")
	if err != nil {
		return ""
	}
	return got.Status.Phase
}

// TestLifecycle: start and stop delays, the statuses they give, NotFound and the
// duplicate-name error, and the counts.
func TestLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := New(Config{StartDelay: 2 * time.Second, StopDelay: 3 * time.Second})
		if err := p.DeletePod(ctx, testPod("1")); !errdefs.IsNotFound(err) {
			t.Fatalf("DeletePod of an unknown pod = %v, want NotFound", err)
		}
		if err := p.CreatePod(ctx, testPod("1")); err != nil {
			t.Fatal(err)
		}
		if err := p.CreatePod(ctx, testPod("2")); err == nil {
			t.Fatal("CreatePod of a second pod under the same name succeeded")
		}
		if ph := phase(t, p); ph != v1.PodPending {
			t.Fatalf("phase right after CreatePod = %s, want Pending", ph)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if ph := phase(t, p); ph != v1.PodRunning {
			t.Fatalf("phase after the start delay = %s, want Running", ph)
		}
		if err := p.DeletePod(ctx, testPod("1")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		if ph := phase(t, p); ph != v1.PodRunning {
			t.Fatalf("phase 2 s into a 3 s stop = %s, want Running", ph)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if _, err := p.GetPod(ctx, "default", "web"); !errdefs.IsNotFound(err) {
			t.Fatalf("GetPod after the stop = %v, want NotFound", err)
		}
		if p.CountFor("uid-1", Create) != 1 || p.CountFor("uid-2", Create) != 1 || p.CountFor("uid-1", Delete) != 2 || p.Len() != 0 {
			t.Errorf("counts: create %d/%d delete %d len %d", p.CountFor("uid-1", Create), p.CountFor("uid-2", Create), p.CountFor("uid-1", Delete), p.Len())
		}
	})
}

// TestNotify: a notifying provider reports every change in order, from a goroutine that
// ends with the context, and a pod that exits on its own keeps its terminal status.
func TestNotify(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		p := NewNotifying(Config{RunFor: time.Second, ExitCode: 3})
		var mu sync.Mutex
		var phases []v1.PodPhase
		p.NotifyPods(ctx, func(pod *v1.Pod) {
			mu.Lock()
			phases = append(phases, pod.Status.Phase)
			mu.Unlock()
		})
		if err := p.CreatePod(ctx, testPod("1")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		mu.Lock()
		got := append([]v1.PodPhase(nil), phases...)
		mu.Unlock()
		if want := []v1.PodPhase{v1.PodRunning, v1.PodFailed}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("notified phases %v, want %v", got, want)
		}
		if ph := phase(t, p.Provider); ph != v1.PodFailed {
			t.Errorf("phase after exiting with 3 = %s, want Failed (kept)", ph)
		}
		cancel()
	})
}

func TestFailNext(t *testing.T) {
	p := New(Config{})
	boom := errors.New("boom")
	p.FailNext(Create, boom)
	if err := p.CreatePod(context.Background(), testPod("1")); !errors.Is(err, boom) {
		t.Fatalf("CreatePod = %v, want the injected error", err)
	}
	if err := p.CreatePod(context.Background(), testPod("1")); err != nil {
		t.Fatalf("CreatePod after the injected failure = %v", err)
	}
}
