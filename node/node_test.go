package node_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/admission"
	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

const nodeName = "node1"

// env runs a Node inside a synctest bubble over an in-memory API server and runtime:
// time is virtual, and the bubble checks that every goroutine ended with the test.
type env struct {
	t      *testing.T
	api    *statusmgrtest.FakeAPI
	mem    *plegtest.Runtime
	rt     *nodetest.Runtime
	n      *node.Node
	cancel context.CancelFunc
	done   chan error

	mu     sync.Mutex
	events []node.Event
}

type envOpts struct {
	containers nodetest.ContainerBehaviour
	// firstListDelay delays the API source's first list (an unreachable API server).
	firstListDelay time.Duration
	sources        []string
	patcher        func(*statusmgrtest.FakeAPI) any
	noAPISource    bool
	fullComparison bool
	copyPods       bool
	admit          []admission.Handler
	// recorder, metrics and wrap (the runtime as the node sees it) for observe_test.go.
	recorder node.EventRecorder
	metrics  node.Metrics
	wrap     func(node.Runtime) node.Runtime
	// relistPeriod is Config.RelistPeriod (probe_test.go).
	relistPeriod time.Duration
}

// start runs a node on api and mem (new ones when nil).
func start(t *testing.T, api *statusmgrtest.FakeAPI, mem *plegtest.Runtime, o envOpts) *env {
	t.Helper()
	if api == nil {
		api = statusmgrtest.NewFakeAPI()
	}
	if mem == nil {
		mem = plegtest.NewRuntime(nil)
	}
	e := &env{t: t, api: api, mem: mem, rt: nodetest.NewRuntime(mem, o.containers), done: make(chan error, 2)}
	cfg := node.Config{NodeName: nodeName, Runtime: e.rt, Patcher: api, Sources: o.sources, OnEvent: e.record,
		Recorder: o.recorder, Metrics: o.metrics, FullComparison: o.fullComparison, CopyPods: o.copyPods, Admit: o.admit,
		RelistPeriod: o.relistPeriod}
	if o.wrap != nil {
		cfg.Runtime = o.wrap(e.rt)
	}
	if o.patcher != nil {
		cfg.Patcher = o.patcher(api).(interface {
			GetPod(context.Context, string, string) (*v1.Pod, error)
			PatchPodStatus(context.Context, string, string, []byte) (*v1.Pod, error)
			DeletePod(context.Context, string, string, types.UID) error
		})
	}
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.n = n
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() { e.done <- n.Run(ctx) }()
	if !o.noAPISource {
		go func() {
			if o.firstListDelay > 0 {
				select {
				case <-time.After(o.firstListDelay):
				case <-ctx.Done():
					e.done <- nil
					return
				}
			}
			e.done <- nodetest.FeedAPI(ctx, n, api, nodeName)
		}()
	} else {
		e.done <- nil
	}
	return e
}

func (e *env) record(ev node.Event) {
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
}

// stop stops the node and its source and waits for both.
func (e *env) stop() {
	e.t.Helper()
	e.cancel()
	for range 2 {
		if err := <-e.done; err != nil {
			e.t.Fatalf("Run: %v", err)
		}
	}
}

// reasons returns the reasons of the recorded events of kind.
func (e *env) reasons(kind node.EventKind) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.events {
		if ev.Kind == kind {
			out = append(out, ev.Reason)
		}
	}
	return out
}

func newPod(name string, grace int64, policy v1.RestartPolicy, ann map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: ann},
		Spec: v1.PodSpec{NodeName: nodeName, RestartPolicy: policy, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
	}
}

