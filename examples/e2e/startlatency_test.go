package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/cri"
	"github.com/podlife/podlife/examples/envvar"
)

// EnvLatency set to 1 runs TestE2ECRIStartLatency, a measurement (about 40 s a side):
// the suite skips it otherwise.
const EnvLatency = "PODLIFE_E2E_LATENCY"

// EnvLatencySides, with PODLIFE_E2E_KUBELET=1, is the order of TestE2ECRIStartLatency's
// sides, comma-separated (default "podlife,kubelet"; e.g.
// "kubelet,podlife,podlife,kubelet" alternates two of each).
const EnvLatencySides = "PODLIFE_E2E_LATENCY_SIDES"

// startLatencyPods is how many pods a round of TestE2ECRIStartLatency starts one after the
// other.
const startLatencyPods = 6

// Start latency: pods created on a running CRI node, as a short conformance test
// creates its pod, each reach Running on the server. For each pod the test logs where the
// time went from its creation to the server's Running, from the agent's steps (the node's
// first sync, the PLEG's ContainerStarted of the container, the sync after it, the status
// patch showing Running), the runtime's sandbox and container (created, started) and the
// test's watch; then the median of each step over the pods, and the node's CRI calls
// (count and mean time per method, through a counting proxy). Three rounds: pods one after
// the other on an idle node; the same while another pod's spec is updated over and over
// (the conformance test "issue 500 podspec updates" runs beside the short ones); and
// startLatencyBurst pods at once during those updates (the conformance run's shards). With
// PODLIFE_E2E_KUBELET=1 (and hack/build-kubelet.sh's kubelet) the real kubelet runs the
// same rounds afterwards as node1, on the same containerd: its internal steps are not
// seen, the runtime's and the watch's are. Only the behaviour is asserted (every pod
// reaches Running): the times are for reading. Opt-in (PODLIFE_E2E_LATENCY=1):
//
//	PODLIFE_E2E_LATENCY=1 hack/e2e.sh -v -run TestE2ECRIStartLatency
//	PODLIFE_E2E_LATENCY=1 PODLIFE_E2E_KUBELET=1 hack/e2e.sh -race=false -v -run TestE2ECRIStartLatency
//	PODLIFE_E2E_LATENCY=1 PODLIFE_E2E_KUBELET=1 PODLIFE_E2E_LATENCY_SIDES=kubelet,podlife,podlife,kubelet \
//	  hack/e2e.sh -race=false -v -run TestE2ECRIStartLatency
func TestE2ECRIStartLatency(t *testing.T) {
	if os.Getenv(EnvLatency) != "1" {
		t.Skip("a measurement: set " + EnvLatency + "=1 to run it")
	}
	admin, nodeClient, ep, image := criEnv(t)
	sides := []string{"podlife"}
	bin := os.Getenv(EnvKubeletBin)
	if st, err := os.Stat(bin); os.Getenv(EnvKubelet) == "1" && err == nil && st.Mode()&0o111 != 0 {
		sides = append(sides, "kubelet")
		if s := os.Getenv(EnvLatencySides); s != "" {
			sides = strings.Split(s, ",")
		}
	}
	for i, side := range sides {
		if side != "podlife" && side != "kubelet" {
			t.Fatalf("%s: unknown side %q", EnvLatencySides, side)
		}
		t.Run(fmt.Sprintf("%s-%d", side, i+1), func(t *testing.T) {
			startLatencySide(t, side, admin, nodeClient, ep, image, bin)
		})
	}
}

