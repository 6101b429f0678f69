package vk_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podlife/podlife/examples/vk"
	"github.com/podlife/podlife/examples/vk/vktest"
)

// TestRunAPICallsUntilRunning counts the runner's API calls on a pod from its creation
// until it is Running on the server, with a provider that starts pods at once, notifying
// or polled (W5's create): one status update, Running, virtual-kubelet's one
// UpdateStatus (kube.Patcher is a statusmgr.StatusUpdater: statusmgr.Config.UpdateStatus);
// no GET (the node holds the informer's copy) and no separate Pending write (the adapter
// is a node.StartReporter: the first status is written after CreatePod, from the
// provider's). Issue 33 item 5.
func TestRunAPICallsUntilRunning(t *testing.T) {
	for _, notify := range []bool{true, false} {
		t.Run(fmt.Sprintf("notify=%v", notify), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				client := fake.NewClientset()
				_, provider := vktest.NewHandler(vktest.Config{}, notify)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					done <- vk.Run(ctx, vk.Config{NodeName: "vnode", Provider: provider, Client: client, NoEvents: true})
				}()
				const pods = 3
				for i := range pods {
					_, err := client.CoreV1().Pods("default").Create(ctx, &v1.Pod{
						ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: "default",
							UID: types.UID(fmt.Sprintf("uid-%d", i)), ResourceVersion: "1"},
						Spec: v1.PodSpec{NodeName: "vnode", Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
					}, metav1.CreateOptions{})
					if err != nil {
						t.Fatal(err)
					}
				}
				deadline := time.Now().Add(time.Minute)
				for {
					list, err := client.Tracker().List(v1.SchemeGroupVersion.WithResource("pods"),
						v1.SchemeGroupVersion.WithKind("Pod"), "default")
					if err != nil {
						t.Fatal(err)
					}
					running := 0
					for _, p := range list.(*v1.PodList).Items {
						if p.Status.Phase == v1.PodRunning {
							running++
						}
					}
					if running == pods {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%d of %d pods Running a minute after their creation", running, pods)
					}
					time.Sleep(time.Millisecond)
				}
				synctest.Wait()
				got := map[string]int{}
				for _, a := range client.Actions() {
					if a.GetResource().Resource != "pods" || a.GetVerb() == "list" || a.GetVerb() == "watch" ||
						a.GetVerb() == "create" {
						continue
					}
					k := a.GetVerb()
					if s := a.GetSubresource(); s != "" {
						k += " " + s
					}
					got[k]++
				}
				if diff := cmp.Diff(map[string]int{"update status": pods}, got); diff != "" {
					t.Errorf("API calls on pods until every pod is Running (-want +got):\n%s", diff)
				}
				cancel()
				if err := <-done; err != nil {
					t.Fatalf("Run: %v", err)
				}
			})
		})
	}
}
