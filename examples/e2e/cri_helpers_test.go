package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/cri"
	"github.com/podlife/podlife/examples/kube"
	"github.com/podlife/podlife/pleg"
)

// Environment of the CRI tests (hack/e2e.sh sets both, from hack/containerd.sh).
const (
	// EnvCRI is the CRI endpoint of a running containerd (unix:///.../containerd.sock).
	EnvCRI = "PODLIFE_E2E_CRI"
	// EnvImage is the test image imported into it (hack/testimage).
	EnvImage = "PODLIFE_E2E_IMAGE"
)

// criEnv returns the clients, the CRI endpoint and the test image, or skips the test.
func criEnv(t *testing.T) (admin, nodeClient kubernetes.Interface, endpoint, image string) {
	t.Helper()
	endpoint = os.Getenv(EnvCRI)
	if endpoint == "" {
		t.Skipf("%s is not set: run hack/e2e.sh to start containerd (hack/containerd.sh) besides the API server", EnvCRI)
	}
	admin, nodeClient = clients(t)
	image = os.Getenv(EnvImage)
	if image == "" {
		image = "podlife.test/testimage:v1"
	}
	return admin, nodeClient, endpoint, image
}

// newCRI connects a runtime to the endpoint, closed when the test ends.
func newCRI(t *testing.T, endpoint string) *cri.Runtime {
	t.Helper()
	return newCRIConfig(t, cri.Config{Endpoint: endpoint})
}

// newCRIConfig is newCRI with a configuration (LogRoot: a temporary directory unless set).
func newCRIConfig(t *testing.T, cfg cri.Config) *cri.Runtime {
	t.Helper()
	if cfg.LogRoot == "" {
		cfg.LogRoot = t.TempDir()
	}
	rt, err := cri.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// eventWriter writes events to the server as the node, until the test ends.
func eventWriter(t *testing.T, nodeClient kubernetes.Interface) *kube.EventWriter {
	t.Helper()
	w, err := kube.NewEventWriter(nodeClient, "kubelet", node, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// startCRINode is a test's CRI node: a runtime configured by cfg (as newCRIConfig) and an
// agent as the node identity on it (acfg, its Backend the runtime), both stopped when the
// test ends, whose events (cfg.Event, acfg.Recorder) a kube.Recorder writes to the server
// as node1's kubelet. opts change the agent (withRegistration: it registers node1).
func startCRINode(t *testing.T, nodeClient kubernetes.Interface, cfg cri.Config, acfg agent.Config, opts ...criNodeOption) (*cri.Runtime, *runningAgent) {
	t.Helper()
	for _, o := range opts {
		o(t, nodeClient, &acfg)
	}
	recCtx, stopRec := context.WithCancel(context.Background())
	rec, err := kube.NewRecorder(recCtx, nodeClient, "kubelet", node)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopRec(); <-rec.Done() }) // after the agent stopped
	cfg.Event = rec.Event
	rt := newCRIConfig(t, cfg)
	acfg.Backend, acfg.Recorder = rt, rec
	return rt, startAgentWith(t, nodeClient, acfg)
}

// criNodeOption changes the agent of startCRINode, before anything starts.
type criNodeOption func(t *testing.T, nodeClient kubernetes.Interface, acfg *agent.Config)

// withRegistration makes startCRINode's agent register node1 as reg says
// (nodeRegistration.nodeStatus: node1 and its Lease removed first and when the test ends,
// after the agent stopped); the test waits for it with waitReady.
func withRegistration(admin kubernetes.Interface, reg nodeRegistration) criNodeOption {
	return func(t *testing.T, nodeClient kubernetes.Interface, acfg *agent.Config) {
		acfg.NodeStatus = reg.nodeStatus(t, admin, nodeClient)
	}
}

// startCRIAgent starts an agent as the node identity on the CRI runtime, stopped when the
// test ends (the containers stay: a test removes its pods' leftovers with removeLeftovers).
func startCRIAgent(t *testing.T, nodeClient kubernetes.Interface, rt *cri.Runtime) *runningAgent {
	t.Helper()
	return startAgentWith(t, nodeClient, agent.Config{Backend: rt})
}

// removeLeftovers stops and removes, when the test ends, whatever the runtime still has
// of the pods (after the agents stopped: cleanups run last in, first out).
func removeLeftovers(t *testing.T, rt *cri.Runtime, pods ...*v1.Pod) {
	t.Helper()
	t.Cleanup(func() { removeRuntimePods(t, rt, pods) })
}

// removeRuntimePods stops and removes whatever the runtime has of the pods.
func removeRuntimePods(t *testing.T, rt *cri.Runtime, pods []*v1.Pod) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, p := range pods {
		rp := &pleg.Pod{ID: p.UID, Name: p.Name, Namespace: p.Namespace}
		if err := rt.KillRuntimePod(ctx, rp); err != nil {
			t.Logf("cleanup: stopping %s: %v", p.Name, err)
		}
		if err := rt.RemovePod(ctx, rp); err != nil {
			t.Logf("cleanup: removing %s: %v", p.Name, err)
		}
	}
}

// criPod is a hostNetwork pod bound to node1 running the test image with args.
func criPod(t *testing.T, prefix, image string, policy v1.RestartPolicy, grace int64, args ...string) *v1.Pod {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + hex.EncodeToString(b), Namespace: namespace},
		Spec: v1.PodSpec{
			NodeName:                      node,
			HostNetwork:                   true,
			RestartPolicy:                 policy,
			TerminationGracePeriodSeconds: ptr.To(grace),
			Containers: []v1.Container{{Name: "main", Image: image, Args: args,
				ImagePullPolicy: v1.PullNever}},
		},
	}
}

// runtimeContainer returns the runtime's newest instance of the pod's container (nil if
// none).
func runtimeContainer(t *testing.T, ctx context.Context, rt *cri.Runtime, pod *v1.Pod, name string) *pleg.ContainerStatus {
	t.Helper()
	st, err := rt.PodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	return st.FindContainerStatusByName(name)
}

// waitRuntime polls the runtime (it sends no events) every 100 ms until cond holds for the
// pod's status.
func waitRuntime(t *testing.T, ctx context.Context, rt *cri.Runtime, uid types.UID, what string, cond func(*pleg.PodStatus) bool) *pleg.PodStatus {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := rt.PodStatus(ctx, uid, "", "")
		if err == nil && cond(st) {
			return st
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("waiting for %s in the runtime: %v (last error %v); status %+v", what, ctx.Err(), err, st)
		}
	}
}

// containerStatus is the server's status of the pod's container name (nil if none).
func containerStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// bareID is a status's container ID without its scheme.
func bareID(id string) string {
	if i := strings.Index(id, "://"); i >= 0 {
		return id[i+3:]
	}
	return id
}
