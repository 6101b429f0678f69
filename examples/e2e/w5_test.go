package e2e

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	vknode "github.com/virtual-kubelet/virtual-kubelet/node"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/podlife/podlife/examples/kube"
	"github.com/podlife/podlife/examples/vk"
	"github.com/podlife/podlife/examples/vk/vktest"
)

// Environment of TestE2EW5RealServer.
const (
	// EnvW5 set to 1 enables the W5 side-by-side measurement on the real API server.
	EnvW5 = "PODLIFE_E2E_W5"
	// EnvW5Pairs and EnvW5Pods: the number of virtual-kubelet/podlife pairs of runs
	// (default 4) and of pods per run (default 100).
	EnvW5Pairs = "PODLIFE_E2E_W5_PAIRS"
	EnvW5Pods  = "PODLIFE_E2E_W5_PODS"
)

// w5Grace is the pods' grace period in W5 on the real server.
const w5Grace = 5

// w5Result is one run of one side.
type w5Result struct {
	side          string
	pods          int
	running, gone []time.Duration
	api           map[string]int64 // the runner's calls, from the first create to the last gone
	provider      map[string]int
}

// TestE2EW5RealServer is W5 on the real API server: virtual-kubelet v1.14.1's pod controller
// (node.NewPodController with its informers, as virtual-kubelet's nodeutil sets it up) and
// podlife's vk.Run, each in turn as node1 with the same notifying provider (vktest): pods
// (grace 5 s) created at once, all Running, deleted at once, all gone. It logs, per run and as
// medians per side, time to Running and delete to gone (p50, p99, max), API calls per pod
// (counted on the runner's client by a transport wrapper) and provider calls per pod, and
// checks that every pod was created in and deleted from the provider exactly once. Run it with
//
//	PODLIFE_E2E_W5=1 hack/e2e.sh -race=false -v -run W5RealServer
func TestE2EW5RealServer(t *testing.T) {
	if os.Getenv(EnvW5) != "1" {
		t.Skipf("%s is not 1", EnvW5)
	}
	pairs, pods := envInt(t, EnvW5Pairs, 4), envInt(t, EnvW5Pods, 100)
	t.Logf("load average before: %s", loadAverage())
	var results []w5Result
	for i := range pairs {
		for _, side := range []string{"virtual-kubelet", "podlife"} {
			t.Run(fmt.Sprintf("%s-%d", side, i+1), func(t *testing.T) {
				results = append(results, runW5(t, side, pods))
			})
		}
	}
	t.Logf("load average after: %s", loadAverage())
	for _, side := range []string{"virtual-kubelet", "podlife"} {
		var r50, r99, g50, g99, gmax []time.Duration
		var api, pods []float64
		for _, r := range results {
			if r.side != side {
				continue
			}
			r50, r99 = append(r50, pct(r.running, 50)), append(r99, pct(r.running, 99))
			g50, g99, gmax = append(g50, pct(r.gone, 50)), append(g99, pct(r.gone, 99)), append(gmax, pct(r.gone, 100))
			a, _ := callsPerPod(r.api, r.pods, nil)
			p, _ := callsPerPod(r.api, r.pods, isPodCall)
			api, pods = append(api, a), append(pods, p)
		}
		ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
		t.Logf("W5 medians of %d runs, %s: Running p50 %s p99 %s; gone p50 %s p99 %s max %s; API calls/pod: pods %.2f, all %.2f",
			len(r50), side, ms(median(r50)), ms(median(r99)), ms(median(g50)), ms(median(g99)), ms(median(gmax)), medianF(pods), medianF(api))
	}
}

// TestE2EW5RealServerSmall is the always-on check of the W5 measurement: 5 pods, one run
// per side (about 10 s: virtual-kubelet's final deletes wait for the 5 s grace period).
func TestE2EW5RealServerSmall(t *testing.T) {
	for _, side := range []string{"virtual-kubelet", "podlife"} {
		t.Run(side, func(t *testing.T) { runW5(t, side, 5) })
	}
}

// isPodCall keeps the calls on pods and their subresources.
func isPodCall(k string) bool { return strings.HasSuffix(k, " pods") || strings.Contains(k, " pods/") }

// envInt is the environment variable as a positive number, or def when unset.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, s)
	}
	return n
}

