package vk_test

import (
	"context"
	"errors"
	"sync/atomic"
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

// startPolled returns an adapter over a provider that does not notify, and the pod
// "polled" it started.
func startPolled(t *testing.T, ctx context.Context) (*vktest.Provider, *vk.Adapter, *v1.Pod) {
	t.Helper()
	p := vktest.New(vktest.Config{})
	ad, err := vk.NewAdapter(vk.AdapterConfig{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	pod := namedPod("polled")
	if err := ad.StartPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return p, ad, pod
}

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

// startNotified starts pod on a notifying provider through a new adapter whose pushed
// statuses go to push, and waits until the provider's notifications were handled.
func startNotified(t *testing.T, ctx context.Context, p vktest.NotifyingProvider, pod *v1.Pod, push func(*pleg.PodStatus)) *vk.Adapter {
	t.Helper()
	ad, err := vk.NewAdapter(vk.AdapterConfig{Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	ad.PushStatuses(ctx, push)
	if err := ad.StartPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()
	return ad
}

// runningContainers returns the number of running containers of the pod's runtime status.
func runningContainers(t *testing.T, ad *vk.Adapter, pod *v1.Pod) int {
	t.Helper()
	rs, err := ad.PodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatalf("PodStatus = %v", err)
	}
	return rs.RunningContainers()
}

// TestPodStatusFromNotifications: with a provider that notifies, PodStatus answers from
// the statuses notified since CreatePod, without a GetPod, and follows every later
// notification; with a polled provider, every PodStatus asks GetPod.
func TestPodStatusFromNotifications(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		np := vktest.NewNotifying(vktest.Config{RunFor: 10 * time.Second})
		pod := namedPod("notified")
		var pushed []*pleg.PodStatus
		ad := startNotified(t, ctx, np, pod, func(s *pleg.PodStatus) { pushed = append(pushed, s) })
		gets := np.Count(vktest.Get)
		if n := runningContainers(t, ad, pod); n != 1 {
			t.Errorf("running containers = %d, want 1", n)
		}
		time.Sleep(10 * time.Second) // the container exits on its own: notified
		synctest.Wait()
		if n := runningContainers(t, ad, pod); n != 0 {
			t.Errorf("running containers once it exited = %d, want 0", n)
		}
		if n := np.Count(vktest.Get) - gets; n != 0 {
			t.Errorf("%d GetPod calls for the notified statuses, want none", n)
		}
		if len(pushed) == 0 || pushed[len(pushed)-1].RunningContainers() != 0 {
			t.Errorf("pushed statuses %v: want the exit last", pushed)
		}
		cancel()
	})
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p, ad, pod := startPolled(t, ctx)
		gets := p.Count(vktest.Get)
		for range 2 {
			if n := runningContainers(t, ad, pod); n != 1 {
				t.Errorf("running containers = %d, want 1", n)
			}
		}
		if n := p.Count(vktest.Get) - gets; n != 2 {
			t.Errorf("polled provider: %d GetPod calls for 2 PodStatus, want 2", n)
		}
	})
}

// mutedNotifier is a notifying provider whose notifications can be silenced (a provider
// that fails to report a change) and that can deliver a notice of its test's making
// (one sent long ago, arriving late).
type mutedNotifier struct {
	vktest.NotifyingProvider
	muted atomic.Bool
	cb    func(*v1.Pod)
}

func (m *mutedNotifier) NotifyPods(ctx context.Context, cb func(*v1.Pod)) {
	m.cb = cb
	m.NotifyingProvider.NotifyPods(ctx, func(p *v1.Pod) {
		if !m.muted.Load() {
			cb(p)
		}
	})
}

// TestPodStatusAsksAgain: PodStatus asks the provider (GetPod) instead of answering from
// the notified statuses after an UpdatePod (a notification sent before it may arrive
// after it) and after a relist that disagrees with them (a change the provider did not
// notify: the pod listed in other states, or not listed).
func TestPodStatusAsksAgain(t *testing.T) {
	for _, tc := range []struct {
		name string
		// change changes the pod in the provider, muted or not, and returns the number
		// of running containers PodStatus must then report.
		change func(t *testing.T, ctx context.Context, m *mutedNotifier, ad *vk.Adapter, pod *v1.Pod) int
		// current: the adapter read the pod again by itself after the change, so PodStatus
		// answers from that read without a GetPod of its own.
		current bool
	}{
		{"UpdatePod", func(t *testing.T, ctx context.Context, m *mutedNotifier, ad *vk.Adapter, pod *v1.Pod) int {
			next := pod.DeepCopy()
			next.Labels = map[string]string{"tier": "web"}
			if err := ad.StartPod(ctx, next); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			return 1
		}, false},
		{"listed in other states", func(t *testing.T, ctx context.Context, m *mutedNotifier, ad *vk.Adapter, pod *v1.Pod) int {
			m.muted.Store(true)
			time.Sleep(10 * time.Second) // the container exits on its own, not notified
			synctest.Wait()
			if _, err := ad.ListPods(ctx, true); err != nil {
				t.Fatal(err)
			}
			return 0
		}, false},
		{"a late notice after DeletePod", func(t *testing.T, ctx context.Context, m *mutedNotifier, ad *vk.Adapter, pod *v1.Pod) int {
			stale, err := m.GetPod(ctx, pod.Namespace, pod.Name)
			if err != nil {
				t.Fatal(err)
			}
			stale.Status.Phase = v1.PodPending
			stale.Status.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
			stopped := make(chan error, 1)
			go func() { stopped <- ad.StopPod(ctx, pod, 30*time.Second) }()
			synctest.Wait() // DeletePod, then a GetPod: still running (it stops in 5 s)
			m.cb(stale)
			// The notice wakes StopPod, which reads the pod again (still running): that
			// read, begun after DeletePod, is what PodStatus answers from, not the notice.
			synctest.Wait()
			t.Cleanup(func() {
				if err := <-stopped; err != nil {
					t.Errorf("StopPod = %v", err)
				}
			})
			return 1
		}, true},
		{"not listed", func(t *testing.T, ctx context.Context, m *mutedNotifier, ad *vk.Adapter, pod *v1.Pod) int {
			m.muted.Store(true)
			m.Stop(pod.Namespace, pod.Name) // removed, not notified
			if _, err := ad.ListPods(ctx, true); err != nil {
				t.Fatal(err)
			}
			return 0
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				m := &mutedNotifier{NotifyingProvider: vktest.NewNotifying(vktest.Config{RunFor: 10 * time.Second, StopDelay: 5 * time.Second})}
				pod := namedPod("web")
				ad, err := vk.NewAdapter(vk.AdapterConfig{Provider: m})
				if err != nil {
					t.Fatal(err)
				}
				ad.PushStatuses(ctx, func(*pleg.PodStatus) {})
				if err := ad.StartPod(ctx, pod); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				want := tc.change(t, ctx, m, ad, pod)
				gets := m.Count(vktest.Get)
				if n := runningContainers(t, ad, pod); n != want {
					t.Errorf("running containers = %d, want %d", n, want)
				}
				want1 := 1
				if tc.current {
					want1 = 0
				}
				if n := m.Count(vktest.Get) - gets; n != want1 {
					t.Errorf("%d GetPod calls, want %d", n, want1)
				}
				time.Sleep(10 * time.Second) // a StopPod under way ends
				cancel()
			})
		})
	}
}

