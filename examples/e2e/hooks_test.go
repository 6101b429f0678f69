package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podlife/podlife/examples/cri"
)

// Hooks, termination messages and ephemeral containers on containerd and the real API
// server (issue 29 items 3 and 6): examples/cri runs postStart and preStop hooks (exec and
// httpGet), mounts and reads the termination-log file (and the log with
// FallbackToLogsOnError), starts the ephemeral containers added to a running pod, and runs
// a pod whose name is longer than a hostname.

// waitFile polls the host file every 100 ms until it has want.
func waitFile(t *testing.T, ctx context.Context, path, want string) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		data, _ := os.ReadFile(path)
		if strings.Contains(string(data), want) {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("waiting for %q in %s: %v; it has:\n%s", want, path, ctx.Err(), data)
		}
	}
}

// A pod's postStart and preStop hooks run: exec hooks append to a hostPath file, httpGet
// hooks reach a handler pod's HTTP server (printed in its log); a postStart hook that
// fails gets the kubelet's FailedPostStartHook event and the container killed.
func TestE2ECRIHook(t *testing.T) {
	admin, rt, image, logRoot, _ := volumeEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()

	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	handler := criPod(t, "cri-hook-handler", image, v1.RestartPolicyAlways, 1, "-http", addr, "-log-requests")
	handler.Spec.Containers[0].ReadinessProbe = &v1.Probe{PeriodSeconds: 1, ProbeHandler: v1.ProbeHandler{
		HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt(port)}}}
	hpw := watchPod(t, ctx, admin, handler.Name)
	handler = createPod(t, ctx, admin, handler)
	removeLeftovers(t, rt, handler)
	hpw.waitFor(t, ctx, "the handler Ready", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return ready(e.Pod) })
	})

	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	hooks := filepath.Join(dir, "hooks")
	pod := criPod(t, "cri-hook", image, v1.RestartPolicyAlways, 10)
	pod.Spec.Volumes = []v1.Volume{{Name: "hooks", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: dir}}}}
	exec := func(text string) *v1.LifecycleHandler {
		return &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/testimage", "-append", "/hooks/hooks", "-print", text}}}
	}
	get := func(path string) *v1.LifecycleHandler {
		return &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromInt(port), Path: path}}
	}
	main := &pod.Spec.Containers[0]
	main.VolumeMounts = []v1.VolumeMount{{Name: "hooks", MountPath: "/hooks"}}
	main.Lifecycle = &v1.Lifecycle{PostStart: exec("poststart-exec"), PreStop: exec("prestop-exec")}
	web := *main
	web.Name, web.VolumeMounts = "web", nil
	web.Lifecycle = &v1.Lifecycle{PostStart: get("/poststart"), PreStop: get("/prestop")}
	pod.Spec.Containers = append(pod.Spec.Containers, web)
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	pw.waitFor(t, ctx, "Running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool {
			return e.Phase == v1.PodRunning && mainStatus(e.Pod).State.Running != nil
		})
	})
	waitFile(t, ctx, hooks, "poststart-exec\n")
	waitLog(t, ctx, logRoot, handler, "main", "GET /poststart from kube-lifecycle/1.37")

	deletePod(t, ctx, admin, pod.Name, nil)
	pw.waitFor(t, ctx, "deleted", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Type == watch.Deleted })
	})
	waitFile(t, ctx, hooks, "poststart-exec\nprestop-exec\n")
	waitLog(t, ctx, logRoot, handler, "main", "GET /prestop from kube-lifecycle/1.37")

	// A failing postStart hook: the event, the container killed (SIGTERM: it exits 7),
	// restartPolicy Never: Failed.
	failing := criPod(t, "cri-hook-fail", image, v1.RestartPolicyNever, 1, "-exit-code", "7") // on SIGTERM
	failing.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{
		Exec: &v1.ExecAction{Command: []string{"/testimage", "-check", "/nonexistent"}}}}
	fpw := watchPod(t, ctx, admin, failing.Name)
	failing = createPod(t, ctx, admin, failing)
	removeLeftovers(t, rt, failing)
	waitEvent(t, ctx, admin, failing, v1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed")
	fpw.waitFor(t, ctx, "Failed, killed", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool {
			term := mainStatus(e.Pod).State.Terminated
			return e.Phase == v1.PodFailed && term != nil && term.ExitCode == 7
		})
	})
}

