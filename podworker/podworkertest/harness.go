package podworkertest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/internal/script"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/podworker"
)

// Mode selects what a scenario drives.
type Mode int

const (
	// MachineMode drives a podworker.Machine synchronously.
	MachineMode Mode = iota
	// RunnerMode drives a podworker.Runner in a synctest bubble.
	RunnerMode
)

// String returns "machine" or "runner".
func (m Mode) String() string {
	if m == RunnerMode {
		return "runner"
	}
	return "machine"
}

// Epoch is the fake clock's start; trace times are offsets from it.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Option changes how RunFile runs a scenario.
type Option func(*options)

type options struct {
	newRunner func(podworker.Config) (*podworker.Runner, error)
}

// WithNewRunner has RunFile build the Runner of RunnerMode with newRunner instead of
// podworker.New (a Runner built another way, e.g. on the engine twin of podworker's own
// tests).
func WithNewRunner(newRunner func(podworker.Config) (*podworker.Runner, error)) Option {
	return func(o *options) { o.newRunner = newRunner }
}

// RunFile runs the scenario script at path in the given mode and fails t where a command's
// trace differs from the expected one. With rewrite (Machine mode only), the file is
// rewritten with the actual traces instead. The script format is internal/script's (see
// the package doc).
func RunFile(t *testing.T, path string, mode Mode, rewrite bool, opts ...Option) {
	t.Helper()
	f, err := script.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T) {
		o := options{newRunner: podworker.New}
		for _, opt := range opts {
			opt(&o)
		}
		h := newHarness(t, mode, o)
		defer h.close()
		f.Run(t, rewrite && mode == MachineMode, func(c *script.Case) (string, error) {
			return h.exec(argsOf(c)), nil
		})
	}
	if mode == RunnerMode {
		synctest.Test(t, run)
	} else {
		run(t)
	}
}

// harness holds the fakes of one scenario.
type harness struct {
	t     testing.TB
	mode  Mode
	clock *clocktesting.FakeClock

	mu      sync.Mutex
	lines   []traceLine
	pods    map[string]*v1.Pod
	known   map[string]bool
	running map[types.UID]bool
	hold    map[types.UID]bool
	held    map[types.UID]*call
	fails   map[types.UID]map[string][]string
	term    map[types.UID]bool
	lastMin map[types.UID]time.Time
	// work is the type of each pod's work being started (its status read comes next).
	work  map[types.UID]podworker.WorkType
	waits map[string][]*podworker.Completion

	m    *podworker.Machine
	opts options

	r      *podworker.Runner
	cancel context.CancelFunc
	done   chan struct{}
}

type traceLine struct {
	pod  string
	text string
}

// call is one held syncer call.
type call struct {
	uid    types.UID
	method string
	done   chan podworker.Result
}

func newHarness(t testing.TB, mode Mode, o options) *harness {
	h := &harness{
		t:       t,
		mode:    mode,
		opts:    o,
		clock:   clocktesting.NewFakeClock(epoch),
		pods:    map[string]*v1.Pod{},
		known:   map[string]bool{},
		running: map[types.UID]bool{},
		hold:    map[types.UID]bool{},
		held:    map[types.UID]*call{},
		fails:   map[types.UID]map[string][]string{},
		term:    map[types.UID]bool{},
		lastMin: map[types.UID]time.Time{},
		work:    map[types.UID]podworker.WorkType{},
		waits:   map[string][]*podworker.Completion{},
	}
	if err := h.start(podworker.MachineConfig{}); err != nil {
		t.Fatal(err)
	}
	return h
}

// start builds the target with cfg (jitter off) and, for a Runner, runs it.
func (h *harness) start(cfg podworker.MachineConfig) error {
	if h.mode == MachineMode {
		m, err := podworker.NewMachine(cfg)
		if err != nil {
			return err
		}
		h.m = m
		return nil
	}
	r, err := h.opts.newRunner(podworker.Config{
		Syncer:             h.syncer(),
		View:               podworker.RuntimeViewFuncs{StatusAfterFunc: h.statusAfter, LastStatusFunc: h.get},
		Clock:              h.clock,
		Rand:               func() float64 { return 0 },
		ResyncInterval:     cfg.ResyncInterval,
		BackoffInitial:     cfg.BackoffInitial,
		BackoffMax:         cfg.BackoffMax,
		MaxConcurrentSyncs: cfg.MaxConcurrentSyncs,
		SerializeByName:    cfg.SerializeByName,
		OnTransition:       h.transition,
		Hooks:              podworker.Hooks{SyncStarted: func(s podworker.Sync) { h.starting(s.UID, s.WorkType) }},
	})
	if err != nil {
		return err
	}
	h.r = r
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan struct{})
	go func() {
		defer close(h.done)
		if err := r.Run(ctx); err != nil {
			h.t.Errorf("Run: %v", err)
		}
	}()
	synctest.Wait()
	return nil
}

