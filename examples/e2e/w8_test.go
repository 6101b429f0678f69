package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/cri"
)

// Environment of TestE2EW8SideBySide.
const (
	// EnvKubelet set to 1 enables the W8 side-by-side measurement (a few minutes).
	EnvKubelet = "PODLIFE_E2E_KUBELET"
	// EnvKubeletBin is the kubelet binary (hack/e2e.sh sets it to hack/build-kubelet.sh's).
	EnvKubeletBin = "PODLIFE_E2E_KUBELET_BIN"
	// EnvW8Pairs is the number of kubelet/podlife pairs of runs (default 4).
	EnvW8Pairs = "PODLIFE_E2E_W8_PAIRS"
	// EnvW8Sides, if set, are the sides of each round, in order (comma-separated; default
	// "kubelet,podlife"): kubelet, podlife (cri.Config's defaults), podlife-unbounded
	// (MaxConcurrentPods -1: every pod at once, as the kubelet) or podlife-maxN
	// (MaxConcurrentPods N).
	EnvW8Sides = "PODLIFE_E2E_W8_SIDES"
)

const (
	w8Pods  = 50
	w8Grace = 5
	// w8Timeout bounds one run of one side.
	w8Timeout = 4 * time.Minute
)

// w8Result is one run of one side.
type w8Result struct {
	side                string
	oneRunning, oneGone time.Duration
	running, gone       []time.Duration
	allRunning, allGone time.Duration
	// The CRI and API calls of the 50 pods, from the first create to the last gone.
	cri, api map[string]int64
	criSpent map[string]time.Duration
}

// TestE2EW8SideBySide is W8 on real parts: the real kubelet v1.37.2 (hack/build-kubelet.sh)
// and podlife's CRI agent (examples/agent on examples/cri), each in turn as node1 on the same
// containerd and API server, in alternating runs (kubelet, podlife, kubelet, ...). Each run:
// one hostNetwork pod of the test image created, Running and Ready, deleted (grace 5) and
// gone; then 50 created at once, all Running and Ready, deleted at once and gone. It logs, per
// run and as medians per side: time to Running and Ready, delete to gone (p50, max), CRI
// calls per pod (counted by a gRPC proxy both sides talk to containerd through) and API calls
// per pod (kube-apiserver's apiserver_request_total minus the test's own calls). Both sides
// record events and have the same client rate limits (100 QPS, burst 200). Run it with
//
//	hack/build-kubelet.sh
//	PODLIFE_E2E_KUBELET=1 hack/e2e.sh -race=false -timeout 30m -v -run W8SideBySide
func TestE2EW8SideBySide(t *testing.T) {
	if os.Getenv(EnvKubelet) != "1" {
		t.Skipf("%s is not 1", EnvKubelet)
	}
	bin := os.Getenv(EnvKubeletBin)
	if st, err := os.Stat(bin); bin == "" || err != nil || st.Mode()&0o111 == 0 {
		t.Skipf("%s=%q is not an executable kubelet: run hack/build-kubelet.sh", EnvKubeletBin, bin)
	}
	admin, nodeClient, ep, image := criEnv(t)
	pairs := envInt(t, EnvW8Pairs, 4)
	sides := []string{"kubelet", "podlife"}
	if s := os.Getenv(EnvW8Sides); s != "" {
		sides = strings.Split(s, ",")
	}
	env := w8Env{admin: admin, nodeClient: nodeClient, endpoint: ep, image: image, kubelet: bin}
	for _, side := range sides {
		if _, err := podlifeSide(side); side != "kubelet" && err != nil {
			t.Fatalf("%s: %v", EnvW8Sides, err)
		}
	}
	t.Logf("load average before: %s", loadAverage())
	var results []w8Result
	for i := range pairs {
		for _, side := range sides {
			t.Run(fmt.Sprintf("%s-%d", side, i+1), func(t *testing.T) {
				results = append(results, env.run(t, side))
			})
		}
	}
	t.Logf("load average after: %s", loadAverage())
	logW8Medians(t, sides, results)
}

