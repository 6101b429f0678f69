package cri

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/grace"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
)

var _ node.Prober = (*Runtime)(nil)

// probeOutputMax bounds a probe's output as the kubelet's exec and HTTP probers do (10 KiB).
const probeOutputMax = 10 << 10

// probeUserAgent is the kubelet's probe User-Agent (kube-probe/<major>.<minor>).
const probeUserAgent = "kube-probe/1.37"

// errCommandTimedOut is the output of an exec probe that outlived its timeout (the
// CRI client's ErrCommandTimedOut, which the kubelet turns into a failure).
var errCommandTimedOut = errors.New("command timed out")

// probe runs the container's probe of kind once, as the kubelet's prober does: exec
// through the CRI's ExecSync (exit code 0 succeeds; a timeout fails), httpGet (a status
// from 200 to 399 succeeds, a redirect to another host is a warning), tcpSocket (a
// connection succeeds) and grpc (grpc.health.v1 SERVING succeeds), each within the
// probe's timeoutSeconds. httpGet, tcpSocket and grpc reach the pod's IP (status.IPs),
// a hostNetwork pod's at 127.0.0.1 (the probe runs on the node, whose network the pod
// shares); an httpGet or tcpSocket host overrides it. A probe that cannot be run (no
// handler, no address, an unknown port name) returns an error: the node throws that
// result away, as the kubelet does.
func (r *Runtime) probe(ctx context.Context, pod *v1.Pod, st *pleg.PodStatus, c *v1.Container, containerID string, kind node.ProbeKind) (node.ProbeResult, string, error) {
	if pod == nil || c == nil {
		return node.ProbeUnknown, "", errors.New("cri: Probe: nil pod or container")
	}
	p := probeOf(c, kind)
	if p == nil {
		return node.ProbeUnknown, "", fmt.Errorf("cri: Probe: container %s has no %s probe", c.Name, kind)
	}
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	switch {
	case p.Exec != nil:
		return r.execProbe(ctx, containerID, execCommand(c, p.Exec.Command), timeout)
	case p.HTTPGet != nil:
		host := p.HTTPGet.Host
		if host == "" {
			host = podAddress(pod, st)
		}
		port, err := containerPort(p.HTTPGet.Port, c)
		if err != nil {
			return node.ProbeUnknown, "", err
		}
		if host == "" {
			return node.ProbeUnknown, "", fmt.Errorf("cri: Probe: pod %s/%s has no IP", pod.Namespace, pod.Name)
		}
		return httpProbe(ctx, p.HTTPGet, host, port, timeout)
	case p.TCPSocket != nil:
		host := p.TCPSocket.Host
		if host == "" {
			host = podAddress(pod, st)
		}
		port, err := containerPort(p.TCPSocket.Port, c)
		if err != nil {
			return node.ProbeUnknown, "", err
		}
		if host == "" {
			return node.ProbeUnknown, "", fmt.Errorf("cri: Probe: pod %s/%s has no IP", pod.Namespace, pod.Name)
		}
		return tcpProbe(ctx, host, port, timeout)
	case p.GRPC != nil:
		host := podAddress(pod, st)
		if host == "" {
			return node.ProbeUnknown, "", fmt.Errorf("cri: Probe: pod %s/%s has no IP", pod.Namespace, pod.Name)
		}
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return grpcProbe(ctx, host, int(p.GRPC.Port), service, timeout)
	default:
		return node.ProbeUnknown, "", fmt.Errorf("cri: Probe: the %s probe of container %s has no handler", kind, c.Name)
	}
}

// probeOf is the container's probe of kind.
func probeOf(c *v1.Container, kind node.ProbeKind) *v1.Probe {
	switch kind {
	case node.ProbeStartup:
		return c.StartupProbe
	case node.ProbeReadiness:
		return c.ReadinessProbe
	case node.ProbeLiveness:
		return c.LivenessProbe
	}
	return nil
}

// podAddress is where a probe reaches the pod: its first IP, 127.0.0.1 for a
// hostNetwork pod.
func podAddress(pod *v1.Pod, st *pleg.PodStatus) string {
	if st != nil && len(st.IPs) > 0 {
		return st.IPs[0]
	}
	if pod.Spec.HostNetwork {
		return "127.0.0.1"
	}
	return ""
}