// configure replaces the target with a new one built from the command's options; only
// allowed before any pod was seen.
func (h *harness) configure(a args) error {
	if len(h.known) > 0 {
		return errors.New("config must come before any pod")
	}
	var cfg podworker.MachineConfig
	cfg.SerializeByName = a.flag["by-name"]
	for k, v := range a.kv {
		switch k {
		case "max":
			n, err := strconv.Atoi(v)
			if err != nil {
				return err
			}
			cfg.MaxConcurrentSyncs = n
		case "resync", "backoff", "backoff-max":
			d, err := time.ParseDuration(v)
			if err != nil {
				return err
			}
			switch k {
			case "resync":
				cfg.ResyncInterval = d
			case "backoff":
				cfg.BackoffInitial = d
			default:
				cfg.BackoffMax = d
			}
		default:
			return fmt.Errorf("unknown config option %q", k)
		}
	}
	h.close()
	return h.start(cfg)
}

func (h *harness) close() {
	if h.r != nil {
		h.cancel()
		<-h.done
	}
}

func (h *harness) trace(pod types.UID, format string, a ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lines = append(h.lines, traceLine{pod: string(pod), text: fmt.Sprintf(format, a...)})
}

func (h *harness) transition(tr podworker.Transition) {
	h.trace(tr.UID, "%s -> %s", tr.From, tr.To)
}

func (h *harness) since(t time.Time) string {
	if t.IsZero() {
		return "status any"
	}
	return "status newer than +" + t.Sub(epoch).String()
}

// exec runs one command and returns its trace.
func (h *harness) exec(a args) string {
	if err := h.command(a); err != nil {
		h.trace("", "error: %v", err)
	}
	h.settle()
	h.checkWaits()
	h.mu.Lock()
	lines := h.lines
	h.lines = nil
	h.mu.Unlock()
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].pod < lines[j].pod })
	var b strings.Builder
	for _, l := range lines {
		if l.pod != "" {
			b.WriteString(l.pod)
			b.WriteString(": ")
		}
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String()
}

func (h *harness) settle() {
	if h.mode == RunnerMode {
		synctest.Wait()
	}
}

func (h *harness) checkWaits() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for uid, chs := range h.waits {
		keep := chs[:0]
		for _, ch := range chs {
			select {
			case <-ch.Done():
				h.lines = append(h.lines, traceLine{pod: uid, text: "kill completion channel closed"})
			default:
				keep = append(keep, ch)
			}
		}
		h.waits[uid] = keep
	}
}