// runW5 runs one side with n pods and checks and logs what it did.
func runW5(t *testing.T, side string, n int) w5Result {
	e := newVKEnv(t, vkKind{"notifying", true})
	counter := newAPICounter()
	client := countingClient(t, filepath.Join(os.Getenv(EnvAPIServer), node+".kubeconfig"), "podlife-e2e-w5-"+side, counter)
	p := e.newProvider(side, vktest.Config{})
	switch side {
	case "virtual-kubelet":
		startVKPodController(t, client, e.admin, p.handler)
	default:
		startVKRun(t, client, p.handler)
	}
	run := fmt.Sprintf("w5-%d", time.Now().UnixNano()%1e6)
	w := watchBench(t, e.ctx, e.admin, "bench="+run, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = vkPod(t, "w5", v1.RestartPolicyAlways)
		pods[i].Spec.TerminationGracePeriodSeconds = new(int64)
		*pods[i].Spec.TerminationGracePeriodSeconds = w5Grace
		pods[i].Labels = map[string]string{"bench": run}
	}
	before := counter.Snapshot()
	created := createAtOnce(t, e.ctx, e.admin, pods)
	uids := keys(created)
	w.wait(t, e.ctx, uids, false)
	deleted := deleteAtOnce(t, e.ctx, e.admin, pods)
	w.wait(t, e.ctx, uids, true)
	res := w5Result{side: side, pods: n, running: w.since(created, false), gone: w.since(deleted, true),
		api: diffCalls(before, counter.Snapshot()), provider: map[string]int{}}
	delete(res.api, "WATCH pods") // counted when a watch starts: not the pods'
	for _, uid := range uids {
		checkW5Provider(t, p, uid)
	}
	for _, verb := range []string{vktest.Create, vktest.Update, vktest.Delete, vktest.Get, vktest.GetStatus, vktest.List} {
		res.provider[verb] = p.Count(verb)
	}
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	all, byAll := callsPerPod(res.api, n, nil)
	t.Logf("%s, %d pods: Running p50 %s p99 %s max %s; gone p50 %s p99 %s max %s", side, n,
		ms(pct(res.running, 50)), ms(pct(res.running, 99)), ms(pct(res.running, 100)),
		ms(pct(res.gone, 50)), ms(pct(res.gone, 99)), ms(pct(res.gone, 100)))
	t.Logf("%s: API calls per pod %.2f (%s); provider calls %v", side, all, byAll, res.provider)
	if side == "podlife" {
		// vk.Run writes a pod's first status as virtual-kubelet does
		// (statusmgr.Config.UpdateStatus): a status update of the node's copy, which the
		// real API server accepts; later ones are patched against the last answer's copy.
		if res.api["PUT pods/status"] < int64(n) || res.api["PUT pods/status 409"] != 0 {
			t.Errorf("podlife's status updates: %d for %d pods, %d refused (Conflict); want one each at least, none refused",
				res.api["PUT pods/status"], n, res.api["PUT pods/status 409"])
		}
	}
	return res
}

// checkW5Provider checks that the provider created and deleted the pod exactly once.
func checkW5Provider(t *testing.T, p *vkProvider, uid types.UID) {
	t.Helper()
	if c, d := p.CountFor(uid, vktest.Create), p.CountFor(uid, vktest.Delete); c != 1 || d != 1 {
		t.Errorf("pod %s: CreatePod %d, DeletePod %d times, want 1 and 1", uid, c, d)
	}
}

// startVKRun runs podlife's vk.Run as node1 over the provider until the test ends.
func startVKRun(t *testing.T, client kubernetes.Interface, provider vknode.PodLifecycleHandler) {
	t.Helper()
	recCtx, stopRec := context.WithCancel(context.Background())
	rec, err := kube.NewRecorder(recCtx, client, "virtual-kubelet", node)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopRec(); <-rec.Done() }) // after vk.Run stopped
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- vk.Run(ctx, vk.Config{NodeName: node, Provider: provider, Client: client, Recorder: rec})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("vk.Run: %v", err)
		}
	})
}

// startVKPodController runs virtual-kubelet's pod controller for node1 over the provider
// until the test ends, set up as virtual-kubelet's nodeutil.NewNode does: a pod informer of
// the node's pods and the pod client as node1 (client), informers of every Secret,
// ConfigMap and Service (as admin: a node identity may not list them), an event broadcaster,
// runtime.NumCPU() workers. It returns once the controller is ready.
func startVKPodController(t *testing.T, client, admin kubernetes.Interface, provider vknode.PodLifecycleHandler) {
	t.Helper()
	// nodeutil.PodInformerFilter's selector (nodeutil itself needs modules this one lacks).
	podInformers := informers.NewSharedInformerFactoryWithOptions(client, time.Minute,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
		}))
	scmInformers := informers.NewSharedInformerFactoryWithOptions(admin, time.Minute)
	eb := record.NewBroadcaster()
	eb.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events(v1.NamespaceAll)})
	pc, err := vknode.NewPodController(vknode.PodControllerConfig{
		PodClient:         client.CoreV1(),
		PodInformer:       podInformers.Core().V1().Pods(),
		EventRecorder:     eb.NewRecorder(scheme.Scheme, v1.EventSource{Component: path.Join(node, "pod-controller")}),
		Provider:          provider,
		SecretInformer:    scmInformers.Core().V1().Secrets(),
		ConfigMapInformer: scmInformers.Core().V1().ConfigMaps(),
		ServiceInformer:   scmInformers.Core().V1().Services(),
	})
	if err != nil {
		eb.Shutdown()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	podInformers.Start(ctx.Done())
	scmInformers.Start(ctx.Done())
	go pc.Run(ctx, runtime.NumCPU()) //nolint:errcheck // its error is pc.Err()
	t.Cleanup(func() {
		cancel()
		<-pc.Done()
		podInformers.Shutdown()
		scmInformers.Shutdown()
		eb.Shutdown()
		if err := pc.Err(); err != nil && ctx.Err() == nil {
			t.Errorf("virtual-kubelet's pod controller: %v", err)
		}
	})
	select {
	case <-pc.Ready():
	case <-pc.Done():
		t.Fatalf("virtual-kubelet's pod controller: %v", pc.Err())
	case <-time.After(30 * time.Second):
		t.Fatal("virtual-kubelet's pod controller not ready after 30 s")
	}
}