func (e *env) create(p *v1.Pod) *v1.Pod {
	e.t.Helper()
	got, err := e.api.Create(p)
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

func (e *env) waitPod(name string, cond func(p *v1.Pod, ok bool) bool) {
	e.t.Helper()
	err := e.api.WaitForPods(context.Background(), func(pods map[types.NamespacedName]*v1.Pod) bool {
		p, ok := pods[types.NamespacedName{Namespace: "default", Name: name}]
		return cond(p, ok)
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) waitPhase(name string, phase v1.PodPhase) {
	e.t.Helper()
	e.waitPod(name, func(p *v1.Pod, ok bool) bool { return ok && p.Status.Phase == phase })
}

func (e *env) waitGone(name string) {
	e.t.Helper()
	e.waitPod(name, func(_ *v1.Pod, ok bool) bool { return !ok })
}

// A source that changes a pod under an unchanged resourceVersion (a hand-made fixture; the
// API server never does) needs FullComparison: by default the config merge takes the
// resourceVersion's word and the graceful delete is not seen.
func TestFullComparison(t *testing.T) {
	for _, full := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			e := start(t, nil, nil, envOpts{noAPISource: true, fullComparison: full})
			p := e.create(newPod("web", 30, v1.RestartPolicyAlways, nil))
			p.ResourceVersion = "1"
			ctx := context.Background()
			if err := e.n.Update(ctx, config.PodUpdate{Op: config.Set, Source: node.SourceAPI, Pods: []*v1.Pod{p}}); err != nil {
				t.Fatal(err)
			}
			e.waitPhase("web", v1.PodRunning)
			d := p.DeepCopy()
			now := metav1.Now()
			d.DeletionTimestamp, d.DeletionGracePeriodSeconds = &now, ptr.To(int64(30))
			if err := e.n.Update(ctx, config.PodUpdate{Op: config.Set, Source: node.SourceAPI, Pods: []*v1.Pod{d}}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Second)
			synctest.Wait()
			e.stop()
			want := 0
			if full {
				want = 1
			}
			if n := e.rt.Count(nodetest.VerbKillPod, p.UID); n != want {
				t.Errorf("FullComparison %v: %d KillPod calls after a delete under the same resourceVersion, want %d", full, n, want)
			}
		})
	}
}

// syncedPods records the pods the node gives SyncPod.
type syncedPods struct {
	node.Runtime
	mu   sync.Mutex
	pods []*v1.Pod
}

func (s *syncedPods) SyncPod(ctx context.Context, pod *v1.Pod, rs *pleg.PodStatus) error {
	s.mu.Lock()
	s.pods = append(s.pods, pod)
	s.mu.Unlock()
	return s.Runtime.SyncPod(ctx, pod, rs)
}

// By default the node's pods are the config merge's stored objects: the runtime gets the
// pod Node.Pod returns, sharing memory with the pod passed to Update (the kubelet's
// read-only pods). CopyPods gives the node deep copies instead.
func TestCopyPods(t *testing.T) {
	for _, copyPods := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			var synced *syncedPods
			e := start(t, nil, nil, envOpts{noAPISource: true, copyPods: copyPods,
				wrap: func(rt node.Runtime) node.Runtime { synced = &syncedPods{Runtime: rt}; return synced }})
			p := e.create(newPod("web", 30, v1.RestartPolicyAlways, nil))
			if err := e.n.Update(context.Background(), config.PodUpdate{Op: config.Set, Source: node.SourceAPI, Pods: []*v1.Pod{p}}); err != nil {
				t.Fatal(err)
			}
			e.waitPhase("web", v1.PodRunning)
			e.stop()
			if len(synced.pods) == 0 {
				t.Fatal("SyncPod never called")
			}
			got := synced.pods[0]
			if desired, _ := e.n.Pod(p.UID); desired != got {
				t.Errorf("CopyPods %v: SyncPod got another object than Node.Pod returns", copyPods)
			}
			if shared := &got.Spec.Containers[0] == &p.Spec.Containers[0]; shared == copyPods {
				t.Errorf("CopyPods %v: the runtime's pod shares its spec with the input: %v", copyPods, shared)
			}
		})
	}
}

