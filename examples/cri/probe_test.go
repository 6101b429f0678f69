package cri_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/examples/cri"
	"github.com/podlife/podlife/grace"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

// probeResult is one Probe's answer.
type probeResult struct {
	result node.ProbeResult
	output string
	err    bool
}

// runProbe runs the readiness probe p of a container of a hostNetwork pod (reached at
// 127.0.0.1) or, with ip set, of a pod with that IP.
func runProbe(t *testing.T, h *harness, p *v1.Probe, ip string, ports ...v1.ContainerPort) probeResult {
	t.Helper()
	pod := fakePod(v1.RestartPolicyAlways, "app")
	pod.Spec.Containers[0].ReadinessProbe = p
	pod.Spec.Containers[0].Ports = ports
	st := &pleg.PodStatus{ID: pod.UID}
	if ip != "" {
		pod.Spec.HostNetwork = false
		st.IPs = []string{ip}
	}
	id := ""
	if p.Exec != nil {
		if err := h.sync(t, pod); err != nil {
			t.Fatal(err)
		}
		id = h.status(t, pod).FindContainerStatusByName("app").ID
	}
	r, out, err := h.rt.Probe(t.Context(), pod, st, &pod.Spec.Containers[0], id, node.ProbeReadiness)
	return probeResult{result: r, output: out, err: err != nil}
}

// TestProbeExec: an exec probe runs through ExecSync with the probe's timeout; exit 0
// succeeds, another code fails with the combined output, a timeout fails with the CRI
// client's "command timed out" (pkg/probe/exec, prober.go).
func TestProbeExec(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func([]string) (*runtimeapi.ExecSyncResponse, error)
		want  probeResult
	}{
		{"exit 0", func([]string) (*runtimeapi.ExecSyncResponse, error) {
			return &runtimeapi.ExecSyncResponse{Stdout: []byte("ok\n")}, nil
		}, probeResult{result: node.ProbeSuccess, output: "ok\n"}},
		{"exit 1", func([]string) (*runtimeapi.ExecSyncResponse, error) {
			return &runtimeapi.ExecSyncResponse{ExitCode: 1, Stdout: []byte("out "), Stderr: []byte("not ready")}, nil
		}, probeResult{result: node.ProbeFailure, output: "out not ready"}},
		{"timeout", func([]string) (*runtimeapi.ExecSyncResponse, error) {
			return nil, fmt.Errorf("timeout 1s exceeded: context deadline exceeded")
		}, probeResult{result: node.ProbeFailure, output: "command timed out"}},
		{"runtime error", func([]string) (*runtimeapi.ExecSyncResponse, error) {
			return nil, fmt.Errorf("container not running")
		}, probeResult{result: node.ProbeUnknown, err: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			h.execReply = tc.reply
			got := runProbe(t, h, &v1.Probe{TimeoutSeconds: 3, ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/ready"}}}}, "")
			if got != tc.want {
				t.Errorf("Probe = %+v, want %+v", got, tc.want)
			}
			if len(h.execs) != 1 || h.execs[0] != "app [cat /tmp/ready] timeout=3" {
				t.Errorf("execs %v, want one with timeout 3", h.execs)
			}
		})
	}
}

// TestProbeHTTP: the kubelet's HTTP probe (pkg/probe/http): 200-399 succeeds, a redirect
// to another host is a warning, a redirect on the same host is followed, 500 fails with
// the kubelet's message; the User-Agent is kube-probe/1.37; a port by name; a pod's IP.
func TestProbeHTTP(t *testing.T) {
	var agent, custom string
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		agent, custom = r.UserAgent(), r.Header.Get("X-Probe")
		fmt.Fprint(w, "fine")
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "broken", 500) })
	mux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:1/elsewhere", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	_, portStr, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	port, _ := strconv.Atoi(portStr)
	get := func(path string, p intstr.IntOrString) *v1.Probe {
		return &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: p,
			HTTPHeaders: []v1.HTTPHeader{{Name: "X-Probe", Value: "yes"}}}}}
	}
	named := v1.ContainerPort{Name: "http", ContainerPort: int32(port)}
	for _, tc := range []struct {
		name string
		p    *v1.Probe
		ip   string
		want probeResult
	}{
		{"200", get("/ok", intstr.FromInt32(int32(port))), "", probeResult{result: node.ProbeSuccess, output: "fine"}},
		{"port by name", get("/ok", intstr.FromString("http")), "", probeResult{result: node.ProbeSuccess, output: "fine"}},
		{"the pod's IP", get("/ok", intstr.FromInt32(int32(port))), "127.0.0.1", probeResult{result: node.ProbeSuccess, output: "fine"}},
		{"500", get("/fail", intstr.FromInt32(int32(port))), "", probeResult{result: node.ProbeFailure, output: "HTTP probe failed with statuscode: 500"}},
		{"redirect on the same host", get("/same", intstr.FromInt32(int32(port))), "", probeResult{result: node.ProbeSuccess, output: "fine"}},
		{"redirect to another host", get("/away", intstr.FromInt32(int32(port))), "",
			probeResult{result: node.ProbeWarning, output: "Probe terminated redirects, Response body: "}},
		{"unknown port name", get("/ok", intstr.FromString("nope")), "", probeResult{result: node.ProbeUnknown, err: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil)
			got := runProbe(t, h, tc.p, tc.ip, named)
			if tc.name == "redirect to another host" {
				got.output = got.output[:min(len(got.output), len(tc.want.output))]
			}
			if got != tc.want {
				t.Errorf("Probe = %+v, want %+v", got, tc.want)
			}
		})
	}
	if agent != "kube-probe/1.37" || custom != "yes" {
		t.Errorf("User-Agent %q, X-Probe %q; want kube-probe/1.37, yes", agent, custom)
	}
}

