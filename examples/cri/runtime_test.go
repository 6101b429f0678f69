package cri_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/examples/cri"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

type harness struct {
	*fakeCRI
	rt      *cri.Runtime
	logRoot string

	mu     sync.Mutex
	events []string
}

func newHarness(t *testing.T, mod func(*cri.Config)) *harness {
	t.Helper()
	h := &harness{fakeCRI: newFakeCRI(t), logRoot: t.TempDir()}
	cfg := cri.Config{Endpoint: h.endpoint, LogRoot: h.logRoot, Clock: h.clock,
		Event: func(_ *v1.Pod, typ, reason, msg string) {
			h.mu.Lock()
			h.events = append(h.events, typ+" "+reason+": "+msg)
			h.mu.Unlock()
		}}
	if mod != nil {
		mod(&cfg)
	}
	rt, err := cri.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	h.rt = rt
	return h
}

func (h *harness) eventsWith(reason string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.events {
		if strings.Contains(e, " "+reason+": ") {
			out = append(out, e)
		}
	}
	return out
}

// sync reads the pod's status and syncs it, as the node does.
func (h *harness) sync(t *testing.T, pod *v1.Pod) error {
	t.Helper()
	st, err := h.rt.PodStatus(t.Context(), pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	return h.rt.SyncPod(t.Context(), pod, st)
}

func (h *harness) status(t *testing.T, pod *v1.Pod) *pleg.PodStatus {
	t.Helper()
	st, err := h.rt.PodStatus(t.Context(), pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func fakePod(policy v1.RestartPolicy, containers ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1", Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{HostNetwork: true, RestartPolicy: policy, TerminationGracePeriodSeconds: ptr.To[int64](30)}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c, Image: "img:1", ImagePullPolicy: v1.PullIfNotPresent,
			Command: []string{"/bin/app"}, Args: []string{"-v"}, WorkingDir: "/w",
			Env: []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "FROM", ValueFrom: &v1.EnvVarSource{}}}})
	}
	return p
}

func TestNewConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  cri.Config
	}{
		{"no endpoint", cri.Config{}},
		{"tcp endpoint", cri.Config{Endpoint: "tcp://127.0.0.1:1"}},
		{"relative socket", cri.Config{Endpoint: "unix://run/x.sock"}},
		{"relative log root", cri.Config{Endpoint: "/x.sock", LogRoot: "logs"}},
		{"unknown network", cri.Config{Endpoint: "/x.sock", PodNetwork: 7}},
		{"negative duration", cri.Config{Endpoint: "/x.sock", BackOffInitial: -1}},
		{"negative call timeout", cri.Config{Endpoint: "/x.sock", CallTimeout: -1}},
		{"max below initial", cri.Config{Endpoint: "/x.sock", BackOffInitial: time.Minute, BackOffMax: time.Second}},
	} {
		if _, err := cri.New(tc.cfg); !errors.Is(err, cri.ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want ErrInvalidConfig", tc.name, err)
		}
	}
	// Nothing listens: a clear error once the connect timeout ends.
	_, err := cri.New(cri.Config{Endpoint: filepath.Join(t.TempDir(), "none.sock"), ConnectTimeout: 100 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "does not answer") {
		t.Errorf("New on a missing socket = %v", err)
	}
}

