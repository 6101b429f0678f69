// Command nodeagent runs podlife's example node agent on an in-memory API server and an
// in-memory container runtime, creates pods, deletes them (gracefully, or at once with
// -grace 0), and prints the timeline of their whole lifecycle: the config ops, the pod
// workers' work and stages, the PLEG events, the status patches and the final delete. A
// legend of the line kinds comes first; the lines, the command's own "#" lines included,
// are in time order, on one clock (the agent's: every figure is measured between steps of
// the timeline); a pod keeps its name in the pod column after the node has forgotten it; a
// container killed at the end of the grace period shows as such, exit code 137; the
// summary gives the p50/p99 of create to Running, delete to gone and delete to every
// container stopped, and the containers killed (with -quiet too). From 100 pods on, a
// progress line a second replaces the timeline.
//
//	go run ./nodeagent                         # one pod, from the examples module
//	go run ./nodeagent -pods 3 -grace 10 -stop-delay 2s
//	go run ./nodeagent -vk                     # the pods on a virtual-kubelet provider
//	go run ./nodeagent -cri unix:///run/containerd/containerd.sock  # real containers (root)
//
// With -cri the pods run as real containers on a CRI runtime (containerd) through package
// cri: hostNetwork pods of -image (hack/containerd.sh imports podlife.test/testimage:v1,
// which sleeps until SIGTERM; -stop-delay becomes its args' delay before it exits after
// SIGTERM, negative: it ignores SIGTERM and is killed when the grace period runs out).
//
// With -kubeconfig (or -server, -ca and -token, or -in-cluster in a pod) it runs instead as a virtual node of a real
// cluster: the agent, with the in-memory runtime, serves the pods bound to -node through the
// client-go adapters of package kube, printing their timeline until -timeout or an interrupt
// (with -cri, on real containers: the pods must then be hostNetwork, or get an error and an
// event, unless -pod-network runtime gives them the runtime's CNI network).
// Create and delete the pods with kubectl; the identity should be the node's
// (system:node:<node> in group system:nodes):
//
//	go run ./nodeagent -kubeconfig node1.kubeconfig -node node1 -timeout 1h
//
// With a real cluster the agent also registers the node (-register-node, on by default):
// it creates or adopts the Node object, posts its status as the kubelet (Ready while the
// PLEG is healthy, -node-ip or the host's address, the machine's resources or
// -allocatable's, the CRI runtime's version) and renews its Lease in kube-node-lease, so
// the scheduler and the node lifecycle controller see a live node (package nodestatus).
//
// On a real node (with -cri, or with -allocatable) the agent admits pods as the kubelet
// does against the node package nodeinfo describes (the machine's resources, or
// -allocatable's): a pod asking for more ends Failed (OutOfcpu, ...) and never starts,
// unless it is critical and preempting lower-priority pods makes room.
// With -shutdown-grace-period (and -shutdown-grace-period-critical-pods), SIGTERM or
// SIGINT runs the kubelet's graceful node shutdown (node.Node.Shutdown) before the agent
// exits: new pods are refused, the pods are killed by priority and end Failed, reason
// Terminated, and the agent exits once every pod is terminal on the server or the period
// ran out (plus 5 s for the last statuses); a second signal cuts it short.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/admission"
	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/cri"
	"github.com/podlife/podlife/examples/envvar"
	"github.com/podlife/podlife/examples/kube"
	"github.com/podlife/podlife/examples/kubeletapi"
	"github.com/podlife/podlife/examples/manifest"
	"github.com/podlife/podlife/examples/nodeinfo"
	"github.com/podlife/podlife/examples/nodestatus"
	"github.com/podlife/podlife/examples/vk"
	"github.com/podlife/podlife/examples/vk/vktest"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

func main() {
	os.Exit(exitStatus(run(os.Args[1:], os.Stdout), os.Stderr))
}

