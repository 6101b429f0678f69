package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/kube"
	podnode "github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr"
)

// EnvAPIServer names the directory of a running server's kubeconfigs (see hack/e2e.sh).
const EnvAPIServer = "PODLIFE_E2E_APISERVER"

const (
	node      = "node1"
	namespace = "default"
	// testTimeout bounds each test: a graceful deletion takes a few seconds of real time.
	testTimeout = 2 * time.Minute
)

// clients returns an admin client and the node's client, or skips the test.
func clients(t *testing.T) (admin, nodeClient kubernetes.Interface) {
	t.Helper()
	dir := os.Getenv(EnvAPIServer)
	if dir == "" {
		t.Skipf("%s is not set: run hack/e2e.sh to start a real kube-apiserver and etcd and run this test", EnvAPIServer)
	}
	var err error
	admin, err = kube.NewClient(kube.ClientConfig{Kubeconfig: filepath.Join(dir, "admin.kubeconfig"), UserAgent: "podlife-e2e-admin"})
	if err != nil {
		t.Fatal(err)
	}
	nodeClient, err = kube.NewClient(kube.ClientConfig{Kubeconfig: filepath.Join(dir, node+".kubeconfig"), UserAgent: "podlife-e2e-" + node})
	if err != nil {
		t.Fatal(err)
	}
	return admin, nodeClient
}

// runningAgent is a node agent running as the node identity, with its recorded steps.
type runningAgent struct {
	*agent.Agent
	source *kube.Source
	// patches is the agent's patcher, which counts its status patches in flight.
	patches *patchTracker
	cancel  context.CancelFunc
	done    chan error

	mu      sync.Mutex
	steps   []agent.Step
	changed chan struct{} // closed and replaced on every step

	stopOnce sync.Once
	err      error
}

// startAgent starts an agent as the node identity on runtime (nil: a new one), stopped when
// the test ends.
func startAgent(t *testing.T, nodeClient kubernetes.Interface, runtime *plegtest.Runtime, containers agent.ContainerBehaviour) *runningAgent {
	t.Helper()
	if runtime == nil {
		runtime = plegtest.NewRuntime(nil)
	}
	return startAgentWith(t, nodeClient, agent.Config{Runtime: runtime, Containers: containers})
}

// startAgentWith starts an agent of cfg as the node identity (cfg's NodeName, Patcher and
// Source are set here; its Observer, if any, gets the steps after they are recorded),
// stopped when the test ends.
func startAgentWith(t *testing.T, nodeClient kubernetes.Interface, cfg agent.Config) *runningAgent {
	t.Helper()
	patcher, err := kube.NewPatcher(nodeClient)
	if err != nil {
		t.Fatal(err)
	}
	source, err := kube.NewSource(kube.SourceConfig{Client: nodeClient})
	if err != nil {
		t.Fatal(err)
	}
	r := &runningAgent{source: source, patches: newPatchTracker(patcher), done: make(chan error, 1), changed: make(chan struct{})}
	cfg.NodeName, cfg.Patcher, cfg.Source = node, r.patches, source
	if obs := cfg.Observer; obs != nil {
		cfg.Observer = func(s agent.Step) { r.record(s); obs(s) }
	} else {
		cfg.Observer = r.record
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.Agent = a
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- a.Run(ctx) }()
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("agent.Run: %v", err)
		}
	})
	return r
}