// A status written back by the API server reaches the node as a Reconcile that needs no
// sync; the pod workers then hold the newest pod (the pod manager's), not the one of their
// last update: the next resync gets it, as the kubelet's periodic sync takes the pod
// manager's pod, and the older object is not kept alive.
func TestReconcileRefreshesWorkersPod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var synced *syncedPods
		e := start(t, nil, nil, envOpts{wrap: func(rt node.Runtime) node.Runtime { synced = &syncedPods{Runtime: rt}; return synced }})
		p := e.create(newPod("web", 30, v1.RestartPolicyAlways, nil))
		e.waitPhase("web", v1.PodRunning)
		synced.mu.Lock()
		before := len(synced.pods)
		synced.mu.Unlock()
		time.Sleep(2 * time.Minute) // at least one resync
		synctest.Wait()
		desired, _ := e.n.Pod(p.UID)
		e.stop()
		synced.mu.Lock()
		defer synced.mu.Unlock()
		if len(synced.pods) <= before {
			t.Fatalf("no resync in 2 minutes (%d SyncPod calls)", len(synced.pods))
		}
		last := synced.pods[len(synced.pods)-1]
		if last != desired || last.Status.Phase != v1.PodRunning {
			t.Errorf("the resync got a pod in phase %s, not the pod manager's newest (Running)", last.Status.Phase)
		}
	})
}

// Seed 001: a pod's creation, Pending then Running, with the container's ID and start
// time, in two patches.
func TestCreation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, nil, nil, envOpts{})
		created := time.Now()
		e.create(newPod("web", 30, v1.RestartPolicyAlways, nil))
		e.waitPhase("web", v1.PodRunning)
		time.Sleep(time.Minute) // nothing more happens
		e.stop()
		p, _ := e.api.Pod("default", "web")
		if took := p.Status.StartTime.Time.Sub(created); took > time.Second {
			t.Errorf("startTime %v after the creation, want at once", took)
		}
		cs := p.Status.ContainerStatuses
		if len(cs) != 1 || cs[0].State.Running == nil || cs[0].ContainerID == "" || !cs[0].Ready || cs[0].RestartCount != 0 {
			t.Fatalf("container statuses = %+v, want one ready running container with an ID", cs)
		}
		if p.Status.QOSClass != v1.PodQOSBestEffort {
			t.Errorf("qosClass = %q, want BestEffort", p.Status.QOSClass)
		}
		// Pending, then Running; the status manager may coalesce both into one patch when
		// they are set at the same instant, as its documentation allows.
		if c := e.api.Counts(); c.Patches < 1 || c.Patches > 2 || c.Deletes != 0 {
			t.Errorf("API calls = %+v, want 1 or 2 patches (Pending, Running) and no delete", c)
		}
		if n := e.rt.Count(nodetest.VerbKillPod, ""); n != 0 {
			t.Errorf("%d KillPod calls, want none", n)
		}
	})
}

// Seed 000: a graceful delete, from the deletionTimestamp to the final delete with grace
// 0 and the UID precondition, after the terminal phase is on the server.
func TestGracefulDeletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, nil, nil, envOpts{containers: nodetest.ContainerBehaviour{StopDelay: 2 * time.Second}})
		p := e.create(newPod("web", 30, v1.RestartPolicyAlways, nil))
		e.waitPhase("web", v1.PodRunning)
		var terminalBeforeDelete bool
		e.api.SetObserver(func(c statusmgrtest.Change) {
			if c.Verb == "final-delete" {
				terminalBeforeDelete = c.Pod.Status.Phase == v1.PodSucceeded || c.Pod.Status.Phase == v1.PodFailed
			}
		})
		deleted := time.Now()
		if err := e.api.Delete("default", "web", nil); err != nil {
			t.Fatal(err)
		}
		e.waitGone("web")
		took := time.Since(deleted)
		e.stop()
		if took < 2*time.Second || took > 3*time.Second {
			t.Errorf("the object went %v after the delete, want when the containers stopped (2 s) plus the status round trips", took)
		}
		if !terminalBeforeDelete {
			t.Error("the final delete came before the terminal phase was on the server")
		}
		gone := e.api.DeletedPods()
		if len(gone) != 1 || gone[0].UID != p.UID {
			t.Fatalf("deleted %d pods, want exactly web's final delete", len(gone))
		}
		if got := e.rt.Actions(); !slices.ContainsFunc(got, func(a nodetest.Action) bool {
			return a.Verb == nodetest.VerbKillPod && a.GracePeriod == 30
		}) {
			t.Errorf("actions = %+v, want KillPod with grace 30", got)
		}
		if e.rt.Count(nodetest.VerbCleanupPod, p.UID) != 1 {
			t.Error("CleanupPod not called exactly once")
		}
	})
}