// TestSyncPodCreates: a new hostNetwork pod gets a sandbox in the node's network
// namespace and its containers, with the kubelet's labels, annotations and log paths.
func TestSyncPodCreates(t *testing.T) {
	h := newHarness(t, nil)
	pod := fakePod(v1.RestartPolicyAlways, "a", "b")
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	cs, sbs := h.snapshot()
	if len(sbs) != 1 {
		t.Fatalf("%d sandboxes", len(sbs))
	}
	sbCfg := sbs[0].cfg
	if got := sbCfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork(); got != runtimeapi.NamespaceMode_NODE {
		t.Errorf("sandbox network namespace = %v, want NODE", got)
	}
	wantLogDir := filepath.Join(h.logRoot, "ns_web_uid-1")
	if sbCfg.GetLogDirectory() != wantLogDir || sbCfg.GetLabels()["app"] != "web" || sbCfg.GetLabels()[cri.LabelPodUID] != "uid-1" {
		t.Errorf("sandbox config: log dir %q, labels %v", sbCfg.GetLogDirectory(), sbCfg.GetLabels())
	}
	if len(cs["a"]) != 1 || len(cs["b"]) != 1 {
		t.Fatalf("containers: %v", cs)
	}
	a := cs["a"][0]
	if a.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("a is %v", a.state)
	}
	got := map[string]any{
		"labels":  a.cfg.GetLabels(),
		"restart": a.cfg.GetAnnotations()[cri.AnnotationContainerRestartCount],
		"logPath": a.cfg.GetLogPath(), "command": a.cfg.GetCommand(), "args": a.cfg.GetArgs(), "dir": a.cfg.GetWorkingDir(),
		"envs": len(a.cfg.GetEnvs()), "image": a.image, "attempt": a.cfg.GetMetadata().GetAttempt(),
	}
	want := map[string]any{
		"labels":  map[string]string{cri.LabelPodUID: "uid-1", cri.LabelPodName: "web", cri.LabelPodNamespace: "ns", cri.LabelContainerName: "a"},
		"restart": "0", "logPath": "a/0.log", "command": []string{"/bin/app"}, "args": []string{"-v"}, "dir": "/w",
		"envs": 2, "image": "sha256:img:1", "attempt": uint32(0), // FROM (an empty valueFrom) is "", as the kubelet sets it
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("container a (-want +got):\n%s", diff)
	}
	if a.cfg.GetAnnotations()[cri.AnnotationContainerHash] == "" {
		t.Error("no hash annotation")
	}
	if _, err := os.Stat(filepath.Join(wantLogDir, "a")); err != nil {
		t.Errorf("container log directory: %v", err)
	}
	if !slices.Equal(h.pulls, []string{"img:1"}) {
		t.Errorf("pulls = %v, want one of img:1 (IfNotPresent, missing)", h.pulls)
	}

	// The status the node sees, and a second sync that does nothing.
	st := h.status(t, pod)
	if len(st.SandboxStatuses) != 1 || st.SandboxStatuses[0].State != pleg.SandboxReady || st.RunningContainers() != 2 {
		t.Fatalf("status: %+v", st)
	}
	if c := st.FindContainerStatusByName("a"); c.ImageID != "sha256:img:1" || c.Image != "img:1" || c.StartedAt.IsZero() {
		t.Errorf("status of a: %+v", c)
	}
	before := h.rt.Stats()
	if err := h.rt.SyncPod(t.Context(), pod, st); err != nil {
		t.Fatal(err)
	}
	after := h.rt.Stats()
	for _, m := range []string{"RunPodSandbox", "CreateContainer", "StartContainer", "PullImage", "ImageStatus"} {
		if after[m] != before[m] {
			t.Errorf("a sync of a running pod called %s", m)
		}
	}
	if before["RunPodSandbox"] != 1 || before["CreateContainer"] != 2 {
		t.Errorf("stats = %v", before)
	}

	pods, err := h.rt.ListPods(t.Context(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || pods[0].ID != "uid-1" || pods[0].Name != "web" || len(pods[0].Containers) != 2 ||
		len(pods[0].Sandboxes) != 1 || pods[0].Sandboxes[0].State != pleg.ContainerStateRunning {
		t.Errorf("ListPods = %+v", pods)
	}
}

// TestPodNetwork: a pod that needs its own network is refused with an event, or given
// the runtime's network or the node's, as Config.PodNetwork says.
func TestPodNetwork(t *testing.T) {
	for _, tc := range []struct {
		mode    cri.PodNetwork
		wantErr error
		wantNS  runtimeapi.NamespaceMode
		wantIPs []string
	}{
		{cri.PodNetworkRefuse, cri.ErrPodNetwork, 0, nil},
		{cri.PodNetworkRuntime, nil, runtimeapi.NamespaceMode_POD, []string{"10.0.0.2"}},
		{cri.PodNetworkNode, nil, runtimeapi.NamespaceMode_NODE, nil},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			h := newHarness(t, func(c *cri.Config) { c.PodNetwork = tc.mode })
			pod := fakePod(v1.RestartPolicyAlways, "a")
			pod.Spec.HostNetwork = false
			err := h.sync(t, pod)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("SyncPod = %v, want %v", err, tc.wantErr)
			}
			_, sbs := h.snapshot()
			if tc.wantErr != nil {
				if len(sbs) != 0 {
					t.Error("a sandbox was created")
				}
				if ev := h.eventsWith("NetworkNotReady"); len(ev) != 1 {
					t.Errorf("events = %v, want one NetworkNotReady", h.events)
				}
				return
			}
			if got := sbs[0].cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork(); got != tc.wantNS {
				t.Errorf("network namespace = %v, want %v", got, tc.wantNS)
			}
			if got := h.status(t, pod).IPs; !slices.Equal(got, tc.wantIPs) {
				t.Errorf("IPs = %v, want %v", got, tc.wantIPs)
			}
		})
	}
}

func TestImagePullPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy    v1.PullPolicy
		present   bool
		wantErr   error
		wantPulls int
	}{
		{v1.PullNever, false, cri.ErrImageNeverPull, 0},
		{v1.PullNever, true, nil, 0},
		{v1.PullIfNotPresent, false, nil, 1},
		{v1.PullIfNotPresent, true, nil, 0},
		{v1.PullAlways, true, nil, 1},
	} {
		h := newHarness(t, nil)
		h.images["img:1"] = tc.present
		pod := fakePod(v1.RestartPolicyAlways, "a")
		pod.Spec.Containers[0].ImagePullPolicy = tc.policy
		err := h.sync(t, pod)
		if !errors.Is(err, tc.wantErr) || len(h.pulls) != tc.wantPulls {
			t.Errorf("%s, present %v: SyncPod = %v with %d pulls; want %v, %d", tc.policy, tc.present, err, len(h.pulls), tc.wantErr, tc.wantPulls)
		}
		if tc.wantErr != nil && len(h.eventsWith("ErrImageNeverPull")) != 1 {
			t.Errorf("no ErrImageNeverPull event: %v", h.events)
		}
	}
}

// TestRestartBackOff: a container that keeps failing is restarted at once the first time,
// then after 10 s, then 20 s; meanwhile SyncPod fails with ErrCrashLoopBackOff.
func TestRestartBackOff(t *testing.T) {
	h := newHarness(t, nil)
	pod := fakePod(v1.RestartPolicyAlways, "a")
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	restart := func(wantCount int) {
		t.Helper()
		if err := h.sync(t, pod); err != nil {
			t.Fatalf("restart %d: %v", wantCount, err)
		}
		c := h.status(t, pod).FindContainerStatusByName("a")
		if c.State != pleg.ContainerStateRunning || c.RestartCount != wantCount {
			t.Fatalf("after restart %d: %+v", wantCount, c)
		}
		cs, _ := h.snapshot()
		for _, inst := range cs["a"] {
			if inst.state == runtimeapi.ContainerState_CONTAINER_RUNNING && inst.cfg.GetLogPath() != "a/"+string(rune('0'+wantCount))+".log" {
				t.Errorf("log path %s", inst.cfg.GetLogPath())
			}
		}
	}
	backingOff := func(delay string) {
		t.Helper()
		err := h.sync(t, pod)
		if !errors.Is(err, cri.ErrCrashLoopBackOff) {
			t.Fatalf("SyncPod = %v, want ErrCrashLoopBackOff", err)
		}
		want := []reason{{"a", node.ReasonCrashLoopBackOff, "back-off " + delay + " restarting failed container=a pod=web_ns(uid-1)"}}
		if diff := cmp.Diff(want, reasons(err)); diff != "" {
			t.Fatalf("SyncPod reasons (-want +got):\n%s", diff)
		}
	}
	h.exitContainer(t, "a", 1)
	restart(1) // the first restart is immediate
	h.clock.Step(time.Second)
	h.exitContainer(t, "a", 1)
	backingOff("10s")
	h.clock.Step(9 * time.Second)
	backingOff("10s")
	h.clock.Step(time.Second)
	restart(2)
	h.exitContainer(t, "a", 1)
	h.clock.Step(19 * time.Second)
	backingOff("20s")
	h.clock.Step(time.Second)
	restart(3)
	if len(h.eventsWith("BackOff")) != 3 {
		t.Errorf("BackOff events: %v", h.eventsWith("BackOff"))
	}
	// The status lists every instance, newest first.
	st := h.status(t, pod)
	var counts []int
	for _, c := range st.ContainerStatuses {
		counts = append(counts, c.RestartCount)
	}
	if !slices.Equal(counts, []int{3, 2, 1, 0}) {
		t.Errorf("restart counts in status order = %v, want newest first", counts)
	}
}