func (r *runningAgent) record(s agent.Step) {
	r.mu.Lock()
	r.steps = append(r.steps, s)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// waitTrace waits, without polling, until the pod's trace has a line containing want.
func (r *runningAgent) waitTrace(t *testing.T, ctx context.Context, pod *v1.Pod, want string) {
	t.Helper()
	for {
		r.mu.Lock()
		changed := r.changed
		r.mu.Unlock()
		trace := r.trace(pod)
		if slices.ContainsFunc(trace, func(l string) bool { return strings.Contains(l, want) }) {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("waiting for %q in the agent's trace: %v; trace:\n  %s", want, ctx.Err(), strings.Join(trace, "\n  "))
		}
	}
}

// stop stops the agent and returns Run's error; later calls return nil.
func (r *runningAgent) stop() error {
	r.cancel()
	r.stopOnce.Do(func() { r.err = <-r.done })
	return r.err
}

// trace returns the agent's steps for the pod (by name or UID) and its errors, as
// "kind detail" lines.
func (r *runningAgent) trace(pod *v1.Pod) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.steps {
		if s.Pod == namespace+"/"+pod.Name || s.UID == pod.UID || s.Kind == agent.KindError {
			out = append(out, string(s.Kind)+" "+s.Detail)
		}
	}
	return out
}

// patchTracker is a node agent's StatusPatcher that counts the status patches in flight
// per pod name, so a test can wait until none is before it reuses the name (waitIdle).
//
// A test that force-deletes a pod and at once creates another of the same name must wait
// for them. A force delete (grace 0) of a pod bound to a node takes two steps on the
// server: it sets the deletionTimestamp with grace 0, then removes the object.
// kube-apiserver turns a status patch that reads the object between the two into a delete
// (an update of an object whose deletionTimestamp has grace 0 and no finalizers deletes it:
// the generic registry's ShouldDeleteDuringUpdate), and that delete has no UID
// precondition (a PATCH gives none; the patch's metadata.uid only fails the update it
// replaces): when etcd's compare on the revision fails, it reads the name again and
// deletes what it finds, the new pod if the test created it meanwhile. A node agent whose
// patches carry no resourceVersion (the kubelet's do not either) cannot prevent it; the
// test does, by creating the new pod only once every patch sent before the old one's
// removal has been answered (a patch sent after the removal reads the name again and can
// no longer find the old object).
type patchTracker struct {
	statusmgr.StatusPatcher

	mu      sync.Mutex
	n       map[string]int // namespace/name: the patches sent and not answered yet
	changed chan struct{}  // closed and replaced whenever a patch is answered
}

func newPatchTracker(next statusmgr.StatusPatcher) *patchTracker {
	return &patchTracker{StatusPatcher: next, n: map[string]int{}, changed: make(chan struct{})}
}

// PatchPodStatus counts the patch while it is in flight.
// CreateMirrorPod and DeleteMirrorPod forward to the patcher (kube.Patcher keeps mirror
// pods).
func (p *patchTracker) CreateMirrorPod(ctx context.Context, mirror *v1.Pod) error {
	return p.StatusPatcher.(podnode.MirrorPodClient).CreateMirrorPod(ctx, mirror)
}

func (p *patchTracker) DeleteMirrorPod(ctx context.Context, namespace, name string, uid types.UID) error {
	return p.StatusPatcher.(podnode.MirrorPodClient).DeleteMirrorPod(ctx, namespace, name, uid)
}

func (p *patchTracker) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
	key := namespace + "/" + name
	p.mu.Lock()
	p.n[key]++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		if p.n[key]--; p.n[key] == 0 {
			delete(p.n, key)
		}
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
	}()
	return p.StatusPatcher.PatchPodStatus(ctx, namespace, name, patch)
}

// waitIdle waits, without polling, until no status patch of the pod name is in flight.
func (p *patchTracker) waitIdle(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	key := namespace + "/" + name
	for {
		p.mu.Lock()
		n, changed := p.n[key], p.changed
		p.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("waiting for the agent's %d status patch(es) of %s in flight: %v", n, name, ctx.Err())
		}
	}
}

// podEvent is one change of a pod as the admin's watch saw it.
type podEvent struct {
	Type     watch.EventType
	Phase    v1.PodPhase
	Deleting bool
	Pod      *v1.Pod
	UID      types.UID
	// At is when the test received the event (after the server made the change, and after
	// whatever caused it).
	At time.Time
}

func (e podEvent) String() string {
	return fmt.Sprintf("%s phase=%s deleting=%v rv=%s uid=%s", e.Type, e.Phase, e.Deleting, e.Pod.ResourceVersion, e.UID)
}

