package vk_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podlife/podlife/examples/vk"
	"github.com/podlife/podlife/examples/vk/vktest"
	plnode "github.com/podlife/podlife/node"
)

// TestRunRegistersNodeAndRunsPods runs vk.Run against client-go's fake clientset: the
// node controller registers the Node object and its lease, a pod bound to the node is
// created in the provider and reported Running, and every goroutine ends with the context.
func TestRunRegistersNodeAndRunsPods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		provider := vktest.NewNotifying(vktest.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- vk.Run(ctx, vk.Config{NodeName: "vnode", Provider: provider, Client: client}) }()

		grace := int64(30)
		pod, err := client.CoreV1().Pods("default").Create(ctx, &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
			Spec: v1.PodSpec{NodeName: "vnode", TerminationGracePeriodSeconds: &grace,
				Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		for {
			got, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
			if err == nil && got.Status.Phase == v1.PodRunning {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the pod is not Running a minute after its creation: %+v, %v", got, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if n := provider.CountFor(pod.UID, vktest.Create); n != 1 {
			t.Errorf("CreatePod calls = %d, want 1", n)
		}
		n, err := client.CoreV1().Nodes().Get(ctx, "vnode", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the Node object: %v", err)
		}
		if len(n.Status.Conditions) == 0 || n.Status.Conditions[0].Type != v1.NodeReady {
			t.Errorf("node conditions %+v, want Ready", n.Status.Conditions)
		}
		if _, err := client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, "vnode", metav1.GetOptions{}); err != nil {
			t.Errorf("the node lease: %v", err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
	})
}

func TestRunRejectsBadConfig(t *testing.T) {
	for _, cfg := range []vk.Config{
		{Provider: vktest.New(vktest.Config{}), Client: fake.NewClientset()},
		{NodeName: "n", Client: fake.NewClientset()},
		{NodeName: "n", Provider: vktest.New(vktest.Config{})},
		{NodeName: "n", Provider: vktest.New(vktest.Config{}), Client: fake.NewClientset(), Node: vk.DefaultNode("other")},
		{NodeName: "n", Provider: vktest.New(vktest.Config{}), Client: fake.NewClientset(), NoEvents: true,
			Recorder: plnode.EventRecorderFunc(func(*v1.Pod, string, string, string) {})},
	} {
		if err := vk.Run(context.Background(), cfg); err == nil {
			t.Errorf("Run(%+v) = nil, want an error", cfg)
		}
		if _, err := vk.NewRunner(cfg); err == nil {
			t.Errorf("NewRunner(%+v) = nil error, want an error", cfg)
		}
	}
}

// TestRunnerReadyDoneErr: Ready is closed once the Node object is registered and the pods
// are listed (the pod listed before is then known); Done and Err report the end of Run;
// a second Run fails.
func TestRunnerReadyDoneErr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		r, err := vk.NewRunner(vk.Config{NodeName: "vnode", Provider: vktest.New(vktest.Config{}), Client: client})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		<-r.Ready()
		select {
		case <-r.Done():
			t.Fatal("Done closed while running")
		default:
		}
		if r.Err() != nil {
			t.Errorf("Err while running = %v", r.Err())
		}
		if _, err := client.CoreV1().Nodes().Get(ctx, "vnode", metav1.GetOptions{}); err != nil {
			t.Errorf("the Node object once Ready: %v", err)
		}
		if err := r.Run(ctx); err == nil {
			t.Error("a second Run = nil, want an error")
		}
		cancel()
		<-r.Done()
		if err := <-done; err != nil || r.Err() != nil {
			t.Fatalf("Run = %v, Err = %v; want nil", err, r.Err())
		}
	})
}

// TestRunnerNodeFailure: a node controller that cannot register the node ends Run with
// its error; Ready is never closed.
func TestRunnerNodeFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		refused := errors.New("node registration refused")
		client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, refused
		})
		r, err := vk.NewRunner(vk.Config{NodeName: "vnode", Provider: vktest.New(vktest.Config{}), Client: client})
		if err != nil {
			t.Fatal(err)
		}
		go r.Run(context.Background())
		<-r.Done()
		if err := r.Err(); !errors.Is(err, refused) {
			t.Errorf("Err = %v, want the node controller's %v", err, refused)
		}
		select {
		case <-r.Ready():
			t.Error("Ready closed, but the node was never registered")
		default:
		}
	})
}

// TestRunRecordsEvents: with no Recorder, Run writes the pod events to the API server
// through the node's client, as virtual-kubelet's nodeutil does (a pod referring to a
// missing Secret gets a MandatorySecretNotFound warning event, source virtual-kubelet on
// the node); with NoEvents, none. The recorder ends with Run (synctest finds a goroutine
// left behind).
func TestRunRecordsEvents(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noEvents bool
		want     []string // reason source/host of each event
	}{
		{name: "default", want: []string{"MandatorySecretNotFound virtual-kubelet/vnode"}},
		{name: "NoEvents", noEvents: true, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				client := fake.NewClientset()
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					done <- vk.Run(ctx, vk.Config{NodeName: "vnode", Provider: vktest.New(vktest.Config{}),
						Client: client, NoEvents: tc.noEvents})
				}()
				_, err := client.CoreV1().Pods("default").Create(ctx, &v1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
					Spec: v1.PodSpec{NodeName: "vnode", Containers: []v1.Container{{Name: "app", Image: "busybox",
						Env: []v1.EnvVar{{Name: "K", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
							LocalObjectReference: v1.LocalObjectReference{Name: "missing"}, Key: "k"}}}}}}},
				}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				// The container waits with CreateContainerConfigError once the create is
				// refused; its event (if any) is written within seconds.
				deadline := time.Now().Add(time.Minute)
				for {
					got, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
					if err == nil && len(got.Status.ContainerStatuses) == 1 && got.Status.ContainerStatuses[0].State.Waiting != nil &&
						got.Status.ContainerStatuses[0].State.Waiting.Reason == vk.ReasonCreateContainerConfigError {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("no CreateContainerConfigError a minute after the pod's creation: %+v, %v", got, err)
					}
					time.Sleep(100 * time.Millisecond)
				}
				time.Sleep(10 * time.Second)
				synctest.Wait()
				events, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				seen := map[string]bool{}
				for _, ev := range events.Items {
					s := ev.Reason + " " + ev.Source.Component + "/" + ev.Source.Host
					if ev.InvolvedObject.UID != "uid-web" || ev.Type != v1.EventTypeWarning {
						s += " (" + string(ev.InvolvedObject.UID) + ", " + ev.Type + ")"
					}
					if !seen[s] {
						seen[s] = true
						got = append(got, s)
					}
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
				cancel()
				if err := <-done; err != nil {
					t.Fatalf("Run: %v", err)
				}
			})
		})
	}
}