// TestNeverRestart: with restartPolicy Never an exited container stays exited and the
// sandbox is stopped; nothing starts again.
func TestNeverRestart(t *testing.T) {
	h := newHarness(t, nil)
	pod := fakePod(v1.RestartPolicyNever, "a")
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	h.exitContainer(t, "a", 2)
	for range 2 {
		if err := h.sync(t, pod); err != nil {
			t.Fatal(err)
		}
	}
	st := h.status(t, pod)
	if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].ExitCode != 2 || st.IsRunning() {
		t.Errorf("status: %+v, sandboxes %+v", st.ContainerStatuses, st.SandboxStatuses)
	}
}

// TestKillPod: every container stops in parallel with the grace period, less a preStop
// hook's time, the sandbox stops, and KillPod returns nil.
func TestKillPod(t *testing.T) {
	h := newHarness(t, nil)
	pod := fakePod(v1.RestartPolicyAlways, "plain", "hooked")
	pod.Spec.Containers[1].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/drain"}}}}
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	h.execTakes = 4 * time.Second
	if err := h.rt.KillPod(t.Context(), pod, h.status(t, pod), 10); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"plain": 10, "hooked": 6}, h.stopTimeouts()); diff != "" {
		t.Errorf("StopContainer timeouts (-want +got):\n%s", diff)
	}
	if !slices.Equal(h.execs, []string{"hooked [/bin/drain] timeout=10"}) {
		t.Errorf("execs = %v", h.execs)
	}
	st := h.status(t, pod)
	if st.IsRunning() {
		t.Errorf("still running: %+v", st)
	}
	// KillRuntimePod: grace 1, so the 2 s minimum.
	h2 := newHarness(t, nil)
	if err := h2.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	if err := h2.rt.KillRuntimePod(t.Context(), &pleg.Pod{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"plain": 2, "hooked": 2}, h2.stopTimeouts()); diff != "" {
		t.Errorf("KillRuntimePod timeouts (-want +got):\n%s", diff)
	}
	if len(h2.execs) != 0 {
		t.Errorf("a runtime pod's preStop hook ran: %v", h2.execs)
	}
}

func TestKillPodStillRunning(t *testing.T) {
	h := newHarness(t, nil)
	pod := fakePod(v1.RestartPolicyAlways, "a")
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	h.stopKeepsRunning = true
	if err := h.rt.KillPod(t.Context(), pod, nil, 5); !errors.Is(err, cri.ErrStillRunning) {
		t.Errorf("KillPod = %v, want ErrStillRunning", err)
	}
	if err := h.rt.KillPod(t.Context(), pod, nil, 0); err == nil {
		t.Error("KillPod with grace 0 succeeded")
	}
}

