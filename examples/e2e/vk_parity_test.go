package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/examples/vk"
	"github.com/podlife/podlife/examples/vk/vktest"
)

// The cases of virtual-kubelet's provider e2e suite (test/e2e/basic.go of v1.14.1) that need
// no kubelet HTTP API, replayed against vk.Run (as system:node:node1, with the events vk.Run
// writes by default, as nodeutil does: no Recorder set) over a vktest provider, polled and
// notifying: graceful delete, force delete, and pods referring to missing optional and
// mandatory Secrets and ConfigMaps. virtual-kubelet's "running pods from the provider" is
// the provider's GetPods; its WaitUntilPodEventWithReason is an admin's watch of the pod's
// events.

// parityRunner starts vk.Run as a provider moved over from nodeutil would (its default
// events) on a new provider.
func (e *vkEnv) parityRunner() *vkProvider {
	e.t.Helper()
	p := e.newProvider("", vktest.Config{})
	e.startRunner("", p, e.newPatcher("", nil))
	return p
}

// inProvider reports whether the provider's GetPods lists the pod (by UID).
func inProvider(t *testing.T, p *vkProvider, uid types.UID) bool {
	t.Helper()
	pods, err := p.GetPods(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range pods {
		if q.UID == uid {
			return true
		}
	}
	return false
}

// waitPodEvent waits for an event about the pod with the reason, as an admin watches them.
func waitPodEvent(t *testing.T, ctx context.Context, e *vkEnv, uid types.UID, reason string) *v1.Event {
	t.Helper()
	return watchEvent(t, ctx, e.admin, uid, reason, func(ev *v1.Event) bool { return ev.Reason == reason })
}

// runningReady waits until the server shows the pod Running and Ready (WaitUntilPodReady).
func runningReady(uid types.UID) func([]podEvent) bool {
	return func(es []podEvent) bool {
		return index(es, func(e podEvent) bool {
			if e.UID != uid || e.Phase != v1.PodRunning || e.Pod == nil {
				return false
			}
			for _, c := range e.Pod.Status.Conditions {
				if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
					return true
				}
			}
			return false
		}) >= 0
	}
}