// exitStatus is the command's exit status for run's error, which it prints: 0 for none
// and for -h (the flag package has printed the usage), 1 for any other.
func exitStatus(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	default:
		fmt.Fprintln(stderr, "nodeagent:", err)
		return 1
	}
}

func run(args []string, out io.Writer) error {
	return runContext(context.Background(), args, out)
}

// runContext is run; with a real cluster it also stops when ctx ends.
func runContext(ctx context.Context, args []string, out io.Writer) error {
	return runClock(ctx, clock.RealClock{}, args, out)
}

// about is what -h prints before the flags.
const about = `Usage: nodeagent [flags]

nodeagent shows a pod's whole lifecycle under podlife, the kubelet's pod lifecycle as a Go
library. It runs podlife's example node agent on an in-memory API server and an in-memory
container runtime, creates -pods pods, waits until they are Running, deletes them (with a
grace period of -grace seconds), and prints every step of their lifecycle in time order
(config ops, pod workers, PLEG events, status patches, the final delete), then a summary
of how long each phase took. -vk runs the pods on an in-memory virtual-kubelet provider,
-cri as real containers on a CRI runtime; -kubeconfig (or -server, or -in-cluster) makes
it a virtual node of a real cluster instead, serving the pods bound to -node; there it
registers the node, posts its status and renews its Lease (-register-node), admits pods against the node's resources (with -cri or -allocatable) and, with
-shutdown-grace-period, shuts the node down gracefully on SIGTERM before it exits.

Flags:
`