// startLatencySide runs TestE2ECRIStartLatency's rounds on one side: "podlife" (the agent on
// examples/cri) or "kubelet" (the binary bin).
func startLatencySide(t *testing.T, side string, admin, nodeClient kubernetes.Interface, ep, image, bin string) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*testTimeout)
	defer cancel()
	podNetwork := os.Getenv(EnvCNI) != ""
	// direct reads the runtime's view of the pods, and removes what is left of them once
	// the node stopped (cleanups run last in, first out).
	direct := newCRI(t, ep)
	var made []*v1.Pod
	t.Cleanup(func() { removeRuntimePods(t, direct, made) })
	proxy := startCRIProxy(t, ep) // counts the node's CRI calls and their time
	var obs stepTimes
	switch side {
	case "kubelet":
		startKubelet(t, ctx, admin, bin, filepath.Join(os.Getenv(EnvAPIServer), node+".kubeconfig"), proxy.Endpoint)
	default:
		// As nodeagent -cri: volumes, environments and events through the node's client.
		getter := envvar.ClientGetter(nodeClient)
		cfg := cri.Config{Endpoint: proxy.Endpoint, Volumes: cri.ClientVolumes(nodeClient),
			Env: cri.EnvConfig{Getter: getter, Services: getter}}
		if podNetwork {
			cfg.PodNetwork = cri.PodNetworkRuntime // as the conformance run's node
		}
		startCRINode(t, nodeClient, cfg, agent.Config{Observer: obs.record})
	}
	newPod := func(name string) *v1.Pod {
		pod := criPod(t, side+"-"+name, image, v1.RestartPolicyAlways, 1)
		pod.Spec.HostNetwork = !podNetwork
		withAPIAccess(pod)
		return pod
	}
	create := func(pod *v1.Pod) *v1.Pod {
		pod = createPod(t, ctx, admin, pod)
		made = append(made, pod)
		return pod
	}
	// start creates the pods at once and returns their breakdowns once each is Running.
	start := func(pods ...*v1.Pod) []startBreakdown {
		type started struct {
			pod     *v1.Pod
			pw      *podWatch
			created time.Time
		}
		var ss []started
		for _, pod := range pods {
			pw := watchPod(t, ctx, admin, pod.Name)
			created := time.Now()
			ss = append(ss, started{create(pod), pw, created})
		}
		var rows []startBreakdown
		for _, s := range ss {
			rows = append(rows, measureStart(t, ctx, direct, &obs, s.pw, s.pod, s.created))
		}
		return rows
	}
	round := func(name string, batches [][]*v1.Pod) {
		calls0, spent0 := proxy.Stats()
		began := time.Now()
		var rows []startBreakdown
		for _, b := range batches {
			rows = append(rows, start(b...)...)
		}
		for _, r := range rows {
			t.Logf("%s %s: %s", side, name, r)
		}
		if name == "idle" {
			p, err := admin.CoreV1().Pods(namespace).Get(ctx, batches[0][0].Name, metav1.GetOptions{})
			if err == nil {
				var vols []string
				for _, v := range p.Spec.Volumes {
					vols = append(vols, v.Name)
				}
				t.Logf("%s: the pods' volumes: %v", side, vols)
			}
		}
		t.Logf("%s %s: median over %d pods (ms after the create): %s", side, name, len(rows), medianBreakdown(rows))
		t.Logf("%s %s: the node's CRI calls in %v: %s", side, name, time.Since(began).Round(time.Millisecond), criDelta(proxy, calls0, spent0))
	}

	var one [][]*v1.Pod
	for i := range startLatencyPods {
		one = append(one, []*v1.Pod{newPod(fmt.Sprintf("idle-%d", i))})
	}
	round("idle", one)

	// The churn: a running pod whose activeDeadlineSeconds is decremented over and over.
	churn := newPod("churn")
	churn.Spec.ActiveDeadlineSeconds = ptr.To[int64](5000)
	cpw := watchPod(t, ctx, admin, churn.Name)
	churn = create(churn)
	cpw.waitFor(t, ctx, "the churn pod Running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodRunning })
	})
	churnCtx, stopChurn := context.WithCancel(ctx)
	var updates atomic.Int64
	churned := make(chan struct{})
	go func() {
		defer close(churned)
		pods := admin.CoreV1().Pods(namespace)
		tick := time.NewTicker(churnEvery)
		defer tick.Stop()
		for churnCtx.Err() == nil {
			select {
			case <-tick.C:
			case <-churnCtx.Done():
				return
			}
			p, err := pods.Get(churnCtx, churn.Name, metav1.GetOptions{})
			if err != nil {
				continue
			}
			*p.Spec.ActiveDeadlineSeconds--
			if _, err := pods.Update(churnCtx, p, metav1.UpdateOptions{}); err == nil {
				updates.Add(1)
			}
		}
	}()
	churnStart := time.Now()
	one = nil
	for i := range startLatencyPods {
		one = append(one, []*v1.Pod{newPod(fmt.Sprintf("churn-%d", i))})
	}
	round("churn", one)
	var burst []*v1.Pod
	for i := range startLatencyBurst {
		burst = append(burst, newPod(fmt.Sprintf("burst-%d", i)))
	}
	round("burst", [][]*v1.Pod{burst})
	stopChurn()
	<-churned
	t.Logf("%s: the churn pod got %d spec updates in %v", side, updates.Load(), time.Since(churnStart).Round(time.Millisecond))
}

// withAPIAccess gives the pod the projected volume the ServiceAccount admission plugin
// gives a conformance test's pod (kube-api-access-*: a token, kube-root-ca.crt's ca.crt,
// the namespace), mounted where it mounts it.
func withAPIAccess(pod *v1.Pod) {
	const name = "kube-api-access"
	pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}})
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, v1.VolumeMount{Name: name, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true})
}

// churnEvery is the pause between two spec updates of the churn pod (the conformance test
// makes about two a second on the loaded machine; this is more).
const churnEvery = 200 * time.Millisecond

// criDelta formats the CRI calls made since calls0 and spent0 (Stats): per method, the
// count and the mean time.
func criDelta(p *criProxy, calls0 map[string]int64, spent0 map[string]time.Duration) string {
	calls, spent := p.Stats()
	var names []string
	for m := range calls {
		if calls[m] > calls0[m] {
			names = append(names, m)
		}
	}
	slices.Sort(names)
	var s strings.Builder
	for _, m := range names {
		n := calls[m] - calls0[m]
		fmt.Fprintf(&s, " %s %d×%s", m, n, ((spent[m] - spent0[m]) / time.Duration(n)).Round(time.Millisecond))
	}
	return s.String()
}