// An agent restarted while the API server is unreachable for 5 s finds its pods
// running: nothing is killed, restarted or removed before the first full list, and the
// pods are adopted afterwards (same containers, no restart).
func TestRestartWhileAPIUnreachable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, mem := statusmgrtest.NewFakeAPI(), plegtest.NewRuntime(nil)
		first := start(t, api, mem, envOpts{})
		for _, name := range []string{"a", "b", "c"} {
			first.create(newPod(name, 30, v1.RestartPolicyAlways, nil))
			first.waitPhase(name, v1.PodRunning)
		}
		before, _ := api.Pod("default", "a")
		first.stop()

		second := start(t, api, mem, envOpts{firstListDelay: 5 * time.Second})
		time.Sleep(5*time.Second - time.Millisecond)
		select {
		case <-second.n.Ready():
			t.Fatal("Ready before the API source listed")
		default:
		}
		if acts := second.rt.Actions(); len(acts) != 0 {
			t.Fatalf("runtime actions before the first list: %+v, want none", acts)
		}
		time.Sleep(time.Millisecond)
		<-second.n.Ready()
		time.Sleep(10 * time.Second) // housekeeping runs several times
		second.stop()
		for _, verb := range []string{nodetest.VerbKillPod, nodetest.VerbKillRuntimePod, nodetest.VerbRemovePod} {
			if n := second.rt.Count(verb, ""); n != 0 {
				t.Errorf("%d %s calls after the restart, want none", n, verb)
			}
		}
		after, _ := api.Pod("default", "a")
		if after.Status.ContainerStatuses[0].ContainerID != before.Status.ContainerStatuses[0].ContainerID ||
			after.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("container after the restart = %+v, want the same container (%s), not restarted",
				after.Status.ContainerStatuses[0], before.Status.ContainerStatuses[0].ContainerID)
		}
		if r := second.reasons(node.EventHousekeeping); slices.Contains(r, node.ReasonKillingOrphan) || slices.Contains(r, node.ReasonRestarted) {
			t.Errorf("housekeeping events %q, want no orphan kill and no restart", r)
		}
	})
}

// A REMOVE that arrives before every source is ready is refused (the kubelet's
// deletePod); housekeeping stops the pod once the sources are ready.
func TestRemoveRefusedUntilSourcesReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, nil, nil, envOpts{sources: []string{node.SourceAPI, "file"}})
		p := e.create(newPod("web", 30, v1.RestartPolicyAlways, nil))
		e.waitPhase("web", v1.PodRunning)
		// Force-deleted on the server: the watch's DELETED becomes a REMOVE.
		zero := int64(0)
		if err := e.api.Delete("default", "web", &zero); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		if n := e.rt.Count(nodetest.VerbKillPod, p.UID); n != 0 {
			t.Fatalf("%d KillPod calls while the file source was not ready, want none", n)
		}
		if r := e.reasons(node.EventError); !slices.Contains(r, node.ReasonRemoveRefused) {
			t.Errorf("error events %q, want %s", r, node.ReasonRemoveRefused)
		}
		if err := e.n.Update(context.Background(), config.PodUpdate{Op: config.Set, Source: "file"}); err != nil {
			t.Fatal(err)
		}
		<-e.n.Ready()
		time.Sleep(3 * time.Second)
		e.stop()
		if n := e.rt.Count(nodetest.VerbKillPod, p.UID); n != 1 {
			t.Errorf("%d KillPod calls once every source was ready, want 1 (housekeeping)", n)
		}
		if e.mem.IsRunning(p.UID) {
			t.Error("the removed pod still runs")
		}
	})
}