// podWatch records every change of one pod name (any UID) on the server, from before its
// creation.
type podWatch struct {
	mu      sync.Mutex
	events  []podEvent
	changed chan struct{} // closed and replaced on every event
	err     error
}

func watchPod(t *testing.T, ctx context.Context, admin kubernetes.Interface, name string) *podWatch {
	t.Helper()
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	w, err := admin.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	pw := &podWatch{changed: make(chan struct{})}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1.Pod)
			pw.mu.Lock()
			if !ok {
				pw.err = fmt.Errorf("watch: %s %T", ev.Type, ev.Object)
			} else {
				pw.events = append(pw.events, podEvent{Type: ev.Type, Phase: p.Status.Phase, Deleting: p.DeletionTimestamp != nil,
					Pod: p, UID: p.UID, At: time.Now()})
			}
			close(pw.changed)
			pw.changed = make(chan struct{})
			pw.mu.Unlock()
		}
	}()
	return pw
}

// waitFor waits, without polling, until cond holds for the events seen so far.
func (pw *podWatch) waitFor(t *testing.T, ctx context.Context, what string, cond func([]podEvent) bool) []podEvent {
	t.Helper()
	for {
		pw.mu.Lock()
		events, changed, err := slices.Clone(pw.events), pw.changed, pw.err
		pw.mu.Unlock()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if cond(events) {
			return events
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; events:\n%s", what, ctx.Err(), formatEvents(events))
		}
	}
}

func formatEvents(events []podEvent) string {
	var b strings.Builder
	for _, e := range events {
		fmt.Fprintf(&b, "  %s %s\n", e.At.Format("15:04:05.000"), e)
	}
	return b.String()
}

func (pw *podWatch) String() string {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return formatEvents(pw.events)
}

func last(events []podEvent, cond func(podEvent) bool) bool {
	return len(events) > 0 && cond(events[len(events)-1])
}

func isTerminal(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// busybox is seed 001's pod: one container sleeping, bound to node1, grace period 30 s.
func busybox(t *testing.T) *v1.Pod {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "busybox-" + hex.EncodeToString(b), Namespace: namespace,
			Labels: map[string]string{"app": "busybox"}},
		Spec: v1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			Containers: []v1.Container{{Name: "busybox", Image: "busybox",
				Command: []string{"/bin/sh", "-c", "sleep 36000;"}}},
		},
	}
}

// createPod creates the pod as the admin and force-deletes it when the test ends.
// runPod creates a busybox pod, starts watching it, and waits until the server shows it
// Running.
func runPod(t *testing.T, ctx context.Context, admin kubernetes.Interface) (*v1.Pod, *podWatch) {
	t.Helper()
	pod := busybox(t)
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)
	pw.waitFor(t, ctx, "Running", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Phase == v1.PodRunning })
	})
	return pod, pw
}

// deletePod deletes the pod as a user does: grace nil is the pod's own grace period.
func deletePod(t *testing.T, ctx context.Context, admin kubernetes.Interface, name string, grace *int64) {
	t.Helper()
	if err := admin.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: grace}); err != nil {
		t.Fatal(err)
	}
}

func createPod(t *testing.T, ctx context.Context, admin kubernetes.Interface, pod *v1.Pod) *v1.Pod {
	t.Helper()
	created, err := admin.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Ignore the error: the pod is usually gone already.
		_ = admin.CoreV1().Pods(namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})
	return created
}

func noErrors(t *testing.T, trace []string) {
	t.Helper()
	for _, line := range trace {
		if strings.HasPrefix(line, string(agent.KindError)) || strings.Contains(line, "failed") {
			t.Errorf("agent reported %q; trace:\n  %s", line, strings.Join(trace, "\n  "))
		}
	}
}