// w8Env is what a run needs.
type w8Env struct {
	admin, nodeClient kubernetes.Interface
	endpoint, image   string
	kubelet           string
}

// podlifeSide is the CRI configuration of a podlife side (see EnvW8Sides), without the
// endpoint.
func podlifeSide(side string) (cri.Config, error) {
	rest, ok := strings.CutPrefix(side, "podlife")
	switch {
	case !ok:
		return cri.Config{}, fmt.Errorf("unknown side %q", side)
	case rest == "":
		return cri.Config{}, nil
	case rest == "-unbounded":
		return cri.Config{MaxConcurrentPods: -1}, nil
	}
	if n, found := strings.CutPrefix(rest, "-max"); found {
		if k, err := strconv.Atoi(n); err == nil && k > 0 {
			return cri.Config{MaxConcurrentPods: k}, nil
		}
	}
	return cri.Config{}, fmt.Errorf("unknown side %q", side)
}

// run starts the side as node1 behind a counting CRI proxy, measures, and stops it.
func (e w8Env) run(t *testing.T, side string) w8Result {
	ctx, cancel := context.WithTimeout(t.Context(), w8Timeout)
	defer cancel()
	apiDir := os.Getenv(EnvAPIServer)
	counter := newAPICounter()
	admin := countingClient(t, filepath.Join(apiDir, "admin.kubeconfig"), "podlife-e2e-w8", counter)
	proxy := startCRIProxy(t, e.endpoint)
	// Uncounted: removes the pods' leftovers once the side stopped (cleanups run last in,
	// first out).
	direct := newCRI(t, e.endpoint)
	var made []*v1.Pod
	t.Cleanup(func() { removeRuntimePods(t, direct, made) })
	switch side {
	case "kubelet":
		startKubelet(t, ctx, e.admin, e.kubelet, filepath.Join(apiDir, node+".kubeconfig"), proxy.Endpoint)
	default:
		cfg, err := podlifeSide(side)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Endpoint = proxy.Endpoint
		startPodlifeCRI(t, e.nodeClient, cfg)
	}
	run := fmt.Sprintf("w8-%s-%d", side, time.Now().UnixNano()%1e6)
	w := watchBench(t, ctx, e.admin, "bench="+run, nil)
	mk := func(prefix string, n int) []*v1.Pod {
		pods := make([]*v1.Pod, n)
		for i := range pods {
			pods[i] = criPod(t, prefix, e.image, v1.RestartPolicyAlways, w8Grace)
			pods[i].Labels = map[string]string{"bench": run}
		}
		return pods
	}
	res := w8Result{side: side}

	// One pod alone.
	one := mk("w8one", 1)
	created := createAtOnce(t, ctx, admin, one)
	made = append(made, one...)
	uids := keys(created)
	w.wait(t, ctx, uids, false)
	res.oneRunning = w.since(created, false)[0]
	deleted := deleteAtOnce(t, ctx, admin, one)
	w.wait(t, ctx, uids, true)
	res.oneGone = w.since(deleted, true)[0]

	// 50 pods at once.
	pods := mk("w8", w8Pods)
	criBefore, spentBefore := proxy.Stats()
	apiBefore, err := serverCalls(ctx, e.admin)
	if err != nil {
		t.Fatal(err)
	}
	mineBefore := counter.Snapshot()
	created = createAtOnce(t, ctx, admin, pods)
	made = append(made, pods...)
	uids = keys(created)
	t0 := time.Now()
	res.allRunning = w.wait(t, ctx, uids, false).Sub(t0)
	res.running = w.since(created, false)
	deleted = deleteAtOnce(t, ctx, admin, pods)
	t1 := time.Now()
	res.allGone = w.wait(t, ctx, uids, true).Sub(t1)
	res.gone = w.since(deleted, true)
	criAfter, spentAfter := proxy.Stats()
	apiAfter, err := serverCalls(ctx, e.admin)
	if err != nil {
		t.Fatal(err)
	}
	res.cri = diffCalls(criBefore, criAfter)
	res.criSpent = map[string]time.Duration{}
	for k, v := range spentAfter {
		res.criSpent[k] = v - spentBefore[k]
	}
	res.api = minusCalls(diffCalls(apiBefore, apiAfter), diffCalls(mineBefore, counter.Snapshot()))
	delete(res.api, "WATCH pods") // a watch is counted when it ends: not the run's
	logW8Run(t, res)
	return res
}

