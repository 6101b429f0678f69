package statusmgr_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

var epoch = statusmgrtest.Epoch

func testPod(name string, uid types.UID) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: name, UID: uid,
			Annotations: map[string]string{statusmgr.ConfigSourceAnnotationKey: statusmgr.APISource},
		},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyAlways,
			Containers:    []v1.Container{{Name: "c", Image: "busybox"}},
		},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
}

func deleting(p *v1.Pod) *v1.Pod {
	p = p.DeepCopy()
	ts := metav1.NewTime(epoch)
	grace := int64(30)
	p.DeletionTimestamp = &ts
	p.DeletionGracePeriodSeconds = &grace
	return p
}

// runningStatus is the harness's "running" (ready) or "notready" status.
func runningStatus(ready bool) v1.PodStatus {
	name := "notready"
	if ready {
		name = "running"
	}
	s, _ := statusmgrtest.Preset(name)
	return s
}

type harness struct {
	t      *testing.T
	m      *statusmgr.Manager
	api    *statusmgrtest.FakeAPI
	clock  *clocktesting.FakeClock
	cancel context.CancelFunc
	done   chan error
}

// start builds a manager over api and runs it; call inside a synctest bubble.
func start(t *testing.T, api *statusmgrtest.FakeAPI, mod func(*statusmgr.Config)) *harness {
	t.Helper()
	fc := clocktesting.NewFakeClock(epoch)
	cfg := statusmgr.Config{Patcher: api, Clock: fc}
	if mod != nil {
		mod(&cfg)
	}
	m, err := statusmgr.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	h := &harness{t: t, m: m, api: api, clock: fc, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- m.Run(ctx) }()
	t.Cleanup(h.stop)
	synctest.Wait()
	return h
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	if err := <-h.done; err != nil {
		h.t.Errorf("Run returned %v", err)
	}
}

// period advances the fake clock by one sync period and waits for the loop to go idle.
func (h *harness) period() {
	h.clock.Step(statusmgr.DefaultSyncPeriod)
	synctest.Wait()
}

func (h *harness) counts(want statusmgrtest.Counts) {
	h.t.Helper()
	got := h.api.Counts()
	got.PatchBytes = 0
	if diff := cmp.Diff(want, got); diff != "" {
		h.t.Errorf("API calls (-want +got):\n%s", diff)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestManagerSyncsAtOnceAndCoalesces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := testPod("p", "u1")
		api := statusmgrtest.NewFakeAPI(pod)
		// Versions set before the loop runs are coalesced into one patch.
		fc := clocktesting.NewFakeClock(epoch)
		m, err := statusmgr.New(statusmgr.Config{Patcher: api, Clock: fc})
		must(t, err)
		must(t, m.SetPodStatus(pod, runningStatus(false)))
		must(t, m.SetPodStatus(pod, runningStatus(true)))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- m.Run(ctx) }()
		synctest.Wait()
		got, _ := api.Pod("default", "p")
		if got.Status.Phase != v1.PodRunning || got.Status.ContainerStatuses[0].Ready != true {
			t.Errorf("server status = %+v", got.Status)
		}
		if c := api.Counts(); c.Gets != 1 || c.Patches != 1 {
			t.Errorf("counts = %+v, want 1 GET and 1 PATCH", c)
		}
		// The next change is synced at once, without another GET.
		st := runningStatus(true)
		st.Message = "hello"
		must(t, m.SetPodStatus(pod, st))
		synctest.Wait()
		if c := api.Counts(); c.Gets != 1 || c.Patches != 2 {
			t.Errorf("counts = %+v, want 1 GET and 2 PATCH", c)
		}
		// An identical status is skipped; the periodic sync sends nothing new.
		must(t, m.SetPodStatus(pod, st))
		fc.Step(statusmgr.DefaultSyncPeriod)
		synctest.Wait()
		if c := api.Counts(); c.Gets != 1 || c.Patches != 2 {
			t.Errorf("counts = %+v, want no more calls", c)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

func TestManagerTerminateAndDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := testPod("p", "u1")
		api := statusmgrtest.NewFakeAPI(pod)
		h := start(t, api, nil)
		must(t, h.m.SetPodStatus(pod, runningStatus(true)))
		synctest.Wait()
		dpod := deleting(pod)
		api.Put(deleting(mustPod(t, api, "p")))
		must(t, h.m.TerminatePod(dpod))
		synctest.Wait()
		if api.Len() != 0 {
			t.Fatalf("pod not deleted")
		}
		// The patch response carries the deletionTimestamp: no second GET.
		h.counts(statusmgrtest.Counts{Gets: 1, Patches: 2, Deletes: 1, Deleted: 1})
		if _, ok := h.m.GetPodStatus("u1"); ok {
			t.Errorf("status not forgotten after the delete")
		}
		if s := h.m.Stats(); s.Deleted != 1 {
			t.Errorf("stats = %+v", s)
		}
	})
}

func mustPod(t *testing.T, api *statusmgrtest.FakeAPI, name string) *v1.Pod {
	t.Helper()
	p, ok := api.Pod("default", name)
	if !ok {
		t.Fatalf("pod %s not on the server", name)
	}
	return p
}

