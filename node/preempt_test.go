package node_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/admission"
	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/pleg"
)

// onePodNode is a node with room for one pod, as admission sees it.
func onePodNode(context.Context) (*v1.Node, error) {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("4"), v1.ResourcePods: resource.MustParse("1")}}}, nil
}

// criticalStatic is a system-node-critical static pod of the "file" source.
func criticalStatic(name string) *v1.Pod {
	p := newPod(name, 30, v1.RestartPolicyAlways, nil)
	p.UID = types.UID("static-" + name)
	p.Spec.PriorityClassName = "system-node-critical"
	p.Spec.Priority = ptr.To(admission.SystemCriticalPriority + 1000)
	return p
}

// syncTimes records when the runtime's SyncPod was first called for each pod.
type syncTimes struct {
	node.Runtime
	mu    sync.Mutex
	start time.Time
	first map[string]time.Duration
}

func (s *syncTimes) SyncPod(ctx context.Context, pod *v1.Pod, rs *pleg.PodStatus) error {
	s.mu.Lock()
	if _, ok := s.first[pod.Name]; !ok {
		s.first[pod.Name] = time.Since(s.start)
	}
	s.mu.Unlock()
	return s.Runtime.SyncPod(ctx, pod, rs)
}

func (s *syncTimes) at(name string) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.first[name]
	return d, ok
}

// recorded is one Kubernetes event a node recorded.
type recorded struct{ Pod, Type, Reason, Message string }

// Critical-pod preemption from an admit handler, as the kubelet's: the critical static
// pod that does not fit has the best-effort pod killed (the loop waits until its
// containers stop, whether at once or at the end of its whole grace period, and does
// not deadlock), which ends Failed with the kubelet's preemption status on the server;
// then the static pod is admitted and runs, and the loop goes on.
func TestCriticalPodPreemption(t *testing.T) {
	kubeletStatus := ended{Phase: v1.PodFailed, Reason: "Preempting", Message: "Preempted in order to admit critical pod",
		DisruptionStatus: v1.ConditionTrue, DisruptionReason: "TerminationByKubelet",
		DisMsg: "Pod was preempted by Kubelet to accommodate a critical pod.", DisruptionTransitionStamped: true}
	for _, tc := range []struct {
		name string
		// kill is the preemption's KillFunc for the node *n.
		kill      func(n **node.Node) admission.KillFunc
		stopDelay time.Duration
		// wantAdmitted is when the static pod starts: once the victim stopped.
		wantAdmitted time.Duration
		wantEvents   []recorded
	}{
		{name: "node.Preempt", kill: func(**node.Node) admission.KillFunc { return node.Preempt },
			stopDelay: 2 * time.Second, wantAdmitted: 2 * time.Second,
			wantEvents: []recorded{{"web", v1.EventTypeWarning, "Preempting", "Preempted in order to admit critical pod"}}},
		{name: "node.Preempt, the victim takes its whole grace period", kill: func(**node.Node) admission.KillFunc { return node.Preempt },
			stopDelay: -1, wantAdmitted: 30 * time.Second,
			wantEvents: []recorded{{"web", v1.EventTypeWarning, "Preempting", "Preempted in order to admit critical pod"}}},
		{name: "KillPod from the handler", stopDelay: -1, wantAdmitted: 30 * time.Second,
			kill: func(n **node.Node) admission.KillFunc {
				return func(ctx context.Context, pod *v1.Pod, status func(*v1.PodStatus)) error {
					return (*n).KillPod(ctx, pod.UID, node.KillPodOptions{Status: status, Evict: true})
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var (
					n      *node.Node
					st     *syncTimes
					mu     sync.Mutex
					events []recorded
				)
				kill := tc.kill(&n)
				var killErrs []error
				preempt := admission.PredicateHandler(admission.PredicateConfig{Node: onePodNode,
					OnFailure: admission.CriticalPodPreemption(kill, func(_ *v1.Pod, err error) { killErrs = append(killErrs, err) })})
				rec := node.EventRecorderFunc(func(pod *v1.Pod, typ, reason, msg string) {
					if reason == "Killing" {
						return
					}
					mu.Lock()
					events = append(events, recorded{pod.Name, typ, reason, msg})
					mu.Unlock()
				})
				e := start(t, nil, nil, envOpts{sources: []string{node.SourceAPI, "file"}, admit: []admission.Handler{preempt},
					containers: nodetest.ContainerBehaviour{StopDelay: tc.stopDelay}, recorder: rec,
					wrap: func(rt node.Runtime) node.Runtime {
						st = &syncTimes{Runtime: rt, start: time.Now(), first: map[string]time.Duration{}}
						return st
					}})
				n = e.n
				ctx := context.Background()
				if err := e.n.Update(ctx, config.PodUpdate{Op: config.Set, Source: "file"}); err != nil {
					t.Fatal(err)
				}
				victim := e.create(newPod("web", 30, v1.RestartPolicyAlways, nil)) // BestEffort
				e.waitPhase("web", v1.PodRunning)

				static := criticalStatic("etcd")
				st.mu.Lock()
				st.start = time.Now()
				st.mu.Unlock()
				if err := e.n.Update(ctx, config.PodUpdate{Op: config.Set, Source: "file", Pods: []*v1.Pod{static}}); err != nil {
					t.Fatal(err)
				}
				e.waitPod("web", func(p *v1.Pod, ok bool) bool { return ok && p.Status.Phase == v1.PodFailed })
				time.Sleep(time.Minute)
				synctest.Wait()
				got, _ := e.api.Pod("default", "web")
				if diff := cmp.Diff(kubeletStatus, endedOf(got)); diff != "" {
					t.Errorf("the victim's status on the server (-want +got):\n%s", diff)
				}
				if at, ok := st.at("etcd"); !ok || at != tc.wantAdmitted {
					t.Errorf("the static pod was first synced after %v (synced: %v), want %v, once the victim stopped", at, ok, tc.wantAdmitted)
				}
				if !e.mem.IsRunning(static.UID) {
					t.Error("the critical static pod does not run")
				}
				if e.mem.IsRunning(victim.UID) {
					t.Error("the victim still runs")
				}
				// The loop goes on: a new pod is refused, the node being full.
				e.create(newPod("late", 30, v1.RestartPolicyAlways, nil))
				e.waitPhase("late", v1.PodFailed)
				e.stop()
				if len(killErrs) > 0 {
					t.Errorf("kill errors: %v", killErrs)
				}
				mu.Lock()
				events = slices.DeleteFunc(events, func(r recorded) bool { return r.Pod == "late" })
				if diff := cmp.Diff(tc.wantEvents, events, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("recorded events (-want +got):\n%s", diff)
				}
				mu.Unlock()
			})
		})
	}
}