// TestProbeTCPAndGRPC: tcpSocket succeeds when the port accepts and fails with the
// dial error when it does not; grpc succeeds on SERVING and fails with the kubelet's
// message otherwise (pkg/probe/tcp, pkg/probe/grpc).
func TestProbeTCPAndGRPC(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := health.NewServer()
	hs.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	port := int32(lis.Addr().(*net.TCPAddr).Port)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := int32(closed.Addr().(*net.TCPAddr).Port)
	closed.Close()

	h := newHarness(t, nil)
	tcp := func(p int32) *v1.Probe {
		return &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(p)}}}
	}
	grpcProbe := func(service string) *v1.Probe {
		return &v1.Probe{TimeoutSeconds: 2, ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: port, Service: ptr.To(service)}}}
	}
	if got := runProbe(t, h, tcp(port), ""); got.result != node.ProbeSuccess || got.err {
		t.Errorf("tcp to an open port: %+v", got)
	}
	if got := runProbe(t, h, tcp(closedPort), ""); got.result != node.ProbeFailure || !strings.Contains(got.output, "connection refused") {
		t.Errorf("tcp to a closed port: %+v", got)
	}
	if got := runProbe(t, h, grpcProbe(""), ""); got != (probeResult{result: node.ProbeSuccess, output: "service healthy"}) {
		t.Errorf("grpc SERVING: %+v", got)
	}
	if got := runProbe(t, h, grpcProbe("down"), ""); got != (probeResult{result: node.ProbeFailure, output: `service unhealthy (responded with "NOT_SERVING")`}) {
		t.Errorf("grpc NOT_SERVING: %+v", got)
	}
	if _, _, err := h.rt.Probe(context.Background(), nil, nil, nil, "", node.ProbeLiveness); err == nil {
		t.Error("Probe of a nil pod: no error")
	}
}