// A restart that finds pods terminal on the server never runs them again, and a
// terminal pod that was deleted while the agent was down is finished and its object
// deleted.
func TestRestartFindsTerminalPods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, mem := statusmgrtest.NewFakeAPI(), plegtest.NewRuntime(nil)
		first := start(t, api, mem, envOpts{})
		job := first.create(newPod("job", 30, v1.RestartPolicyNever, map[string]string{nodetest.AnnotationRunFor: "3s"}))
		done := first.create(newPod("done", 30, v1.RestartPolicyNever, map[string]string{nodetest.AnnotationRunFor: "2s"}))
		first.waitPhase("job", v1.PodSucceeded)
		first.waitPhase("done", v1.PodSucceeded)
		first.stop()
		// While the agent is down, "done" is deleted: a terminal pod the API server keeps
		// (bound to a node) until the node deletes it.
		api.MarkDeleted("default", "done", metav1.Now(), 30)

		second := start(t, api, mem, envOpts{})
		second.waitGone("done")
		time.Sleep(10 * time.Second)
		second.stop()
		for _, uid := range []types.UID{job.UID, done.UID} {
			if n := second.rt.Count(nodetest.VerbSyncPod, uid); n != 0 {
				t.Errorf("%d SyncPod calls for terminal pod %s after the restart, want none", n, uid)
			}
		}
		p, ok := api.Pod("default", "job")
		if !ok || p.Status.Phase != v1.PodSucceeded {
			t.Errorf("job after the restart: %v %v, want kept and Succeeded", ok, p.Status.Phase)
		}
	})
}

// A runtime pod no source knows of is killed with grace 1, and its leftovers are removed
// once it is stopped.
func TestOrphanedRuntimePodKilled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := plegtest.NewRuntime(nil)
		if err := mem.StartPod(context.Background(), plegtest.PodSpec{UID: "orphan", Name: "old", Namespace: "default",
			Containers: []plegtest.ContainerSpec{{Name: "app", StopDelay: -1}}}); err != nil {
			t.Fatal(err)
		}
		e := start(t, nil, mem, envOpts{})
		time.Sleep(10 * time.Second)
		e.stop()
		acts := e.rt.Actions()
		if !slices.Contains(acts, nodetest.Action{Verb: nodetest.VerbKillRuntimePod, UID: "orphan", GracePeriod: 1}) {
			t.Errorf("actions = %+v, want KillRuntimePod of the orphan with grace 1", acts)
		}
		if !slices.Contains(acts, nodetest.Action{Verb: nodetest.VerbRemovePod, UID: "orphan"}) {
			t.Errorf("actions = %+v, want its leftovers removed", acts)
		}
		if pods, _ := mem.ListPods(context.Background(), true); len(pods) != 0 {
			t.Errorf("runtime still holds %d pod(s)", len(pods))
		}
	})
}

// A pod whose deletionTimestamp is set before the node first sees it never starts, and
// its object is deleted.
func TestDeletedBeforeStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := statusmgrtest.NewFakeAPI()
		p, err := api.Create(newPod("late", 30, v1.RestartPolicyAlways, nil))
		if err != nil {
			t.Fatal(err)
		}
		if err := api.Delete("default", "late", nil); err != nil {
			t.Fatal(err)
		}
		e := start(t, api, nil, envOpts{})
		e.waitGone("late")
		e.stop()
		if n := e.rt.Count(nodetest.VerbSyncPod, p.UID); n != 0 {
			t.Errorf("%d SyncPod calls for a pod deleted before it started, want none", n)
		}
		if got := api.DeletedPods(); len(got) != 1 || got[0].UID != p.UID {
			t.Errorf("final deletes = %d, want the pod's", len(got))
		}
	})
}

