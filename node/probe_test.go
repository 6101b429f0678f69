package node_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
)

// events collects the Kubernetes events a node records.
type events struct {
	mu   sync.Mutex
	list []string
	// on, if set, is called with each event (outside mu).
	on func(reason, message string)
}

func (r *events) Event(_ *v1.Pod, eventType, reason, message string) {
	r.mu.Lock()
	r.list = append(r.list, eventType+" "+reason+": "+message)
	on := r.on
	r.mu.Unlock()
	if on != nil {
		on(reason, message)
	}
}

// has reports whether e was recorded.
func (r *events) has(e string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.list, e)
}

func (r *events) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("%q", r.list)
}

func probe(period, failures int32) *v1.Probe {
	return &v1.Probe{PeriodSeconds: period, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: failures,
		ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
}

// podCondition returns the status of the pod's condition of type ct.
func podCondition(p *v1.Pod, ct v1.PodConditionType) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == ct {
			return c.Status
		}
	}
	return ""
}

// appStatus returns the status of the pod's container "app", nil without one.
func appStatus(p *v1.Pod) *v1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == "app" {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// Scenario: a readiness probe (period 1 s, failureThreshold 1) on a node that relists
// every 30 s. The container runs and is not ready; its first probe succeeds at once and
// the container and the pod turn Ready without waiting for the next relist; the probe
// then fails and both turn not ready within a period or two, with the kubelet's
// Unhealthy event, again without a relist.
func TestProbeReadiness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &events{}
		e := start(t, nil, nil, envOpts{recorder: rec, relistPeriod: 30 * time.Second})
		p := newPod("web", 30, v1.RestartPolicyAlways, nil)
		p.Spec.Containers[0].ReadinessProbe = probe(1, 1)
		p = e.create(p)
		e.waitPod("web", func(p *v1.Pod, ok bool) bool { cs := appStatus(p); return ok && cs != nil && cs.State.Running != nil })
		running := time.Now()
		e.waitPod("web", func(p *v1.Pod, ok bool) bool {
			return ok && appStatus(p).Ready && podCondition(p, v1.PodReady) == v1.ConditionTrue
		})
		if took := time.Since(running); took > 2*time.Second {
			t.Errorf("ready %v after running, want within 2 s (no relist)", took)
		}
		e.rt.SetProbe(p.UID, "app", node.ProbeReadiness, nodetest.ProbeAnswer{Result: node.ProbeFailure, Output: "HTTP probe failed with statuscode: 500"})
		failing := time.Now()
		e.waitPod("web", func(p *v1.Pod, ok bool) bool {
			return ok && !appStatus(p).Ready && podCondition(p, v1.PodReady) == v1.ConditionFalse &&
				podCondition(p, v1.ContainersReady) == v1.ConditionFalse
		})
		if took := time.Since(failing); took > 3*time.Second {
			t.Errorf("not ready %v after the probe failed, want within 3 s (no relist)", took)
		}
		if want := "Warning Unhealthy: Readiness probe failed: HTTP probe failed with statuscode: 500"; !rec.has(want) {
			t.Errorf("events %v, want %q", rec, want)
		}
		if got, _ := e.api.Pod("default", "web"); appStatus(got).RestartCount != 0 {
			t.Errorf("restartCount %d, want 0: a readiness failure restarts nothing", appStatus(got).RestartCount)
		}
		e.stop()
	})
}

