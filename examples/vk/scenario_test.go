package vk_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/vk"
	"github.com/podlife/podlife/examples/vk/vktest"
	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// The scenarios replay virtual-kubelet's lifecycle issues on the in-memory API server,
// inside a synctest bubble (virtual time; every goroutine must have ended when a test
// does), against both kinds of provider: one polled for its statuses and one that
// notifies them (NotifyPods).

// log is the ordered record of one scenario: the provider's calls that change pods and
// the agent's steps that reach the API server.
type log struct {
	mu    sync.Mutex
	lines []string
	at    []time.Time
}

func (l *log) add(line string) {
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.at = append(l.at, time.Now())
	l.mu.Unlock()
}

func (l *log) providerCall(c vktest.Call) {
	switch c.Verb {
	case vktest.Create, vktest.Update, vktest.Delete:
		l.add(fmt.Sprintf("provider %s %s %s", c.Verb, c.UID, errText(c.Err)))
	}
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return "error"
}

func (l *log) step(s agent.Step) {
	switch s.Kind {
	case agent.KindStatus, agent.KindDelete:
		d := s.Detail
		if i := strings.Index(d, " ("); i >= 0 {
			d = d[:i]
		}
		l.add(fmt.Sprintf("%s %s %s", s.Kind, s.UID, d))
	}
}

// index returns the position and time of the first line containing every part, or -1.
func (l *log) index(parts ...string) (int, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
next:
	for i, line := range l.lines {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		return i, l.at[i]
	}
	return -1, time.Time{}
}

func (l *log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// ordered fails the test unless each of the lines (given as parts to match) is in the
// log, in this order.
func (l *log) ordered(t *testing.T, lines ...[]string) {
	t.Helper()
	last := -1
	for _, parts := range lines {
		i, _ := l.index(parts...)
		if i < 0 {
			t.Fatalf("no line with %q in the log:\n%s", parts, l)
		}
		if i < last {
			t.Fatalf("line with %q comes too early in the log:\n%s", parts, l)
		}
		last = i
	}
}

type providerKind struct {
	name   string
	notify bool
}

var providers = []providerKind{{"polled", false}, {"notifying", true}}

// eachProvider runs the scenario once per kind of provider, each in its own synctest
// bubble.
func eachProvider(t *testing.T, scenario func(t *testing.T, kind providerKind)) {
	for _, kind := range providers {
		t.Run(kind.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { scenario(t, kind) })
		})
	}
}

// env is one scenario's API server, provider and log; agents come and go.
type env struct {
	t        *testing.T
	server   *statusmgrtest.FakeAPI
	provider *vktest.Provider
	handler  node.PodLifecycleHandler
	log      *log
	events   events
	// filter, if set, is the agents' pod filter (vk.FilterSource).
	filter func(*v1.Pod) bool
	// envSrc, if set, is the adapters' EnvSource.
	envSrc *mapEnv
}

// events are the warning and normal events the agent and the adapter recorded.
type events struct {
	mu    sync.Mutex
	lines []string
}

func (ev *events) Event(pod *v1.Pod, eventType, reason, message string) {
	ev.mu.Lock()
	ev.lines = append(ev.lines, fmt.Sprintf("%s %s %s %s: %s", pod.UID, eventType, reason, pod.Name, message))
	ev.mu.Unlock()
}

// find returns the first event containing every part, or "".
func (ev *events) find(parts ...string) string {
	ev.mu.Lock()
	defer ev.mu.Unlock()
next:
	for _, l := range ev.lines {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue next
			}
		}
		return l
	}
	return ""
}

func newEnv(t *testing.T, kind providerKind, cfg vktest.Config) *env {
	e := &env{t: t, server: statusmgrtest.NewFakeAPI(), log: &log{}}
	cfg.Observer = e.log.providerCall
	e.setProvider(kind, cfg)
	return e
}