func (h *harness) intArg(a args, key string, def int64) (int64, error) {
	v, ok := a.kv[key]
	if !ok {
		return def, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

func (h *harness) pod(a args) (*v1.Pod, error) {
	if len(a.pos) == 0 {
		return nil, errors.New("missing pod UID")
	}
	p, ok := h.pods[a.pos[0]]
	if !ok {
		return nil, fmt.Errorf("unknown pod %q (create it first)", a.pos[0])
	}
	return p, nil
}

func (h *harness) command(a args) error {
	switch a.verb {
	case "config":
		return h.configure(a)
	case "create":
		if len(a.pos) == 0 {
			return errors.New("missing pod UID")
		}
		uid := a.pos[0]
		g, err := h.intArg(a, "grace", 30)
		if err != nil {
			return err
		}
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{
			UID: types.UID(uid), Name: uid, Namespace: "default",
			Annotations: map[string]string{podworker.ConfigSourceAnnotationKey: "api"},
		}}
		if n := a.kv["name"]; n != "" {
			p.Name = n
		}
		if ns := a.kv["ns"]; ns != "" {
			p.Namespace = ns
		}
		if a.flag["static"] {
			p.Annotations[podworker.ConfigSourceAnnotationKey] = "file"
		}
		p.Spec.TerminationGracePeriodSeconds = &g
		p.Status.Phase = v1.PodPhase(a.kv["phase"])
		if p.Status.Phase == "" {
			p.Status.Phase = v1.PodPending
		}
		h.pods[uid] = p
		h.known[uid] = true
		return h.update(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodCreate, Pod: p})
	case "update":
		p, err := h.pod(a)
		if err != nil {
			return err
		}
		p = p.DeepCopy()
		if ph := a.kv["phase"]; ph != "" {
			p.Status.Phase = v1.PodPhase(ph)
		}
		h.pods[string(p.UID)] = p
		t := podworker.SyncPodUpdate
		switch a.kv["type"] {
		case "sync":
			t = podworker.SyncPodSync
		case "create":
			t = podworker.SyncPodCreate
		}
		return h.update(podworker.UpdatePodOptions{UpdateType: t, Pod: p})
	case "delete":
		p, err := h.pod(a)
		if err != nil {
			return err
		}
		g, err := h.intArg(a, "grace", 30)
		if err != nil {
			return err
		}
		p = p.DeepCopy()
		now := metav1.NewTime(h.clock.Now())
		p.DeletionTimestamp = &now
		p.DeletionGracePeriodSeconds = &g
		h.pods[string(p.UID)] = p
		return h.update(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: p})
	case "kill":
		p, err := h.pod(a)
		if err != nil {
			return err
		}
		ko := &podworker.KillPodOptions{Evict: a.flag["evict"]}
		if _, ok := a.kv["override"]; ok {
			o, err := h.intArg(a, "override", 0)
			if err != nil {
				return err
			}
			ko.PodTerminationGracePeriodSecondsOverride = &o
		}
		if a.flag["statusfn"] {
			ko.PodStatusFunc = func(s *v1.PodStatus) { s.Reason = "Killed" }
		}
		ch := h.wait(a)
		if ch != nil {
			ko.Completion = ch
		}
		return h.update(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodKill, Pod: p, KillPodOptions: ko})
	case "kill-runtime":
		if len(a.pos) == 0 {
			return errors.New("missing pod UID")
		}
		rp := &pleg.Pod{ID: types.UID(a.pos[0]), Name: a.pos[0], Namespace: "default"}
		if n := a.kv["name"]; n != "" {
			rp.Name = n
		}
		h.known[a.pos[0]] = true
		var ko *podworker.KillPodOptions
		if ch := h.wait(a); ch != nil {
			ko = &podworker.KillPodOptions{Completion: ch}
		}
		t := podworker.SyncPodKill
		if a.kv["type"] == "update" {
			t = podworker.SyncPodUpdate
		}
		return h.update(podworker.UpdatePodOptions{UpdateType: t, RunningPod: rp, KillPodOptions: ko})
	case "storm":
		p, err := h.pod(a)
		if err != nil {
			return err
		}
		if len(a.pos) < 2 {
			return errors.New("storm UID N")
		}
		n, err := strconv.Atoi(a.pos[1])
		if err != nil {
			return err
		}
		for range n {
			if err := h.update(podworker.UpdatePodOptions{UpdateType: podworker.SyncPodUpdate, Pod: p}); err != nil {
				return err
			}
		}
		h.trace(p.UID, "%d updates sent", n)
		return nil
	case "hold", "release":
		if len(a.pos) == 0 {
			return errors.New("missing pod UID")
		}
		h.mu.Lock()
		h.hold[types.UID(a.pos[0])] = a.verb == "hold"
		h.mu.Unlock()
		return nil
	case "finish":
		if len(a.pos) == 0 {
			return errors.New("missing pod UID")
		}
		return h.finish(types.UID(a.pos[0]), a)
	case "fail":
		if len(a.pos) < 2 {
			return errors.New("fail UID METHOD")
		}
		n, err := h.intArg(a, "times", 1)
		if err != nil {
			return err
		}
		msg := a.kv["err"]
		if msg == "" {
			msg = "boom"
		}
		uid := types.UID(a.pos[0])
		h.mu.Lock()
		if h.fails[uid] == nil {
			h.fails[uid] = map[string][]string{}
		}
		for range n {
			h.fails[uid][a.pos[1]] = append(h.fails[uid][a.pos[1]], msg)
		}
		h.mu.Unlock()
		return nil
	case "terminal":
		if len(a.pos) == 0 {
			return errors.New("missing pod UID")
		}
		h.mu.Lock()
		h.term[types.UID(a.pos[0])] = true
		h.mu.Unlock()
		return nil
	case "runtime":
		if len(a.pos) < 2 {
			return errors.New("runtime UID running|stopped")
		}
		h.mu.Lock()
		h.running[types.UID(a.pos[0])] = a.pos[1] == "running"
		h.mu.Unlock()
		return nil
	case "advance":
		if len(a.pos) == 0 {
			return errors.New("advance DURATION")
		}
		d, err := time.ParseDuration(a.pos[0])
		if err != nil {
			return err
		}
		h.clock.Step(d)
		if h.mode == MachineMode {
			h.process(h.m.Tick(h.clock.Now()))
		}
		return nil
	case "sync-known":
		var desired []*v1.Pod
		for _, uid := range a.pos {
			if p, ok := h.pods[uid]; ok {
				desired = append(desired, p)
			}
		}
		var known map[types.UID]podworker.PodWorkerSync
		if h.mode == MachineMode {
			var rd podworker.Ready
			known, rd = h.m.SyncKnownPods(h.clock.Now(), desired)
			h.process(rd)
		} else {
			known = h.r.SyncKnownPods(desired)
			h.settle()
		}
		uids := make([]string, 0, len(known))
		for uid := range known {
			uids = append(uids, string(uid))
		}
		sort.Strings(uids)
		for _, uid := range uids {
			s := known[types.UID(uid)]
			h.trace(types.UID(uid), "known: state=%s orphan=%t config=%t static=%t", s.State, s.Orphan, s.HasConfig, s.Static)
		}
		return nil
	case "query":
		if len(a.pos) == 0 {
			return errors.New("missing pod UID")
		}
		h.settle()
		uid := types.UID(a.pos[0])
		q := h.queries()
		h.trace(uid, "known-terminated=%t termination-requested=%t containers-terminating=%t runtime-removable=%t content-removable=%t could-run=%t finished=%t",
			q.IsPodKnownTerminated(uid), q.IsPodTerminationRequested(uid), q.ShouldPodContainersBeTerminating(uid),
			q.ShouldPodRuntimeBeRemoved(uid), q.ShouldPodContentBeRemoved(uid), q.CouldHaveRunningContainers(uid),
			q.ShouldPodBeFinished(uid))
		return nil
	case "state":
		h.settle()
		uids := make([]string, 0, len(h.known))
		for uid := range h.known {
			uids = append(uids, uid)
		}
		sort.Strings(uids)
		q := h.queries()
		for _, uid := range uids {
			s, ok := q.PodState(types.UID(uid))
			if !ok {
				h.trace(types.UID(uid), "unknown")
				continue
			}
			h.trace(types.UID(uid), "stage=%s work=%s working=%t termination-started=%t grace=%d deleted=%t evicted=%t restart=%t",
				s.Stage, s.WorkType, s.Working, s.TerminationStarted, s.GracePeriodSeconds, s.Deleted, s.Evicted, s.RestartRequested)
		}
		return nil
	}
	return fmt.Errorf("unknown command %q", a.verb)
}