func TestManagerTerminalStatusOnServerBeforeDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := deleting(testPod("p", "u1"))
		api := statusmgrtest.NewFakeAPI(pod)
		h := start(t, api, nil)
		must(t, h.m.SetPodStatus(pod, runningStatus(true)))
		synctest.Wait()
		must(t, h.m.TerminatePod(pod))
		synctest.Wait()
		del := api.DeletedPods()
		if len(del) != 1 {
			t.Fatalf("deleted %d pods, want 1", len(del))
		}
		st := del[0].Status
		if st.Phase != v1.PodFailed {
			t.Errorf("phase on the server at delete = %s, want Failed", st.Phase)
		}
		if term := st.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != statusmgr.ExitCodeContainerNotFound {
			t.Errorf("container state at delete = %+v", st.ContainerStatuses[0].State)
		}
		for _, c := range st.Conditions {
			if (c.Type == v1.PodReady || c.Type == v1.ContainersReady) && (c.Status != v1.ConditionFalse || c.Reason != statusmgr.ReasonPodFailed) {
				t.Errorf("%s = %s (%s) on a failed pod", c.Type, c.Status, c.Reason)
			}
		}
		// One GET (first sync), one PATCH per distinct status, one DELETE.
		h.counts(statusmgrtest.Counts{Gets: 1, Patches: 2, Deletes: 1, Deleted: 1})
	})
}

func TestManagerCouldHaveRunningContainersHoldsTerminalPhase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := deleting(testPod("p", "u1"))
		api := statusmgrtest.NewFakeAPI(pod)
		running := true
		h := start(t, api, func(c *statusmgr.Config) {
			c.CouldHaveRunningContainers = func(types.UID) bool { return running }
		})
		must(t, h.m.SetPodStatus(pod, runningStatus(true)))
		must(t, h.m.TerminatePod(pod))
		synctest.Wait()
		got := mustPod(t, api, "p")
		if statusmgr.IsTerminalPhase(got.Status.Phase) {
			t.Fatalf("phase on server = %s while containers could run; want it held back", got.Status.Phase)
		}
		if got.Status.ContainerStatuses == nil {
			t.Fatalf("the rest of the status was not written")
		}
		if c := api.Counts(); c.Deletes != 0 {
			t.Fatalf("deleted while containers could run")
		}
		running = false
		h.period()
		if api.Len() != 0 {
			t.Fatalf("pod not deleted once containers stopped: %+v", api.Counts())
		}
	})
}

func TestManagerMirrorPodNeverDeleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		static := testPod("s", "static-uid")
		static.Annotations[statusmgr.ConfigSourceAnnotationKey] = "file"
		static.Annotations["kubernetes.io/config.hash"] = "h1"
		mirror := deleting(testPod("s", "mirror-uid"))
		mirror.Annotations[statusmgr.ConfigSourceAnnotationKey] = statusmgr.APISource
		mirror.Annotations[statusmgr.ConfigMirrorAnnotationKey] = "h1"
		api := statusmgrtest.NewFakeAPI(mirror)
		h := start(t, api, func(c *statusmgr.Config) {
			c.Lookup = statusmgr.PodLookupFuncs{GetMirrorPodByPodFunc: func(*v1.Pod) (*v1.Pod, bool) { return mirror, true }}
		})
		must(t, h.m.SetPodStatus(static, runningStatus(true)))
		st := runningStatus(false)
		st.Phase = v1.PodSucceeded
		st.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}
		must(t, h.m.SetPodStatus(static, st))
		must(t, h.m.TerminatePod(static))
		synctest.Wait()
		h.period()
		got := mustPod(t, api, "s")
		if got.Status.Phase != v1.PodSucceeded {
			t.Errorf("mirror phase = %s", got.Status.Phase)
		}
		if c := api.Counts(); c.Deletes != 0 {
			t.Errorf("mirror pod deleted: %+v", c)
		}
	})
}

func TestManagerBadInput(t *testing.T) {
	m, err := statusmgr.New(statusmgr.Config{Patcher: statusmgrtest.NewFakeAPI()})
	must(t, err)
	noUID := testPod("p", "")
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"SetPodStatus nil pod", func() error { return m.SetPodStatus(nil, v1.PodStatus{}) }, statusmgr.ErrNilPod},
		{"SetPodStatus empty UID", func() error { return m.SetPodStatus(noUID, v1.PodStatus{}) }, statusmgr.ErrEmptyUID},
		{"TerminatePod nil pod", func() error { return m.TerminatePod(nil) }, statusmgr.ErrNilPod},
		{"TerminatePod empty UID", func() error { return m.TerminatePod(noUID) }, statusmgr.ErrEmptyUID},
		{"readiness unknown pod", func() error { return m.SetContainerReadiness("nope", "c", true) }, statusmgr.ErrUnknownPod},
		{"readiness empty UID", func() error { return m.SetContainerReadiness("", "c", true) }, statusmgr.ErrEmptyUID},
		{"startup unknown pod", func() error { return m.SetContainerStartup("nope", "c", true) }, statusmgr.ErrUnknownPod},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, tc.want) {
				t.Errorf("error = %v, want %v", err, tc.want)
			}
		})
	}
	if s := m.Stats(); s.Invalid != 5 {
		t.Errorf("Invalid = %d, want 5", s.Invalid)
	}
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		cfg  statusmgr.Config
		ok   bool
	}{
		{"no patcher", statusmgr.Config{}, false},
		{"negative period", statusmgr.Config{Patcher: statusmgr.StatusPatcherFuncs{}, SyncPeriod: -1}, false},
		{"negative retries", statusmgr.Config{Patcher: statusmgr.StatusPatcherFuncs{}, MaxConflictRetries: -1}, false},
		{"negative writes", statusmgr.Config{Patcher: statusmgr.StatusPatcherFuncs{}, MaxConcurrentWrites: -1}, false},
		{"minimal", statusmgr.Config{Patcher: statusmgr.StatusPatcherFuncs{}}, true},
		{"one writer", statusmgr.Config{Patcher: statusmgr.StatusPatcherFuncs{}, MaxConcurrentWrites: 1}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := statusmgr.New(tc.cfg)
			if tc.ok != (err == nil) || tc.ok != (m != nil) {
				t.Fatalf("New = %v, %v", m, err)
			}
			if !tc.ok && !errors.Is(err, statusmgr.ErrInvalidConfig) {
				t.Errorf("error %v does not wrap ErrInvalidConfig", err)
			}
		})
	}
}

