package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	vknode "github.com/virtual-kubelet/virtual-kubelet/node"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/kube"
	"github.com/podlife/podlife/examples/vk"
	"github.com/podlife/podlife/examples/vk/vktest"
	"github.com/podlife/podlife/statusmgr"
)

// The helpers of the virtual-kubelet tests (vk_test.go): vk.Run as the node identity over a
// vktest provider, with every provider call, every status write and every agent step
// recorded with the (real) time it happened, and a watch of each pod that stamps every event
// with the time the test received it. All times come from one monotonic clock, so "the
// provider was called before the server showed X" is a comparison of two stamps.

// vkClock is the real clock the tests stamp and poll with (it is a real server).
var vkClock clock.WithTicker = clock.RealClock{}

// vkTimeout bounds each subtest; the waits that assert a duration use shorter ones.
const vkTimeout = 45 * time.Second

// vkKind is a kind of provider: polled for its statuses, or notifying them (NotifyPods).
type vkKind struct {
	name   string
	notify bool
}

var vkKinds = []vkKind{{"polled", false}, {"notifying", true}}

// vkEnv is one subtest's clients, deadline and the records to print if it fails.
type vkEnv struct {
	t                 *testing.T
	ctx               context.Context
	admin, nodeClient kubernetes.Interface
	kind              vkKind

	mu    sync.Mutex
	dumps []func() string
}

func newVKEnv(t *testing.T, kind vkKind) *vkEnv {
	t.Helper()
	admin, nodeClient := clients(t)
	ctx, cancel := context.WithTimeout(t.Context(), vkTimeout)
	e := &vkEnv{t: t, ctx: ctx, admin: admin, nodeClient: nodeClient, kind: kind}
	// Registered first, so it runs last: after the runners stopped and the pods went. The
	// Node object and Lease the runners registered go too, so later tests find the server
	// as the suite's other agents (which register no Node) expect it.
	t.Cleanup(func() {
		cancel()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := admin.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the Node %s: %v", node, err)
		}
		if err := admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Delete(ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the Lease of %s: %v", node, err)
		}
		if !t.Failed() {
			return
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, d := range e.dumps {
			t.Log(d())
		}
	})
	return e
}

func (e *vkEnv) onFailure(d func() string) {
	e.mu.Lock()
	e.dumps = append(e.dumps, d)
	e.mu.Unlock()
}

// within returns a context that ends after d (and with the subtest's), canceled when the
// subtest ends.
func (e *vkEnv) within(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(e.ctx, d)
	e.t.Cleanup(cancel)
	return ctx
}

// vkPod is busybox's pod (bound to node1, grace 30 s) under a unique name with the prefix.
func vkPod(t *testing.T, prefix string, policy v1.RestartPolicy) *v1.Pod {
	p := busybox(t)
	p.Name = "vk-" + prefix + "-" + strings.TrimPrefix(p.Name, "busybox-")
	p.Spec.RestartPolicy = policy
	return p
}

// --- The provider and its calls ----------------------------------------------------------

// vkCall is one call a provider received, stamped when the provider recorded it (after it
// took effect, before it returned).
type vkCall struct {
	vktest.Call
	At time.Time
}

// callLog records a provider's calls, in order.
type callLog struct {
	mu      sync.Mutex
	calls   []vkCall
	changed chan struct{} // closed and replaced on every call
}

func newCallLog() *callLog { return &callLog{changed: make(chan struct{})} }

// observe is the provider's Observer: it runs with the provider's lock held, so it only
// appends.
func (l *callLog) observe(c vktest.Call) {
	l.mu.Lock()
	l.calls = append(l.calls, vkCall{Call: c, At: vkClock.Now()})
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// find returns the calls of verb for the pod with uid ("" for any), in order.
func (l *callLog) find(verb string, uid types.UID) []vkCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []vkCall
	for _, c := range l.calls {
		if c.Verb == verb && (uid == "" || c.UID == uid) {
			out = append(out, c)
		}
	}
	return out
}

// waitFor waits, without polling, until cond holds for the calls so far.
func (l *callLog) waitFor(t *testing.T, ctx context.Context, what string, cond func([]vkCall) bool) []vkCall {
	t.Helper()
	for {
		l.mu.Lock()
		calls, changed := slices.Clone(l.calls), l.changed
		l.mu.Unlock()
		if cond(calls) {
			return calls
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; provider calls:\n%s", what, ctx.Err(), l)
		}
	}
}