// queries is what both a Machine and a Runner answer.
type queries interface {
	IsPodKnownTerminated(types.UID) bool
	IsPodTerminationRequested(types.UID) bool
	ShouldPodContainersBeTerminating(types.UID) bool
	ShouldPodRuntimeBeRemoved(types.UID) bool
	ShouldPodContentBeRemoved(types.UID) bool
	CouldHaveRunningContainers(types.UID) bool
	ShouldPodBeFinished(types.UID) bool
	PodState(types.UID) (podworker.PodState, bool)
}

func (h *harness) queries() queries {
	if h.mode == MachineMode {
		return h.m
	}
	return h.r
}

func (h *harness) wait(a args) *podworker.Completion {
	if !a.flag["wait"] {
		return nil
	}
	ch := podworker.NewCompletion()
	h.mu.Lock()
	h.waits[a.pos[0]] = append(h.waits[a.pos[0]], ch)
	h.mu.Unlock()
	return ch
}

// update sends one UpdatePod to the target.
func (h *harness) update(opts podworker.UpdatePodOptions) error {
	if h.mode == RunnerMode {
		return h.r.UpdatePod(opts)
	}
	rt := podworker.RuntimeUnknown
	if opts.Pod != nil && (opts.Pod.Status.Phase == v1.PodSucceeded || opts.Pod.Status.Phase == v1.PodFailed) {
		if s, _ := h.get(opts.Pod.UID); !s.IsRunning() {
			rt = podworker.RuntimeStopped
		}
	}
	rd, err := h.m.UpdatePod(h.clock.Now(), opts, rt)
	if err != nil {
		return err
	}
	h.process(rd)
	return nil
}