func TestManagerIllegalTransitionRefused(t *testing.T) {
	m, err := statusmgr.New(statusmgr.Config{Patcher: statusmgrtest.NewFakeAPI()})
	must(t, err)
	pod := testPod("p", "u1")
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	done := runningStatus(false)
	done.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}
	must(t, m.SetPodStatus(pod, done))
	if err := m.SetPodStatus(pod, runningStatus(true)); !errors.Is(err, statusmgr.ErrIllegalTransition) {
		t.Fatalf("error = %v, want ErrIllegalTransition", err)
	}
	got, _ := m.GetPodStatus("u1")
	if got.ContainerStatuses[0].State.Terminated == nil {
		t.Error("refused status was stored")
	}
	if s := m.Stats(); s.Refused != 1 {
		t.Errorf("Refused = %d", s.Refused)
	}
}

func TestManagerDeletionForcesNewVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := testPod("p", "u1")
		api := statusmgrtest.NewFakeAPI(pod)
		h := start(t, api, nil)
		must(t, h.m.SetPodStatus(pod, runningStatus(true)))
		synctest.Wait()
		// The same status again: skipped, until the pod has a deletionTimestamp.
		must(t, h.m.SetPodStatus(pod, runningStatus(true)))
		synctest.Wait()
		h.counts(statusmgrtest.Counts{Gets: 1, Patches: 1})
		api.Put(deleting(mustPod(t, api, "p")))
		must(t, h.m.SetPodStatus(deleting(pod), runningStatus(true)))
		synctest.Wait()
		// The forced version is synced; the stale copy of the server's pod (no
		// deletionTimestamp) is not trusted, nothing to patch.
		if c := api.Counts(); c.Patches != 1 || c.Deletes != 0 {
			t.Errorf("counts = %+v", c)
		}
	})
}

func TestManagerPreservesOtherClientsConditions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := testPod("p", "u1")
		api := statusmgrtest.NewFakeAPI(pod)
		h := start(t, api, nil)
		must(t, h.m.SetPodStatus(pod, runningStatus(false)))
		synctest.Wait()
		// Another client adds a readiness-gate condition behind the manager's back.
		other := mustPod(t, api, "p")
		other.Status.Conditions = append(other.Status.Conditions, v1.PodCondition{Type: "example.com/gate", Status: v1.ConditionTrue})
		api.Put(other)
		must(t, h.m.SetPodStatus(pod, runningStatus(true)))
		synctest.Wait()
		got := mustPod(t, api, "p")
		var types []v1.PodConditionType
		for _, c := range got.Status.Conditions {
			types = append(types, c.Type)
			if c.Type == v1.PodReady && c.Status != v1.ConditionTrue {
				t.Errorf("Ready = %s", c.Status)
			}
		}
		want := []v1.PodConditionType{v1.PodScheduled, v1.PodReady, v1.ContainersReady, "example.com/gate"}
		if diff := cmp.Diff(want, types); diff != "" {
			t.Errorf("conditions (-want +got):\n%s", diff)
		}
		h.counts(statusmgrtest.Counts{Gets: 1, Patches: 2})
	})
}

func TestManagerContainerReadinessAndStartup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := testPod("p", "u1")
		api := statusmgrtest.NewFakeAPI(pod)
		h := start(t, api, nil)
		must(t, h.m.SetPodStatus(pod, runningStatus(false)))
		must(t, h.m.SetContainerReadiness("u1", "containerd://c1", true))
		must(t, h.m.SetContainerStartup("u1", "containerd://c1", true))
		if err := h.m.SetContainerReadiness("u1", "containerd://nope", true); !errors.Is(err, statusmgr.ErrUnknownPod) {
			t.Errorf("unknown container: %v", err)
		}
		synctest.Wait()
		got := mustPod(t, api, "p")
		cs := got.Status.ContainerStatuses[0]
		if !cs.Ready || cs.Started == nil || !*cs.Started {
			t.Errorf("container status = %+v", cs)
		}
		for _, c := range got.Status.Conditions {
			if (c.Type == v1.PodReady || c.Type == v1.ContainersReady) && c.Status != v1.ConditionTrue {
				t.Errorf("%s = %s", c.Type, c.Status)
			}
		}
		// Unchanged readiness makes no new version.
		before := api.Counts().Patches
		must(t, h.m.SetContainerReadiness("u1", "containerd://c1", true))
		synctest.Wait()
		if c := api.Counts(); c.Patches != before {
			t.Errorf("patches = %d, want %d", c.Patches, before)
		}
	})
}

