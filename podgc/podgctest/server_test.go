package podgctest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/internal/script"
	"github.com/podlife/podlife/podgc"
)

func testPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"},
		Spec:       v1.PodSpec{NodeName: "n1"},
		Status:     v1.PodStatus{Phase: v1.PodRunning},
	}
}

func TestServerRefusesBadObjects(t *testing.T) {
	s := NewServer()
	for name, p := range map[string]*v1.Pod{"nil": nil, "no name": {ObjectMeta: metav1.ObjectMeta{UID: "u"}}, "no uid": {ObjectMeta: metav1.ObjectMeta{Name: "p"}}} {
		if err := s.AddPod(p); !errors.Is(err, ErrBadObject) {
			t.Errorf("AddPod(%s) = %v, want ErrBadObject", name, err)
		}
	}
	if err := s.AddNode(nil); !errors.Is(err, ErrBadObject) {
		t.Errorf("AddNode(nil) = %v", err)
	}
	if err := s.AddNode(&v1.Node{}); !errors.Is(err, ErrBadObject) {
		t.Errorf("AddNode(unnamed) = %v", err)
	}
}

func TestServerPatch(t *testing.T) {
	ctx := context.Background()
	pod := testPod()
	st, _ := podgc.FailedStatus(pod, podgc.ConditionFor(podgc.ReasonOrphaned), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	good, err := podgc.StatusPatch(pod, st)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		patch  []byte
		target string
		check  func(error) bool
	}{
		{"valid", good, "p", func(err error) bool { return err == nil }},
		{"missing pod", good, "other", apierrors.IsNotFound},
		{"uid mismatch", []byte(`{"metadata":{"uid":"u2"},"status":{"phase":"Failed"}}`), "p", apierrors.IsConflict},
		{"not JSON", []byte(`nope`), "p", apierrors.IsBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewServer()
			if err := s.AddPod(pod); err != nil {
				t.Fatal(err)
			}
			err := s.PatchPodStatus(ctx, "ns", tt.target, tt.patch)
			if !tt.check(err) {
				t.Fatalf("PatchPodStatus = %v", err)
			}
			w := s.TakeWrites()
			if len(w) != 1 || w[0].Op != OpPatch || !errors.Is(w[0].Err, err) && w[0].Err != err {
				t.Fatalf("writes = %+v", w)
			}
			got, _ := s.Pod("ns", "p")
			got.ResourceVersion = pod.ResourceVersion // every write bumps it
			if err == nil {
				if diff := cmp.Diff(st, got.Status); diff != "" {
					t.Errorf("stored status (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(&st, w[0].Status); diff != "" {
					t.Errorf("recorded status (-want +got):\n%s", diff)
				}
			} else if diff := cmp.Diff(pod, got); diff != "" {
				t.Errorf("refused patch changed the pod (-want +got):\n%s", diff)
			}
		})
	}
}

func noError(err error) bool { return err == nil }

func TestServerDelete(t *testing.T) {
	ctx := context.Background()
	zero := int64(0)
	thirty := int64(30)
	tests := []struct {
		name  string
		opts  metav1.DeleteOptions
		check func(error) bool
		gone  bool
	}{
		{"grace 0 and uid", podgc.DeleteOptions(testPod()), noError, true},
		// As the API server does: a graceful delete of a bound pod keeps the object.
		{"no grace", metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions("u1")}, noError, false},
		{"grace 30", metav1.DeleteOptions{GracePeriodSeconds: &thirty, Preconditions: metav1.NewUIDPreconditions("u1")}, noError, false},
		{"no precondition", metav1.DeleteOptions{GracePeriodSeconds: &zero}, noError, true},
		{"other uid", metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: metav1.NewUIDPreconditions("u2")}, apierrors.IsConflict, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewServer()
			_ = s.AddPod(testPod())
			if err := s.DeletePod(ctx, "ns", "p", tt.opts); !tt.check(err) {
				t.Fatalf("DeletePod = %v", err)
			}
			if _, ok := s.Pod("ns", "p"); ok == tt.gone {
				t.Errorf("pod stored = %v, want %v", ok, !tt.gone)
			}
		})
	}
	s := NewServer()
	if err := s.DeletePod(ctx, "ns", "p", podgc.DeleteOptions(testPod())); !apierrors.IsNotFound(err) {
		t.Errorf("delete of a missing pod = %v, want NotFound", err)
	}
}

