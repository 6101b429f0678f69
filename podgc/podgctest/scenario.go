package podgctest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/apitest"
	"github.com/podlife/podlife/internal/script"
	"github.com/podlife/podlife/podgc"
)

// scenarioStart is the fake clock's time when a scenario starts; outputs show times as
// offsets from it.
var scenarioStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// RunScenario runs the script at path against a podgc.Runner over a Server and a fake clock,
// one command at a time, and checks each command's output against the expected output
// written under it. With rewrite, the file is rewritten with the actual outputs instead (run
// the tests with the package's -rewrite flag, then read the diff).
//
// The script is in the format every podlife harness reads (see the package doc): each
// command is followed by a line "----" and its expected output (nothing, for most), and a
// blank line ends the case. Commands:
//
//	config [threshold=N] [quarantine=DUR] [nodecheck]   before the first cycle
//	node NAME [ready=True|False|Unknown] [out-of-service] [hidden]
//	remove-node NAME
//	pod NS/NAME [node=NODE] [phase=PHASE] [age=DUR] [terminating] [evicted] [uid=UID]
//	fail OP NAME|- notfound|conflict|error              OP: list-pods list-nodes patch delete node-exists
//	advance DUR                                         steps the fake clock
//	cycle                                               runs one cycle; prints its writes and report
//	pods                                                prints the pods left
//
// Writes are made one at a time (MaxConcurrentDeletes 1), so the output is deterministic.
func RunScenario(t testing.TB, path string, rewrite bool) {
	t.Helper()
	sc := &scenario{srv: NewServer(), clk: testingclock.NewFakeClock(scenarioStart)}
	script.Run(t, path, rewrite, sc.exec)
}

// scenario is the state of one script run.
type scenario struct {
	srv       *Server
	clk       *testingclock.FakeClock
	runner    *podgc.Runner
	threshold int
	quarant   time.Duration
	nodecheck bool
}

func (sc *scenario) exec(c *script.Case) (string, error) {
	cmd := c.Cmd
	flags, pos := splitArgs(c.Args)
	for k := range flags {
		if !slices.Contains(allowedFlags[cmd], k) {
			return "", fmt.Errorf("command %s takes no flag %q", cmd, k)
		}
	}
	switch cmd {
	case "config":
		if sc.runner != nil {
			return "", errors.New("config after the first cycle")
		}
		if v, ok := flags["threshold"]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return "", err
			}
			sc.threshold = n
		}
		if v, ok := flags["quarantine"]; ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				return "", err
			}
			sc.quarant = d
		}
		_, sc.nodecheck = flags["nodecheck"]
		return "", nil
	case "node":
		if len(pos) != 1 {
			return "", errors.New("want: node NAME [flags]")
		}
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: pos[0], UID: types.UID("node-" + pos[0])}}
		if v, ok := flags["ready"]; ok {
			n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionStatus(v)}}
		}
		if _, ok := flags["out-of-service"]; ok {
			n.Spec.Taints = []v1.Taint{{Key: podgc.TaintOutOfService, Value: "nodeshutdown", Effect: v1.TaintEffectNoExecute}}
		}
		if err := sc.srv.AddNode(n); err != nil {
			return "", err
		}
		_, hidden := flags["hidden"]
		sc.srv.HideNode(pos[0], hidden)
		return "", nil
	case "remove-node":
		if len(pos) != 1 {
			return "", errors.New("want: remove-node NAME")
		}
		sc.srv.RemoveNode(pos[0])
		return "", nil
	case "pod":
		return "", sc.addPod(pos, flags)
	case "fail":
		if len(pos) != 3 {
			return "", errors.New("want: fail OP NAME|- notfound|conflict|error")
		}
		name := pos[1]
		if name == "-" {
			name = ""
		}
		var err error
		switch pos[2] {
		case "notfound":
			err = NotFound(name)
		case "conflict":
			err = apitest.Conflict(name, errors.New("injected"))
		case "error":
			err = apierrors.NewInternalError(errors.New("injected"))
		default:
			return "", fmt.Errorf("unknown error kind %q", pos[2])
		}
		sc.srv.FailNext(Op(pos[0]), name, err)
		return "", nil
	case "advance":
		if len(pos) != 1 {
			return "", errors.New("want: advance DURATION")
		}
		d, err := time.ParseDuration(pos[0])
		if err != nil {
			return "", err
		}
		sc.clk.Step(d)
		return "", nil
	case "cycle":
		return sc.cycle()
	case "pods":
		var b []string
		for _, p := range sc.srv.Pods() {
			b = append(b, describePod(p))
		}
		if len(b) == 0 {
			return "no pods", nil
		}
		return strings.Join(b, "\n"), nil
	}
	return "", fmt.Errorf("unknown command %q", cmd)
}

// allowedFlags lists the flags of each command.
var allowedFlags = map[string][]string{
	"config": {"threshold", "quarantine", "nodecheck"},
	"node":   {"ready", "out-of-service", "hidden"},
	"pod":    {"node", "phase", "age", "terminating", "evicted", "uid"},
}

// flagWords are the bare words that are flags, not positional arguments.
var flagWords = map[string]bool{"terminating": true, "evicted": true, "out-of-service": true, "hidden": true, "nodecheck": true}

// splitArgs separates key=value and bare flag words from positional arguments.
func splitArgs(args []script.Arg) (map[string]string, []string) {
	flags := map[string]string{}
	var pos []string
	for _, a := range args {
		switch {
		case a.HasVal:
			flags[a.Key] = a.Val
		case flagWords[a.Key]:
			flags[a.Key] = ""
		default:
			pos = append(pos, a.Key)
		}
	}
	return flags, pos
}