// String lists the calls that change pods, and how many reads there were.
func (l *callLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	reads := 0
	var first time.Time
	for _, c := range l.calls {
		if first.IsZero() {
			first = c.At
		}
		switch c.Verb {
		case vktest.Create, vktest.Update, vktest.Delete:
			fmt.Fprintf(&b, "  %8.3fs %s\n", c.At.Sub(first).Seconds(), c.Call)
		default:
			reads++
		}
	}
	fmt.Fprintf(&b, "  (%d reads)", reads)
	return b.String()
}

// vkProvider is a vktest provider, its handler (itself, or its notifying wrapper) and its
// call log.
type vkProvider struct {
	*vktest.Provider
	handler vknode.PodLifecycleHandler
	log     *callLog
}

// newProvider returns a new, empty provider of the subtest's kind whose calls are recorded.
func (e *vkEnv) newProvider(label string, cfg vktest.Config) *vkProvider {
	l := newCallLog()
	cfg.Observer = l.observe
	p := &vkProvider{log: l}
	p.Provider, p.handler = vktest.NewHandler(cfg, e.kind.notify)
	e.onFailure(func() string { return fmt.Sprintf("provider %s (%s) calls:\n%s", label, e.kind.name, l) })
	return p
}

// --- The status writes ---------------------------------------------------------------------

// write is one call of the status manager to the API (a status patch or the final delete).
type write struct {
	Verb  string // "patch" or "delete"
	Name  string
	UID   types.UID   // the patch's metadata.uid, or the delete's UID precondition
	Phase v1.PodPhase // the phase the patch sets ("" if it does not set one)
	Patch string      // the patch's body
	// Injected: the call never reached the server; it failed with the injected error.
	Injected bool
	// AfterTerminal (delete): a patch setting a terminal phase on this UID had succeeded
	// before the delete was sent.
	AfterTerminal bool
	Err           error
	// Started is when the call was made; a delete is recorded then, before it reaches the
	// server, so it is in the record by the time a watch sees its effect. (Its Err is not:
	// a runner stopped once the watch saw the effect may cancel the call before its answer
	// arrives, so the tests assert on the server's state instead.)
	Started time.Time
	// Answered is when the answer came, once Done.
	Answered time.Time
	Done     bool
}

func (w write) String() string {
	s := fmt.Sprintf("%s %s %s (%s)", w.Started.Format("15:04:05.000"), w.Verb, w.Name, w.UID)
	if w.Phase != "" {
		s += " phase " + string(w.Phase)
	}
	if w.AfterTerminal {
		s += " after the terminal phase was written"
	}
	if w.Injected {
		s += " [injected]"
	}
	switch {
	case !w.Done:
		return s + ": in flight"
	case w.Err != nil:
		s += ": " + w.Err.Error()
	default:
		s += ": ok"
	}
	return s + ", answered " + w.Answered.Format("15:04:05.000")
}

// vkPatcher wraps kube.NewPatcher(nodeClient) as vk.Config.Patcher: it records every status
// patch and final delete and, if failTerminal is set, fails the first patch that sets a
// terminal phase with it instead of sending it (virtual-kubelet #712).
//
// A node identity's GET or PATCH of a pod the server's node authorizer has not linked to
// the node yet is answered 403, which kube.Patcher reports as NotFound; the status manager
// keeps the status of a pod the agent still has for its next full sync (this suite once saw
// a new pod stay Pending for good when it forgot it instead).
type vkPatcher struct {
	next         statusmgr.StatusPatcher
	inFlight     *patchTracker // next, counting the patches in flight
	failTerminal error

	mu       sync.Mutex
	writes   []write
	injected int
	terminal map[types.UID]bool // a terminal phase was written to the server
}

var _ statusmgr.StatusPatcher = (*vkPatcher)(nil)

// newPatcher returns the node identity's patcher, recording its writes.
func (e *vkEnv) newPatcher(label string, failTerminal error) *vkPatcher {
	e.t.Helper()
	kp, err := kube.NewPatcher(e.nodeClient)
	if err != nil {
		e.t.Fatal(err)
	}
	next := newPatchTracker(kp)
	p := &vkPatcher{next: next, inFlight: next, failTerminal: failTerminal, terminal: map[types.UID]bool{}}
	e.onFailure(func() string { return fmt.Sprintf("status writes of runner %s:\n%s", label, p) })
	return p
}