// runClock is runContext on clk, the clock of the agent and of the timeline (the in-memory
// run's figures).
func runClock(ctx context.Context, clk clock.Clock, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("nodeagent", flag.ContinueOnError)
	fs.SetOutput(out) // -h prints the usage where the output goes
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), about)
		fs.PrintDefaults()
	}
	pods := fs.Int("pods", 1, "number of pods to create and then delete")
	grace := fs.Int64("grace", 30, "terminationGracePeriodSeconds of the pods (the graceful delete uses it)")
	stopDelay := fs.Duration("stop-delay", time.Second, "how long containers take to exit after the stop signal (negative: they ignore it and are killed when the grace period runs out)")
	relist := fs.Duration("relist", time.Second, "PLEG relist period")
	quiet := fs.Bool("quiet", false, "print only the \"#\" lines and the summary, not the timeline (implied from -pods "+fmt.Sprint(progressPods)+" on, which prints a progress line every second instead)")
	useVK := fs.Bool("vk", false, "run the pods on an in-memory virtual-kubelet provider (package vk) instead of the in-memory container runtime")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long (with a real cluster: run this long)")
	criEndpoint := fs.String("cri", "", "run the pods as real containers on the CRI runtime at this endpoint (unix:///path/to/containerd.sock) through package cri")
	image := fs.String("image", "podlife.test/testimage:v1", "with -cri: the pods' image (pulled if missing)")
	logRoot := fs.String("log-root", cri.DefaultLogRoot, "with -cri: the pods' log directories")
	podNetwork := fs.String("pod-network", cri.PodNetworkRefuse.String(), "with -cri: how pods that are not hostNetwork get their network: "+
		"refuse (they get NetworkNotReady), runtime (their own network namespace, set up by the runtime's CNI configuration), "+
		"node (the node's network namespace, as hostNetwork)")
	rootDir := fs.String("root-dir", cri.DefaultRootDir, "with -cri: the pods' volume directories (pods/<uid>/volumes/..., as the kubelet's --root-dir)")
	var cc kube.ClientConfig
	fs.StringVar(&cc.Kubeconfig, "kubeconfig", "", "run against the real cluster of this kubeconfig (the node's identity) instead of the in-memory API")
	fs.StringVar(&cc.Server, "server", "", "run against the real API server at this URL (with -ca and -token) instead of the in-memory API")
	fs.StringVar(&cc.CAFile, "ca", "", "with -server: the CA file of the server's certificate")
	fs.StringVar(&cc.Token, "token", "", "with -server: the bearer token of the node's identity")
	inCluster := fs.Bool("in-cluster", false, "run against the cluster this runs in (rest.InClusterConfig: a pod's service account) instead of the in-memory API")
	nodeName := fs.String("node", agent.DefaultNodeName, "with a real cluster: the node whose pods the agent runs")
	metricsAddr := fs.String("metrics-addr", "", "serve the kubelet's metrics on /metrics and the PLEG health on /healthz at this address (host:port)")
	allocatable := fs.String("allocatable", "", "with a real cluster: the node's allocatable resources for pod admission, e.g. cpu=2,memory=4Gi,pods=110 "+
		"(the others from the machine: its CPUs, MemTotal, 110 pods, the size of -log-root's file system); admission is on with -cri or with this flag")
	registerNode := fs.Bool("register-node", true, "with a real cluster: register the Node object (created, or adopted with the kubelet's labels), "+
		"post its status (Ready while the PLEG is healthy, the machine's resources or -allocatable's, addresses, nodeInfo) every 10s when it changes and every 5m, "+
		"and renew its Lease in kube-node-lease every 10s, as the kubelet (package nodestatus)")
	nodeIP := fs.String("node-ip", "", "with a real cluster: the node's InternalIP address (status.addresses, the pods' hostIP); empty: the host's first global unicast address")
	kubeletPort := fs.Int("kubelet-port", nodestatus.DefaultKubeletPort, "with -register-node: the port status.daemonEndpoints.kubeletEndpoint announces")
	var api apiConfig
	fs.IntVar(&api.port, "port", 10250, "with a real cluster: serve the kubelet API over TLS on this port (0: not at all), as the kubelet's --port "+
		"(package kubeletapi: /pods, /runningpods/, /healthz, /containerLogs, /exec, /attach, /portForward with -cri); -kubelet-port follows it unless set")
	fs.StringVar(&api.address, "address", "", "with -port: the address the kubelet API listens on (empty: all), the kubelet's --address")
	fs.StringVar(&api.certFile, "tls-cert-file", "", "with -port: the kubelet API's certificate (empty with -tls-private-key-file: a self-signed one for the node, as the kubelet)")
	fs.StringVar(&api.keyFile, "tls-private-key-file", "", "with -port: the key of -tls-cert-file")
	fs.StringVar(&api.auth.ClientCAFile, "client-ca-file", "", "with -port: authenticate client certificates signed by this CA (the API server's kubelet client certificate)")
	fs.BoolVar(&api.auth.TokenWebhook, "authentication-token-webhook", false, "with -port: authenticate bearer tokens by TokenReview")
	fs.BoolVar(&api.auth.Anonymous, "anonymous-auth", false, "with -port: let unauthenticated requests through as system:anonymous (then authorized as any user)")
	fs.StringVar(&api.auth.Authorization, "authorization-mode", kubeletapi.AuthorizationWebhook, "with -port: Webhook (each request by SubjectAccessReview on the node's subresources) or AlwaysAllow")
	manifestDir := fs.String("pod-manifest-path", "", "with a real cluster: the static pod manifest directory (or file), the kubelet's --pod-manifest-path: "+
		"its pods run as static pods with mirror pods on the server (the Node object must exist)")
	fileCheck := fs.Duration("file-check-frequency", manifest.DefaultPeriod, "with -pod-manifest-path: how often it is listed again")
	var sc node.ShutdownConfig
	fs.DurationVar(&sc.GracePeriod, "shutdown-grace-period", 0, "with a real cluster: on SIGTERM or SIGINT, the kubelet's graceful node shutdown "+
		"(shutdownGracePeriod, whole seconds): new pods are refused, the pods are killed by priority and end Failed (reason Terminated), "+
		"and the agent exits once every pod is terminal on the server or the period (plus 5s for the last statuses) ran out; 0: stop at once")
	fs.DurationVar(&sc.GracePeriodCriticalPods, "shutdown-grace-period-critical-pods", 0, "with -shutdown-grace-period: the last part of it, "+
		"reserved for critical pods (priority 2000000000 and above; shutdownGracePeriodCriticalPods)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if _, err := node.ShutdownPeriods(sc); err != nil {
		return fmt.Errorf("-shutdown-grace-period: %w", err)
	}
	resources, err := nodeinfo.ParseResources(*allocatable)
	if err != nil {
		return fmt.Errorf("-allocatable: %w", err)
	}
	ms, err := newMetricsServer(*metricsAddr)
	if err != nil {
		return err
	}
	if *useVK && *criEndpoint != "" {
		return fmt.Errorf("-vk and -cri exclude each other")
	}
	criCfg := cri.Config{Endpoint: *criEndpoint, LogRoot: *logRoot, RootDir: *rootDir}
	if criCfg.PodNetwork, err = parsePodNetwork(*podNetwork); err != nil {
		return err
	}
	if *inCluster && (cc.Kubeconfig != "" || cc.Server != "") {
		return fmt.Errorf("-in-cluster excludes -kubeconfig and -server")
	}
	var ip net.IP
	if *nodeIP != "" {
		if ip = net.ParseIP(*nodeIP); ip == nil {
			return fmt.Errorf("-node-ip: %q is not an IP address", *nodeIP)
		}
	}
	if api.port < 0 || api.port > 65535 {
		return fmt.Errorf("-port: %d is not a port", api.port)
	}
	kubeletPortSet := false
	fs.Visit(func(f *flag.Flag) { kubeletPortSet = kubeletPortSet || f.Name == "kubelet-port" })
	if !kubeletPortSet && api.port > 0 {
		*kubeletPort = api.port
	}
	if *kubeletPort < 1 || *kubeletPort > 65535 {
		return fmt.Errorf("-kubelet-port: %d is not a port", *kubeletPort)
	}
	if cc.Kubeconfig != "" || cc.Server != "" || *inCluster {
		return runReal(ctx, realConfig{cc: cc, nodeName: *nodeName, relist: *relist, stopDelay: *stopDelay, quiet: *quiet,
			timeout: *timeout, cri: criCfg, metrics: ms, admit: *criEndpoint != "" || *allocatable != "",
			allocatable: resources, shutdown: sc, register: *registerNode, nodeIP: ip, kubeletPort: int32(*kubeletPort),
			manifestDir: *manifestDir, fileCheck: *fileCheck, api: api}, out)
	}
	if *allocatable != "" || sc.GracePeriod > 0 || *nodeIP != "" || *manifestDir != "" {
		return fmt.Errorf("-allocatable, -node-ip, -shutdown-grace-period and -pod-manifest-path need a real cluster (-kubeconfig, -server or -in-cluster)")
	}
	var rt *cri.Runtime
	if *criEndpoint != "" {
		if rt, err = cri.New(criCfg); err != nil {
			return err
		}
		defer rt.Close()
	}
	if *pods < 1 {
		return fmt.Errorf("-pods must be at least 1")
	}

	// From progressPods pods on, a line per step would drown the run: a progress line a
	// second instead, and the summary.
	progress := time.Duration(0)
	if *pods >= progressPods {
		*quiet, progress = true, time.Second
	}
	server := statusmgrtest.NewFakeAPI()
	var tl *timeline // set before anything is observed: the pods are created after it
	cfg := agent.Config{Server: server, RelistPeriod: *relist, Observer: func(s agent.Step) { tl.step(s) }, Clock: clk}
	ms.wire(&cfg)
	var a *agent.Agent
	if *useVK {
		// The pods run on an in-memory virtual-kubelet provider that notifies its statuses
		// and takes -stop-delay to stop a pod (negative: it never does).
		provider := vktest.NewNotifying(vktest.Config{StopDelay: *stopDelay})
		adapter, err := vk.NewAdapter(vk.AdapterConfig{Provider: provider})
		if err != nil {
			return err
		}
		a, err = vk.NewAgent(cfg, adapter)
		if err != nil {
			return err
		}
	} else {
		if rt != nil {
			cfg.Backend = rt
		} else {
			cfg.Runtime, cfg.Containers = plegtest.NewRuntime(nil), agent.ContainerBehaviour{StopDelay: *stopDelay}
		}
		if a, err = agent.New(cfg); err != nil {
			return err
		}
	}
	if !*quiet {
		fmt.Fprint(out, legend)
	}
	// One clock for every figure: the steps' (time since the agent started), which the
	// command's own lines are placed on and its figures measured from.
	tl = newTimeline(clk, a.Started(), out, *quiet, progress, *pods)
	closed := false
	closeTimeline := func() *lifecycleStats {
		if closed {
			return tl.stats
		}
		closed = true
		return tl.close()
	}
	defer closeTimeline()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	agentCtx, stopAgent := context.WithCancel(ctx)
	defer stopAgent()
	stopMetrics, err := ms.serve(agentCtx, a, out)
	if err != nil {
		return err
	}
	defer stopMetrics()
	done := make(chan error, 1)
	go func() { done <- a.Run(agentCtx) }()
	agentDone := false
	defer func() {
		if !agentDone {
			stopAgent()
			<-done
		}
	}()

	tl.say("# creating %d pod(s) on node %s", *pods, agent.DefaultNodeName)
	names := make([]string, *pods)
	var createdPods []*v1.Pod
	for i := range names {
		names[i] = fmt.Sprintf("busybox-%d", i+1)
		p := newPod(names[i], *grace)
		if rt != nil {
			names[i] = fmt.Sprintf("testimage-%d", i+1)
			p = criPod(names[i], *grace, *image, *stopDelay)
		}
		created, err := server.Create(p)
		if err != nil {
			return err
		}
		createdPods = append(createdPods, created)
	}
	if err := server.WaitForPods(ctx, allRunning(names)); err != nil {
		return fmt.Errorf("waiting for the pods to run: %w", err)
	}
	// The figures are the timeline's: from the first "created" to the last "phase
	// Running" step.
	var firstCreated, lastRunning time.Duration
	if err := tl.await(ctx, func(l *lifecycleStats) (ok bool) {
		firstCreated, lastRunning, ok = l.span(*pods, createdAt, runningAt)
		return ok
	}); err != nil {
		return fmt.Errorf("waiting for the pods to run: %w", err)
	}
	how := fmt.Sprintf("deleting them gracefully (grace %ds)", *grace)
	if *grace == 0 {
		how = fmt.Sprintf("deleting them at once (-grace 0, a force delete: the objects go at once; the containers "+
			"still get the kubelet's minimum grace period, %ds, hence \"grace %ds\" below)", minGraceSeconds, minGraceSeconds)
	}
	tl.say("# every pod is Running on the API server after %v (created at %.3fs, the last Running at %.3fs); %s",
		(lastRunning - firstCreated).Round(time.Millisecond), firstCreated.Seconds(), lastRunning.Seconds(), how)
	for _, n := range names {
		if err := server.Delete("default", n, nil); err != nil {
			return err
		}
	}
	if err := server.WaitForPods(ctx, func(p map[types.NamespacedName]*v1.Pod) bool { return len(p) == 0 }); err != nil {
		return fmt.Errorf("waiting for the pods to be deleted: %w", err)
	}
	var firstDeleting, lastGone time.Duration
	if err := tl.await(ctx, func(l *lifecycleStats) (ok bool) {
		firstDeleting, lastGone, ok = l.span(*pods, deletingAt, goneAt)
		return ok
	}); err != nil {
		return fmt.Errorf("waiting for the pods to be deleted: %w", err)
	}
	tl.say("# every pod is gone after %v (deletion took %v; the last gone at %.3fs)",
		(lastGone - firstCreated).Round(time.Millisecond), (lastGone - firstDeleting).Round(time.Millisecond), lastGone.Seconds())
	// Let housekeeping forget the finished pods before stopping: every container has
	// stopped by then (with -grace 0 the objects go at once, long before).
	if err := waitForget(ctx, a); err != nil {
		return err
	}
	forgotten := clk.Since(a.Started())
	stopAgent()
	agentDone = true
	if err := <-done; err != nil {
		return err
	}
	if rt != nil {
		// Whatever housekeeping has not removed yet: the in-memory API's UIDs repeat from
		// one run to the next.
		for _, p := range createdPods {
			_ = rt.RemovePod(ctx, &pleg.Pod{ID: p.UID, Name: p.Name, Namespace: p.Namespace})
		}
	}
	stats := closeTimeline()
	calls := server.Counts()
	fmt.Fprintf(out, "# API calls: %d get, %d patch (%d bytes), %d delete\n",
		calls.Gets, calls.Patches, calls.PatchBytes, calls.Deletes)
	if *grace == 0 {
		// The API server deletes a pod with grace 0 at once: its object going says nothing
		// of its containers, which the agent stops afterwards.
		fmt.Fprintf(out, "# -grace 0: the objects went at once; the containers really took %v to stop (every pod forgotten after %v)\n",
			percentile(stats.deleteToStopped(), 100).Round(time.Millisecond), (forgotten - firstCreated).Round(time.Millisecond))
	}
	fmt.Fprintf(out, "# create to Running: %s\n", describe(stats.createToRunning()))
	fmt.Fprintf(out, "# delete to gone:    %s\n", describe(stats.deleteToGone()))
	fmt.Fprintf(out, "# delete to every container stopped: %s\n", describe(stats.deleteToStopped()))
	if line := stats.killedLine(); line != "" {
		fmt.Fprintln(out, line)
	}
	if rt != nil {
		fmt.Fprintf(out, "# CRI (%s) calls: %v\n", rt.RuntimeVersion(), rt.Stats())
	}
	return nil
}