// TestCleanupAndRemove: CleanupPod stops the sandbox and keeps the containers; RemovePod
// removes them, the sandbox and the log directory.
func TestCleanupAndRemove(t *testing.T) {
	h := newHarness(t, nil)
	pod := fakePod(v1.RestartPolicyNever, "a")
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	h.exitContainer(t, "a", 0)
	if err := h.rt.CleanupPod(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	st := h.status(t, pod)
	if st.IsRunning() || len(st.ContainerStatuses) != 1 || len(st.SandboxStatuses) != 1 {
		t.Fatalf("after CleanupPod: %+v %+v", st.ContainerStatuses, st.SandboxStatuses)
	}
	pods, err := h.rt.ListPods(t.Context(), false)
	if err != nil || len(pods) != 0 {
		t.Errorf("ListPods(running) = %v, %v", pods, err)
	}
	rp := &pleg.Pod{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	if err := h.rt.RemovePod(t.Context(), rp); err != nil {
		t.Fatal(err)
	}
	if st := h.status(t, pod); len(st.ContainerStatuses)+len(st.SandboxStatuses) != 0 {
		t.Errorf("after RemovePod: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(h.logRoot, "ns_web_uid-1")); !os.IsNotExist(err) {
		t.Errorf("log directory left: %v", err)
	}
}

// TestSandboxDied: a sandbox that died is replaced (attempt 1) and the containers start
// in the new one, their restart counts going on.
func TestSandboxDied(t *testing.T) {
	h := newHarness(t, nil)
	pod := fakePod(v1.RestartPolicyAlways, "a")
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	_, sbs := h.snapshot()
	if _, err := h.fakeCRI.StopPodSandbox(context.Background(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: sbs[0].id}); err != nil {
		t.Fatal(err)
	}
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	st := h.status(t, pod)
	if len(st.SandboxStatuses) != 2 || st.SandboxStatuses[0].Attempt != 1 || st.SandboxStatuses[0].State != pleg.SandboxReady {
		t.Fatalf("sandboxes: %+v", st.SandboxStatuses)
	}
	if c := st.FindContainerStatusByName("a"); c.State != pleg.ContainerStateRunning || c.RestartCount != 1 {
		t.Errorf("a: %+v", c)
	}
}

func TestAPIStatus(t *testing.T) {
	h := newHarness(t, nil)
	pod := fakePod(v1.RestartPolicyAlways, "a")
	gen := v1.PodStatus{HostIP: "192.0.2.1", HostIPs: []v1.HostIP{{IP: "192.0.2.1"}},
		ContainerStatuses: []v1.ContainerStatus{{Name: "a", ContainerID: "fake://c1",
			State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "c1"}}}}}
	got := h.rt.APIStatus(pod, nil, gen, false)
	if cs := got.ContainerStatuses[0]; cs.ContainerID != "fake://c1" || cs.State.Terminated.ContainerID != "fake://c1" {
		t.Errorf("container IDs: %q, %q (the fake runtime's name is fake)", cs.ContainerID, cs.State.Terminated.ContainerID)
	}
	if got.PodIP != "192.0.2.1" || len(got.PodIPs) != 1 {
		t.Errorf("a hostNetwork pod's IPs: %q %v", got.PodIP, got.PodIPs)
	}
	if gen.ContainerStatuses[0].State.Terminated.ContainerID != "c1" {
		t.Error("the generated status was modified")
	}
}

// TestStatusCache: a pod the runtime knows (it created it, or listed it) is read by ID, as
// the kubelet does: no lists, one PodSandboxStatus per sandbox and one ContainerStatus per
// container each time, except that an exited container's status is reused. A pod it does
// not know is listed by its label, and a container's status fetched only when its listed
// state changed.
func TestStatusCache(t *testing.T) {
	h := newHarness(t, func(c *cri.Config) { c.PodNetwork = cri.PodNetworkRuntime })
	pod := fakePod(v1.RestartPolicyNever, "a")
	pod.Spec.HostNetwork = false
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	calls := func(rt *cri.Runtime) map[string]int64 {
		s := rt.Stats()
		return map[string]int64{"ContainerStatus": s["ContainerStatus"], "PodSandboxStatus": s["PodSandboxStatus"],
			"ListContainers": s["ListContainers"], "ListPodSandbox": s["ListPodSandbox"]}
	}
	since := func(rt *cri.Runtime, before map[string]int64) map[string]int64 {
		d := calls(rt)
		for k := range d {
			d[k] -= before[k]
		}
		return d
	}
	before := calls(h.rt)
	for range 3 {
		if st := h.status(t, pod); len(st.IPs) != 1 || st.RunningContainers() != 1 {
			t.Fatalf("status: %+v", st)
		}
	}
	want := map[string]int64{"ContainerStatus": 3, "PodSandboxStatus": 3, "ListContainers": 0, "ListPodSandbox": 0}
	if diff := cmp.Diff(want, since(h.rt, before)); diff != "" {
		t.Errorf("three statuses of a known pod: calls (-want +got):\n%s", diff)
	}
	h.exitContainer(t, "a", 4)
	before = calls(h.rt)
	for range 2 {
		if c := h.status(t, pod).FindContainerStatusByName("a"); c.State != pleg.ContainerStateExited || c.ExitCode != 4 {
			t.Errorf("after the exit: %+v", c)
		}
	}
	if got := since(h.rt, before)["ContainerStatus"]; got != 1 {
		t.Errorf("an exited container: %d ContainerStatus calls, want 1 (then its status is reused)", got)
	}

	// Another runtime on the same endpoint does not know the pod: it lists it.
	other, err := cri.New(cri.Config{Endpoint: h.endpoint, LogRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	before = calls(other)
	for range 2 {
		st, err := other.PodStatus(t.Context(), pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		if c := st.FindContainerStatusByName("a"); c == nil || c.ExitCode != 4 || len(st.SandboxStatuses) != 1 {
			t.Errorf("listed status: %+v", st)
		}
	}
	want = map[string]int64{"ContainerStatus": 1, "PodSandboxStatus": 2, "ListContainers": 1, "ListPodSandbox": 1}
	if diff := cmp.Diff(want, since(other, before)); diff != "" {
		t.Errorf("an unknown pod listed, then known: calls (-want +got):\n%s", diff)
	}
}

// TestPushStatuses: once a SyncPod started a container, the runtime inspects the pod and
// pushes its status (the node then sees it running without waiting for a relist).
func TestPushStatuses(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pushed := make(chan *pleg.PodStatus, 4)
	h.rt.PushStatuses(ctx, func(s *pleg.PodStatus) { pushed <- s })
	pod := fakePod(v1.RestartPolicyAlways, "a")
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	select {
	case st := <-pushed:
		c := st.FindContainerStatusByName("a")
		if st.ID != pod.UID || c == nil || c.State != pleg.ContainerStateRunning || !st.IsRunning() {
			t.Errorf("pushed %+v (container %+v), want the pod with container a running", st, c)
		}
	case <-t.Context().Done():
		t.Fatal("no status pushed after the sync that started the container")
	}
}

// TestKillKnownPod: a pod the runtime created is stopped from its objects' statuses by ID;
// the only list is the final check that no container runs, and CleanupPod afterwards needs
// no call at all (a stopped sandbox and exited containers do not change).
func TestKillKnownPod(t *testing.T) {
	h := newHarness(t, nil)
	pod := fakePod(v1.RestartPolicyAlways, "a", "b")
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	since := func(before map[string]int64) map[string]int64 {
		d := map[string]int64{}
		for k, v := range h.rt.Stats() {
			if v > before[k] {
				d[k] = v - before[k]
			}
		}
		return d
	}
	before := h.rt.Stats()
	if err := h.rt.KillPod(t.Context(), pod, nil, 5); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"ContainerStatus": 2, "PodSandboxStatus": 1, "StopContainer": 2, "StopPodSandbox": 1, "ListContainers": 1}
	if diff := cmp.Diff(want, since(before)); diff != "" {
		t.Errorf("KillPod calls (-want +got):\n%s", diff)
	}
	if st := h.status(t, pod); st.IsRunning() {
		t.Fatalf("still running after the kill: %+v", st)
	}
	before = h.rt.Stats()
	if err := h.rt.CleanupPod(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	if got := since(before); len(got) != 0 {
		t.Errorf("CleanupPod after the kill made calls: %v", got)
	}
}