// startLatencyBurst is how many pods the burst round creates at once.
const startLatencyBurst = 4

// measureStart waits until the server shows pod, created at created, Running (pw watches
// it) and returns where the time went.
func measureStart(t *testing.T, ctx context.Context, rt *cri.Runtime, obs *stepTimes, pw *podWatch, pod *v1.Pod, created time.Time) startBreakdown {
	t.Helper()
	events := pw.waitFor(t, ctx, pod.Name+" Running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodRunning })
	})
	st, err := rt.PodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	rc := st.FindContainerStatusByName("main")
	if rc == nil || len(st.SandboxStatuses) == 0 {
		t.Fatalf("%s: Running on the server; in the runtime: %+v", pod.Name, st)
	}
	b := startBreakdown{pod: pod.Name}
	since := func(at time.Time) time.Duration {
		if at.IsZero() {
			return -1
		}
		return at.Sub(created)
	}
	b.steps[stepConfig] = since(obs.first(pod.UID, time.Time{}, agent.KindConfig, "ADD"))
	b.steps[stepSync] = since(obs.first(pod.UID, time.Time{}, agent.KindWork, "SyncPod"))
	b.steps[stepSandbox] = since(st.SandboxStatuses[len(st.SandboxStatuses)-1].CreatedAt)
	b.steps[stepCreated] = since(rc.CreatedAt)
	b.steps[stepStarted] = since(rc.StartedAt)
	plegAt := obs.first(pod.UID, time.Time{}, agent.KindPLEG, "ContainerStarted "+rc.ID)
	b.steps[stepPLEG] = since(plegAt)
	b.steps[stepResync] = -1
	if !plegAt.IsZero() {
		b.steps[stepResync] = since(obs.first(pod.UID, plegAt, agent.KindWork, "SyncPod"))
	}
	b.steps[stepPatched] = since(obs.first(pod.UID, time.Time{}, agent.KindStatus, "phase Running"))
	b.steps[stepWatched] = since(events[len(events)-1].At)
	return b
}

// The steps of a pod's start, in order.
const (
	stepConfig  = iota // the node's pod source delivered the ADD
	stepSync           // the pod worker's first SyncPod
	stepSandbox        // the runtime created the sandbox
	stepCreated        // the runtime created the container
	stepStarted        // the runtime started it
	stepPLEG           // the PLEG's ContainerStarted of it
	stepResync         // the SyncPod after that event
	stepPatched        // the status patch showing Running returned
	stepWatched        // the test's watch saw Running
	stepCount
)

var stepNames = [stepCount]string{"config", "sync", "sandbox", "created", "started", "pleg", "resync", "patched", "watched"}

// startBreakdown is one pod's steps, as durations since its create (-1: not seen).
type startBreakdown struct {
	pod   string
	steps [stepCount]time.Duration
}

func (b startBreakdown) String() string {
	var s strings.Builder
	s.WriteString(b.pod + ":")
	for i, d := range b.steps {
		fmt.Fprintf(&s, " %s %s", stepNames[i], fmtMillis(d))
	}
	return s.String()
}

// medianBreakdown is each step's median over the rows.
func medianBreakdown(rows []startBreakdown) string {
	var s strings.Builder
	for i := range stepCount {
		var ds []time.Duration
		for _, r := range rows {
			if r.steps[i] >= 0 {
				ds = append(ds, r.steps[i])
			}
		}
		m := time.Duration(-1)
		if len(ds) > 0 {
			slices.Sort(ds)
			m = ds[len(ds)/2]
		}
		fmt.Fprintf(&s, " %s %s", stepNames[i], fmtMillis(m))
	}
	return s.String()
}

func fmtMillis(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return fmt.Sprintf("%d", d.Milliseconds())
}

// stepTimes records the agent's steps with the wall-clock time each was observed at.
type stepTimes struct {
	mu    sync.Mutex
	steps []timedStep
}

type timedStep struct {
	at time.Time
	agent.Step
}

func (o *stepTimes) record(s agent.Step) {
	now := time.Now()
	o.mu.Lock()
	o.steps = append(o.steps, timedStep{now, s})
	o.mu.Unlock()
}

// first is the time of the pod's first step of kind, observed at or after after, whose
// detail contains want; zero if none.
func (o *stepTimes) first(uid types.UID, after time.Time, kind agent.Kind, want string) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	i := slices.IndexFunc(o.steps, func(s timedStep) bool {
		return s.UID == uid && s.Kind == kind && !s.at.Before(after) && strings.Contains(s.Detail, want)
	})
	if i < 0 {
		return time.Time{}
	}
	return o.steps[i].at
}