func TestManagerRemoveOrphanedStatuses(t *testing.T) {
	m, err := statusmgr.New(statusmgr.Config{Patcher: statusmgrtest.NewFakeAPI()})
	must(t, err)
	must(t, m.SetPodStatus(testPod("a", "ua"), runningStatus(true)))
	must(t, m.SetPodStatus(testPod("b", "ub"), runningStatus(true)))
	m.RemoveOrphanedStatuses(map[types.UID]bool{"ua": true})
	if _, ok := m.GetPodStatus("ua"); !ok {
		t.Error("kept pod's status removed")
	}
	if _, ok := m.GetPodStatus("ub"); ok {
		t.Error("orphaned status kept")
	}
	if s := m.Stats(); s.Orphaned != 1 {
		t.Errorf("Orphaned = %d", s.Orphaned)
	}
	// The orphan is never written: only the kept pod is looked up.
	must(t, m.Sync(t.Context()))
	if s := m.Stats(); s.Gets != 1 {
		t.Errorf("Gets = %d, want 1", s.Gets)
	}
}

func TestManagerRunOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := start(t, statusmgrtest.NewFakeAPI(), nil)
		if err := h.m.Run(t.Context()); !errors.Is(err, statusmgr.ErrAlreadyRunning) {
			t.Errorf("second Run = %v", err)
		}
	})
}

func TestManagerInvalidPhaseRefused(t *testing.T) {
	m, err := statusmgr.New(statusmgr.Config{Patcher: statusmgrtest.NewFakeAPI()})
	must(t, err)
	pod := testPod("p", "u1")
	bogus := runningStatus(true)
	bogus.Phase = "Exploded"
	if err := m.SetPodStatus(pod, bogus); !errors.Is(err, statusmgr.ErrInvalidPhase) {
		t.Errorf("unknown phase: %v", err)
	}
	done := runningStatus(false)
	done.Phase = v1.PodSucceeded
	done.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}
	must(t, m.SetPodStatus(pod, done))
	back := *done.DeepCopy()
	back.Phase = v1.PodRunning
	if err := m.SetPodStatus(pod, back); !errors.Is(err, statusmgr.ErrInvalidPhase) {
		t.Errorf("Succeeded -> Running: %v", err)
	}
	back.Phase = v1.PodFailed
	if err := m.SetPodStatus(pod, back); !errors.Is(err, statusmgr.ErrInvalidPhase) {
		t.Errorf("Succeeded -> Failed: %v", err)
	}
	// TerminatePod keeps the terminal phase: accepted.
	must(t, m.TerminatePod(pod))
	if got, _ := m.GetPodStatus("u1"); got.Phase != v1.PodSucceeded {
		t.Errorf("phase = %s", got.Phase)
	}
	if s := m.Stats(); s.Refused != 3 {
		t.Errorf("Refused = %d, want 3", s.Refused)
	}
}

// TerminatePod of a pod whose cached status is terminated already but names an init
// container the spec does not list is refused, as every status checked against the spec
// (the cached status is not kept as it is).
func TestManagerTerminatePodRefusesUnknownInitContainers(t *testing.T) {
	m, err := statusmgr.New(statusmgr.Config{Patcher: statusmgrtest.NewFakeAPI()})
	must(t, err)
	pod := testPod("p", "u1")
	failed := runningStatus(false)
	failed.Phase = v1.PodFailed
	failed.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}
	failed.InitContainerStatuses = []v1.ContainerStatus{{Name: "ghost", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}}}
	must(t, m.SetPodStatus(pod, failed)) // the first status is checked against no old one
	if err := m.TerminatePod(pod); !errors.Is(err, statusmgr.ErrIllegalTransition) {
		t.Fatalf("TerminatePod = %v, want ErrIllegalTransition", err)
	}
	if n := m.Stats().Refused; n != 1 {
		t.Errorf("Stats().Refused = %d, want 1", n)
	}
}

func TestManagerTerminatePod(t *testing.T) {
	term := func(s *v1.PodStatus) string {
		if s.ContainerStatuses[0].State.Terminated == nil {
			return string(s.Phase) + "/not-terminated"
		}
		return fmt.Sprintf("%s/%d", s.Phase, s.ContainerStatuses[0].State.Terminated.ExitCode)
	}
	tests := []struct {
		name   string
		cached *v1.PodStatus // set with SetPodStatus first
		pod    v1.PodStatus  // pod.Status
		static bool
		want   string
	}{
		{name: "from pod.Status when nothing is cached", pod: runningStatus(true), want: "Failed/137"},
		{name: "from the cached status", cached: ptrTo(runningStatus(true)), pod: v1.PodStatus{Phase: v1.PodPending,
			ContainerStatuses: []v1.ContainerStatus{{Name: "c"}}}, want: "Failed/137"},
		{name: "succeeded stays succeeded", cached: func() *v1.PodStatus {
			s := runningStatus(false)
			s.Phase = v1.PodSucceeded
			s.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}
			return &s
		}(), want: "Succeeded/0"},
		{name: "static pod keeps its phase", pod: runningStatus(true), static: true, want: "Running/137"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := statusmgr.New(statusmgr.Config{Patcher: statusmgrtest.NewFakeAPI()})
			must(t, err)
			pod := testPod("p", "u1")
			pod.Status = tc.pod
			if tc.static {
				pod.Annotations[statusmgr.ConfigSourceAnnotationKey] = "file"
			}
			if tc.cached != nil {
				must(t, m.SetPodStatus(pod, *tc.cached))
			}
			must(t, m.TerminatePod(pod))
			got, ok := m.GetPodStatus("u1")
			if !ok {
				t.Fatal("no status")
			}
			if s := term(&got); s != tc.want {
				t.Errorf("status = %s, want %s", s, tc.want)
			}
		})
	}
}

