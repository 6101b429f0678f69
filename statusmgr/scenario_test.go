package statusmgr_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/scenarios with the actual output")

// TestScenarios runs the scripts in testdata/scenarios. Each block is a command, a line
// "----" and the output the command must print; blocks are separated by blank lines and
// lines starting with # are comments. Run with -rewrite to regenerate the outputs.
//
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
//	fail VERB KIND [N]         the next N (default 1) get|patch|delete calls fail with
//	                           conflict|notfound|internal
//	sync                       Manager.Sync; prints every API call and the error
//	server NAME                the server's pod: UID, phase, conditions, container states
//	stats                      the non-zero counters of Manager.Stats
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runScenario(t, file)
		})
	}
}

type scenario struct {
	t        *testing.T
	api      *statusmgrtest.FakeAPI
	m        *statusmgr.Manager
	pods     map[string]*v1.Pod
	couldRun map[types.UID]bool
	fails    map[statusmgrtest.Verb][]error
	trace    []string
}

func runScenario(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := &scenario{t: t, api: statusmgrtest.NewFakeAPI(), pods: map[string]*v1.Pod{},
		couldRun: map[types.UID]bool{}, fails: map[statusmgrtest.Verb][]error{}}
	recording := statusmgr.StatusPatcherFuncs{
		GetPodFunc: func(ctx context.Context, ns, name string) (*v1.Pod, error) {
			if err := s.failure(statusmgrtest.Get); err != nil {
				return nil, s.record(err, "GET %s", name)
			}
			p, err := s.api.GetPod(ctx, ns, name)
			return p, s.record(err, "GET %s", name)
		},
		PatchPodStatusFunc: func(ctx context.Context, ns, name string, patch []byte) (*v1.Pod, error) {
			if err := s.failure(statusmgrtest.Patch); err != nil {
				return nil, s.record(err, "PATCH %s %s", name, patch)
			}
			p, err := s.api.PatchPodStatus(ctx, ns, name, patch)
			return p, s.record(err, "PATCH %s %s", name, patch)
		},
		DeletePodFunc: func(ctx context.Context, ns, name string, uid types.UID) error {
			if err := s.failure(statusmgrtest.Delete); err != nil {
				return s.record(err, "DELETE %s uid=%s", name, uid)
			}
			return s.record(s.api.DeletePod(ctx, ns, name, uid), "DELETE %s uid=%s", name, uid)
		},
	}
	s.m, err = statusmgr.New(statusmgr.Config{
		Patcher: recording,
		Clock:   clocktesting.NewFakeClock(epoch),
		CouldHaveRunningContainers: func(uid types.UID) bool {
			return s.couldRun[uid]
		},
	})
	if err != nil {
		t.Fatal(err)
	}

	var out strings.Builder
	for _, block := range strings.Split(strings.TrimSpace(string(data)), "\n\n") {
		lines := strings.Split(block, "\n")
		var cmd string
		var want []string
		inOutput := false
		for _, l := range lines {
			switch {
			case inOutput:
				want = append(want, l)
			case l == "----":
				inOutput = true
			case strings.HasPrefix(l, "#"):
				out.WriteString(l + "\n")
			default:
				cmd = l
			}
		}
		if cmd == "" {
			out.WriteString("\n")
			continue
		}
		got := s.run(cmd)
		if !*rewrite && strings.Join(want, "\n") != strings.Join(got, "\n") {
			t.Errorf("%s: %s:\ngot:\n%s\nwant:\n%s", file, cmd, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		out.WriteString(cmd + "\n----\n")
		for _, l := range got {
			out.WriteString(l + "\n")
		}
		out.WriteString("\n")
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(strings.TrimSpace(out.String())+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (s *scenario) failure(verb statusmgrtest.Verb) error {
	q := s.fails[verb]
	if len(q) == 0 {
		return nil
	}
	s.fails[verb] = q[1:]
	return q[0]
}

func (s *scenario) record(err error, format string, args ...any) error {
	line := fmt.Sprintf(format, args...)
	switch {
	case err == nil:
		line += " -> ok"
	case apierrors.IsConflict(err):
		line += " -> Conflict"
	case apierrors.IsNotFound(err):
		line += " -> NotFound"
	default:
		line += " -> " + string(apierrors.ReasonForError(err))
	}
	s.trace = append(s.trace, line)
	return err
}

func (s *scenario) pod(name string) *v1.Pod {
	p, ok := s.pods[name]
	if !ok {
		s.t.Fatalf("unknown pod %s", name)
	}
	return p
}

func (s *scenario) run(cmd string) []string {
	f := strings.Fields(cmd)
	arg := func(i int) string {
		if i >= len(f) {
			s.t.Fatalf("%q: missing argument %d", cmd, i)
		}
		return f[i]
	}
	errLine := func(err error) []string {
		if err == nil {
			return nil
		}
		return []string{"error: " + err.Error()}
	}
	switch f[0] {
	case "pod":
		p := testPod(arg(1), types.UID(arg(2)))
		if len(f) > 3 && f[3] == "static" {
			p.Annotations[statusmgr.ConfigSourceAnnotationKey] = "file"
		}
		s.pods[arg(1)] = p
	case "create":
		s.api.Put(s.pod(arg(1)))
	case "mirror":
		p := s.pod(arg(1)).DeepCopy()
		p.UID = types.UID(arg(2))
		p.Annotations[statusmgr.ConfigSourceAnnotationKey] = statusmgr.APISource
		p.Annotations[statusmgr.ConfigMirrorAnnotationKey] = "hash"
		s.api.Put(p)
	case "recreate":
		p := s.pod(arg(1)).DeepCopy()
		p.UID = types.UID(arg(2))
		p.DeletionTimestamp = nil
		s.api.Put(p)
	case "delete":
		p := deleting(s.pod(arg(1)))
		s.pods[arg(1)] = p
		s.api.MarkDeleted("default", arg(1), *p.DeletionTimestamp, 30)
	case "set":
		st, ok := preset(arg(2))
		if !ok {
			s.t.Fatalf("%q: unknown status preset", cmd)
		}
		return errLine(s.m.SetPodStatus(s.pod(arg(1)), st))
	case "terminate":
		return errLine(s.m.TerminatePod(s.pod(arg(1))))
	case "couldrun":
		s.couldRun[s.pod(arg(1)).UID] = arg(2) == "true"
	case "fail":
		n := 1
		if len(f) > 3 {
			fmt.Sscan(f[3], &n)
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
		for range n {
			s.fails[statusmgrtest.Verb(arg(1))] = append(s.fails[statusmgrtest.Verb(arg(1))], err)
		}
	case "sync":
		s.trace = nil
		err := s.m.Sync(s.t.Context())
		out := s.trace
		if err != nil {
			out = append(out, "sync error: "+apiReason(err))
		}
		if len(out) == 0 {
			out = []string{"(no calls)"}
		}
		return out
	case "server":
		p, ok := s.api.Pod("default", arg(1))
		if !ok {
			return []string{"absent"}
		}
		return describe(p)
	case "stats":
		return nonZero(s.m.Stats())
	default:
		s.t.Fatalf("unknown command %q", cmd)
	}
	return nil
}

func apiReason(err error) string {
	if r := apierrors.ReasonForError(err); r != "" {
		return string(r)
	}
	return err.Error()
}

func describe(p *v1.Pod) []string {
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

func nonZero(st statusmgr.Stats) []string {
	var out []string
	v := reflect.ValueOf(st)
	for i := range v.NumField() {
		if n := v.Field(i).Int(); n != 0 {
			out = append(out, fmt.Sprintf("%s=%d", v.Type().Field(i).Name, n))
		}
	}
	return []string{strings.Join(out, " ")}
}

func preset(name string) (v1.PodStatus, bool) {
	switch name {
	case "pending":
		s := runningStatus(false)
		s.Phase = v1.PodPending
		s.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
		return s, true
	case "running":
		return runningStatus(true), true
	case "notready":
		return runningStatus(false), true
	case "succeeded", "failed":
		s := runningStatus(false)
		s.Phase = v1.PodSucceeded
		code := int32(0)
		if name == "failed" {
			s.Phase, code = v1.PodFailed, 1
		}
		s.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Reason: "Completed",
			FinishedAt: metav1.NewTime(epoch)}}
		return s, true
	}
	return v1.PodStatus{}, false
}