// Seed 001: a pod bound to the node is created; the agent starts it and the server shows it
// Running and Ready, patched by the node identity.
func TestE2ECreation(t *testing.T) {
	admin, nodeClient := clients(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	a := startAgent(t, nodeClient, nil, agent.ContainerBehaviour{StopDelay: time.Second})
	pod := busybox(t)
	pw := watchPod(t, ctx, admin, pod.Name)
	pod = createPod(t, ctx, admin, pod)

	events := pw.waitFor(t, ctx, "Running and Ready", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool {
			return e.Phase == v1.PodRunning && ready(e.Pod)
		})
	})
	got := events[len(events)-1].Pod
	if len(got.Status.ContainerStatuses) != 1 || got.Status.ContainerStatuses[0].State.Running == nil {
		t.Errorf("container statuses = %+v, want one running container", got.Status.ContainerStatuses)
	}
	if got.Status.StartTime == nil || got.Status.HostIP == "" {
		t.Errorf("status lacks startTime or hostIP: %+v", got.Status)
	}
	var phases []v1.PodPhase
	for _, e := range events {
		if len(phases) == 0 || phases[len(phases)-1] != e.Phase {
			phases = append(phases, e.Phase)
		}
	}
	if !slices.Equal(phases, []v1.PodPhase{v1.PodPending, v1.PodRunning}) {
		t.Errorf("phases on the server = %v, want [Pending Running]; events:\n%s", phases, formatEvents(events))
	}
	trace := a.trace(pod)
	noErrors(t, trace)
	if !slices.Contains(trace, "config ADD") {
		t.Errorf("the agent never saw the pod added; trace:\n  %s", strings.Join(trace, "\n  "))
	}
}

func ready(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// Seed 000: a graceful delete (30 s) of a running pod: the agent stops the containers, the
// server shows the terminal phase, and the agent's final delete with grace 0 removes the pod
// object, exactly once.
func TestE2EGracefulDeletion(t *testing.T) {
	admin, nodeClient := clients(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	a := startAgent(t, nodeClient, nil, agent.ContainerBehaviour{StopDelay: 2 * time.Second})
	pod, pw := runPod(t, ctx, admin)

	deletePod(t, ctx, admin, pod.Name, nil)
	events := pw.waitFor(t, ctx, "the pod deleted", func(es []podEvent) bool {
		return last(es, func(e podEvent) bool { return e.Type == watch.Deleted })
	})

	// On the server: the graceful delete, then a terminal phase, then the removal.
	graceful, terminal := -1, -1
	for i, e := range events {
		if e.Deleting && graceful < 0 {
			graceful = i
			if g := e.Pod.DeletionGracePeriodSeconds; g == nil || *g != 30 {
				t.Errorf("deletionGracePeriodSeconds = %v, want 30", g)
			}
		}
		if isTerminal(e.Phase) && e.Type == watch.Modified && terminal < 0 {
			terminal = i
		}
		if e.Type == watch.Modified && i > 0 && isTerminal(events[i-1].Phase) && !isTerminal(e.Phase) {
			t.Errorf("the phase left %s: %s", events[i-1].Phase, e)
		}
	}
	if graceful < 0 || terminal < graceful || terminal >= len(events)-1 {
		t.Errorf("want the graceful delete, then a terminal phase, then the removal; events:\n%s", formatEvents(events))
	}
	if p := events[len(events)-1].Phase; !isTerminal(p) {
		t.Errorf("the deleted pod's phase = %s, want Succeeded or Failed", p)
	}

	// On the agent: exactly one final delete, and no patch after it. (The agent reports the
	// delete once the call returns, which may be after the watch told us.)
	a.waitTrace(t, ctx, pod, "final delete")
	trace := a.trace(pod)
	noErrors(t, trace)
	deletes := 0
	for _, line := range trace {
		switch {
		case line == "delete final delete (grace 0)":
			deletes++
		case deletes > 0 && strings.HasPrefix(line, "status patched"):
			t.Errorf("status patched after the final delete: %q", line)
		}
	}
	if deletes != 1 {
		t.Errorf("final deletes = %d, want 1; trace:\n  %s", deletes, strings.Join(trace, "\n  "))
	}
}
