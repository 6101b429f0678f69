package statusmgrtest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/internal/script"
	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/internal/statustest"
)

// Mode selects what a scenario drives.
type Mode int

const (
	// MachineMode drives a statusmgr.Machine itself, one write after the other, making
	// the calls it asks for (Machine.QueueAll, NextWrite, StartWrite, Answer).
	MachineMode Mode = iota
	// ManagerMode calls Manager.Sync, which writes the pods in parallel.
	ManagerMode
)

// String returns "machine" or "manager".
func (m Mode) String() string {
	if m == ManagerMode {
		return "manager"
	}
	return "machine"
}

// Epoch is the fake clock's time in a scenario: every timestamp the scripts print.
var Epoch = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// RunFile runs the scenario script at path against a statusmgr.Manager over a FakeAPI and
// fails t where a command's output differs from the script's. Both modes must print the
// same output. With rewrite, the file is rewritten with the actual outputs instead (in
// MachineMode only).
//
// The script is in the format every podlife harness reads (see the package doc): a
// command, a line "----" and the output the command must print, then a blank line; lines
// starting with # are comments, kept when rewriting. The calls a sync makes are printed
// grouped by pod (pods by name, each pod's calls in order), then the sync's error, if any.
// Commands (NAME is a pod in namespace default):
//
//	pod NAME UID [static]      the node agent knows the pod (not yet on the server)
//	create NAME                the pod appears on the server with the agent's UID
//	mirror NAME UID            a mirror pod of the static pod NAME appears on the server
//	recreate NAME UID          the server's pod is replaced by a new one (same name)
//	delete NAME                a user deletes the pod (server and agent get a deletionTimestamp)
//	set NAME PRESET            SetPodStatus with pending|running|notready|succeeded|failed
//	terminate NAME             TerminatePod
//	couldrun NAME true|false   what CouldHaveRunningContainers answers
//	fail VERB KIND [N] [pod=NAME]  the next N (default 1) get|patch|delete calls (of the pod
//	                           NAME, else of any pod) fail with conflict|notfound|internal
//	sync                       one full sync; prints every API call and the error
//	server NAME                the server's pod: UID, phase, conditions, container states
//	stats                      the non-zero counters of Manager.Stats
func RunFile(t *testing.T, path string, mode Mode, rewrite bool) {
	t.Helper()
	h := newHarness(t, mode)
	script.Run(t, path, rewrite && mode == MachineMode, func(c *script.Case) (string, error) {
		return strings.Join(h.run(c), "\n"), nil
	})
}

// failure is one injected error, for the calls of pod (any pod when "").
type failure struct {
	pod string
	err error
}

type harness struct {
	t     testing.TB
	mode  Mode
	api   *FakeAPI
	clock *clocktesting.FakeClock
	m     *statusmgr.Manager // ManagerMode
	mach  *statusmgr.Machine // MachineMode
	pods  map[string]*v1.Pod

	mu       sync.Mutex // the fields below: the Manager calls from several goroutines
	couldRun map[types.UID]bool
	fails    map[statusmgr.Verb][]failure
	trace    map[string][]string // per pod name
}

func newHarness(t testing.TB, mode Mode) *harness {
	h := &harness{t: t, mode: mode, api: NewFakeAPI(), clock: clocktesting.NewFakeClock(Epoch),
		pods: map[string]*v1.Pod{}, couldRun: map[types.UID]bool{}, fails: map[statusmgr.Verb][]failure{}}
	rec := statusmgr.StatusPatcherFuncs{
		GetPodFunc: func(ctx context.Context, ns, name string) (*v1.Pod, error) {
			a := h.call(ctx, statusmgr.Call{Verb: statusmgr.VerbGet, Namespace: ns, Name: name})
			return a.Pod, a.Err
		},
		PatchPodStatusFunc: func(ctx context.Context, ns, name string, patch []byte) (*v1.Pod, error) {
			a := h.call(ctx, statusmgr.Call{Verb: statusmgr.VerbPatch, Namespace: ns, Name: name, Patch: patch})
			return a.Pod, a.Err
		},
		DeletePodFunc: func(ctx context.Context, ns, name string, uid types.UID) error {
			return h.call(ctx, statusmgr.Call{Verb: statusmgr.VerbDelete, Namespace: ns, Name: name, UID: uid}).Err
		},
	}
	var err error
	h.m, err = statusmgr.New(statusmgr.Config{
		Patcher:                    rec,
		Clock:                      h.clock,
		CouldHaveRunningContainers: h.couldRunOf,
	})
	if err != nil {
		t.Fatal(err)
	}
	if h.mach, err = statusmgr.NewMachine(statusmgr.MachineConfig{}); err != nil {
		t.Fatal(err)
	}
	return h
}

// couldRunOf is what the script said of the pod's containers (CouldHaveRunningContainers).
func (h *harness) couldRunOf(uid types.UID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.couldRun[uid]
}

// setPodStatus, terminatePod and stats go to the mode's Manager or Machine.
func (h *harness) setPodStatus(pod *v1.Pod, st v1.PodStatus) error {
	if h.mode == ManagerMode {
		return h.m.SetPodStatus(pod, st)
	}
	_, err := h.mach.SetPodStatus(h.clock.Now(), pod, st, nil)
	return err
}