func (p *vkPatcher) GetPod(ctx context.Context, namespace, name string) (*v1.Pod, error) {
	return p.next.GetPod(ctx, namespace, name)
}

func (p *vkPatcher) PatchPodStatus(ctx context.Context, namespace, name string, patch []byte) (*v1.Pod, error) {
	var body struct {
		Metadata struct {
			UID types.UID `json:"uid"`
		} `json:"metadata"`
		Status struct {
			Phase v1.PodPhase `json:"phase"`
		} `json:"status"`
	}
	if err := json.Unmarshal(patch, &body); err != nil {
		return nil, fmt.Errorf("e2e: undecodable status patch %s: %w", patch, err)
	}
	w := write{Verb: "patch", Name: name, UID: body.Metadata.UID, Phase: body.Status.Phase, Patch: string(patch), Started: vkClock.Now()}
	p.mu.Lock()
	if p.failTerminal != nil && p.injected == 0 && isTerminal(w.Phase) {
		p.injected++
		w.Injected, w.Err, w.Done, w.Answered = true, p.failTerminal, true, w.Started
		p.writes = append(p.writes, w)
		p.mu.Unlock()
		return nil, p.failTerminal
	}
	p.mu.Unlock()
	got, err := p.next.PatchPodStatus(ctx, namespace, name, patch)
	w.Err, w.Done, w.Answered = err, true, vkClock.Now()
	p.mu.Lock()
	p.writes = append(p.writes, w)
	if err == nil && got != nil && isTerminal(got.Status.Phase) {
		p.terminal[got.UID] = true
	}
	p.mu.Unlock()
	return got, err
}

func (p *vkPatcher) DeletePod(ctx context.Context, namespace, name string, uid types.UID) error {
	p.mu.Lock()
	i := len(p.writes)
	p.writes = append(p.writes, write{Verb: "delete", Name: name, UID: uid, AfterTerminal: p.terminal[uid], Started: vkClock.Now()})
	p.mu.Unlock()
	err := p.next.DeletePod(ctx, namespace, name, uid)
	p.mu.Lock()
	p.writes[i].Err, p.writes[i].Done, p.writes[i].Answered = err, true, vkClock.Now()
	p.mu.Unlock()
	return err
}

// find returns the writes of verb for the UID ("" for any), in order.
func (p *vkPatcher) find(verb string, uid types.UID) []write {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []write
	for _, w := range p.writes {
		if w.Verb == verb && (uid == "" || w.UID == uid) {
			out = append(out, w)
		}
	}
	return out
}

func (p *vkPatcher) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, w := range p.writes {
		fmt.Fprintf(&b, "  %s\n", w)
	}
	return b.String()
}

// --- The runner ----------------------------------------------------------------------------

// vkRunner is one vk.Run as system:node:node1, with the agent's steps and logs.
type vkRunner struct {
	cancel context.CancelFunc
	done   chan error

	mu      sync.Mutex
	steps   []agent.Step
	changed chan struct{} // closed and replaced on every step
	logs    lockedBuffer

	stopOnce sync.Once
	err      error
}

// lockedBuffer is an io.Writer safe for concurrent use (the runner's slog handler).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// run starts a runner labelled label over a new provider with cfg and a new patcher (which
// fails the first terminal patch with failTerminal, if set).
func (e *vkEnv) run(label string, cfg vktest.Config, failTerminal error) (*vkProvider, *vkPatcher, *vkRunner) {
	e.t.Helper()
	p := e.newProvider(label, cfg)
	patcher := e.newPatcher(label, failTerminal)
	return p, patcher, e.startRunner(label, p, patcher)
}

// startRunner runs vk.Run with the provider and the patcher until stop or the end of the
// subtest.
func (e *vkEnv) startRunner(label string, p *vkProvider, patcher *vkPatcher) *vkRunner {
	e.t.Helper()
	return e.startRunnerWith(label, p, patcher, nil)
}