// TestStopPodNotified: a provider that notifies the stop spares StopPod's polls: after
// DeletePod, one GetPod (the pod is gone), the notice of the stop, and the runtime status
// afterwards (the pod is gone) without asking again.
func TestStopPodNotified(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		np := vktest.NewNotifying(vktest.Config{})
		pod := namedPod("stopping")
		ad := startNotified(t, ctx, np, pod, func(*pleg.PodStatus) {})
		gets := np.Count(vktest.Get)
		start := time.Now()
		if err := ad.StopPod(ctx, pod, 30*time.Second); err != nil {
			t.Fatalf("StopPod = %v", err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("StopPod returned after %v, want at once", took)
		}
		rs, err := ad.PodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		if err != nil || len(rs.ContainerStatuses) != 0 {
			t.Errorf("PodStatus after the stop = %+v, %v; want no containers", rs, err)
		}
		if n := np.Count(vktest.Get) - gets; n != 1 {
			t.Errorf("%d GetPod calls from StopPod to PodStatus, want 1", n)
		}
		cancel()
	})
}

// TestStopPodPolledInspection: with a polled provider, the GetPod that found the pod
// stopped at the end of StopPod answers the next PodStatus (the node inspects the pod
// right after the kill) without asking again; the one after asks GetPod.
func TestStopPodPolledInspection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p, ad, pod := startPolled(t, ctx)
		if err := ad.StopPod(ctx, pod, 30*time.Second); err != nil {
			t.Fatalf("StopPod = %v", err)
		}
		for i, wantGets := range []int{0, 1} {
			gets := p.Count(vktest.Get)
			rs, err := ad.PodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
			if err != nil || len(rs.ContainerStatuses) != 0 {
				t.Errorf("PodStatus %d after the stop = %+v, %v; want no containers", i+1, rs, err)
			}
			if n := p.Count(vktest.Get) - gets; n != wantGets {
				t.Errorf("PodStatus %d after the stop: %d GetPod calls, want %d", i+1, n, wantGets)
			}
		}
	})
}

// staleLister is a provider whose GetPods, once armed, runs a change after taking its
// list and before returning it: the list is older than what the change notifies.
type staleLister struct {
	vktest.NotifyingProvider
	change func()
}

func (s *staleLister) GetPods(ctx context.Context) ([]*v1.Pod, error) {
	pods, err := s.NotifyingProvider.GetPods(ctx)
	if s.change != nil {
		s.change()
		synctest.Wait() // the change's notification is handled
	}
	return pods, err
}

// TestListOlderThanNotification: a relist whose list was taken before a notification
// does not replace the notified status with the older one it listed (the pod's final API
// status stays the provider's: its container terminated), also once the notifications no
// longer make the view current.
func TestListOlderThanNotification(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		p := &staleLister{NotifyingProvider: vktest.NewNotifying(vktest.Config{})}
		pod := namedPod("listed")
		ad, err := vk.NewAdapter(vk.AdapterConfig{Provider: p})
		if err != nil {
			t.Fatal(err)
		}
		ad.PushStatuses(ctx, func(*pleg.PodStatus) {})
		if err := ad.StartPod(ctx, pod); err != nil {
			t.Fatal(err)
		}
		next := pod.DeepCopy() // an UpdatePod: notifications no longer make the view current
		next.Labels = map[string]string{"tier": "web"}
		if err := ad.StartPod(ctx, next); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		p.change = func() { p.Stop(pod.Namespace, pod.Name) } // terminated, notified, removed
		if _, err := ad.ListPods(ctx, true); err != nil {
			t.Fatal(err)
		}
		st := ad.APIStatus(pod, nil, v1.PodStatus{}, true)
		if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Terminated == nil || st.Phase != v1.PodSucceeded {
			t.Errorf("API status after a list older than the stop's notification: %s %+v; want Succeeded, the container terminated",
				st.Phase, st.ContainerStatuses)
		}
		cancel()
	})
}