// TestKillContainer: a container that failed its liveness probe is stopped alone, with
// the probe's terminationGracePeriodSeconds as its budget (the kubelet 1.37), and the
// next SyncPod starts it again.
func TestKillContainer(t *testing.T) {
	h := newHarness(t, nil)
	// OnFailure, and a container that exits 0 on SIGTERM: the probe's kill alone restarts it.
	pod := fakePod(v1.RestartPolicyOnFailure, "app", "other")
	pod.Spec.Containers[0].LivenessProbe = &v1.Probe{TerminationGracePeriodSeconds: ptr.To[int64](5),
		ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	h.fakeCRI.mu.Lock()
	h.stopExitsZero = true
	h.fakeCRI.mu.Unlock()
	id := h.status(t, pod).FindContainerStatusByName("app").ID
	if err := h.rt.KillContainer(t.Context(), pod, id, grace.KillLivenessProbe, "Container app failed liveness probe, will be restarted"); err != nil {
		t.Fatal(err)
	}
	if got := h.stopTimeouts(); len(got) != 1 || got["app"] != 5 {
		t.Errorf("StopContainer timeouts %v, want app: 5 only", got)
	}
	st := h.status(t, pod)
	if cs := st.FindContainerStatusByName("app"); cs.State != pleg.ContainerStateExited || cs.ExitCode != 0 {
		t.Errorf("app after the kill: %s, exit code %d", cs.State, cs.ExitCode)
	}
	if cs := st.FindContainerStatusByName("other"); cs.State != pleg.ContainerStateRunning {
		t.Errorf("other after the kill: %s", cs.State)
	}
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	if cs := h.status(t, pod).FindContainerStatusByName("app"); cs.State != pleg.ContainerStateRunning || cs.ID == id {
		t.Errorf("app after SyncPod: %s (%s), want a new running instance", cs.State, cs.ID)
	}
	if err := h.rt.KillContainer(t.Context(), pod, "", grace.KillLivenessProbe, ""); err == nil {
		t.Error("KillContainer without an ID: no error")
	}
}

// TestProbeKillBackOff: a container killed for its liveness probe is restarted in the
// SyncPod right after the kill with the kubelet's back-off, which the kubelet decides on
// the status from before the kill (doBackOff: the newest exited instance is the one
// before): a container that ran longer than its back-off starts again at once; one that
// ran shorter waits for the back-off counted from its previous instance's finish, and the
// SyncPods after that count from the killed instance's own finish.
func TestProbeKillBackOff(t *testing.T) {
	h := newHarness(t, nil)
	pod := fakePod(v1.RestartPolicyAlways, "app")
	pod.Spec.Containers[0].LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	if err := h.sync(t, pod); err != nil {
		t.Fatal(err)
	}
	kill := func() {
		t.Helper()
		id := h.status(t, pod).FindContainerStatusByName("app").ID
		if err := h.rt.KillContainer(t.Context(), pod, id, grace.KillLivenessProbe, "Container app failed liveness probe, will be restarted"); err != nil {
			t.Fatal(err)
		}
	}
	restarted := func(step string, wantCount int) {
		t.Helper()
		if err := h.sync(t, pod); err != nil {
			t.Fatalf("%s: SyncPod = %v, want a restart", step, err)
		}
		if c := h.status(t, pod).FindContainerStatusByName("app"); c.State != pleg.ContainerStateRunning || c.RestartCount != wantCount {
			t.Fatalf("%s: app %s, restart count %d, want running, %d", step, c.State, c.RestartCount, wantCount)
		}
	}
	backingOff := func(step string) {
		t.Helper()
		if err := h.sync(t, pod); !errors.Is(err, cri.ErrCrashLoopBackOff) {
			t.Fatalf("%s: SyncPod = %v, want ErrCrashLoopBackOff", step, err)
		}
	}
	h.clock.Step(30 * time.Second)
	kill()
	restarted("first kill", 1)
	h.clock.Step(30 * time.Second) // longer than the 10 s back-off
	kill()
	restarted("second kill, after 30 s", 2)
	h.clock.Step(5 * time.Second) // the previous instance finished 5 s ago: 5 s to wait
	kill()
	backingOff("third kill, after 5 s")
	h.clock.Step(5 * time.Second) // now counted from the killed instance's finish, 5 s ago
	backingOff("5 s after the third kill")
	h.clock.Step(5 * time.Second)
	restarted("10 s after the third kill", 3)
}
