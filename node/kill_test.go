package node_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/podworker"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// evictionStatus is a status function as the kubelet's eviction manager's.
func evictionStatus(pod *v1.Pod) func(*v1.PodStatus) {
	return func(s *v1.PodStatus) {
		s.Phase = v1.PodFailed
		s.Reason, s.Message = "Evicted", "The node was low on resource: memory."
		node.SetDisruptionTarget(s, node.DisruptionReasonTerminationByKubelet, "The node was low on resource: memory.", pod.Generation)
	}
}

// disruption returns the pod's DisruptionTarget condition, or nil.
func disruption(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.DisruptionTarget {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// ended is what the server shows of a pod a status function ended.
type ended struct {
	Phase                       v1.PodPhase
	Reason, Message             string
	DisruptionStatus            v1.ConditionStatus
	DisruptionReason, DisMsg    string
	DisruptionTransitionStamped bool
}

func endedOf(p *v1.Pod) ended {
	e := ended{Phase: p.Status.Phase, Reason: p.Status.Reason, Message: p.Status.Message}
	if c := disruption(p); c != nil {
		e.DisruptionStatus, e.DisruptionReason, e.DisMsg = c.Status, c.Reason, c.Message
		e.DisruptionTransitionStamped = !c.LastTransitionTime.IsZero()
	}
	return e
}

// KillPod with a status function (an eviction): it returns once the containers stopped,
// the runtime kills with the override, the server gets the function's phase, reason,
// message and DisruptionTarget (although the containers exited 0, which alone makes the
// pod Succeeded), the pod is never started again while its source still lists it, and
// the final delete, after a graceful delete, carries that status.
func TestKillPodStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, nil, nil, envOpts{containers: nodetest.ContainerBehaviour{StopDelay: 2 * time.Second}})
		p := e.create(newPod("web", 30, v1.RestartPolicyAlways, nil))
		e.waitPhase("web", v1.PodRunning)
		var final *v1.Pod
		e.api.SetObserver(func(c statusmgrtest.Change) {
			if c.Verb == "final-delete" || c.Verb == "delete" {
				final = c.Pod // the API server deletes a terminal pod at once
			}
		})
		begin := time.Now()
		if err := e.n.KillPod(context.Background(), p.UID, node.KillPodOptions{GracePeriodOverride: ptr.To(int64(5)),
			Status: evictionStatus(p), Evict: true}); err != nil {
			t.Fatalf("KillPod: %v", err)
		}
		if took := time.Since(begin); took != 2*time.Second {
			t.Errorf("KillPod returned after %v, want when the containers stopped (2s)", took)
		}
		want := ended{Phase: v1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory.",
			DisruptionStatus: v1.ConditionTrue, DisruptionReason: "TerminationByKubelet", DisMsg: "The node was low on resource: memory.",
			DisruptionTransitionStamped: true}
		e.waitPod("web", func(p *v1.Pod, ok bool) bool { return ok && p.Status.Phase != v1.PodRunning })
		syncs := e.rt.Count(nodetest.VerbSyncPod, p.UID)
		time.Sleep(3 * time.Minute) // resyncs, housekeeping, status syncs
		synctest.Wait()
		got, _ := e.api.Pod("default", "web")
		if diff := cmp.Diff(want, endedOf(got)); diff != "" {
			t.Errorf("the server's status after the kill (-want +got):\n%s", diff)
		}
		if n := e.rt.Count(nodetest.VerbSyncPod, p.UID); n != syncs {
			t.Errorf("SyncPod called %d times after the kill: the killed pod was started again", n-syncs)
		}
		if e.api.Counts().Deletes != 0 {
			t.Error("the pod was deleted without a graceful delete")
		}
		if err := e.api.Delete("default", "web", nil); err != nil {
			t.Fatal(err)
		}
		e.waitGone("web")
		e.stop()
		if final == nil {
			t.Fatal("no final delete")
		}
		if diff := cmp.Diff(want, endedOf(final)); diff != "" {
			t.Errorf("the status at the final delete (-want +got):\n%s", diff)
		}
		kills := grace(e.rt.Actions(), nodetest.VerbKillPod)
		if diff := cmp.Diff([]int64{5}, kills); diff != "" {
			t.Errorf("the runtime's KillPod grace periods (-want +got):\n%s", diff)
		}
	})
}