// Scenario: a liveness probe (period 1 s, failureThreshold 1, its own
// terminationGracePeriodSeconds 3 in a pod of 30) fails with "boom". The node records
// the kubelet's Unhealthy event, kills exactly that container with the probe's grace
// (Killing "Container app failed liveness probe, will be restarted") and the runtime
// starts it again: restartCount 1. The new instance's liveness starts afresh at Success
// (the probe answers success again) and nothing more is restarted. A readiness probe
// with initialDelaySeconds 5 shows the results reset with the instance: the restarted
// container is not ready until its own delay passed.
func TestProbeLiveness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &events{}
		var e *env
		var uid types.UID
		var mu sync.Mutex
		var killedAt time.Time
		rec.on = func(reason, _ string) {
			if reason == node.ReasonKilling {
				// The kill's own Killing event: the probe passes from now on.
				e.rt.SetProbe(uid, "app", node.ProbeLiveness, nodetest.ProbeAnswer{Result: node.ProbeSuccess})
				mu.Lock()
				killedAt = time.Now()
				mu.Unlock()
			}
		}
		e = start(t, nil, nil, envOpts{recorder: rec})
		p := newPod("web", 30, v1.RestartPolicyAlways, nil)
		live := probe(1, 1)
		live.TerminationGracePeriodSeconds = ptr.To[int64](3)
		p.Spec.Containers[0].LivenessProbe = live
		ready := probe(1, 1)
		ready.InitialDelaySeconds = 5
		p.Spec.Containers[0].ReadinessProbe = ready
		p = e.create(p)
		uid = p.UID
		e.waitPod("web", func(p *v1.Pod, ok bool) bool { return ok && podCondition(p, v1.PodReady) == v1.ConditionTrue })
		e.rt.SetProbe(p.UID, "app", node.ProbeLiveness, nodetest.ProbeAnswer{Result: node.ProbeFailure, Output: "boom"})
		e.waitPod("web", func(p *v1.Pod, ok bool) bool {
			cs := appStatus(p)
			return ok && cs.RestartCount == 1 && cs.State.Running != nil
		})
		restarted, _ := e.api.Pod("default", "web")
		if appStatus(restarted).Ready || podCondition(restarted, v1.PodReady) != v1.ConditionFalse {
			t.Errorf("restarted container ready at once, want readiness reset until its initial delay")
		}
		e.waitPod("web", func(p *v1.Pod, ok bool) bool { return ok && podCondition(p, v1.PodReady) == v1.ConditionTrue })
		mu.Lock()
		if took := time.Since(killedAt); took < 5*time.Second {
			t.Errorf("ready again %v after the kill, want after the new instance's 5 s initial delay", took)
		}
		mu.Unlock()
		time.Sleep(10 * time.Second)
		e.stop()
		got, _ := e.api.Pod("default", "web")
		if n := appStatus(got).RestartCount; n != 1 {
			t.Errorf("restartCount %d, want 1", n)
		}
		for _, want := range []string{
			"Warning Unhealthy: Liveness probe failed: boom",
			"Normal Killing: Container app failed liveness probe, will be restarted",
		} {
			if !rec.has(want) {
				t.Errorf("events %v, want %q", rec, want)
			}
		}
		var kills []nodetest.Action
		for _, a := range e.rt.Actions() {
			if a.Verb == nodetest.VerbKillContainer {
				kills = append(kills, a)
			}
		}
		if want := []nodetest.Action{{Verb: nodetest.VerbKillContainer, UID: p.UID, GracePeriod: 3, Container: "app"}}; !slices.Equal(kills, want) {
			t.Errorf("kills %+v, want %+v (the probe's terminationGracePeriodSeconds)", kills, want)
		}
		if n := e.rt.Count(nodetest.VerbKillPod, ""); n != 0 {
			t.Errorf("%d KillPod calls, want none: only the container is killed", n)
		}
	})
}