func TestE2EVirtualKubeletParity(t *testing.T) {
	for _, kind := range vkKinds {
		t.Run(kind.name, func(t *testing.T) {
			// TestPodLifecycleGracefulDelete: a running pod deleted gracefully is gone from
			// the provider once the object is gone, and the delete the server saw was
			// graceful.
			t.Run("GracefulDelete", func(t *testing.T) {
				e := newVKEnv(t, kind)
				p := e.parityRunner()
				pod := vkPod(t, "graceful", v1.RestartPolicyAlways)
				w := e.watch(pod.Name)
				pod = createPod(t, e.ctx, e.admin, pod)
				w.waitFor(t, e.ctx, "Running and Ready", runningReady(pod.UID))
				if !inProvider(t, p, pod.UID) {
					t.Fatal("the running pod is not in the provider's GetPods")
				}
				deletePod(t, e.ctx, e.admin, pod.Name, nil)
				events := of(w.waitFor(t, e.within(20*time.Second), "the object removed", removed(pod.UID)), pod.UID)
				graceful, _ := deleteOrder(t, events, w)
				if g := events[graceful].Pod.DeletionGracePeriodSeconds; g == nil || *g <= 0 {
					t.Errorf("deletionGracePeriodSeconds = %v, want > 0 (a graceful delete)", g)
				}
				if inProvider(t, p, pod.UID) {
					t.Error("the provider still runs the deleted pod")
				}
				t.Logf("graceful delete: DeletePod called, terminal phase %s written, object removed %v after the delete",
					events[len(events)-2].Phase, events[len(events)-1].At.Sub(events[graceful].At).Round(time.Millisecond))
			})

			// TestPodLifecycleForceDelete: a running pod force-deleted (grace 0) is gone from
			// the provider.
			t.Run("ForceDelete", func(t *testing.T) {
				e := newVKEnv(t, kind)
				p := e.parityRunner()
				pod := vkPod(t, "force", v1.RestartPolicyAlways)
				w := e.watch(pod.Name)
				pod = createPod(t, e.ctx, e.admin, pod)
				w.waitFor(t, e.ctx, "Running and Ready", runningReady(pod.UID))
				if !inProvider(t, p, pod.UID) {
					t.Fatal("the running pod is not in the provider's GetPods")
				}
				deletePod(t, e.ctx, e.admin, pod.Name, ptr.To[int64](0))
				w.waitFor(t, e.within(10*time.Second), "the object removed", removed(pod.UID))
				eventually(t, e.within(10*time.Second), "the pod gone from the provider", func() (bool, string) {
					return !inProvider(t, p, pod.UID), fmt.Sprintf("DeletePod calls: %d", len(p.log.find(vktest.Delete, pod.UID)))
				})
				t.Logf("force delete: DeletePod calls %d, the provider no longer lists the pod", len(p.log.find(vktest.Delete, pod.UID)))
			})

			// TestCreatePodWithOptionalInexistent{Secrets,ConfigMap}: the pod runs, without the
			// variable, and an Optional...NotFound event is on the pod.
			for _, kindOf := range []string{"Secret", "ConfigMap"} {
				t.Run("Optional"+kindOf, func(t *testing.T) {
					e := newVKEnv(t, kind)
					p := e.parityRunner()
					pod := vkPod(t, "opt-"+strings.ToLower(kindOf), v1.RestartPolicyAlways)
					pod.Spec.Containers[0].Env = []v1.EnvVar{refEnv(kindOf, "vk-parity-missing", true)}
					w := e.watch(pod.Name)
					pod = createPod(t, e.ctx, e.admin, pod)
					w.waitFor(t, e.ctx, "Running and Ready", runningReady(pod.UID))
					reason := vk.ReasonOptionalSecretNotFound
					if kindOf == "ConfigMap" {
						reason = vk.ReasonOptionalConfigMapNotFound
					}
					ev := waitPodEvent(t, e.within(20*time.Second), e, pod.UID, reason)
					if ev.Type != v1.EventTypeWarning {
						t.Errorf("%s event of type %s, want Warning", reason, ev.Type)
					}
					if !inProvider(t, p, pod.UID) {
						t.Fatal("the pod is not in the provider's GetPods")
					}
					got, err := p.GetPod(context.Background(), namespace, pod.Name)
					if err != nil {
						t.Fatal(err)
					}
					for _, env := range got.Spec.Containers[0].Env {
						if env.Name == "MISSING" {
							t.Errorf("the provider got MISSING=%q, want it skipped", env.Value)
						}
					}
					t.Logf("optional %s: Running and Ready, event %s %s: %s", kindOf, ev.Type, ev.Reason, ev.Message)
				})
			}

			// TestCreatePodWithMandatoryInexistent{Secrets,ConfigMap}: a Mandatory...NotFound
			// event is on the pod and the provider never gets it; podlife also shows the
			// container waiting with CreateContainerConfigError, as the kubelet does.
			for _, kindOf := range []string{"Secret", "ConfigMap"} {
				t.Run("Mandatory"+kindOf, func(t *testing.T) {
					e := newVKEnv(t, kind)
					p := e.parityRunner()
					pod := vkPod(t, "mand-"+strings.ToLower(kindOf), v1.RestartPolicyAlways)
					pod.Spec.Containers[0].Env = []v1.EnvVar{refEnv(kindOf, "vk-parity-missing", false)}
					w := e.watch(pod.Name)
					pod = createPod(t, e.ctx, e.admin, pod)
					reason := vk.ReasonMandatorySecretNotFound
					if kindOf == "ConfigMap" {
						reason = vk.ReasonMandatoryConfigMapNotFound
					}
					ev := waitPodEvent(t, e.within(20*time.Second), e, pod.UID, reason)
					events := w.waitFor(t, e.within(20*time.Second), "the container waiting (CreateContainerConfigError)", func(es []podEvent) bool {
						return index(es, func(e podEvent) bool {
							if e.UID != pod.UID || e.Pod == nil || len(e.Pod.Status.ContainerStatuses) != 1 {
								return false
							}
							wt := e.Pod.Status.ContainerStatuses[0].State.Waiting
							return wt != nil && wt.Reason == vk.ReasonCreateContainerConfigError
						}) >= 0
					})
					mine := of(events, pod.UID)
					cur := mine[len(mine)-1]
					if cur.Phase != v1.PodPending {
						t.Errorf("phase %s, want Pending", cur.Phase)
					}
					if inProvider(t, p, pod.UID) || p.CountFor(pod.UID, vktest.Create) != 0 {
						t.Errorf("the provider got the pod (%d CreatePod calls)", p.CountFor(pod.UID, vktest.Create))
					}
					msg := cur.Pod.Status.ContainerStatuses[0].State.Waiting.Message
					t.Logf("mandatory %s: event %s %s: %s; container waiting %s: %s", kindOf, ev.Type, ev.Reason, ev.Message,
						vk.ReasonCreateContainerConfigError, msg)
				})
			}
		})
	}
}

// refEnv is the variable MISSING from key k of the Secret or ConfigMap name.
func refEnv(kindOf, name string, optional bool) v1.EnvVar {
	ref := v1.LocalObjectReference{Name: name}
	if kindOf == "Secret" {
		return v1.EnvVar{Name: "MISSING", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
			LocalObjectReference: ref, Key: "k", Optional: &optional}}}
	}
	return v1.EnvVar{Name: "MISSING", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
		LocalObjectReference: ref, Key: "k", Optional: &optional}}}
}