func (sc *scenario) addPod(pos []string, flags map[string]string) error {
	if len(pos) != 1 {
		return errors.New("want: pod NS/NAME [flags]")
	}
	ns, name, ok := strings.Cut(pos[0], "/")
	if !ok {
		return errors.New("want: pod NS/NAME")
	}
	now := sc.clk.Now()
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(now)},
		Spec:       v1.PodSpec{NodeName: flags["node"]},
		Status:     v1.PodStatus{Phase: v1.PodRunning},
	}
	if v, ok := flags["phase"]; ok {
		p.Status.Phase = v1.PodPhase(v)
	}
	if v, ok := flags["age"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		p.CreationTimestamp = metav1.NewTime(now.Add(-d))
	}
	if _, ok := flags["terminating"]; ok {
		ts := metav1.NewTime(now)
		p.DeletionTimestamp = &ts
		p.DeletionGracePeriodSeconds = new(int64(30))
	}
	if _, ok := flags["evicted"]; ok {
		p.Status.Phase = v1.PodFailed
		p.Status.Reason = "Evicted"
	}
	if v, ok := flags["uid"]; ok {
		p.UID = types.UID(v)
	}
	return sc.srv.AddPod(p)
}

func (sc *scenario) cycle() (string, error) {
	if sc.runner == nil {
		cfg := podgc.Config{
			Lister: sc.srv, Writer: sc.srv, Clock: sc.clk,
			TerminatedPodThreshold: sc.threshold, QuarantinePeriod: sc.quarant, MaxConcurrentDeletes: 1,
		}
		if sc.nodecheck {
			cfg.NodeChecker = sc.srv
		}
		r, err := podgc.New(cfg)
		if err != nil {
			return "", err
		}
		sc.runner = r
	}
	rep, _ := sc.runner.RunOnce(context.Background())
	var b []string
	b = append(b, "cycle at t="+sc.clk.Since(scenarioStart).String())
	for _, c := range sc.srv.TakeNodeChecks() {
		s := fmt.Sprintf("  check node %s -> exists=%v", c.Name, c.Exists)
		if c.Err != nil {
			s = fmt.Sprintf("  check node %s -> error: %s", c.Name, errorKind(c.Err))
		}
		b = append(b, s)
	}
	for _, w := range sc.srv.TakeWrites() {
		s := fmt.Sprintf("  %s %s/%s", w.Op, w.Namespace, w.Name)
		if w.Status != nil {
			s += " -> " + describeStatus(*w.Status)
		}
		if w.Op == OpDelete && !isFinalDelete(w.Options) {
			s += " (not grace 0 with a UID precondition)"
		}
		if w.Err != nil {
			s += " -> error: " + errorKind(w.Err)
		}
		b = append(b, s)
	}
	if len(rep.Quarantined) > 0 {
		b = append(b, "  quarantined: "+strings.Join(rep.Quarantined, ", "))
	}
	if len(rep.Gone) > 0 {
		b = append(b, "  gone: "+strings.Join(rep.Gone, ", "))
	}
	for _, d := range rep.Deleted {
		b = append(b, fmt.Sprintf("  deleted %s/%s (%s)", d.Pod.Namespace, d.Pod.Name, d.Reason))
	}
	for _, f := range rep.Failed {
		b = append(b, fmt.Sprintf("  failed %s/%s (%s): %s", f.Deletion.Pod.Namespace, f.Deletion.Pod.Name, f.Deletion.Reason, sentinel(f.Err)))
	}
	for _, err := range rep.Plan.Skipped {
		b = append(b, "  skipped: "+err.Error())
	}
	if rep.Err != nil && len(rep.Failed) == 0 {
		b = append(b, "  error: "+sentinel(rep.Err))
	}
	if len(b) == 1 {
		b = append(b, "  nothing to do")
	}
	return strings.Join(b, "\n"), nil
}

// isFinalDelete reports whether opts are the garbage collector's: grace 0 and a UID
// precondition.
func isFinalDelete(opts metav1.DeleteOptions) bool {
	return opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds == 0 &&
		opts.Preconditions != nil && opts.Preconditions.UID != nil
}

// sentinel names the podgc sentinels err wraps, and the kind of API error under them.
func sentinel(err error) string {
	var names []string
	for _, s := range []error{podgc.ErrList, podgc.ErrNodeCheck, podgc.ErrPatch, podgc.ErrDelete} {
		if errors.Is(err, s) {
			names = append(names, s.Error())
		}
	}
	return strings.Join(names, "; ") + " (" + errorKind(err) + ")"
}

// errorKind names an API error by its reason.
func errorKind(err error) string {
	switch r := apierrors.ReasonForError(err); r {
	case metav1.StatusReasonUnknown:
		return err.Error()
	default:
		return string(r)
	}
}

func describePod(p *v1.Pod) string {
	s := fmt.Sprintf("%s/%s %s", p.Namespace, p.Name, describeStatus(p.Status))
	if p.Spec.NodeName != "" {
		s += " node=" + p.Spec.NodeName
	}
	if p.DeletionTimestamp != nil {
		s += " terminating"
	}
	return s
}

func describeStatus(st v1.PodStatus) string {
	s := "phase=" + string(st.Phase)
	for _, c := range st.Conditions {
		if c.Type == v1.DisruptionTarget {
			s += fmt.Sprintf(" DisruptionTarget=%s/%s", c.Status, c.Reason)
		}
	}
	return s
}
