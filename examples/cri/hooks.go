package cri

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/grace"
	"github.com/podlife/podlife/node"
)

// ErrPostStartHook: a container's postStart hook failed; the container was killed (the
// kubelet's ErrPostStartHook, whose text is the status reason PostStartHookError).
var ErrPostStartHook = errors.New("cri: " + node.ReasonPostStartHookError)

// lifecycleUserAgent is the kubelet's User-Agent of httpGet hooks (kube-lifecycle/<major>.<minor>).
const lifecycleUserAgent = "kube-lifecycle/1.37"

// hookBodyMax is how much of a hook's HTTP response is read before the connection is
// dropped (the kubelet's maxRespBodyLength, 10 KiB).
const hookBodyMax = 10 << 10

// runHook runs a lifecycle handler of container c (instance id) as the kubelet's
// handlerRunner does: exec through ExecSync (a non-zero exit fails), httpGet to the hook's
// host or the pod's address (only a request that gets no response fails; an HTTPS request
// answered in HTTP is retried in HTTP with a LifecycleHTTPFallback event), sleep. budget,
// in seconds, bounds it when positive (a preStop hook's grace period); 0 means unbounded
// but for ctx. It returns the kubelet's message of a failure and the error.
func (r *Runtime) runHook(ctx context.Context, pod *v1.Pod, c *v1.Container, id string, h *v1.LifecycleHandler, budget int64) (string, error) {
	switch {
	case h.Exec != nil:
		resp, err := r.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: h.Exec.Command, Timeout: budget})
		var out []byte
		if err == nil {
			out = append(append(out, resp.GetStdout()...), resp.GetStderr()...)
			if resp.GetExitCode() != 0 {
				err = fmt.Errorf("command '%s' exited with %d: %s", strings.Join(h.Exec.Command, " "), resp.GetExitCode(), resp.GetStderr())
			}
		}
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, c.Name, podDesc(pod), err, string(out)), err
		}
		return "", nil
	case h.HTTPGet != nil:
		if err := r.runHTTPHook(ctx, pod, c, h.HTTPGet, budget); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				h.HTTPGet.Path, c.Name, podDesc(pod), err), err
		}
		return "", nil
	case h.Sleep != nil:
		d := h.Sleep.Seconds
		if budget > 0 {
			d = min(d, budget)
		}
		if d <= 0 {
			return "", nil
		}
		t := r.clock.NewTimer(time.Duration(d) * time.Second)
		defer t.Stop()
		select {
		case <-t.C():
			return "", nil
		case <-ctx.Done():
			err := errors.New("container terminated before sleep hook finished")
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				h.Sleep.Seconds, c.Name, podDesc(pod), err), err
		}
	default:
		err := fmt.Errorf("invalid handler: %v", h)
		return fmt.Sprintf("Cannot run handler: %v", err), err
	}
}

// hookHost is where an httpGet hook without a host goes: the pod's first IP, else for a
// hostNetwork pod the node's address (the pod's status.hostIP, 127.0.0.1 when unknown).
func (r *Runtime) hookHost(ctx context.Context, pod *v1.Pod) (string, error) {
	st, err := r.PodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return "", fmt.Errorf("unable to get pod status, event handlers may be invalid: %w", err)
	}
	if len(st.IPs) > 0 {
		return st.IPs[0], nil
	}
	if pod.Spec.HostNetwork {
		if pod.Status.HostIP != "" {
			return pod.Status.HostIP, nil
		}
		return "127.0.0.1", nil
	}
	return "", fmt.Errorf("failed to find networking container: pod %s has no IP", podDesc(pod))
}

// runHTTPHook is the kubelet's runHTTPHandler: GET scheme://host:port/path with the
// hook's headers (User-Agent kube-lifecycle/1.37 and Accept */* unless set), no
// certificate check, redirects followed on the same host only.
func (r *Runtime) runHTTPHook(ctx context.Context, pod *v1.Pod, c *v1.Container, g *v1.HTTPGetAction, budget int64) error {
	host := g.Host
	if host == "" {
		var err error
		if host, err = r.hookHost(ctx, pod); err != nil {
			return err
		}
	}
	port, err := containerPort(g.Port, c)
	if err != nil {
		return err
	}
	req, err := httpGetRequest(ctx, g, host, port, lifecycleUserAgent)
	if err != nil {
		return err
	}
	var timeout time.Duration
	if budget > 0 {
		timeout = time.Duration(budget) * time.Second
	}
	client := httpGetClient(timeout, false)
	resp, err := client.Do(req)
	discardBody(resp)
	if err != nil && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		retry := req.Clone(ctx)
		retry.URL.Scheme = "http"
		retry.Header.Del("Authorization")
		resp, herr := client.Do(retry)
		discardBody(resp)
		if herr == nil {
			r.event(pod, v1.EventTypeWarning, "LifecycleHTTPFallback",
				"request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", retry.URL.Host)
			err = nil
		}
	}
	return err
}

// discardBody reads a little of the response and closes it.
func discardBody(resp *http.Response) {
	if resp == nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, hookBodyMax))
	_ = resp.Body.Close()
}

// runPostStart runs the container's postStart hook, if any, after StartContainer, as the
// kubelet's startContainer does: a failing hook is reported (FailedPostStartHook, "PostStartHook
// failed": the message is not put in the event, which could leak secrets), the container is
// killed (its preStop hook and StopContainer, with the pod's grace period), and the error
// is a *node.ContainerError with reason PostStartHookError and the hook's message; the
// pod's restartPolicy decides whether it starts again.
func (r *Runtime) runPostStart(ctx context.Context, pod *v1.Pod, c *v1.Container, id string) error {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	msg, err := r.runHook(ctx, pod, c, id, c.Lifecycle.PostStart, 0)
	if err == nil {
		return nil
	}
	r.log.Debug("PostStartHook failed", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "error", err)
	r.event(pod, v1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed")
	r.event(pod, v1.EventTypeNormal, "Killing", "FailedPostStartHook") // the kubelet's killContainer message
	budget := max(grace.ContainerGracePeriod(pod, c, grace.KillPodTermination), 1)
	if kerr := r.killContainer(ctx, pod, liveContainer{id: id, name: c.Name, running: true}, budget); kerr != nil {
		r.log.Debug("killing after a failed postStart", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "error", kerr)
	}
	return containerError(c, node.ReasonPostStartHookError, msg, fmt.Errorf("%w: container %s of %s: %w", ErrPostStartHook, c.Name, podDesc(pod), err))
}
