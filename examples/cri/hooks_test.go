package cri_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/examples/cri"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

// hookServer records the requests of httpGet hooks (path, User-Agent and X-Hook header).
type hookServer struct {
	mu   sync.Mutex
	got  []string
	host string
	port int
}

func newHookServer(t *testing.T) *hookServer {
	t.Helper()
	hs := &hookServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hs.mu.Lock()
		hs.got = append(hs.got, r.URL.RequestURI()+" "+r.UserAgent()+" "+r.Header.Get("X-Hook"))
		hs.mu.Unlock()
		w.WriteHeader(http.StatusInternalServerError) // the kubelet looks at no status code
	}))
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	hs.host = host
	hs.port, _ = strconv.Atoi(port)
	return hs
}

func (hs *hookServer) requests() []string {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return slices.Clone(hs.got)
}

func (hs *hookServer) get(path string) *v1.LifecycleHandler {
	return &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Host: hs.host, Port: intstr.FromInt(hs.port), Path: path,
		HTTPHeaders: []v1.HTTPHeader{{Name: "X-Hook", Value: "yes"}}}}
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// TestPostStartHook: a postStart hook runs after StartContainer (exec through ExecSync
// without a timeout, httpGet with the kubelet's User-Agent, sleep); a failing one gives
// the kubelet's FailedPostStartHook event, kills the container and reports
// PostStartHookError with the kubelet's message; the restartPolicy restarts it.
func TestPostStartHook(t *testing.T) {
	hs := newHookServer(t)
	exitOne := func([]string) (*runtimeapi.ExecSyncResponse, error) {
		return &runtimeapi.ExecSyncResponse{ExitCode: 1, Stdout: []byte("out"), Stderr: []byte("boom")}, nil
	}
	for _, tc := range []struct {
		name     string
		hook     func(t *testing.T) *v1.LifecycleHandler
		execErr  bool
		wantExec []string
		wantHTTP []string
		// wantReason is the ContainerError's reason and message ("" when it runs).
		wantReason, wantMsg string
	}{
		{name: "exec", hook: func(*testing.T) *v1.LifecycleHandler {
			return &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"touch", "/started"}}}
		}, wantExec: []string{"app [touch /started] timeout=0"}},
		{name: "httpGet", hook: func(*testing.T) *v1.LifecycleHandler { return hs.get("/start?x=1") },
			wantHTTP: []string{"/start?x=1 kube-lifecycle/1.37 yes"}},
		{name: "sleep", hook: func(*testing.T) *v1.LifecycleHandler {
			return &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 0}}
		}},
		{name: "exec fails", hook: func(*testing.T) *v1.LifecycleHandler {
			return &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}
		}, execErr: true, wantExec: []string{"app [false] timeout=0"}, wantReason: node.ReasonPostStartHookError,
			wantMsg: `Exec lifecycle hook ([false]) for Container "app" in Pod "web_ns(uid-1)" failed - error: command 'false' exited with 1: boom, message: "outboom"`},
		{name: "httpGet fails", hook: func(t *testing.T) *v1.LifecycleHandler {
			return &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromInt(closedPort(t)), Path: "/x"}}
		}, wantReason: node.ReasonPostStartHookError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			if tc.execErr {
				h.execReply = exitOne
			}
			before := len(hs.requests())
			pod := fakePod(v1.RestartPolicyAlways, "app")
			pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: tc.hook(t)}
			err := h.sync(t, pod)
			if diff := cmp.Diff(tc.wantExec, h.execs); diff != "" {
				t.Errorf("execs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantHTTP, hs.requests()[before:], cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("HTTP requests (-want +got):\n%s", diff)
			}
			cs := h.status(t, pod).FindContainerStatusByName("app")
			if tc.wantReason == "" {
				if err != nil {
					t.Fatal(err)
				}
				if cs.State != pleg.ContainerStateRunning || len(h.eventsWith("FailedPostStartHook")) != 0 {
					t.Errorf("app %s, events %v", cs.State, h.events)
				}
				return
			}
			rs := reasons(err)
			if len(rs) != 1 || rs[0].Reason != tc.wantReason || (tc.wantMsg != "" && rs[0].Message != tc.wantMsg) {
				t.Errorf("SyncPod's reasons %+v, want %s: %q", rs, tc.wantReason, tc.wantMsg)
			}
			if !errors.Is(err, cri.ErrPostStartHook) {
				t.Errorf("SyncPod = %v, want ErrPostStartHook", err)
			}
			if diff := cmp.Diff([]string{"Warning FailedPostStartHook: PostStartHook failed"}, h.eventsWith("FailedPostStartHook")); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"Normal Killing: FailedPostStartHook"}, h.eventsWith("Killing")); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if cs.State != pleg.ContainerStateExited || h.stopTimeouts()["app"] != 30 {
				t.Errorf("app after the failed hook: %s, stops %v", cs.State, h.stopTimeouts())
			}
			// restartPolicy Always: the next sync (after the back-off) starts it again.
			h.clock.Step(cri.DefaultBackOffInitial)
			h.execReply = nil
			_ = h.sync(t, pod)
			if cs := h.status(t, pod).FindContainerStatusByName("app"); cs.RestartCount != 1 {
				t.Errorf("app after the next sync: %s, restart count %d", cs.State, cs.RestartCount)
			}
		})
	}
}

// TestPreStopHTTP: an httpGet preStop hook runs before StopContainer (it was skipped with a
// warning); one that gets no response gives FailedPreStopHook and the stop goes on.
func TestPreStopHTTP(t *testing.T) {
	hs := newHookServer(t)
	h := newHarness(t, nil)
	pod := fakePod(v1.RestartPolicyAlways, "ok", "broken")
	pod.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: hs.get("/stop")}
	pod.Spec.Containers[1].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{
		Host: "127.0.0.1", Port: intstr.FromInt(closedPort(t)), Path: "/stop"}}}
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	if err := h.rt.KillPod(t.Context(), pod, h.status(t, pod), 10); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/stop kube-lifecycle/1.37 yes"}, hs.requests()); diff != "" {
		t.Errorf("HTTP requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Warning FailedPreStopHook: PreStopHook failed"}, h.eventsWith("FailedPreStopHook")); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if st := h.status(t, pod); st.IsRunning() {
		t.Errorf("still running: %+v", st)
	}
}