// A forced version (TerminatePod, SetPodStatus of a deleting pod) equal to the cached
// status is a new version, synced, that keeps the cached status: a view taken before
// shares its memory; one that differs gets a status of its own.
func TestManagerForcedEqualVersionKeepsTheCachedStatus(t *testing.T) {
	api := statusmgrtest.NewFakeAPI(testPod("p", "u1"))
	synced := 0
	m, err := statusmgr.New(statusmgr.Config{Patcher: api, ObserveSyncLatency: func(time.Duration) { synced++ }})
	must(t, err)
	pod := deleting(testPod("p", "u1"))
	failed := runningStatus(false)
	failed.Phase = v1.PodFailed
	failed.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}
	must(t, m.SetPodStatus(pod, failed))
	must(t, m.Sync(t.Context()))
	shares := func(a, b v1.PodStatus) bool {
		return &a.ContainerStatuses[0] == &b.ContainerStatuses[0] && &a.Conditions[0] == &b.Conditions[0]
	}
	for i, set := range []func() error{
		func() error { return m.TerminatePod(pod) },
		func() error { return m.SetPodStatus(pod, failed) },
	} {
		before, _ := m.PodStatusView("u1")
		must(t, set())
		if after, _ := m.PodStatusView("u1"); !shares(before, after) {
			t.Errorf("set %d: the equal version has a status of its own", i)
		}
		must(t, m.Sync(t.Context()))
		if synced != i+2 {
			t.Errorf("set %d: %d versions synced, want %d", i, synced, i+2)
		}
	}
	before, _ := m.PodStatusView("u1")
	other := *failed.DeepCopy()
	other.Message = "x"
	must(t, m.SetPodStatus(pod, other))
	if after, _ := m.PodStatusView("u1"); shares(before, after) || after.Message != "x" {
		t.Errorf("a forced status that differs was not stored: %+v", after)
	}
}

// TerminatePod of a pod whose cached status is terminated already keeps that status,
// unless the pod now has more containers (an ephemeral one was added): then the
// termination messages are cut to the smaller budget, as NormalizeStatus does.
func TestManagerTerminatePodCutsMessagesToTheNewBudget(t *testing.T) {
	m, err := statusmgr.New(statusmgr.Config{Patcher: statusmgrtest.NewFakeAPI()})
	must(t, err)
	pod := testPod("p", "u1")
	failed := runningStatus(false)
	failed.Phase = v1.PodFailed
	failed.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		ExitCode: 1, Message: strings.Repeat("m", statusmgr.MaxTerminationMessageBytes-1)}}
	must(t, m.SetPodStatus(pod, failed))
	before, _ := m.PodStatusView("u1")
	must(t, m.TerminatePod(pod))
	if after, _ := m.PodStatusView("u1"); &after.ContainerStatuses[0] != &before.ContainerStatuses[0] {
		t.Error("TerminatePod of a terminated status did not keep it")
	}
	grown := pod.DeepCopy()
	grown.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}}
	must(t, m.TerminatePod(grown))
	after, _ := m.PodStatusView("u1")
	if n := len(after.ContainerStatuses[0].State.Terminated.Message); n != statusmgr.MaxTerminationMessageBytes/2 {
		t.Errorf("message of %d bytes, want %d (two containers)", n, statusmgr.MaxTerminationMessageBytes/2)
	}
	if n := len(before.ContainerStatuses[0].State.Terminated.Message); n != statusmgr.MaxTerminationMessageBytes-1 {
		t.Errorf("the earlier status changed: message of %d bytes", n)
	}
}

// PodStatusView gives the cached status as GetPodStatus does, without a copy: a view
// stays as it was when a newer version is set, and a caller modifying GetPodStatus's copy
// or the status it set changes neither the cache nor a view.
func TestManagerPodStatusView(t *testing.T) {
	m, err := statusmgr.New(statusmgr.Config{Patcher: statusmgrtest.NewFakeAPI()})
	must(t, err)
	pod := testPod("p", "u1")
	if _, ok := m.PodStatusView("u1"); ok {
		t.Fatal("view of a pod without a status")
	}
	set := runningStatus(false)
	must(t, m.SetPodStatus(pod, set))
	view, ok := m.PodStatusView("u1")
	got, _ := m.GetPodStatus("u1")
	if !ok || !cmp.Equal(view, got) {
		t.Fatalf("view %+v, ok %v; want GetPodStatus's %+v", view, ok, got)
	}
	want := *view.DeepCopy()

	set.ContainerStatuses[0].Ready = true
	set.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(epoch.Add(time.Hour))
	got.ContainerStatuses[0].Image = "changed"
	got.Conditions[0].Reason = "changed"
	must(t, m.SetPodStatus(pod, runningStatus(true)))
	if diff := cmp.Diff(want, view); diff != "" {
		t.Errorf("view changed (-was +now):\n%s", diff)
	}
	now, _ := m.PodStatusView("u1")
	if !now.ContainerStatuses[0].Ready || now.ContainerStatuses[0].Image == "changed" {
		t.Errorf("view after the newer version: %+v", now.ContainerStatuses[0])
	}
}