// minGraceSeconds is the grace period the kubelet gives containers when the deletion's is
// 0 (grace.Effective never returns less).
const minGraceSeconds = 1

// progressPods is the number of pods from which the timeline gives way to a progress line
// a second (-quiet implied).
const progressPods = 100

// criPod is a hostNetwork pod of the test image (hack/testimage) that exits stopDelay
// after SIGTERM, or ignores it when stopDelay is negative.
func criPod(name string, grace int64, image string, stopDelay time.Duration) *v1.Pod {
	args := []string{"-term-delay", stopDelay.String()}
	if stopDelay < 0 {
		args = []string{"-ignore-term"}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "testimage"}},
		Spec: v1.PodSpec{
			NodeName:                      agent.DefaultNodeName,
			HostNetwork:                   true,
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "main", Image: image, Args: args,
				ImagePullPolicy: v1.PullIfNotPresent}},
		},
	}
}

// waitForget waits until the pod workers know no pod (housekeeping forgot them all).
func waitForget(ctx context.Context, a *agent.Agent) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for a.Workers().Len() > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for housekeeping: %w", ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

func allRunning(names []string) func(map[types.NamespacedName]*v1.Pod) bool {
	return func(pods map[types.NamespacedName]*v1.Pod) bool {
		for _, n := range names {
			p, ok := pods[types.NamespacedName{Namespace: "default", Name: n}]
			if !ok || p.Status.Phase != v1.PodRunning {
				return false
			}
		}
		return true
	}
}