// Once Shutdown started, a new pod is refused with the kubelet's nodeshutdown result
// and ends Failed as any refused pod.
func TestShutdownRefusesNewPods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, nil, nil, envOpts{})
		e.create(newPod("web", 30, v1.RestartPolicyAlways, nil))
		e.waitPhase("web", v1.PodRunning)
		if err := e.n.Shutdown(context.Background(), node.ShutdownConfig{GracePeriod: 10 * time.Second}); err != nil {
			t.Fatal(err)
		}
		late := e.create(newPod("late", 30, v1.RestartPolicyAlways, nil))
		e.waitPhase("late", v1.PodFailed)
		e.stop()
		got, _ := e.api.Pod("default", "late")
		want := v1.PodStatus{Phase: v1.PodFailed, Reason: "NodeShutdown", Message: "Pod was rejected: Pod was rejected as the node is shutting down.", QOSClass: v1.PodQOSBestEffort}
		if diff := cmp.Diff(want, v1.PodStatus{Phase: got.Status.Phase, Reason: got.Status.Reason, Message: got.Status.Message, QOSClass: got.Status.QOSClass}); diff != "" {
			t.Errorf("the new pod's status (-want +got):\n%s", diff)
		}
		if n := e.rt.Count(nodetest.VerbSyncPod, late.UID); n != 0 {
			t.Errorf("%d SyncPod calls for the refused pod", n)
		}
	})
}

// A critical static pod that does not fit preempts the best-effort pod that fills the
// node through a KillFunc calling KillPod with the handler's context (the loop waits
// for the victim to stop, its whole grace period here); the victim ends
// Failed/Preempting on the server, and the critical pod runs.
func TestCriticalPodPreemptsThroughKillPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n *node.Node // the node, once started; the kill runs only after that
		kill := func(ctx context.Context, p *v1.Pod, status func(*v1.PodStatus)) error {
			return n.KillPod(ctx, p.UID, node.KillPodOptions{Status: status, Evict: true})
		}
		handler := admission.PredicateHandler(admission.PredicateConfig{Node: onePodNode,
			OnFailure: admission.CriticalPodPreemption(kill, func(p *v1.Pod, err error) { t.Errorf("preempting %s: %v", p.Name, err) })})
		e := start(t, nil, nil, envOpts{sources: []string{node.SourceAPI, "file"}, admit: []admission.Handler{handler}})
		n = e.n
		ctx := context.Background()
		if err := e.n.Update(ctx, config.PodUpdate{Op: config.Set, Source: "file"}); err != nil {
			t.Fatal(err)
		}
		victim := e.create(newPod("web", 5, v1.RestartPolicyAlways, map[string]string{nodetest.AnnotationStopDelay: "never"}))
		e.waitPhase("web", v1.PodRunning)

		static := newPod("etcd", 30, v1.RestartPolicyAlways, nil)
		static.UID = "static-etcd"
		begin := time.Now()
		if err := e.n.Update(ctx, config.PodUpdate{Op: config.Set, Source: "file", Pods: []*v1.Pod{static}}); err != nil {
			t.Fatal(err)
		}
		e.waitPod("web", func(p *v1.Pod, ok bool) bool { return ok && p.Status.Phase == v1.PodFailed })
		synctest.Wait()
		for e.rt.Count(nodetest.VerbSyncPod, static.UID) == 0 {
			time.Sleep(100 * time.Millisecond)
		}
		started := time.Since(begin)
		got, _ := e.api.Pod("default", "web")
		e.stop()
		if got.Status.Reason != admission.ReasonPreempting || got.Status.Message != admission.MessagePreempted {
			t.Errorf("victim's status: reason %q message %q, want %q %q", got.Status.Reason, got.Status.Message,
				admission.ReasonPreempting, admission.MessagePreempted)
		}
		if c := disruption(got); c == nil || c.Reason != v1.PodReasonTerminationByKubelet {
			t.Errorf("victim's DisruptionTarget condition = %+v, want reason %s", c, v1.PodReasonTerminationByKubelet)
		}
		if n := e.rt.Count(nodetest.VerbKillPod, victim.UID); n == 0 {
			t.Error("the victim was never killed")
		}
		// The victim ignores SIGTERM: the critical pod starts once its 5 s are over.
		if started < 5*time.Second {
			t.Errorf("the critical pod started %v after it arrived, before the victim's 5 s grace ran out", started)
		}
		if !e.mem.IsRunning(static.UID) {
			t.Error("the critical pod does not run")
		}
	})
}

// Once Shutdown started, a new pod is refused with the kubelet's node shutdown
// admission result, whether or not Config.Admit has handlers.