func (h *harness) terminatePod(pod *v1.Pod) error {
	if h.mode == ManagerMode {
		return h.m.TerminatePod(pod)
	}
	_, err := h.mach.TerminatePod(h.clock.Now(), pod, nil)
	return err
}

func (h *harness) stats() statusmgr.Stats {
	if h.mode == ManagerMode {
		return h.m.Stats()
	}
	return h.mach.Stats()
}

// call makes c on the FakeAPI (or fails it as the script said) and records it.
func (h *harness) call(ctx context.Context, c statusmgr.Call) statusmgr.Answer {
	var a statusmgr.Answer
	line := ""
	switch c.Verb {
	case statusmgr.VerbGet:
		line = "GET " + c.Name
	case statusmgr.VerbPatch:
		line = fmt.Sprintf("PATCH %s %s", c.Name, c.Patch)
	case statusmgr.VerbDelete:
		line = fmt.Sprintf("DELETE %s uid=%s", c.Name, c.UID)
	}
	if a.Err = h.injected(c.Verb, c.Name); a.Err == nil {
		switch c.Verb {
		case statusmgr.VerbGet:
			a.Pod, a.Err = h.api.GetPod(ctx, c.Namespace, c.Name)
		case statusmgr.VerbPatch:
			a.Pod, a.Err = h.api.PatchPodStatus(ctx, c.Namespace, c.Name, c.Patch)
		case statusmgr.VerbDelete:
			a.Err = h.api.DeletePod(ctx, c.Namespace, c.Name, c.UID)
		}
	}
	switch {
	case a.Err == nil:
		line += " -> ok"
	case apierrors.IsConflict(a.Err):
		line += " -> Conflict"
	case apierrors.IsNotFound(a.Err):
		line += " -> NotFound"
	default:
		line += " -> " + string(apierrors.ReasonForError(a.Err))
	}
	h.mu.Lock()
	h.trace[c.Name] = append(h.trace[c.Name], line)
	h.mu.Unlock()
	return a
}

func (h *harness) injected(verb statusmgr.Verb, pod string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.fails[verb]
	for i, f := range q {
		if f.pod == "" || f.pod == pod {
			h.fails[verb] = slices.Delete(q, i, i+1)
			return f.err
		}
	}
	return nil
}

func (h *harness) pod(name string) *v1.Pod {
	p, ok := h.pods[name]
	if !ok {
		h.t.Fatalf("unknown pod %s", name)
	}
	return p
}

// sync runs one full sync in the harness's mode and returns the error.
func (h *harness) sync() error {
	ctx := context.Background()
	if h.mode == ManagerMode {
		return h.m.Sync(ctx)
	}
	var errs []error
	h.mach.QueueAll()
	for w, ok := h.mach.NextWrite(); ok; w, ok = h.mach.NextWrite() {
		r, err := h.mach.StartWrite(h.clock.Now(), w.UID, statusmgr.Facts{CouldRunContainers: h.couldRunOf(w.UID)})
		for err == nil && !r.Done() {
			r, err = h.mach.Answer(h.clock.Now(), w.UID, h.call(ctx, r.Call))
		}
		if err != nil {
			h.t.Fatalf("write of %s: %v", w.UID, err)
		}
		if r.End.Err != nil {
			errs = append(errs, r.End.Err)
		}
	}
	return errors.Join(errs...)
}

