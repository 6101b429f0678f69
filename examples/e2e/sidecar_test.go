package e2e

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podlife/podlife/pleg"
)

// A sidecar pod on containerd (issue 29): a restartable init container "proxy" and the
// app. The app starts once the proxy runs (before: never, the always-running sidecar
// blocked it); on delete the app stops first (it takes 2 s after SIGTERM), the proxy only
// after it (before: both at once, the proxy first). Times are the runtime's.
func TestE2ECRISidecar(t *testing.T) {
	admin, nodeClient, ep, image := criEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	rt := newCRI(t, ep)
	pod := criPod(t, "cri-sidecar", image, v1.RestartPolicyAlways, 30, "-term-delay", "2s")
	always := v1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers = []v1.Container{{Name: "proxy", Image: image, ImagePullPolicy: v1.PullNever, RestartPolicy: &always}}
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	removeLeftovers(t, rt, pod)
	startCRIAgent(t, nodeClient, rt)
	pw.waitFor(t, ctx, "Running and Ready", func(es []podEvent) bool { return last(es, running) })

	proxy, app := runtimeContainer(t, ctx, rt, pod, "proxy"), runtimeContainer(t, ctx, rt, pod, "main")
	if proxy == nil || app == nil || proxy.State != pleg.ContainerStateRunning || app.State != pleg.ContainerStateRunning {
		t.Fatalf("runtime: proxy %+v, app %+v; want both running", proxy, app)
	}
	t.Logf("proxy started %v, app %v", proxy.StartedAt.Format(time.StampMicro), app.StartedAt.Format(time.StampMicro))
	if app.StartedAt.Before(proxy.StartedAt) {
		t.Errorf("the app started at %v, before the sidecar (%v)", app.StartedAt, proxy.StartedAt)
	}

	start := time.Now()
	deletePod(t, ctx, admin, pod.Name, nil)
	pw.waitFor(t, ctx, "the pod deleted", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Type == watch.Deleted })
	})
	stopped := waitRuntime(t, ctx, rt, pod.UID, "both stopped", func(st *pleg.PodStatus) bool {
		p, a := st.FindContainerStatusByName("proxy"), st.FindContainerStatusByName("main")
		return p != nil && a != nil && p.State == pleg.ContainerStateExited && a.State == pleg.ContainerStateExited
	})
	proxy, app = stopped.FindContainerStatusByName("proxy"), stopped.FindContainerStatusByName("main")
	t.Logf("after the delete: app finished %v, proxy %v", app.FinishedAt.Sub(start).Round(time.Millisecond), proxy.FinishedAt.Sub(start).Round(time.Millisecond))
	if proxy.FinishedAt.Before(app.FinishedAt) {
		t.Errorf("the sidecar finished at %v, before the app (%v)", proxy.FinishedAt, app.FinishedAt)
	}
	if d := app.FinishedAt.Sub(start); d < 2*time.Second {
		t.Errorf("the app finished %v after the delete, want its 2 s term delay", d)
	}
	if proxy.ExitCode == 137 || app.ExitCode == 137 {
		t.Errorf("exit codes: app %d, proxy %d; want neither killed at the deadline", app.ExitCode, proxy.ExitCode)
	}
}