// mirrorAPI is the in-memory API server with mirror pods (node.MirrorPodClient).
type mirrorAPI struct {
	*statusmgrtest.FakeAPI
	mu      sync.Mutex
	created []*v1.Pod
}

// CreateMirrorPod creates the mirror pod; AlreadyExists is not an error (a sync may run
// again before the watch brings the new mirror pod back).
func (m *mirrorAPI) CreateMirrorPod(_ context.Context, mirror *v1.Pod) error {
	cp := mirror.DeepCopy()
	cp.Spec.NodeName = nodeName
	_, err := m.Create(cp)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		m.mu.Lock()
		m.created = append(m.created, mirror)
		m.mu.Unlock()
	}
	return err
}

func (m *mirrorAPI) DeleteMirrorPod(ctx context.Context, namespace, name string, uid types.UID) error {
	return m.DeletePod(ctx, namespace, name, uid)
}

var _ node.MirrorPodClient = (*mirrorAPI)(nil)

// Static pods from a manifest-directory source run without the API server, get a
// mirror pod, and their statuses are written to it. A static pod removed and added
// again under its fixed UID while it terminates runs again once it finished.
func TestStaticPodsFromAManifestSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mapi *mirrorAPI
		e := start(t, nil, nil, envOpts{sources: []string{node.SourceAPI, "file"},
			containers: nodetest.ContainerBehaviour{StopDelay: time.Second},
			patcher: func(api *statusmgrtest.FakeAPI) any {
				mapi = &mirrorAPI{FakeAPI: api}
				return mapi
			}})
		static := newPod("etcd", 30, v1.RestartPolicyAlways, map[string]string{node.ConfigHashAnnotationKey: "h1"})
		static.UID = "static-etcd"
		ctx := context.Background()
		file := config.PodUpdate{Op: config.Set, Source: "file", Pods: []*v1.Pod{static}}
		if err := e.n.Update(ctx, file); err != nil {
			t.Fatal(err)
		}
		e.waitPhase("etcd", v1.PodRunning) // the mirror pod's status
		mp, _ := e.api.Pod("default", "etcd")
		if mp.Annotations[node.ConfigMirrorAnnotationKey] != "h1" || mp.UID == static.UID {
			t.Fatalf("mirror pod = %+v, want a mirror of hash h1 with its own UID", mp.ObjectMeta)
		}
		// Removed from the manifest directory, then back while it terminates.
		if err := e.n.Update(ctx, config.PodUpdate{Op: config.Set, Source: "file"}); err != nil {
			t.Fatal(err)
		}
		if err := e.n.Update(ctx, file); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		e.stop()
		if n := e.rt.Count(nodetest.VerbKillPod, static.UID); n != 1 {
			t.Errorf("%d KillPod calls, want 1 (the removal)", n)
		}
		if n := e.rt.Count(nodetest.VerbSyncPod, static.UID); n < 2 {
			t.Errorf("%d SyncPod calls, want it started again after the removal finished", n)
		}
		if !e.mem.IsRunning(static.UID) {
			t.Error("the static pod added back does not run")
			for _, ev := range e.events {
				t.Logf("%v %s %s %s %v", ev.Kind, ev.UID, ev.Reason, ev.Message, ev.Err)
			}
			t.Logf("%+v", e.rt.Actions())
		}
		if len(mapi.created) != 1 {
			t.Errorf("%d mirror pods created, want 1", len(mapi.created))
		}
	})
}