// startRunnerWith is startRunner with the configuration changed by mod (if set) before
// vk.Run starts.
func (e *vkEnv) startRunnerWith(label string, p *vkProvider, patcher *vkPatcher, mod func(*vk.Config)) *vkRunner {
	e.t.Helper()
	r := &vkRunner{done: make(chan error, 1), changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	cfg := vk.Config{NodeName: node, Provider: p.handler, Client: e.nodeClient, Patcher: patcher,
		Observer: r.record, Logger: slog.New(slog.NewTextHandler(&r.logs, nil))}
	if mod != nil {
		mod(&cfg)
	}
	go func() { r.done <- vk.Run(ctx, cfg) }()
	e.t.Cleanup(func() {
		if err := r.stop(); err != nil {
			e.t.Errorf("vk.Run (runner %s): %v", label, err)
		}
	})
	e.onFailure(func() string {
		return fmt.Sprintf("runner %s steps:\n%s\nrunner %s logs:\n%s", label, r.stepLines(), label, r.logs.String())
	})
	return r
}

func (r *vkRunner) record(s agent.Step) {
	r.mu.Lock()
	r.steps = append(r.steps, s)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// stop stops vk.Run and returns its error once every goroutine it started has ended; later
// calls return the same.
func (r *vkRunner) stop() error {
	r.cancel()
	r.stopOnce.Do(func() { r.err = <-r.done })
	return r.err
}

// waitStep waits, without polling, for a step of the pod with uid whose detail contains
// want.
func (r *vkRunner) waitStep(t *testing.T, ctx context.Context, uid types.UID, want string) {
	t.Helper()
	for {
		r.mu.Lock()
		changed := r.changed
		found := slices.ContainsFunc(r.steps, func(s agent.Step) bool {
			return s.UID == uid && strings.Contains(s.Detail, want)
		})
		r.mu.Unlock()
		if found {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("waiting for %q in the agent's steps of %s: %v", want, uid, ctx.Err())
		}
	}
}

func (r *vkRunner) stepLines() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, s := range r.steps {
		fmt.Fprintf(&b, "  %s\n", s)
	}
	return b.String()
}

// --- Watching a pod ------------------------------------------------------------------------

// watch starts watching the pod name until the subtest ends; a failing subtest prints its
// events.
func (e *vkEnv) watch(name string) *podWatch {
	e.t.Helper()
	pw := watchPod(e.t, e.ctx, e.admin, name)
	e.onFailure(func() string { return fmt.Sprintf("events of %s:\n%s", name, pw) })
	return pw
}

// of returns the events of the pod with uid.
func of(events []podEvent, uid types.UID) []podEvent {
	var out []podEvent
	for _, e := range events {
		if e.UID == uid {
			out = append(out, e)
		}
	}
	return out
}

// index returns the position of the first event matching cond, or -1.
func index(events []podEvent, cond func(podEvent) bool) int {
	return slices.IndexFunc(events, cond)
}

// hasPhase waits for an event of the pod showing the phase.
func hasPhase(uid types.UID, ph v1.PodPhase) func([]podEvent) bool {
	return func(es []podEvent) bool {
		return index(es, func(e podEvent) bool { return e.UID == uid && e.Phase == ph && e.Type != watch.Deleted }) >= 0
	}
}

// removed waits for the pod's Deleted event.
func removed(uid types.UID) func([]podEvent) bool {
	return func(es []podEvent) bool {
		return index(es, func(e podEvent) bool { return e.UID == uid && e.Type == watch.Deleted }) >= 0
	}
}

// phaseNeverLeftTerminal fails the test if the pod's phase on the server went from
// Succeeded or Failed to anything else.
func phaseNeverLeftTerminal(t *testing.T, events []podEvent) {
	t.Helper()
	for i := 1; i < len(events); i++ {
		if isTerminal(events[i-1].Phase) && events[i].Phase != events[i-1].Phase {
			t.Errorf("the phase on the server left %s for %s: %s", events[i-1].Phase, events[i].Phase, events[i])
		}
	}
}

// --- Polling the server --------------------------------------------------------------------

// eventually polls cond every 100 ms until it holds or ctx ends; state describes what cond
// saw last.
func eventually(t *testing.T, ctx context.Context, what string, cond func() (ok bool, state string)) {
	t.Helper()
	tick := vkClock.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		select {
		case <-tick.C():
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; last seen: %s", what, ctx.Err(), state)
		}
	}
}