func newPod(name string, grace int64) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "busybox"}},
		Spec: v1.PodSpec{
			NodeName:                      agent.DefaultNodeName,
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "busybox", Image: "busybox",
				Command: []string{"/bin/sh", "-c", "sleep 36000"}}},
		},
	}
}

// realConfig is the configuration of runReal.
type realConfig struct {
	cc        kube.ClientConfig
	nodeName  string
	relist    time.Duration
	stopDelay time.Duration
	quiet     bool
	timeout   time.Duration
	cri       cri.Config
	metrics   *metricsServer
	// admit turns on the kubelet's predicate admission against the node nodeinfo
	// describes, allocatable's resources in place of the machine's.
	admit       bool
	allocatable v1.ResourceList
	// shutdown, when set, is the graceful node shutdown run on SIGTERM or SIGINT.
	shutdown node.ShutdownConfig
	// register turns on the node's registration, status and Lease (package nodestatus)
	// with nodeIP (nil: the host's) as its InternalIP and kubeletPort as its API port.
	register    bool
	nodeIP      net.IP
	kubeletPort int32
	// manifestDir and fileCheck: agent.Config.ManifestDir and ManifestPeriod.
	manifestDir string
	fileCheck   time.Duration
	// api is the kubelet API's server (port 0: none).
	api apiConfig
}