func TestNewRejectsBadConfig(t *testing.T) {
	rt := nodetest.NewRuntime(plegtest.NewRuntime(nil), nodetest.ContainerBehaviour{})
	api := statusmgrtest.NewFakeAPI()
	var nilRuntime *nodetest.Runtime
	var nilAPI *statusmgrtest.FakeAPI
	cases := []struct {
		name string
		cfg  node.Config
		want string
	}{
		{"no node name", node.Config{Runtime: rt, Patcher: api}, "NodeName"},
		{"no runtime", node.Config{NodeName: "n", Patcher: api}, "Runtime"},
		{"typed nil runtime", node.Config{NodeName: "n", Runtime: nilRuntime, Patcher: api}, "Runtime"},
		{"no patcher", node.Config{NodeName: "n", Runtime: rt}, "Patcher"},
		{"typed nil patcher", node.Config{NodeName: "n", Runtime: rt, Patcher: nilAPI}, "Patcher"},
		{"negative relist period", node.Config{NodeName: "n", Runtime: rt, Patcher: api, RelistPeriod: -1}, "RelistPeriod"},
		{"negative housekeeping period", node.Config{NodeName: "n", Runtime: rt, Patcher: api, HousekeepingPeriod: -time.Second}, "HousekeepingPeriod"},
		{"negative concurrency", node.Config{NodeName: "n", Runtime: rt, Patcher: api, MaxConcurrentSyncs: -2}, "MaxConcurrentSyncs"},
		{"negative write concurrency", node.Config{NodeName: "n", Runtime: rt, Patcher: api, MaxConcurrentWrites: -2}, "MaxConcurrentWrites"},
		{"duplicate source", node.Config{NodeName: "n", Runtime: rt, Patcher: api, Sources: []string{"api", "api"}}, "Sources"},
		{"empty source", node.Config{NodeName: "n", Runtime: rt, Patcher: api, Sources: []string{""}}, "Sources"},
		{"empty host IP", node.Config{NodeName: "n", Runtime: rt, Patcher: api, HostIPs: []string{""}}, "HostIPs"},
		{"negative resync interval", node.Config{NodeName: "n", Runtime: rt, Patcher: api, ResyncInterval: -1}, "ResyncInterval"},
		{"negative initial back-off", node.Config{NodeName: "n", Runtime: rt, Patcher: api, BackoffInitial: -1}, "BackoffInitial"},
		{"negative maximal back-off", node.Config{NodeName: "n", Runtime: rt, Patcher: api, BackoffMax: -1}, "BackoffMax"},
		{"maximal back-off below the initial", node.Config{NodeName: "n", Runtime: rt, Patcher: api,
			BackoffInitial: time.Minute, BackoffMax: time.Second}, "BackoffMax"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, err := node.New(tc.cfg)
			if !errors.Is(err, node.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) || n != nil {
				t.Fatalf("New = %v, %v; want an ErrInvalidConfig naming %s", n, err, tc.want)
			}
		})
	}
}

func TestUpdateRejectsBadInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := start(t, nil, nil, envOpts{noAPISource: true})
		ctx := context.Background()
		for _, u := range []config.PodUpdate{
			{Op: config.Set},                      // no source
			{Op: config.Op(42), Source: "api"},    // unknown op
			{Op: config.Reconcile, Source: "api"}, // not an input
		} {
			if err := e.n.Update(ctx, u); !errors.Is(err, node.ErrInvalidUpdate) {
				t.Errorf("Update(%+v) = %v, want ErrInvalidUpdate", u, err)
			}
		}
		// Pods the config cannot take are dropped and reported, never run.
		bad := []*v1.Pod{nil, {ObjectMeta: metav1.ObjectMeta{Name: "no-uid", Namespace: "default"}}}
		if err := e.n.Update(ctx, config.PodUpdate{Op: config.Set, Source: node.SourceAPI, Pods: bad}); err != nil {
			t.Fatal(err)
		}
		<-e.n.Ready()
		time.Sleep(3 * time.Second)
		if err := e.n.Run(ctx); !errors.Is(err, node.ErrAlreadyRunning) {
			t.Errorf("second Run = %v, want ErrAlreadyRunning", err)
		}
		e.stop()
		if got := e.reasons(node.EventError); len(got) != 2 || got[0] != node.ReasonDropped || got[1] != node.ReasonDropped {
			t.Errorf("error events %q, want the two bad pods dropped", got)
		}
		if acts := e.rt.Actions(); len(acts) != 0 {
			t.Errorf("runtime actions %+v, want none", acts)
		}
	})
}