func (e *env) setProvider(kind providerKind, cfg vktest.Config) {
	cfg.Observer = e.log.providerCall
	e.provider, e.handler = vktest.NewHandler(cfg, kind.notify)
}

// running is an agent running the env's provider.
type running struct {
	agent  *agent.Agent
	cancel context.CancelFunc
	done   chan error
}

// start starts an agent over the env's provider; patcher, if set, replaces the server
// for status writes.
func (e *env) start(patcher statusmgr.StatusPatcher) *running {
	e.t.Helper()
	acfg := vk.AdapterConfig{Provider: e.handler, Recorder: &e.events}
	if e.envSrc != nil {
		acfg.Env = e.envSrc
	}
	ad, err := vk.NewAdapter(acfg)
	if err != nil {
		e.t.Fatal(err)
	}
	a, err := vk.NewAgent(agent.Config{Server: e.server, Source: vk.FilterSource(agent.WatchSource(e.server), e.filter), Patcher: patcher, Recorder: &e.events, Observer: func(s agent.Step) {
		e.log.step(s)
		if debug {
			e.t.Log(s)
		}
	}}, ad)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{agent: a, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	return r
}

func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	if err := <-r.done; err != nil {
		t.Fatalf("agent.Run: %v", err)
	}
}

func (e *env) create(name string, grace int64, policy v1.RestartPolicy) *v1.Pod {
	e.t.Helper()
	p, err := e.server.Create(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{NodeName: agent.DefaultNodeName, RestartPolicy: policy, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) delete(name string, grace *int64) {
	e.t.Helper()
	if err := e.server.Delete("default", name, grace); err != nil {
		e.t.Fatal(err)
	}
}

// waitFor waits until cond holds for the pod (nil: no such pod).
func (e *env) waitFor(name string, cond func(*v1.Pod) bool) {
	e.t.Helper()
	err := e.server.WaitForPods(context.Background(), func(p map[types.NamespacedName]*v1.Pod) bool {
		return cond(p[types.NamespacedName{Namespace: "default", Name: name}])
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func phaseIs(ph v1.PodPhase) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool { return p != nil && p.Status.Phase == ph }
}

func gone(p *v1.Pod) bool { return p == nil }

func (e *env) pod(name string) *v1.Pod {
	p, _ := e.server.Pod("default", name)
	return p
}

var debug = false

func ptr[T any](v T) *T { return &v }

// finalStatus returns the status the pod had when the agent deleted it.
func (e *env) finalStatus(uid types.UID) *v1.PodStatus {
	e.t.Helper()
	for _, p := range e.server.DeletedPods() {
		if p.UID == uid {
			return &p.Status
		}
	}
	e.t.Fatalf("pod %s was not deleted", uid)
	return nil
}

// wantFinal checks the final status: the provider's own when it notified it (Succeeded,
// the containers terminated by DeletePod), else the kubelet's verdict for containers
// whose end nobody reported (Failed, ContainerStatusUnknown).
func (e *env) wantFinal(kind providerKind, uid types.UID) {
	e.t.Helper()
	st := e.finalStatus(uid)
	wantPhase, wantReason := v1.PodFailed, statusmgr.ReasonContainerStatusUnknown
	if kind.notify {
		wantPhase, wantReason = v1.PodSucceeded, vktest.ReasonDeleted
	}
	if st.Phase != wantPhase || len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Terminated == nil ||
		st.ContainerStatuses[0].State.Terminated.Reason != wantReason {
		e.t.Errorf("final status: phase %s, containers %+v; want %s with a container terminated (%s)",
			st.Phase, st.ContainerStatuses, wantPhase, wantReason)
	}
}

// TestLifecycle: a pod is created in the provider, runs, and a graceful delete ends with
// DeletePod, the terminal status on the server, then the single final delete, at once
// (not at the end of the grace period, as virtual-kubelet's force-delete timer does).
func TestLifecycle(t *testing.T) {
	eachProvider(t, func(t *testing.T, kind providerKind) {
		e := newEnv(t, kind, vktest.Config{})
		r := e.start(nil)
		p := e.create("web", 30, v1.RestartPolicyAlways)
		e.waitFor("web", phaseIs(v1.PodRunning))
		deleted := time.Now()
		e.delete("web", nil)
		e.waitFor("web", gone)
		if took := time.Since(deleted); took > time.Second {
			t.Errorf("the object went %v after the delete, want at once", took)
		}
		r.stop(t)
		uid := string(p.UID)
		e.log.ordered(t,
			[]string{"provider CreatePod", uid, "ok"},
			[]string{"status", uid, "phase Running"},
			[]string{"provider DeletePod", uid, "ok"},
			[]string{"status", uid, "phase " + string(e.finalStatus(p.UID).Phase)},
			[]string{"delete", uid})
		e.wantFinal(kind, p.UID)
		if n := e.provider.CountFor(p.UID, vktest.Create); n != 1 {
			t.Errorf("CreatePod calls = %d, want 1", n)
		}
		// With a provider that notifies, the statuses come from its notifications: one
		// GetPod before CreatePod (does it hold the pod already?), one after DeletePod.
		if n := e.provider.Count(vktest.Get); kind.notify && n != 2 {
			t.Errorf("GetPod calls = %d, want 2", n)
		}
		if c := e.server.Counts(); c.Deletes != 1 {
			t.Errorf("final deletes = %d, want 1", c.Deletes)
		}
	})
}

// TestGracefulDeleteKeepsObject (virtual-kubelet #587, #681, #690): the object stays,
// with its deletionTimestamp, while the provider stops the pod (5 s), and goes as soon as
// the provider has stopped it and the terminal status is written; a provider that never
// stops the pod gets the whole grace period (30 s) before the object goes.
func TestGracefulDeleteKeepsObject(t *testing.T) {
	eachProvider(t, func(t *testing.T, kind providerKind) {
		e := newEnv(t, kind, vktest.Config{StopDelay: 5 * time.Second})
		r := e.start(nil)
		p := e.create("web", 30, v1.RestartPolicyAlways)
		e.waitFor("web", phaseIs(v1.PodRunning))
		deleted := time.Now()
		e.delete("web", nil)
		time.Sleep(4900 * time.Millisecond)
		if cur := e.pod("web"); cur == nil || cur.DeletionTimestamp == nil || cur.Status.Phase != v1.PodRunning {
			t.Fatalf("4.9 s into a 5 s stop the object is %+v, want it Running with a deletionTimestamp", cur)
		}
		if e.provider.CountFor(p.UID, vktest.Delete) == 0 {
			t.Fatal("DeletePod not called 4.9 s after the delete")
		}
		e.waitFor("web", gone)
		took := time.Since(deleted)
		// The notifying provider's stop is seen at once; the polled one's at the next
		// poll (1 s).
		if took < 5*time.Second || took > 6*time.Second {
			t.Errorf("the object went %v after the delete, want 5-6 s (when the provider stopped the pod)", took)
		}
		e.wantFinal(kind, p.UID)
		uid := string(p.UID)
		synctest.Wait() // the agent's observer has logged the final delete the server saw
		e.log.ordered(t, []string{"provider DeletePod", uid}, []string{"status", uid, "phase " + string(e.finalStatus(p.UID).Phase)}, []string{"delete", uid})

		// A pod that ignores DeletePod: the object stays the whole grace period.
		e.setProvider(kind, vktest.Config{StopDelay: -1})
		r.stop(t)
		r = e.start(nil)
		q := e.create("stuck", 30, v1.RestartPolicyAlways)
		e.waitFor("stuck", phaseIs(v1.PodRunning))
		deleted = time.Now()
		e.delete("stuck", nil)
		time.Sleep(29 * time.Second)
		if cur := e.pod("stuck"); cur == nil || cur.Status.Phase != v1.PodRunning {
			t.Fatalf("29 s into the grace period the object is %+v, want it Running", cur)
		}
		e.waitFor("stuck", gone)
		if took := time.Since(deleted); took < 30*time.Second || took > 31*time.Second {
			t.Errorf("the unstopped pod's object went %v after the delete, want at the end of the 30 s grace period", took)
		}
		st := e.finalStatus(q.UID)
		if st.Phase != v1.PodFailed || st.ContainerStatuses[0].State.Terminated == nil {
			t.Errorf("final status of the unstopped pod: %s %+v, want Failed with the container terminated", st.Phase, st.ContainerStatuses)
		}
		r.stop(t)
	})
}

// TestDeletedBeforeRunning (virtual-kubelet #989): a pod deleted before it ran still
// reaches the provider's DeletePod: one deleted while the agent was down (never created
// in the provider), and one deleted while the provider was still starting it.
func TestDeletedBeforeRunning(t *testing.T) {
	eachProvider(t, func(t *testing.T, kind providerKind) {
		e := newEnv(t, kind, vktest.Config{StartDelay: 10 * time.Second})
		early := e.create("early", 30, v1.RestartPolicyAlways)
		e.delete("early", nil)
		r := e.start(nil)
		e.waitFor("early", gone)
		if n := e.provider.CountFor(early.UID, vktest.Delete); n == 0 {
			t.Error("the pod deleted before the agent started never reached DeletePod")
		}
		if n := e.provider.CountFor(early.UID, vktest.Create); n != 0 {
			t.Errorf("the pod deleted before the agent started was created %d time(s)", n)
		}

		late := e.create("late", 30, v1.RestartPolicyAlways)
		e.waitFor("late", func(p *v1.Pod) bool { return e.provider.CountFor(late.UID, vktest.Create) == 1 })
		time.Sleep(2 * time.Second)
		if cur := e.pod("late"); cur == nil || cur.Status.Phase != v1.PodPending {
			t.Fatalf("the starting pod is %+v, want Pending", cur)
		}
		e.delete("late", nil)
		e.waitFor("late", gone)
		r.stop(t)
		uid := string(late.UID)
		e.log.ordered(t, []string{"provider CreatePod", uid}, []string{"provider DeletePod", uid, "ok"},
			[]string{"status", uid, "phase " + string(e.finalStatus(late.UID).Phase)}, []string{"delete", uid})
		if _, ok := e.provider.Has("default", "late"); ok {
			t.Error("the provider still holds the pod deleted while starting")
		}
	})
}

// failingPatcher fails the first `failures` status patches that carry a terminal phase.
type failingPatcher struct {
	*statusmgrtest.FakeAPI
	mu       sync.Mutex
	failures int
	failed   int
}

func (f *failingPatcher) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
	terminal := strings.Contains(string(patch), `"phase":"Succeeded"`) || strings.Contains(string(patch), `"phase":"Failed"`)
	f.mu.Lock()
	fail := terminal && f.failed < f.failures
	if fail {
		f.failed++
	}
	f.mu.Unlock()
	if fail {
		return nil, apierrors.NewInternalError(fmt.Errorf("injected failure of a terminal status patch"))
	}
	return f.FakeAPI.PatchPodStatus(ctx, namespace, name, patch)
}

func (f *failingPatcher) failedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// TestTerminalStatusRetried (virtual-kubelet #712): a terminal status whose first writes
// fail is retried until it is on the server: for a pod whose containers exit on their
// own (restartPolicy Never: the object stays, Succeeded), and for a graceful delete (the
// object goes only once the terminal phase is on the server).
func TestTerminalStatusRetried(t *testing.T) {
	eachProvider(t, func(t *testing.T, kind providerKind) {
		e := newEnv(t, kind, vktest.Config{RunFor: 3 * time.Second})
		fp := &failingPatcher{FakeAPI: e.server, failures: 2}
		r := e.start(fp)
		job := e.create("job", 30, v1.RestartPolicyNever)
		e.waitFor("job", phaseIs(v1.PodSucceeded))
		if fp.failedCount() != 2 {
			t.Errorf("%d terminal patches failed, want 2", fp.failedCount())
		}
		time.Sleep(time.Minute)
		if cur := e.pod("job"); cur == nil || cur.Status.Phase != v1.PodSucceeded {
			t.Fatalf("a minute after it finished the job is %+v, want it kept, Succeeded", cur)
		}
		if n := e.provider.CountFor(job.UID, vktest.Create); n != 1 {
			t.Errorf("CreatePod calls for the job = %d, want 1", n)
		}
		r.stop(t)

		e.setProvider(kind, vktest.Config{})
		fp.mu.Lock()
		fp.failures, fp.failed = 2, 0
		fp.mu.Unlock()
		r = e.start(fp)
		web := e.create("web", 30, v1.RestartPolicyAlways)
		e.waitFor("web", phaseIs(v1.PodRunning))
		e.delete("web", nil)
		e.waitFor("web", gone)
		r.stop(t)
		if fp.failedCount() != 2 {
			t.Errorf("%d terminal patches failed, want 2", fp.failedCount())
		}
		uid := string(web.UID)
		final := e.finalStatus(web.UID)
		if final.Phase != v1.PodSucceeded && final.Phase != v1.PodFailed {
			t.Fatalf("the object was deleted in phase %s", final.Phase)
		}
		e.log.ordered(t, []string{"provider DeletePod", uid}, []string{"status", uid, "phase " + string(final.Phase)}, []string{"delete", uid})
	})
}

// TestRecreatedUnderTheSameName (virtual-kubelet #867): while the provider slowly stops
// pod web (uid1), a user force-deletes it and creates web again (uid2). The new pod is
// never deleted nor touched by the old one's termination; the provider, which keys pods
// by name, gets CreatePod for uid2 only once uid1 is stopped; uid2 runs.
func TestRecreatedUnderTheSameName(t *testing.T) {
	eachProvider(t, func(t *testing.T, kind providerKind) {
		e := newEnv(t, kind, vktest.Config{StopDelay: 10 * time.Second})
		r := e.start(nil)
		old := e.create("web", 30, v1.RestartPolicyAlways)
		e.waitFor("web", phaseIs(v1.PodRunning))
		e.delete("web", nil)
		time.Sleep(time.Second)
		e.delete("web", ptr(int64(0)))
		fresh := e.create("web", 30, v1.RestartPolicyAlways)
		e.waitFor("web", func(p *v1.Pod) bool { return p != nil && p.UID == fresh.UID && p.Status.Phase == v1.PodRunning })
		uidOld, uidNew := string(old.UID), string(fresh.UID)
		e.log.ordered(t, []string{"provider DeletePod", uidOld}, []string{"provider CreatePod", uidNew, "ok"})
		// The new pod waits for the name (SerializeByName) and starts as soon as the
		// old one is stopped (10 s after DeletePod; the polled provider is seen to
		// have stopped at the next poll), not after a retry's backoff.
		_, deleteAt := e.log.index("provider DeletePod", uidOld)
		_, createAt := e.log.index("provider CreatePod", uidNew, "ok")
		if d := createAt.Sub(deleteAt); d < 10*time.Second || d > 11*time.Second {
			t.Errorf("the new pod was created %v after the old one's DeletePod, want 10-11 s (when it stopped)", d)
		}
		if i, _ := e.log.index("provider CreatePod", uidNew, "error"); i >= 0 {
			t.Errorf("CreatePod of the new pod was tried while the old one held the name:\n%s", e.log)
		}
		if got, _ := e.provider.Has("default", "web"); got != fresh.UID {
			t.Errorf("the provider holds %q under web, want the new pod %s", got, fresh.UID)
		}
		time.Sleep(time.Minute)
		if cur := e.pod("web"); cur == nil || cur.UID != fresh.UID || cur.Status.Phase != v1.PodRunning || cur.DeletionTimestamp != nil {
			t.Fatalf("a minute later web is %+v, want the new pod, Running", cur)
		}
		for _, p := range e.server.DeletedPods() {
			if p.UID == fresh.UID {
				t.Fatal("the agent deleted the new pod")
			}
		}
		if i, _ := e.log.index("status", uidNew, "phase Failed"); i >= 0 {
			t.Fatalf("the new pod got a terminal status:\n%s", e.log)
		}
		r.stop(t)
	})
}

// TestRestartDoesNotRecreateFinished (virtual-kubelet #762): a pod that finished
// (restartPolicy Never, Succeeded on the server) is not created again when the agent
// restarts after a crash that lost the provider's state.
func TestRestartDoesNotRecreateFinished(t *testing.T) {
	eachProvider(t, func(t *testing.T, kind providerKind) {
		e := newEnv(t, kind, vktest.Config{RunFor: 3 * time.Second})
		r := e.start(nil)
		job := e.create("job", 30, v1.RestartPolicyNever)
		e.waitFor("job", phaseIs(v1.PodSucceeded))
		r.stop(t)

		e.setProvider(kind, vktest.Config{RunFor: 3 * time.Second}) // the crash lost the provider's pods
		r = e.start(nil)
		time.Sleep(time.Minute)
		if n := e.provider.CountFor(job.UID, vktest.Create); n != 0 {
			t.Errorf("the finished pod was created %d time(s) in the provider after the restart", n)
		}
		cur := e.pod("job")
		if cur == nil || cur.Status.Phase != v1.PodSucceeded {
			t.Fatalf("after the restart the job is %+v, want it kept, Succeeded", cur)
		}
		if cs := cur.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.Reason != vktest.ReasonCompleted {
			t.Errorf("after the restart the job's containers are %+v, want the provider's Completed kept", cs)
		}
		r.stop(t)
	})
}

// TestRestartAdoptsRunning: an agent restarted while the provider runs a pod adopts it:
// no second CreatePod, and a graceful delete then stops it as usual.
func TestRestartAdoptsRunning(t *testing.T) {
	eachProvider(t, func(t *testing.T, kind providerKind) {
		e := newEnv(t, kind, vktest.Config{})
		r := e.start(nil)
		p := e.create("web", 30, v1.RestartPolicyAlways)
		e.waitFor("web", phaseIs(v1.PodRunning))
		r.stop(t)
		r = e.start(nil)
		time.Sleep(time.Minute)
		if n := e.provider.CountFor(p.UID, vktest.Create); n != 1 {
			t.Errorf("CreatePod calls = %d, want 1 (the restarted agent adopts the running pod)", n)
		}
		e.delete("web", nil)
		e.waitFor("web", gone)
		r.stop(t)
		e.wantFinal(kind, p.UID)
	})
}

// TestCreateFailureInStatus (virtual-kubelet's handleProviderError): a failing CreatePod
// shows in the pod's status, reason ProviderFailed with the provider's error, and in a
// warning event ProviderCreateFailed. A pod that restarts stays Pending and is created
// once CreatePod succeeds again (the pod worker's backoff); a pod that never restarts
// is Failed and never created again.
func TestCreateFailureInStatus(t *testing.T) {
	const msg = "no capacity left in the fleet"
	eachProvider(t, func(t *testing.T, kind providerKind) {
		e := newEnv(t, kind, vktest.Config{})
		e.provider.FailTimes(vktest.Create, 3, errors.New(msg))
		r := e.start(nil)
		web := e.create("web", 30, v1.RestartPolicyAlways)
		e.waitFor("web", func(p *v1.Pod) bool { return p != nil && p.Status.Reason == vk.ReasonProviderFailed })
		if st := e.pod("web").Status; st.Phase != v1.PodPending || st.Message != msg {
			t.Errorf("after a failed CreatePod: phase %s, message %q; want Pending, %q", st.Phase, st.Message, msg)
		}
		if ev := e.events.find(string(web.UID), v1.EventTypeWarning, vk.ReasonProviderCreateFailed, msg); ev == "" {
			t.Errorf("no ProviderCreateFailed warning event for web:\n%s", strings.Join(e.events.lines, "\n"))
		}
		e.waitFor("web", func(p *v1.Pod) bool { return p != nil && p.Status.Phase == v1.PodRunning })
		if st := e.pod("web").Status; st.Reason != "" || st.Message != "" {
			t.Errorf("running after the retries: reason %q, message %q; want both cleared", st.Reason, st.Message)
		}
		if n := e.provider.CountFor(web.UID, vktest.Create); n != 4 {
			t.Errorf("CreatePod of web: %d calls, want 4 (3 failed)", n)
		}

		e.provider.FailTimes(vktest.Create, -1, errors.New(msg))
		job := e.create("job", 30, v1.RestartPolicyNever)
		e.waitFor("job", func(p *v1.Pod) bool { return p != nil && p.Status.Phase == v1.PodFailed })
		if st := e.pod("job").Status; st.Reason != vk.ReasonProviderFailed || st.Message != msg {
			t.Errorf("job: reason %q, message %q; want %s, %q", st.Reason, st.Message, vk.ReasonProviderFailed, msg)
		}
		time.Sleep(time.Minute)
		if n := e.provider.CountFor(job.UID, vktest.Create); n != 1 {
			t.Errorf("CreatePod of the job that never restarts: %d calls, want 1", n)
		}
		if st := e.pod("job").Status; st.Phase != v1.PodFailed || st.Reason != vk.ReasonProviderFailed {
			t.Errorf("a minute later the job is %s (%s), want Failed (%s)", st.Phase, st.Reason, vk.ReasonProviderFailed)
		}
		e.provider.FailTimes(vktest.Create, 0, nil)
		r.stop(t)
	})
}

// TestPodFilter (virtual-kubelet's PodEventFilterFunc): the pods the filter rejects are
// never created in the provider and their statuses are left alone; a rejected pod that
// changes so that the filter accepts it then runs.
func TestPodFilter(t *testing.T) {
	eachProvider(t, func(t *testing.T, kind providerKind) {
		e := newEnv(t, kind, vktest.Config{})
		e.filter = func(p *v1.Pod) bool { return p.Labels["podlife"] != "skip" }
		mk := func(name string) *v1.Pod {
			grace := int64(30)
			p, err := e.server.Create(&v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"podlife": "skip"}},
				Spec: v1.PodSpec{NodeName: agent.DefaultNodeName, TerminationGracePeriodSeconds: &grace,
					Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		early := mk("early") // in the agent's initial list
		r := e.start(nil)
		late := mk("late") // a watch event
		web := e.create("web", 30, v1.RestartPolicyAlways)
		e.waitFor("web", phaseIs(v1.PodRunning))
		time.Sleep(time.Minute)
		for _, p := range []*v1.Pod{early, late} {
			if n := e.provider.CountFor(p.UID, vktest.Create); n != 0 {
				t.Errorf("%s, rejected by the filter, was created %d time(s) in the provider", p.Name, n)
			}
			if cur := e.pod(p.Name); cur == nil || cur.Status.StartTime != nil || len(cur.Status.Conditions) != 0 {
				t.Errorf("%s, rejected by the filter, has the status %+v; want the server's, left alone", p.Name, cur.Status)
			}
		}
		relabelled := e.pod("late")
		relabelled.Labels = map[string]string{"podlife": "run"}
		e.server.Put(relabelled)
		e.waitFor("late", phaseIs(v1.PodRunning))
		if n := e.provider.CountFor(late.UID, vktest.Create); n != 1 {
			t.Errorf("late, accepted once relabelled: %d CreatePod calls, want 1", n)
		}
		if n := e.provider.CountFor(web.UID, vktest.Create); n != 1 {
			t.Errorf("web: %d CreatePod calls, want 1", n)
		}
		r.stop(t)
	})
}