func TestServerFailNextAndNodes(t *testing.T) {
	ctx := context.Background()
	s := NewServer()
	_ = s.AddNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	_ = s.AddNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}})
	e1, e2 := errors.New("one"), errors.New("two")
	s.FailNext(OpListNodes, "", e1)
	s.FailNext(OpListNodes, "", e2)
	if _, err := s.ListNodes(ctx); err != e1 {
		t.Errorf("first list = %v, want one", err)
	}
	if _, err := s.ListNodes(ctx); err != e2 {
		t.Errorf("second list = %v, want two", err)
	}
	s.HideNode("n1", true)
	nodes, err := s.ListNodes(ctx)
	if err != nil || len(nodes) != 1 || nodes[0].Name != "n2" {
		t.Errorf("list with n1 hidden = %v, %v", nodes, err)
	}
	if ok, err := s.NodeExists(ctx, "n1"); !ok || err != nil {
		t.Errorf("NodeExists(hidden n1) = %v, %v; want true", ok, err)
	}
	s.RemoveNode("n1")
	if ok, _ := s.NodeExists(ctx, "n1"); ok {
		t.Error("removed node exists")
	}
	want := []NodeCheck{{Name: "n1", Exists: true}, {Name: "n1"}}
	if diff := cmp.Diff(want, s.TakeNodeChecks()); diff != "" {
		t.Errorf("checks (-want +got):\n%s", diff)
	}
}

func TestRunScenarioRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.txt")
	src := "# comment\npod default/u terminating\n----\n\ncycle\n----\n\npods\n----\nstale output\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	RunScenario(t, path, true)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `# comment
pod default/u terminating
----

cycle
----
cycle at t=0s
  patch default/u -> phase=Failed
  delete default/u
  deleted default/u (unscheduled)

pods
----
no pods
`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("rewritten script (-want +got):\n%s", diff)
	}
	RunScenario(t, path, false) // the rewritten script passes as it is
}

func TestScenarioRejectsUnknownFlags(t *testing.T) {
	sc := &scenario{srv: NewServer()}
	for _, line := range []string{"pod default/p nodee=n1", "node n1 redy=True", "config treshold=1", "frobnicate"} {
		f, err := script.Parse("test", line+"\n----\n")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sc.exec(f.Cases[0]); err == nil {
			t.Errorf("%q accepted", line)
		}
	}
}

// A delete that is not the garbage collector's (grace 0, UID precondition) is flagged in
// a cycle's trace: the API server would accept it, so only the trace shows it.
func TestCycleFlagsOtherDeletes(t *testing.T) {
	sc := &scenario{srv: NewServer(), clk: testingclock.NewFakeClock(scenarioStart)}
	if err := sc.srv.AddPod(testPod()); err != nil {
		t.Fatal(err)
	}
	if err := sc.srv.DeletePod(context.Background(), "ns", "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := sc.cycle()
	if err != nil {
		t.Fatal(err)
	}
	if want := "  delete ns/p (not grace 0 with a UID precondition)"; !strings.Contains(out, want) {
		t.Errorf("cycle trace:\n%s\nwant a line %q", out, want)
	}
	if p, ok := sc.srv.Pod("ns", "p"); !ok || p.DeletionTimestamp == nil {
		t.Errorf("a graceful delete of a bound pod left %v, want it kept with a deletionTimestamp", p)
	}
}