// generatorRuntime is a Runtime with a StatusGenerator whose statuses share their
// container statuses with shared, which it keeps (and may change later).
type generatorRuntime struct {
	node.Runtime
	mu     sync.Mutex
	shared []v1.ContainerStatus
}

func (g *generatorRuntime) APIStatus(_ *v1.Pod, _ *pleg.PodStatus, generated v1.PodStatus, _ bool) v1.PodStatus {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shared = append(g.shared[:0], generated.ContainerStatuses...)
	generated.ContainerStatuses = g.shared
	return generated
}

// The status manager takes the node's generated status without a copy, which is safe as
// that status shares no memory with anything: not with the pod (whose status is the old
// one of the first sync), not with the status manager's older versions. A
// StatusGenerator's status may share memory with what it keeps, so it is copied. Either
// way, changing the pod or the generator's memory afterwards changes no cached status,
// and the node's work changes neither.
func TestGeneratedStatusSharesNothing(t *testing.T) {
	for _, withGenerator := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			gen := &generatorRuntime{}
			failPatch := func(context.Context, string, string, []byte) (*v1.Pod, error) {
				return nil, errors.New("the API server is unreachable")
			}
			opts := envOpts{noAPISource: true, patcher: func(api *statusmgrtest.FakeAPI) any {
				// The statuses stay the node's own (a patch answer would replace them).
				return statusmgr.StatusPatcherFuncs{GetPodFunc: api.GetPod, PatchPodStatusFunc: failPatch, DeletePodFunc: api.DeletePod}
			}}
			if withGenerator {
				opts.wrap = func(rt node.Runtime) node.Runtime { gen.Runtime = rt; return gen }
			}
			e := start(t, nil, nil, opts)
			p := newPod("web", 30, v1.RestartPolicyAlways, nil)
			p.UID, p.ResourceVersion = "u1", "1"
			p.Status = v1.PodStatus{Phase: v1.PodPending, StartTime: ptr.To(metav1.NewTime(time.Unix(1e9, 0))),
				Conditions: []v1.PodCondition{{Type: "example.com/gate", Status: v1.ConditionTrue}},
				ContainerStatuses: []v1.ContainerStatus{{Name: "app", Image: "busybox", Started: ptr.To(false),
					LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, Message: "old"}},
					State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}
			before := p.DeepCopy()
			if err := e.n.Update(context.Background(), config.PodUpdate{Op: config.Set, Source: node.SourceAPI, Pods: []*v1.Pod{p}}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * time.Second)
			synctest.Wait()
			e.stop()
			cached, ok := e.n.Status().GetPodStatus("u1")
			if !ok || cached.Phase != v1.PodRunning || len(cached.ContainerStatuses) != 1 {
				t.Fatalf("cached status %+v (ok %v), want Running with one container", cached, ok)
			}
			if diff := cmp.Diff(before, p); diff != "" {
				t.Errorf("the node's work changed the pod (-before +after):\n%s", diff)
			}
			scribble(&p.Status)
			gen.mu.Lock()
			scribble(&v1.PodStatus{ContainerStatuses: gen.shared})
			gen.mu.Unlock()
			after, _ := e.n.Status().GetPodStatus("u1")
			if diff := cmp.Diff(cached, after); diff != "" {
				t.Errorf("the cached status changed with the pod or the generator (-before +after):\n%s", diff)
			}
		})
	}
}