// grace returns the grace periods of the actions of verb, in order.
func grace(actions []nodetest.Action, verb string) []int64 {
	var out []int64
	for _, a := range actions {
		if a.Verb == verb {
			out = append(out, a.GracePeriod)
		}
	}
	return out
}

// A second KillPod may only shorten the grace period: a longer override changes
// nothing, a shorter one restarts the kill with it; every call returns once the
// containers stopped.
func TestKillPodOnlyShortens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, nil, nil, envOpts{containers: nodetest.ContainerBehaviour{StopDelay: -1}}) // killed at the end of the grace
		p := e.create(newPod("web", 30, v1.RestartPolicyAlways, nil))
		e.waitPhase("web", v1.PodRunning)
		begin := time.Now()
		var wg sync.WaitGroup
		returned := make([]time.Duration, 3)
		kill := func(i int, after time.Duration, override int64) {
			wg.Go(func() {
				time.Sleep(after)
				if err := e.n.KillPod(context.Background(), p.UID, node.KillPodOptions{GracePeriodOverride: &override}); err != nil {
					t.Errorf("KillPod %d: %v", i, err)
				}
				returned[i] = time.Since(begin)
			})
		}
		kill(0, 0, 20)
		kill(1, time.Second, 25)
		kill(2, 2*time.Second, 5)
		wg.Wait()
		e.stop()
		if diff := cmp.Diff([]int64{20, 5}, grace(e.rt.Actions(), nodetest.VerbKillPod)); diff != "" {
			t.Errorf("the runtime's KillPod grace periods (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]time.Duration{7 * time.Second, 7 * time.Second, 7 * time.Second}, returned); diff != "" {
			t.Errorf("KillPod returned after (-want +got):\n%s", diff)
		}
	})
}

// KillPod's errors: bad input, unknown pods, a context that ends before or during the
// kill, and a node that stopped; a pod already stopped returns at once.
func TestKillPodErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, nil, nil, envOpts{containers: nodetest.ContainerBehaviour{StopDelay: -1}})
		p := e.create(newPod("web", 30, v1.RestartPolicyAlways, nil))
		done := e.create(newPod("job", 30, v1.RestartPolicyNever, map[string]string{nodetest.AnnotationRunFor: "1s"}))
		e.waitPhase("web", v1.PodRunning)
		e.waitPhase("job", v1.PodSucceeded)
		ctx := context.Background()
		for _, tc := range []struct {
			name string
			uid  string
			opts node.KillPodOptions
			want error
		}{
			{name: "empty UID", want: node.ErrEmptyUID},
			{name: "unknown pod", uid: "nope", want: node.ErrUnknownPod},
			{name: "negative grace", uid: string(p.UID), opts: node.KillPodOptions{GracePeriodOverride: ptr.To(int64(-1))}, want: podworker.ErrNegativeGracePeriod},
		} {
			if err := e.n.KillPod(ctx, types.UID(tc.uid), tc.opts); !errors.Is(err, tc.want) {
				t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
			}
		}
		begin := time.Now()
		if err := e.n.KillPod(ctx, done.UID, node.KillPodOptions{}); err != nil || time.Since(begin) != 0 {
			t.Errorf("a stopped pod: err = %v after %v, want nil at once", err, time.Since(begin))
		}
		tctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := e.n.KillPod(tctx, p.UID, node.KillPodOptions{GracePeriodOverride: ptr.To(int64(10))})
		cancel()
		if !errors.Is(err, node.ErrKillPending) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a context ending during the kill: err = %v, want ErrKillPending and DeadlineExceeded", err)
		}
		e.waitPod("web", func(p *v1.Pod, ok bool) bool { return ok && p.Status.Phase == v1.PodFailed })
		if took := time.Since(begin); took != 10*time.Second {
			t.Errorf("the pod stopped after %v, want 10s: the kill went on", took)
		}
		e.stop()
		if err := e.n.KillPod(ctx, p.UID, node.KillPodOptions{}); !errors.Is(err, node.ErrStopped) {
			t.Errorf("after Run: err = %v, want ErrStopped", err)
		}
	})
}

// Before Run, KillPod waits for the loop, or for its context.
func TestKillPodBeforeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, err := node.New(node.Config{NodeName: nodeName, Runtime: nodetest.NewRuntime(nil, nodetest.ContainerBehaviour{}), Patcher: statusmgrtest.NewFakeAPI()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := n.KillPod(ctx, "x", node.KillPodOptions{}); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, node.ErrKillPending) {
			t.Errorf("err = %v, want DeadlineExceeded without ErrKillPending", err)
		}
	})
}