// Scenario: a startup probe (period 1 s, failureThreshold 30) holds the liveness and
// readiness probes back: while it fails the container is running but neither started
// nor ready and no liveness or readiness probe runs; once it succeeds the container is
// Started, and the other probes run and make it ready. A pod with restartPolicy Never
// whose startup probe fails for good has its container killed without ", will be
// restarted", and not started again.
func TestProbeStartup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &events{}
		e := start(t, nil, nil, envOpts{recorder: rec})
		p := newPod("web", 30, v1.RestartPolicyAlways, nil)
		p.Spec.Containers[0].StartupProbe = probe(1, 30)
		p.Spec.Containers[0].LivenessProbe = probe(1, 1)
		p.Spec.Containers[0].ReadinessProbe = probe(1, 1)
		created, err := e.api.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		e.rt.SetProbe(created.UID, "app", node.ProbeStartup, nodetest.ProbeAnswer{Result: node.ProbeFailure, Output: "not yet"})
		e.waitPod("web", func(p *v1.Pod, ok bool) bool { cs := appStatus(p); return ok && cs != nil && cs.State.Running != nil })
		time.Sleep(10 * time.Second)
		got, _ := e.api.Pod("default", "web")
		if cs := appStatus(got); cs.Started == nil || *cs.Started || cs.Ready {
			t.Errorf("while the startup probe fails: started %v, ready %v; want false, false", ptr.Deref(cs.Started, true), cs.Ready)
		}
		if n, l, r := e.rt.ProbeCount(created.UID, "app", node.ProbeStartup), e.rt.ProbeCount(created.UID, "app", node.ProbeLiveness),
			e.rt.ProbeCount(created.UID, "app", node.ProbeReadiness); n < 9 || l != 0 || r != 0 {
			t.Errorf("probes run: startup %d, liveness %d, readiness %d; want about 10, 0, 0", n, l, r)
		}
		e.rt.SetProbe(created.UID, "app", node.ProbeStartup, nodetest.ProbeAnswer{Result: node.ProbeSuccess})
		e.waitPod("web", func(p *v1.Pod, ok bool) bool {
			cs := appStatus(p)
			return ok && ptr.Deref(cs.Started, false) && cs.Ready && podCondition(p, v1.PodReady) == v1.ConditionTrue
		})
		// Liveness and readiness both become due once startup succeeded; readiness may
		// have made the pod ready before liveness's first run, which comes within a period.
		time.Sleep(2 * time.Second)
		if l := e.rt.ProbeCount(created.UID, "app", node.ProbeLiveness); l == 0 {
			t.Errorf("liveness never ran within a period after the startup probe succeeded")
		}
		if !rec.has("Warning Unhealthy: Startup probe failed: not yet") {
			t.Errorf("events %v, want the startup probe's Unhealthy", rec)
		}

		never := newPod("once", 30, v1.RestartPolicyNever, nil)
		never.Spec.Containers[0].StartupProbe = probe(1, 3)
		never, err = e.api.Create(never)
		if err != nil {
			t.Fatal(err)
		}
		e.rt.SetProbe(never.UID, "app", node.ProbeStartup, nodetest.ProbeAnswer{Result: node.ProbeFailure, Output: "dead"})
		e.waitPod("once", func(p *v1.Pod, ok bool) bool {
			return ok && (p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed)
		})
		time.Sleep(5 * time.Second)
		e.stop()
		if want := "Normal Killing: Container app failed startup probe"; !rec.has(want) {
			t.Errorf("events %v, want %q", rec, want)
		}
		if got, _ := e.api.Pod("default", "once"); appStatus(got).RestartCount != 0 {
			t.Errorf("restartPolicy Never: restartCount %d, want 0", appStatus(got).RestartCount)
		}
	})
}

// A Runtime that does not implement node.Prober runs no probe: a container with a
// readiness probe is never ready, one with a startup probe never started
// (GenerateOptions.ProbeResult nil), as before the prober.
func TestProbeWithoutProber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, nil, nil, envOpts{wrap: func(r node.Runtime) node.Runtime { return struct{ node.Runtime }{r} }})
		p := newPod("web", 30, v1.RestartPolicyAlways, nil)
		p.Spec.Containers[0].ReadinessProbe = probe(1, 1)
		p.Spec.Containers[0].StartupProbe = probe(1, 1)
		e.create(p)
		e.waitPhase("web", v1.PodRunning)
		time.Sleep(10 * time.Second)
		e.stop()
		got, _ := e.api.Pod("default", "web")
		if cs := appStatus(got); cs.Ready || ptr.Deref(cs.Started, true) {
			t.Errorf("ready %v, started %v; want false, false without a Prober", cs.Ready, ptr.Deref(cs.Started, true))
		}
		if n := e.rt.ProbeCount(got.UID, "app", node.ProbeReadiness); n != 0 {
			t.Errorf("%d probes run, want none", n)
		}
	})
}