// Termination messages: one written to terminationMessagePath (the file the runtime mounts
// there), one taken from the log of a failed container (FallbackToLogsOnError), both in
// the terminated state's message.
func TestE2ECRITermination(t *testing.T) {
	admin, rt, image, _, _ := volumeEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	for _, tc := range []struct {
		name   string
		policy v1.TerminationMessagePolicy
		args   []string
		phase  v1.PodPhase
		want   string
	}{
		{"cri-term-file", v1.TerminationMessageReadFile, []string{"-append", "/dev/termination-log", "-print", "from the file"},
			v1.PodSucceeded, "from the file\n"},
		{"cri-term-logs", v1.TerminationMessageFallbackToLogsOnError, []string{"-print", "from the log", "-exit-after", "100ms", "-exit-code", "3"},
			v1.PodFailed, "from the log\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := criPod(t, tc.name, image, v1.RestartPolicyNever, 1, tc.args...)
			pod.Spec.Containers[0].TerminationMessagePolicy = tc.policy
			pw := watchPod(t, ctx, admin, pod.Name)
			pod = createPod(t, ctx, admin, pod)
			removeLeftovers(t, rt, pod)
			es := pw.waitFor(t, ctx, string(tc.phase), func(es []podEvent) bool {
				return last(es, func(e podEvent) bool { return e.Phase == tc.phase && mainStatus(e.Pod).State.Terminated != nil })
			})
			got := mainStatus(es[len(es)-1].Pod).State.Terminated.Message
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("terminated message %q, want %q first", got, tc.want)
			}
		})
	}
}

// An ephemeral container added to a running pod (the pods/ephemeralcontainers subresource,
// as kubectl debug does) runs, is reported in ephemeralContainerStatuses, and is not
// restarted once it exited.
func TestE2ECRIEphemeral(t *testing.T) {
	admin, rt, image, logRoot, _ := volumeEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	pod := criPod(t, "cri-ephemeral", image, v1.RestartPolicyAlways, 1)
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	es := pw.waitFor(t, ctx, "Running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodRunning })
	})
	cur := es[len(es)-1].Pod.DeepCopy()
	cur.Spec.EphemeralContainers = append(cur.Spec.EphemeralContainers, v1.EphemeralContainer{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: image, ImagePullPolicy: v1.PullNever,
			Args: []string{"-print", "debugging", "-exit-after", "1s"}}})
	if _, err := admin.CoreV1().Pods(namespace).UpdateEphemeralContainers(ctx, pod.Name, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	debug := func(p *v1.Pod) *v1.ContainerStatus {
		for i := range p.Status.EphemeralContainerStatuses {
			if p.Status.EphemeralContainerStatuses[i].Name == "debug" {
				return &p.Status.EphemeralContainerStatuses[i]
			}
		}
		return nil
	}
	pw.waitFor(t, ctx, "debug running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { s := debug(e.Pod); return s != nil && s.State.Running != nil })
	})
	waitLog(t, ctx, logRoot, pod, "debug", "debugging")
	es = pw.waitFor(t, ctx, "debug terminated", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { s := debug(e.Pod); return s != nil && s.State.Terminated != nil })
	})
	// Never restarted: a few syncs later it is still the same terminated instance.
	time.Sleep(3 * time.Second)
	p, err := admin.CoreV1().Pods(namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := debug(p); s == nil || s.State.Terminated == nil || s.RestartCount != 0 || p.Status.Phase != v1.PodRunning {
		t.Errorf("debug a while after it exited: %+v, pod %s; want terminated, never restarted, the pod Running", s, p.Status.Phase)
	}
}

// A pod whose name has 70 characters runs (the sandbox's hostname is cut to 63, as the
// kubelet cuts it: sethostname refuses more). The pod has a network, and so a hostname, of
// its own: the run's pod network (hack/e2e.sh as root).
func TestE2ECRILongName(t *testing.T) {
	if os.Getenv(EnvCNI) == "" {
		t.Skipf("%s is not set: hack/e2e.sh as root runs containerd with a pod network in a network namespace of its own", EnvCNI)
	}
	admin, nodeClient, ep, image := criEnv(t)
	rt := newCRIConfig(t, cri.Config{Endpoint: ep, PodNetwork: cri.PodNetworkRuntime})
	startCRIAgent(t, nodeClient, rt)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	pod := criPod(t, "cri-long-name-"+strings.Repeat("x", 47), image, v1.RestartPolicyAlways, 1)
	if len(pod.Name) != 70 {
		t.Fatalf("name %q has %d characters", pod.Name, len(pod.Name))
	}
	pod.Spec.HostNetwork = false
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	pw.waitFor(t, ctx, "Running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodRunning && mainStatus(e.Pod).State.Running != nil })
	})
}