// RefreshPod: the manager keeps the newest object of a pod whose status it caches (the
// next sync works from it), without a new version; nil, an empty UID and a pod without a
// cached status change nothing.
func TestManagerRefreshPod(t *testing.T) {
	pod := testPod("p", "u1")
	m, err := statusmgr.New(statusmgr.Config{Patcher: statusmgrtest.NewFakeAPI(pod)})
	must(t, err)
	must(t, m.SetPodStatus(pod, runningStatus(true)))
	newer := pod.DeepCopy()
	newer.ResourceVersion = "2"
	newer.Status = runningStatus(true)
	m.RefreshPod(newer)
	m.RefreshPod(nil)
	m.RefreshPod(testPod("p", ""))
	m.RefreshPod(testPod("q", "u2"))
	if got := m.PodForTest("u1"); got != newer {
		t.Errorf("the entry holds the pod of resourceVersion %q, want the refreshed one", got.ResourceVersion)
	}
	if _, ok := m.GetPodStatus("u2"); ok {
		t.Error("RefreshPod of a pod without a status cached one")
	}
	if s := m.Stats(); s.Invalid != 0 {
		t.Errorf("RefreshPod counted %d invalid calls, want none (it ignores them)", s.Invalid)
	}
}

// Once a status is on the server, the manager keeps the server's copy of it (the patch
// answer) as the cached status instead of a second one: PodStatusView shares it,
// GetPodStatus still returns an equal copy of its own.
func TestManagerSharesTheServersStatus(t *testing.T) {
	pod := testPod("p", "u1")
	api := statusmgrtest.NewFakeAPI(pod)
	var answer *v1.Pod
	m, err := statusmgr.New(statusmgr.Config{Patcher: statusmgr.StatusPatcherFuncs{
		GetPodFunc: api.GetPod,
		PatchPodStatusFunc: func(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
			p, err := api.PatchPodStatus(ctx, namespace, name, patch)
			answer = p
			return p, err
		},
		DeletePodFunc: api.DeletePod,
	}})
	must(t, err)
	must(t, m.SetPodStatus(pod, runningStatus(true)))
	before, _ := m.GetPodStatus("u1")
	must(t, m.Sync(t.Context()))
	if answer == nil {
		t.Fatal("no PATCH")
	}
	view, _ := m.PodStatusView("u1")
	if len(view.ContainerStatuses) == 0 || &view.ContainerStatuses[0] != &answer.Status.ContainerStatuses[0] {
		t.Error("the cached status is not the server's copy")
	}
	after, _ := m.GetPodStatus("u1")
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("the cached status changed (-before +after):\n%s", diff)
	}
	if &after.ContainerStatuses[0] == &answer.Status.ContainerStatuses[0] {
		t.Error("GetPodStatus shares the server's copy")
	}
}

// decodingManager is a Manager over api whose PATCH answers are deep copies, as a client
// decodes every answer into its caller's own object; answered gets each answer.
func decodingManager(t *testing.T, api *statusmgrtest.FakeAPI, answered func(*v1.Pod)) *statusmgr.Manager {
	t.Helper()
	m, err := statusmgr.New(statusmgr.Config{Patcher: statusmgr.StatusPatcherFuncs{
		GetPodFunc: api.GetPod,
		PatchPodStatusFunc: func(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
			p, err := api.PatchPodStatus(ctx, namespace, name, patch)
			if err != nil {
				return nil, err
			}
			decoded := p.DeepCopy()
			answered(decoded)
			return decoded, nil
		},
		DeletePodFunc: api.DeletePod,
	}})
	must(t, err)
	return m
}

// syncsWithoutGet sets the not-ready status on pod and syncs: the sync decides on what the
// manager kept of the server's pod, so it PATCHes (its second) without a GET, and the
// server then has the pod not ready.
func syncsWithoutGet(t *testing.T, m *statusmgr.Manager, api *statusmgrtest.FakeAPI, pod *v1.Pod) {
	t.Helper()
	gets := api.Counts().Gets
	must(t, m.SetPodStatus(pod, runningStatus(false)))
	must(t, m.Sync(t.Context()))
	if c := api.Counts(); c.Gets != gets || c.Patches != 2 {
		t.Errorf("the second sync made %d GETs and %d PATCHes in all, want no GET and a second PATCH", c.Gets-gets, c.Patches)
	}
	if got, _ := api.Pod(pod.Namespace, pod.Name); got == nil || !hasCondition(got.Status, v1.PodReady, v1.ConditionFalse) {
		t.Errorf("the server's pod is %v, want it not ready (the second status)", podSummary(got))
	}
}