func keys(m map[types.UID]time.Time) []types.UID {
	out := make([]types.UID, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// logW8Run logs one run's figures.
func logW8Run(t *testing.T, r w8Result) {
	t.Helper()
	t.Logf("%s: 1 pod Running %v, gone %v after its delete", r.side, r.oneRunning.Round(time.Millisecond), r.oneGone.Round(time.Millisecond))
	t.Logf("%s: %d pods: Running p50 %v max %v (all %v after the creates); gone p50 %v max %v (all %v after the deletes)",
		r.side, w8Pods, pct(r.running, 50), pct(r.running, 100), r.allRunning.Round(time.Millisecond),
		pct(r.gone, 50), pct(r.gone, 100), r.allGone.Round(time.Millisecond))
	total, by := callsPerPod(r.cri, w8Pods, nil)
	t.Logf("%s: CRI calls per pod %.2f (%s)", r.side, total, by)
	var lat []string
	for _, m := range []string{"RunPodSandbox", "CreateContainer", "StartContainer", "StopContainer", "StopPodSandbox", "ListPodSandbox", "ListContainers"} {
		if c := r.cri[m]; c > 0 {
			lat = append(lat, fmt.Sprintf("%s %v", m, (r.criSpent[m]/time.Duration(c)).Round(time.Millisecond)))
		}
	}
	t.Logf("%s: mean CRI call latency: %s", r.side, strings.Join(lat, ", "))
	pods, byPods := callsPerPod(r.api, w8Pods, func(k string) bool { return strings.HasSuffix(k, " pods") || strings.Contains(k, " pods/") })
	events, _ := callsPerPod(r.api, w8Pods, func(k string) bool { return strings.HasSuffix(k, " events") })
	all, byAll := callsPerPod(r.api, w8Pods, nil)
	t.Logf("%s: API calls per pod: pods %.2f (%s), events %.2f; all %.2f (%s)", r.side, pods, byPods, events, all, byAll)
}

// logW8Medians logs each side's medians over its runs.
func logW8Medians(t *testing.T, sides []string, results []w8Result) {
	t.Helper()
	for _, side := range sides {
		var one, oneGone, p50, max50, g50, gmax, allR, allG []time.Duration
		var criPP, podsPP, eventsPP, allPP []float64
		for _, r := range results {
			if r.side != side {
				continue
			}
			one, oneGone = append(one, r.oneRunning), append(oneGone, r.oneGone)
			p50, max50 = append(p50, pct(r.running, 50)), append(max50, pct(r.running, 100))
			g50, gmax = append(g50, pct(r.gone, 50)), append(gmax, pct(r.gone, 100))
			allR, allG = append(allR, r.allRunning), append(allG, r.allGone)
			c, _ := callsPerPod(r.cri, w8Pods, nil)
			p, _ := callsPerPod(r.api, w8Pods, func(k string) bool { return strings.HasSuffix(k, " pods") || strings.Contains(k, " pods/") })
			ev, _ := callsPerPod(r.api, w8Pods, func(k string) bool { return strings.HasSuffix(k, " events") })
			a, _ := callsPerPod(r.api, w8Pods, nil)
			criPP, podsPP, eventsPP, allPP = append(criPP, c), append(podsPP, p), append(eventsPP, ev), append(allPP, a)
		}
		if len(one) == 0 {
			continue
		}
		ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
		t.Logf("W8 medians of %d runs, %s: 1 pod Running %s, gone %s; %d pods Running p50 %s max %s, gone p50 %s max %s; "+
			"all Running %s, all gone %s; CRI calls/pod %.2f; API calls/pod: pods %.2f, events %.2f, all %.2f",
			len(one), side, ms(median(one)), ms(median(oneGone)), w8Pods, ms(median(p50)), ms(median(max50)), ms(median(g50)), ms(median(gmax)),
			ms(median(allR)), ms(median(allG)), medianF(criPP), medianF(podsPP), medianF(eventsPP), medianF(allPP))
	}
}

// startPodlifeCRI runs podlife's agent on examples/cri (cfg, with the kubelet's events) as
// node1 until the test ends.
func startPodlifeCRI(t *testing.T, nodeClient kubernetes.Interface, cfg cri.Config) {
	t.Helper()
	startCRINode(t, nodeClient, cfg, agent.Config{})
}

// kubeletConfig is the KubeletConfiguration of the W8 runs: what the kubelet needs on these
// machines (cgroup v1, no QOS cgroups, no node allocatable enforcement, swap allowed), its
// servers on loopback without authentication (nothing calls them), its files under dir, and
// the client rate limits of podlife's agent.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
cgroupDriver: cgroupfs
failSwapOn: false
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: %s
podLogsDir: %s
volumePluginDir: %s
kubeAPIQPS: 100
kubeAPIBurst: 200
evictionHard:
  memory.available: "1%%"
  nodefs.available: "1%%"
  imagefs.available: "1%%"
  nodefs.inodesFree: "1%%"
`

// startKubelet runs the kubelet binary as node1 on the CRI endpoint until the test ends,
// once it has registered its Node; the Node and its Lease are deleted afterwards.
func startKubelet(t *testing.T, ctx context.Context, admin kubernetes.Interface, bin, kubeconfig, endpoint string) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "kubelet.yaml")
	body := fmt.Sprintf(kubeletConfig, freePort(t), endpoint, filepath.Join(dir, "logs"), filepath.Join(dir, "volume-plugins"))
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "kubelet.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", cfg, "--kubeconfig", kubeconfig, "--hostname-override", node,
		"--node-ip", "127.0.0.1", "--root-dir", filepath.Join(dir, "root"), "--cert-dir", filepath.Join(dir, "pki"))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		stopKubelet(t, cmd, exited)
		unmountUnder(t, dir)
		logFile.Close()
		if t.Failed() {
			tail, _ := os.ReadFile(logPath)
			t.Logf("kubelet log (last 4 KB):\n%s", lastBytes(tail, 4096))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := admin.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the Node %s: %v", node, err)
		}
		if err := admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Delete(ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the Lease of %s: %v", node, err)
		}
	})
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for {
		if _, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err == nil {
			t.Logf("kubelet: Node %s registered %v after the start", node, time.Since(start).Round(time.Millisecond))
			return
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the kubelet exited: %v", err)
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("waiting for the kubelet to register %s: %v", node, ctx.Err())
		}
	}
}

// stopKubelet sends SIGTERM and waits (SIGKILL after 20 s).
func stopKubelet(t *testing.T, cmd *exec.Cmd, exited chan error) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Logf("kubelet: SIGTERM: %v", err)
	}
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Logf("kubelet: still running 20 s after SIGTERM; killing it")
		_ = cmd.Process.Kill()
		<-exited
	}
}

// unmountUnder detaches every mount at or under dir, deepest first (the kubelet makes its
// root directory a shared bind mount of itself).
func unmountUnder(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Logf("reading the mounts: %v", err)
		return
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			points = append(points, f[4])
		}
	}
	slices.SortStableFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			t.Logf("unmounting %s: %v", p, err)
		}
	}
}

// freePort is a TCP port of 127.0.0.1 nothing listens on (at the time of the call).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func lastBytes(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