// containerPort resolves a probe's port, by number or by the name of a container port
// (the kubelet's ResolveContainerPort).
func containerPort(p intstr.IntOrString, c *v1.Container) (int, error) {
	port := -1
	switch p.Type {
	case intstr.Int:
		port = p.IntValue()
	case intstr.String:
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				port = int(cp.ContainerPort)
			}
		}
		if port < 0 {
			return 0, fmt.Errorf("cri: Probe: port %q not found", p.StrVal)
		}
	}
	if port <= 0 || port >= 65536 {
		return 0, fmt.Errorf("cri: Probe: invalid port number: %v", port)
	}
	return port, nil
}

// execProbe runs the command in the container through ExecSync: exit code 0 succeeds,
// another fails, both with the combined output; a timeout fails with "command timed
// out"; another error means the probe could not run.
func (r *Runtime) execProbe(ctx context.Context, id string, cmd []string, timeout time.Duration) (node.ProbeResult, string, error) {
	// The CRI's own timeout, and a little more for the call itself.
	ctx, cancel := context.WithTimeout(ctx, timeout+2*time.Second)
	defer cancel()
	resp, err := r.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: int64(timeout / time.Second)})
	if err != nil {
		// containerd ends an exec past its timeout with "timeout 1s exceeded: context
		// deadline exceeded"; the CRI client (and so the kubelet) reads it as a timeout.
		if status.Code(err) == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) ||
			strings.Contains(err.Error(), "deadline exceeded") {
			return node.ProbeFailure, errCommandTimedOut.Error(), nil
		}
		return node.ProbeUnknown, "", fmt.Errorf("cri: ExecSync in %s: %w", id, err)
	}
	out := append(append([]byte{}, resp.GetStdout()...), resp.GetStderr()...)
	if len(out) > probeOutputMax {
		out = out[:probeOutputMax]
	}
	if resp.GetExitCode() != 0 {
		return node.ProbeFailure, string(out), nil
	}
	return node.ProbeSuccess, string(out), nil
}

// httpGetRequest is the request of an httpGet probe or hook (the kubelet's
// NewRequestForHTTPGetAction): GET scheme://host:port/path with g's headers, User-Agent
// userAgent and Accept */* unless set (an empty Accept is left out), the Host header as
// the request's host.
func httpGetRequest(ctx context.Context, g *v1.HTTPGetAction, host string, port int, userAgent string) (*http.Request, error) {
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	u, err := url.Parse(g.Path)
	if err != nil {
		u = &url.URL{Path: g.Path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for _, h := range g.HTTPHeaders {
		req.Header.Add(h.Name, h.Value)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header.Set("User-Agent", userAgent)
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header.Set("Accept", "*/*")
	} else if req.Header.Get("Accept") == "" {
		req.Header.Del("Accept")
	}
	req.Host = req.Header.Get("Host")
	return req, nil
}

// httpGetClient is the client of httpGet probes and hooks, as the kubelet's prober's and
// lifecycle handler's: no keep-alives, no proxy, no certificate check (the kubelet's
// InsecureSkipVerify), redirects followed on the same host only, at most 10; timeout 0
// is none. Probes ask for the body as it is sent (disableCompression).
func httpGetClient(timeout time.Duration, disableCompression bool) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DisableKeepAlives:  true,
			DisableCompression: disableCompression,
			Proxy:              http.ProxyURL(nil),
			TLSClientConfig:    &tls.Config{InsecureSkipVerify: true},
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Hostname() != via[0].URL.Hostname() {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
}

// httpProbe is the kubelet's HTTP probe: GET scheme://host:port/path with the probe's
// headers (User-Agent kube-probe/1.37 and Accept */* unless set), redirects followed on
// the same host only, no certificate check (the kubelet's InsecureSkipVerify).
func httpProbe(ctx context.Context, g *v1.HTTPGetAction, host string, port int, timeout time.Duration) (node.ProbeResult, string, error) {
	req, err := httpGetRequest(ctx, g, host, port, probeUserAgent)
	if err != nil {
		return node.ProbeUnknown, "", fmt.Errorf("cri: Probe: %w", err)
	}
	client := httpGetClient(timeout, true)
	res, err := client.Do(req)
	if err != nil {
		return node.ProbeFailure, err.Error(), nil
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, probeOutputMax))
	if err != nil {
		return node.ProbeFailure, "", fmt.Errorf("cri: Probe: reading the response: %w", err)
	}
	body := string(b)
	switch {
	case res.StatusCode >= http.StatusMultipleChoices && res.StatusCode < http.StatusBadRequest:
		return node.ProbeWarning, "Probe terminated redirects, Response body: " + body, nil
	case res.StatusCode >= http.StatusOK && res.StatusCode < http.StatusBadRequest:
		return node.ProbeSuccess, body, nil
	default:
		return node.ProbeFailure, fmt.Sprintf("HTTP probe failed with statuscode: %d", res.StatusCode), nil
	}
}

// tcpProbe succeeds when a TCP connection to host:port opens within the timeout.
func tcpProbe(ctx context.Context, host string, port int, timeout time.Duration) (node.ProbeResult, string, error) {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return node.ProbeFailure, err.Error(), nil
	}
	_ = conn.Close()
	return node.ProbeSuccess, "", nil
}