// TestManagerKeepsOnlyWhatASyncReads: the manager keeps of a PATCH answer (a whole pod, as
// a client decodes it) only what a later sync reads; the answer's spec is not kept alive
// with the pod's entry, and the next sync still decides on the kept part (its status and
// deletion) without reading the pod again.
func TestManagerKeepsOnlyWhatASyncReads(t *testing.T) {
	pod := testPod("p", "u1")
	api := statusmgrtest.NewFakeAPI(pod)
	var spec weak.Pointer[v1.Container]
	m := decodingManager(t, api, func(decoded *v1.Pod) {
		decoded.Spec.Containers = append([]v1.Container(nil), decoded.Spec.Containers...)
		spec = weak.Make(&decoded.Spec.Containers[0])
	})
	must(t, m.SetPodStatus(pod, runningStatus(true)))
	must(t, m.Sync(t.Context()))
	if spec == (weak.Pointer[v1.Container]{}) {
		t.Fatal("no PATCH")
	}
	runtime.GC()
	if spec.Value() != nil {
		t.Error("the manager keeps the PATCH answer's spec alive")
	}
	syncsWithoutGet(t, m, api, pod)
	runtime.KeepAlive(m)
}

// hasCondition reports whether s has a condition of type typ with status want.
func hasCondition(s v1.PodStatus, typ v1.PodConditionType, want v1.ConditionStatus) bool {
	for _, c := range s.Conditions {
		if c.Type == typ {
			return c.Status == want
		}
	}
	return false
}

// podSummary is p's UID, phase and conditions, for a failure message.
func podSummary(p *v1.Pod) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s phase=%s conditions=%v", p.UID, p.Status.Phase, p.Status.Conditions)
}

// TestManagerRefreshPodTakesTheServersObject: once the node's own object of the pod says
// what the last PATCH answered (its watch brought it back), the manager keeps that object
// instead of what it kept of the answer: the answer's status is no longer held, and the
// next sync still needs no GET.
func TestManagerRefreshPodTakesTheServersObject(t *testing.T) {
	pod := testPod("p", "u1")
	api := statusmgrtest.NewFakeAPI(pod)
	var answered weak.Pointer[v1.ContainerStatus]
	m := decodingManager(t, api, func(decoded *v1.Pod) {
		decoded.Status.ContainerStatuses = append([]v1.ContainerStatus(nil), decoded.Status.ContainerStatuses...)
		answered = weak.Make(&decoded.Status.ContainerStatuses[0])
	})
	must(t, m.SetPodStatus(pod, runningStatus(true)))
	must(t, m.Sync(t.Context()))
	watched, _ := api.Pod(pod.Namespace, pod.Name)
	watched = watched.DeepCopy() // the node's own object, from its watch

	older := watched.DeepCopy()
	older.ResourceVersion, older.Status.Phase = "1", v1.PodPending
	m.RefreshPod(older) // another status: what the manager kept of the answer stays
	runtime.GC()
	if answered.Value() == nil {
		t.Fatal("the manager dropped the answer's status for an object with another status")
	}
	m.RefreshPod(watched)
	runtime.GC()
	if answered.Value() != nil {
		t.Error("the manager still holds the answer's status after RefreshPod of an object with the same state")
	}
	if view, _ := m.PodStatusView("u1"); len(view.ContainerStatuses) == 0 || &view.ContainerStatuses[0] != &watched.Status.ContainerStatuses[0] {
		t.Error("the cached status is not the node's object's")
	}
	syncsWithoutGet(t, m, api, watched)
	runtime.KeepAlive(m)
}