// runReal runs the agent as a node of a real cluster until timeout or an interrupt (with
// rc.shutdown: SIGTERM or SIGINT, after the graceful node shutdown).
func runReal(ctx context.Context, rc realConfig, out io.Writer) error {
	nodeName, cc, criCfg, ms, quiet := rc.nodeName, rc.cc, rc.cri, rc.metrics, rc.quiet
	if nodeName == "" {
		return fmt.Errorf("-node must not be empty")
	}
	cc.UserAgent = "podlife-nodeagent/" + nodeName
	client, err := kube.NewClient(cc)
	if err != nil {
		return err
	}
	patcher, err := kube.NewPatcher(client)
	if err != nil {
		return err
	}
	source, err := kube.NewSource(kube.SourceConfig{Client: client})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		fmt.Fprintf(out, format+"\n", args...)
		mu.Unlock()
	}
	cfg := agent.Config{NodeName: nodeName, Patcher: patcher, Source: source,
		Runtime: plegtest.NewRuntime(nil), RelistPeriod: rc.relist,
		ManifestDir: rc.manifestDir, ManifestPeriod: rc.fileCheck,
		Containers: agent.ContainerBehaviour{StopDelay: rc.stopDelay},
		Observer: func(s agent.Step) {
			if quiet {
				return
			}
			mu.Lock()
			fmt.Fprintln(out, s)
			mu.Unlock()
		}}
	gate := &shutdownGate{}
	if rc.shutdown.GracePeriod > 0 || len(rc.shutdown.ByPodPriority) > 0 {
		cfg.Admit = append(cfg.Admit, gate.handler())
	}
	var n *v1.Node // the node's description, for admission and registration
	if rc.admit || rc.register {
		logRoot := criCfg.LogRoot
		if logRoot == "" {
			logRoot = cri.DefaultLogRoot
		}
		if _, err := os.Stat(logRoot); err != nil {
			logRoot = "/"
		}
		if n, err = nodeinfo.New(nodeinfo.Config{Name: nodeName, Allocatable: rc.allocatable, DiskPath: logRoot}); err != nil {
			return err
		}
	}
	ip := rc.nodeIP
	if ip == nil {
		// The host's own address, as the pods' hostIP (agent.Config.HostIPs' default).
		if ips, err := nodeinfo.HostIPs(); err == nil && len(ips) > 0 {
			ip = net.ParseIP(ips[0])
		}
	}
	if ip != nil {
		cfg.HostIPs = []string{ip.String()}
	}
	if rc.admit {
		say("# admission on: node %s allocatable %s", nodeName, formatResources(n.Status.Allocatable))
		// A critical pod (a static pod, or priority 2000000000 and above) that does not fit
		// preempts lower-priority pods, as the kubelet's CriticalPodAdmissionHandler.
		cfg.Admit = append(cfg.Admit, admission.PredicateHandler(admission.PredicateConfig{
			Node: func(context.Context) (*v1.Node, error) { return n, nil },
			OnFailure: admission.CriticalPodPreemption(node.Preempt, func(p *v1.Pod, err error) {
				say("# preempting %s/%s to admit a critical pod: %v", p.Namespace, p.Name, err)
			})}))
	}
	ctx, cancel := context.WithTimeout(ctx, rc.timeout)
	defer cancel()
	var runtimeVersion string // the CRI runtime's "name version"
	var streamRT kubeletapi.Runtime
	if criCfg.Endpoint != "" {
		// The runtime's events (Pulled, Started, Killing, NetworkNotReady, ...) go to the
		// API server, as the kubelet's do.
		events, err := kube.NewEventWriter(client, "kubelet", nodeName, 0)
		if err != nil {
			return err
		}
		go events.Run(ctx)
		criCfg.Event = events.Event
		// The pods' configMap, secret and projected volumes read through the node's
		// client (the Node authorizer allows its pods' objects and tokens).
		criCfg.Volumes = cri.ClientVolumes(client)
		// The containers' environments: ConfigMaps, Secrets and services through the
		// node's client, the node's allocatable and address for the downward API.
		getter := envvar.ClientGetter(client)
		criCfg.Env = cri.EnvConfig{Getter: getter, Services: getter, HostIPs: cfg.HostIPs}
		if n != nil {
			criCfg.Env.Allocatable = n.Status.Allocatable
		}
		rt, err := cri.New(criCfg)
		if err != nil {
			return err
		}
		defer rt.Close()
		cfg.Runtime, cfg.Backend = nil, rt
		runtimeVersion = rt.RuntimeVersion()
		streamRT = rt
	}
	if rc.api.port > 0 {
		if err := serveAPI(ctx, rc.api, client, nodeName, ip, streamRT, say); err != nil {
			return err
		}
	}
	if rc.register {
		ns := &nodestatus.Config{Client: client, Node: n.DeepCopy(), KubeletPort: rc.kubeletPort}
		ns.Node.Status.NodeInfo = nodestatus.SystemInfo(ns.Node.Status.NodeInfo)
		if name, version, ok := strings.Cut(runtimeVersion, " "); ok {
			ns.RuntimeVersion = nodestatus.RuntimeVersion(name, version)
		}
		if ip != nil {
			ns.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip.String()}}
		}
		cfg.NodeStatus = ns
		say("# registering node %s (InternalIP %v, kubelet port %d) and renewing its Lease", nodeName, ip, rc.kubeletPort)
	}
	ms.wire(&cfg)
	a, err := agent.New(cfg)
	if err != nil {
		return err
	}
	// Without a graceful shutdown an interrupt stops the agent (SIGTERM's default action
	// ends the process); with one, both start it.
	sigs := make(chan os.Signal, 2)
	if rc.shutdown.GracePeriod > 0 || len(rc.shutdown.ByPodPriority) > 0 {
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	} else {
		signal.Notify(sigs, os.Interrupt)
	}
	defer signal.Stop(sigs)
	stopMetrics, err := ms.serve(ctx, a, out)
	if err != nil {
		return err
	}
	defer stopMetrics()
	how := "interrupt to stop"
	if rc.shutdown.GracePeriod > 0 {
		how = fmt.Sprintf("SIGTERM or interrupt: graceful node shutdown, %v", rc.shutdown.GracePeriod)
	}
	say("# running node %s on a real API server for up to %v (%s)", nodeName, rc.timeout, how)
	return runNode(ctx, a, sigs, rc.shutdown, gate, serverTerminal(client, nodeName), say)
}

// formatResources is "cpu=2, memory=..." in a fixed order.
func formatResources(rl v1.ResourceList) string {
	names := make([]string, 0, len(rl))
	for n := range rl {
		names = append(names, string(n))
	}
	slices.Sort(names)
	for i, n := range names {
		q := rl[v1.ResourceName(n)]
		names[i] = n + "=" + q.String()
	}
	return strings.Join(names, ",")
}

// parsePodNetwork is -pod-network's value as a cri.PodNetwork.
func parsePodNetwork(s string) (cri.PodNetwork, error) {
	for _, m := range []cri.PodNetwork{cri.PodNetworkRefuse, cri.PodNetworkRuntime, cri.PodNetworkNode} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("-pod-network: %q is not refuse, runtime or node", s)
}