func (h *harness) run(c *script.Case) []string {
	cmd := c.Text
	pos := append([]string{c.Cmd}, c.Words()...)
	arg := func(i int) string {
		if i >= len(pos) {
			h.t.Fatalf("%q: missing argument %d", cmd, i)
		}
		return pos[i]
	}
	errLine := func(err error) []string {
		if err == nil {
			return nil
		}
		return []string{"error: " + err.Error()}
	}
	switch pos[0] {
	case "pod":
		p := Pod(arg(1), types.UID(arg(2)))
		if len(pos) > 3 && pos[3] == "static" {
			p.Annotations[statusmgr.ConfigSourceAnnotationKey] = "file"
		}
		h.pods[arg(1)] = p
	case "create":
		h.api.Put(h.pod(arg(1)))
	case "mirror":
		p := h.pod(arg(1)).DeepCopy()
		p.UID = types.UID(arg(2))
		p.Annotations[statusmgr.ConfigSourceAnnotationKey] = statusmgr.APISource
		p.Annotations[statusmgr.ConfigMirrorAnnotationKey] = "hash"
		h.api.Put(p)
	case "recreate":
		p := h.pod(arg(1)).DeepCopy()
		p.UID = types.UID(arg(2))
		p.DeletionTimestamp = nil
		h.api.Put(p)
	case "delete":
		p := h.pod(arg(1)).DeepCopy()
		ts := metav1.NewTime(Epoch)
		grace := int64(30)
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &grace
		h.pods[arg(1)] = p
		h.api.MarkDeleted("default", arg(1), ts, grace)
	case "set":
		st, ok := Preset(arg(2))
		if !ok {
			h.t.Fatalf("%q: unknown status preset", cmd)
		}
		return errLine(h.setPodStatus(h.pod(arg(1)), st))
	case "terminate":
		return errLine(h.terminatePod(h.pod(arg(1))))
	case "couldrun":
		h.mu.Lock()
		h.couldRun[h.pod(arg(1)).UID] = arg(2) == "true"
		h.mu.Unlock()
	case "fail":
		n := 1
		if len(pos) > 3 {
			var err error
			if n, err = strconv.Atoi(pos[3]); err != nil {
				h.t.Fatalf("%q: bad count", cmd)
			}
		}
		var err error
		switch arg(2) {
		case "conflict":
			err = apierrors.NewConflict(v1.Resource("pods"), "x", errors.New("injected"))
		case "notfound":
			err = apierrors.NewNotFound(v1.Resource("pods"), "x")
		default:
			err = apierrors.NewInternalError(errors.New("injected"))
		}
		podArg, _ := c.Value("pod")
		h.mu.Lock()
		for range n {
			h.fails[statusmgr.Verb(arg(1))] = append(h.fails[statusmgr.Verb(arg(1))], failure{pod: podArg, err: err})
		}
		h.mu.Unlock()
	case "sync":
		h.mu.Lock()
		h.trace = map[string][]string{}
		h.mu.Unlock()
		err := h.sync()
		h.mu.Lock()
		var out []string
		for _, name := range slices.Sorted(mapsKeys(h.trace)) {
			out = append(out, h.trace[name]...)
		}
		h.mu.Unlock()
		if err != nil {
			out = append(out, "sync error: "+reasons(err))
		}
		if len(out) == 0 {
			out = []string{"(no calls)"}
		}
		return out
	case "server":
		p, ok := h.api.Pod("default", arg(1))
		if !ok {
			return []string{"absent"}
		}
		return Describe(p)
	case "stats":
		return []string{NonZero(h.stats())}
	default:
		return []string{fmt.Sprintf("error: unknown command %q", pos[0])}
	}
	return nil
}

func mapsKeys(m map[string][]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// reasons names the API errors of a sync error (the errors of the pods joined), sorted:
// the pods' order depends on the mode.
func reasons(err error) string {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var out []string
	for _, e := range errs {
		if r := apierrors.ReasonForError(e); r != "" {
			out = append(out, string(r))
		} else {
			out = append(out, e.Error())
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// Pod returns a pod from the API server named name in namespace default with the UID
// uid: one container "c" (busybox), restart policy Always, phase Pending.
func Pod(name string, uid types.UID) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: name, UID: uid,
			Annotations: map[string]string{statusmgr.ConfigSourceAnnotationKey: statusmgr.APISource},
		},
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyAlways,
			Containers:    []v1.Container{{Name: "c", Image: "busybox"}},
		},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
}

// Preset returns the status of a Pod named by a script's set command: pending, running
// (ready), notready, succeeded or failed.
func Preset(name string) (v1.PodStatus, bool) {
	running := func(ready bool) v1.PodStatus { return statustest.Running(ready, Epoch) }
	switch name {
	case "pending":
		s := running(false)
		s.Phase = v1.PodPending
		s.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
		return s, true
	case "running":
		return running(true), true
	case "notready":
		return running(false), true
	case "succeeded", "failed":
		s := running(false)
		s.Phase = v1.PodSucceeded
		code := int32(0)
		if name == "failed" {
			s.Phase, code = v1.PodFailed, 1
		}
		s.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Reason: "Completed",
			FinishedAt: metav1.NewTime(Epoch)}}
		return s, true
	}
	return v1.PodStatus{}, false
}

// Describe prints a pod as a script's server command does: UID, phase, whether it is
// deleting, its conditions and its containers' states.
func Describe(p *v1.Pod) []string {
	out := []string{fmt.Sprintf("uid=%s phase=%s deleting=%v", p.UID, p.Status.Phase, p.DeletionTimestamp != nil)}
	for _, c := range p.Status.Conditions {
		line := fmt.Sprintf("condition %s=%s", c.Type, c.Status)
		if c.Reason != "" {
			line += " (" + c.Reason + ")"
		}
		out = append(out, line)
	}
	for _, cs := range p.Status.ContainerStatuses {
		state := "waiting"
		switch {
		case cs.State.Running != nil:
			state = "running"
		case cs.State.Terminated != nil:
			state = fmt.Sprintf("terminated(%d %s)", cs.State.Terminated.ExitCode, cs.State.Terminated.Reason)
		}
		out = append(out, fmt.Sprintf("container %s %s ready=%v", cs.Name, state, cs.Ready))
	}
	return out
}

// NonZero prints the non-zero counters of st, as a script's stats command does.
func NonZero(st statusmgr.Stats) string {
	var out []string
	v := reflect.ValueOf(st)
	for i := range v.NumField() {
		if n := v.Field(i).Int(); n != 0 {
			out = append(out, fmt.Sprintf("%s=%d", v.Type().Field(i).Name, n))
		}
	}
	return strings.Join(out, " ")
}