// SetPodStatusNoCopy caches what SetPodStatus caches, refuses what it refuses and counts
// the same, for every kind of stamping and normalizing the manager does in place.
func TestManagerSetPodStatusNoCopy(t *testing.T) {
	at := func(d time.Duration) *metav1.Time { ts := metav1.NewTime(epoch.Add(d)); return &ts }
	withStart := func(s v1.PodStatus, start *metav1.Time) v1.PodStatus { s.StartTime = start; return s }
	preset := func(name string) v1.PodStatus { s, _ := statusmgrtest.Preset(name); return s }
	twoContainers := func() v1.PodStatus {
		s := runningStatus(true)
		s.ContainerStatuses = append(s.ContainerStatuses, s.ContainerStatuses[0])
		s.ContainerStatuses[0].Name = "z"
		s.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			ExitCode: 1, Message: strings.Repeat("m", 2*statusmgr.MaxTerminationMessageBytes),
			FinishedAt: metav1.NewTime(epoch.Add(1500 * time.Millisecond))}}
		return s
	}
	tests := []struct {
		name     string
		deleting bool
		cached   *v1.PodStatus // set first, with SetPodStatus
		// forget makes the manager forget the pod (RemoveOrphanedStatuses) while the set
		// prepares its status (at its first clock read), so that the set retries.
		forget  bool
		set     func() v1.PodStatus
		wantErr error
	}{
		{name: "first status, start time stamped", set: func() v1.PodStatus { return runningStatus(false) }},
		{name: "zero start time stamped", set: func() v1.PodStatus { return withStart(runningStatus(false), &metav1.Time{}) }},
		{name: "cached start time kept", cached: ptr.To(withStart(runningStatus(false), at(time.Minute))),
			set: func() v1.PodStatus { return withStart(runningStatus(true), at(time.Hour)) }},
		{name: "transition times kept and stamped", cached: ptr.To(runningStatus(false)),
			set: func() v1.PodStatus {
				s := runningStatus(true)
				for i := range s.Conditions {
					s.Conditions[i].LastTransitionTime = *at(time.Hour)
				}
				return s
			}},
		{name: "retried from the status as given", cached: ptr.To(withStart(runningStatus(false), at(time.Minute))), forget: true,
			set: func() v1.PodStatus { return withStart(runningStatus(true), at(2*time.Minute)) }},
		{name: "sorted, times truncated, message cut", set: twoContainers},
		{name: "unchanged: skipped", cached: ptr.To(runningStatus(true)), set: func() v1.PodStatus { return runningStatus(true) }},
		{name: "deleting: forced", deleting: true, cached: ptr.To(runningStatus(true)), set: func() v1.PodStatus { return runningStatus(true) }},
		{name: "illegal transition refused", cached: ptr.To(twoContainers()),
			set: func() v1.PodStatus {
				s := twoContainers()
				s.ContainerStatuses[0].State = runningStatus(true).ContainerStatuses[0].State
				return s
			},
			wantErr: statusmgr.ErrIllegalTransition},
		{name: "terminal phase left: refused", cached: ptr.To(preset("succeeded")), set: func() v1.PodStatus { return runningStatus(true) },
			wantErr: statusmgr.ErrInvalidPhase},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("p", "u1")
			pod.Generation = 3
			pod.Spec.RestartPolicy = v1.RestartPolicyNever // a terminated container stays so
			pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "z", Image: "busybox"})
			if tc.deleting {
				pod = deleting(pod)
			}
			podBefore := pod.DeepCopy()
			run := func(noCopy bool) (v1.PodStatus, error, statusmgr.Stats, int) {
				clk := &hookClock{FakeClock: clocktesting.NewFakeClock(epoch.Add(90 * time.Minute))}
				m, err := statusmgr.New(statusmgr.Config{Patcher: statusmgrtest.NewFakeAPI(), Clock: clk})
				must(t, err)
				if tc.cached != nil {
					must(t, m.SetPodStatus(pod, *tc.cached.DeepCopy()))
				}
				if tc.forget {
					clk.arm(func() { m.RemoveOrphanedStatuses(map[types.UID]bool{}) })
				}
				set := m.SetPodStatus
				if noCopy {
					set = m.SetPodStatusNoCopy
				}
				err = set(pod, tc.set())
				got, _ := m.GetPodStatus("u1")
				stats := m.Stats()
				_ = m.Sync(context.Background()) // the server has no such pod: a GET per pod due
				return got, err, stats, m.Stats().Gets - stats.Gets
			}
			want, wantErr, wantStats, wantSyncs := run(false)
			got, err, stats, syncs := run(true)
			if !errors.Is(wantErr, tc.wantErr) || !errors.Is(err, tc.wantErr) || (err == nil) != (wantErr == nil) {
				t.Errorf("error %v, SetPodStatus's %v, want %v", err, wantErr, tc.wantErr)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("cached status differs from SetPodStatus's (-SetPodStatus +NoCopy):\n%s", diff)
			}
			if stats != wantStats || syncs != wantSyncs {
				t.Errorf("stats %+v and %d syncs, SetPodStatus's %+v and %d", stats, syncs, wantStats, wantSyncs)
			}
			if diff := cmp.Diff(podBefore, pod); diff != "" {
				t.Errorf("pod changed (-before +after):\n%s", diff)
			}
		})
	}
}

// hookClock is a fake clock that runs a hook at its first Now after arm.
type hookClock struct {
	*clocktesting.FakeClock
	hook atomic.Pointer[func()]
}

func (c *hookClock) arm(hook func()) { c.hook.Store(&hook) }

func (c *hookClock) Now() time.Time {
	if h := c.hook.Swap(nil); h != nil {
		(*h)()
	}
	return c.FakeClock.Now()
}

// SetPodStatusNoCopy caches the status it is given, without a copy: the cached status
// shares its memory (what the node agent's generated status, its own, saves), while the
// pod, its status and the old cached version stay as they were.
func TestManagerSetPodStatusNoCopyTakesTheStatus(t *testing.T) {
	pod := testPod("p", "u1")
	pod.Status = runningStatus(false)
	podBefore := pod.DeepCopy()
	m, err := statusmgr.New(statusmgr.Config{Patcher: statusmgrtest.NewFakeAPI(pod)})
	must(t, err)
	must(t, m.SetPodStatusNoCopy(pod, runningStatus(false)))
	old, _ := m.PodStatusView("u1")
	oldBefore := old.DeepCopy()

	given := runningStatus(true)
	must(t, m.SetPodStatusNoCopy(pod, given))
	view, _ := m.PodStatusView("u1")
	if &view.ContainerStatuses[0] != &given.ContainerStatuses[0] || &view.Conditions[0] != &given.Conditions[0] {
		t.Error("the cached status is a copy of the given one")
	}
	if !view.ContainerStatuses[0].Ready {
		t.Errorf("cached %+v, want the given (ready) status", view.ContainerStatuses[0])
	}
	if diff := cmp.Diff(*oldBefore, old); diff != "" {
		t.Errorf("the older version changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(podBefore, pod); diff != "" {
		t.Errorf("pod changed (-before +after):\n%s", diff)
	}
}