// Graceful node shutdown kills the non-critical pods first, each with its group's
// period or its own shorter grace, waits the group's period at most, then the critical
// pods; every pod ends Failed with the kubelet's shutdown status on the server.
func TestShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var kills *killTimes
		e := start(t, nil, nil, envOpts{containers: nodetest.ContainerBehaviour{StopDelay: time.Second},
			wrap: func(rt node.Runtime) node.Runtime { kills = &killTimes{Runtime: rt, start: time.Now()}; return kills }})
		critical := newPod("critical", 30, v1.RestartPolicyAlways, nil)
		critical.Spec.Priority = ptr.To(node.SystemCriticalPriority)
		stubborn := newPod("stubborn", 60, v1.RestartPolicyAlways, map[string]string{nodetest.AnnotationStopDelay: "never"})
		quick := newPod("quick", 3, v1.RestartPolicyAlways, nil)
		for _, p := range []*v1.Pod{critical, stubborn, quick} {
			e.create(p)
		}
		for _, name := range []string{"critical", "stubborn", "quick"} {
			e.waitPhase(name, v1.PodRunning)
		}
		begin := time.Now()
		kills.mu.Lock()
		kills.start = begin
		kills.mu.Unlock()
		err := e.n.Shutdown(context.Background(), node.ShutdownConfig{GracePeriod: 30 * time.Second, GracePeriodCriticalPods: 10 * time.Second})
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		e.mu.Lock()
		for _, ev := range e.events {
			if ev.Kind == node.EventError {
				t.Errorf("error event %s %s: %v", ev.PodName(), ev.Reason, ev.Err)
			}
		}
		e.mu.Unlock()
		if took := time.Since(begin); took != 21*time.Second {
			t.Errorf("Shutdown took %v, want 21s (20s for the stubborn pod's group, 1s for the critical pod to stop)", took)
		}
		for _, name := range []string{"critical", "stubborn", "quick"} {
			e.waitPod(name, func(p *v1.Pod, ok bool) bool { return ok && p.Status.Phase == v1.PodFailed && disruption(p) != nil })
		}
		got := map[string]ended{}
		for _, name := range []string{"critical", "stubborn", "quick"} {
			p, _ := e.api.Pod("default", name)
			got[name] = endedOf(p)
		}
		e.stop()
		sd := ended{Phase: v1.PodFailed, Reason: "Terminated", Message: "Pod was terminated in response to imminent node shutdown.",
			DisruptionStatus: v1.ConditionTrue, DisruptionReason: "TerminationByKubelet",
			DisMsg: "Pod was terminated in response to imminent node shutdown.", DisruptionTransitionStamped: true}
		if diff := cmp.Diff(map[string]ended{"critical": sd, "stubborn": sd, "quick": sd}, got); diff != "" {
			t.Errorf("the server's statuses (-want +got):\n%s", diff)
		}
		want := []killAt{{"quick", 3, 0}, {"stubborn", 20, 0}, {"critical", 10, 20 * time.Second}}
		gotKills := kills.list()
		slices.SortStableFunc(gotKills, func(a, b killAt) int { return int(a.At - b.At) })
		if len(want) != len(gotKills) || !sameKills(want, gotKills) {
			diff := cmp.Diff(want, gotKills)
			t.Errorf("the runtime's kills (-want +got):\n%s", diff)
		}
	})
}

// sameKills compares kills regardless of the order of kills at the same instant.
func sameKills(a, b []killAt) bool {
	for _, k := range a {
		if !slices.Contains(b, k) {
			return false
		}
	}
	return true
}

type killAt struct {
	Name  string
	Grace int64
	At    time.Duration
}

// killTimes records the runtime's KillPod calls and when they came.
type killTimes struct {
	node.Runtime
	mu    sync.Mutex
	start time.Time
	kills []killAt
}

func (k *killTimes) KillPod(ctx context.Context, pod *v1.Pod, rs *pleg.PodStatus, grace int64) error {
	k.mu.Lock()
	k.kills = append(k.kills, killAt{pod.Name, grace, time.Since(k.start)})
	k.mu.Unlock()
	return k.Runtime.KillPod(ctx, pod, rs, grace)
}

func (k *killTimes) list() []killAt {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.kills)
}