// grpcProbe asks host:port's grpc.health.v1.Health for service, with the kubelet's
// outputs.
func grpcProbe(ctx context.Context, host string, port int, service string, timeout time.Duration) (node.ProbeResult, string, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUserAgent(probeUserAgent))
	if err != nil {
		return node.ProbeFailure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service}, grpc.WaitForReady(true))
	if err != nil {
		st, ok := status.FromError(err)
		switch {
		case ok && st.Code() == codes.Unimplemented:
			return node.ProbeFailure, fmt.Sprintf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.Message()), nil
		case ok && st.Code() == codes.DeadlineExceeded:
			return node.ProbeFailure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout), nil
		}
		return node.ProbeFailure, fmt.Sprintf("error: health rpc probe failed: %+v", err), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return node.ProbeFailure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()), nil
	}
	return node.ProbeSuccess, "service healthy", nil
}

// KillContainer stops one running container of the pod that failed its liveness or
// startup probe, as KillPod stops each of its containers (the preStop hook first, then
// StopContainer), with the container-level grace of reason: the probe's own
// terminationGracePeriodSeconds when it sets one (grace.ContainerGracePeriod). The
// node's next SyncPod starts it again as the pod's restartPolicy says.
func (r *Runtime) KillContainer(ctx context.Context, pod *v1.Pod, containerID string, reason grace.KillReason, _ string) error {
	if pod == nil || pod.UID == "" || containerID == "" {
		return errors.New("cri: KillContainer: pod without a UID or no container ID")
	}
	containers, _, err := r.live(ctx, pod.UID)
	if err != nil {
		return err
	}
	for _, c := range containers {
		if c.id != containerID {
			continue
		}
		if reason == grace.KillLivenessProbe || reason == grace.KillStartupProbe {
			r.mu.Lock()
			r.probeKilled[c.id] = true // not synced since
			r.mu.Unlock()
		}
		spec := specContainer(pod, c.name)
		budget := grace.ContainerGracePeriod(pod, spec, reason)
		return r.killContainer(ctx, pod, c, max(budget, 1))
	}
	return nil // not running any more
}

// takeProbeKilledUnsynced returns the container instances of status that KillContainer
// stopped for a failed liveness or startup probe since the pod's last SyncPod, and forgets
// them: the crash-loop back-off of the SyncPod right after such a kill looks past them.
// The kubelet kills and restarts such a container in one sync, deciding its back-off on
// the pod's status from before the kill, where the newest exited instance is the one
// before (doBackOff): a container that ran longer than its back-off is restarted at once.
// A SyncPod later than that (the restart was backed off) sees the killed instance as any
// exited one.
func (r *Runtime) takeProbeKilledUnsynced(status *pleg.PodStatus) map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out map[string]bool
	for _, cs := range status.ContainerStatuses {
		if cs == nil || !r.probeKilled[cs.ID] {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[cs.ID] = true
		r.probeKilled[cs.ID] = false // synced since: still killed by its probe
	}
	return out
}

// killedByProbe tells whether KillContainer stopped the container instance for a failed
// liveness or startup probe.
func (r *Runtime) killedByProbe(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.probeKilled[id]
	return ok
}
