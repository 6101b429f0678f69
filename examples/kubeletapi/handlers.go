package kubeletapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/proxy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podlife/podlife/examples/cri"
)

// Runtime is what the API needs of the container runtime (package cri's Runtime has it).
type Runtime interface {
	FindContainer(ctx context.Context, namespace, name, container string, previous bool) (cri.StreamContainer, error)
	ContainerRunning(ctx context.Context, id string) (bool, error)
	PodSandboxID(ctx context.Context, namespace, name string) (string, error)
	RuntimeService() runtimeapi.RuntimeServiceClient
}

// HandlerConfig configures Handler.
type HandlerConfig struct {
	Pods        PodLister // /pods
	RunningPods PodLister // /runningpods/; nil: Pods
	Runtime     Runtime   // nil: /containerLogs, /exec, /attach, /portForward answer 503
	// LogPoll is how often a followed log is read again; 0: 200ms.
	LogPoll time.Duration
}

// Handler serves the kubelet API's endpoints (without authentication: see Secure).
func Handler(cfg HandlerConfig) http.Handler {
	if cfg.RunningPods == nil {
		cfg.RunningPods = cfg.Pods
	}
	if cfg.LogPoll <= 0 {
		cfg.LogPoll = 200 * time.Millisecond
	}
	s := &handler{cfg: cfg}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })
	mux.HandleFunc("GET /pods", s.pods(cfg.Pods))
	mux.HandleFunc("GET /pods/", s.pods(cfg.Pods))
	mux.HandleFunc("GET /runningpods/", s.pods(cfg.RunningPods))
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", s.logs)
	for _, m := range []string{"GET", "POST"} {
		mux.HandleFunc(m+" /exec/{ns}/{pod}/{container}", s.exec)
		mux.HandleFunc(m+" /exec/{ns}/{pod}/{uid}/{container}", s.exec)
		mux.HandleFunc(m+" /attach/{ns}/{pod}/{container}", s.attach)
		mux.HandleFunc(m+" /attach/{ns}/{pod}/{uid}/{container}", s.attach)
		mux.HandleFunc(m+" /portForward/{ns}/{pod}", s.portForward)
		mux.HandleFunc(m+" /portForward/{ns}/{pod}/{uid}", s.portForward)
	}
	return mux
}

type handler struct{ cfg HandlerConfig }

func (s *handler) pods(list PodLister) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if list == nil {
			http.Error(w, "no pod source", http.StatusServiceUnavailable)
			return
		}
		pods, err := list(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		pl := v1.PodList{Items: pods}
		pl.Kind, pl.APIVersion = "PodList", "v1"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&pl)
	}
}

// runtimeError answers a runtime's error: 404 for a pod or container it does not have.
func runtimeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if errors.Is(err, cri.ErrNotFound) {
		code = http.StatusNotFound
	}
	http.Error(w, err.Error(), code)
}

// ParseLogOptions reads the /containerLogs query (v1.PodLogOptions' names) at now.
func ParseLogOptions(q url.Values, now time.Time) (LogOptions, bool, error) {
	var o LogOptions
	boolParam := func(name string) (bool, error) {
		v := q.Get(name)
		if v == "" {
			return false, nil
		}
		return strconv.ParseBool(v)
	}
	intParam := func(name string) (*int64, error) {
		v := q.Get(name)
		if v == "" {
			return nil, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s: %q is not a non-negative integer", name, v)
		}
		return &n, nil
	}
	var err error
	if o.Follow, err = boolParam("follow"); err != nil {
		return o, false, fmt.Errorf("follow: %w", err)
	}
	if o.Timestamps, err = boolParam("timestamps"); err != nil {
		return o, false, fmt.Errorf("timestamps: %w", err)
	}
	previous, err := boolParam("previous")
	if err != nil {
		return o, false, fmt.Errorf("previous: %w", err)
	}
	if o.TailLines, err = intParam("tailLines"); err != nil {
		return o, false, err
	}
	if o.LimitBytes, err = intParam("limitBytes"); err != nil {
		return o, false, err
	}
	since, err := intParam("sinceSeconds")
	if err != nil {
		return o, false, err
	}
	if since != nil {
		t := now.Add(-time.Duration(*since) * time.Second)
		o.SinceTime = &t
	}
	if v := q.Get("sinceTime"); v != "" {
		if since != nil {
			return o, false, fmt.Errorf("sinceSeconds and sinceTime exclude each other")
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return o, false, fmt.Errorf("sinceTime: %w", err)
		}
		o.SinceTime = &t
	}
	return o, previous, nil
}

func (s *handler) logs(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Runtime == nil {
		http.Error(w, "no container runtime", http.StatusServiceUnavailable)
		return
	}
	opts, previous, err := ParseLogOptions(r.URL.Query(), time.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	c, err := s.cfg.Runtime.FindContainer(ctx, r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container"), previous)
	if err != nil {
		// The kubelet answers 400 to every error of a log request (the API server passes
		// it on: kubectl's "Error from server (BadRequest)"), in its words for a previous
		// instance it does not have.
		msg := err.Error()
		if previous && errors.Is(err, cri.ErrNotFound) {
			msg = fmt.Sprintf("previous terminated container %q in pod %q not found", r.PathValue("container"), r.PathValue("pod"))
		}
		http.Error(w, msg, http.StatusBadRequest)
		return
	}
	if previous {
		opts.Follow = false // a terminated container writes no more
	}
	running := func() bool {
		ok, err := s.cfg.Runtime.ContainerRunning(ctx, c.ID)
		return err == nil && ok
	}
	w.Header().Set("Content-Type", "text/plain")
	t := time.NewTicker(s.cfg.LogPoll)
	defer t.Stop()
	fw := flushWriter{w}
	if err := ReadLogs(ctx, c.LogPath, opts, fw, running, t.C); err != nil {
		fmt.Fprintf(w, "\nkubeletapi: %v\n", err)
	}
}

type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(b []byte) (int, error) { return f.w.Write(b) }
func (f flushWriter) Flush() {
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
}

// streamFlags are the exec and attach query's stream flags (the API server's names:
// input, output, error, tty; the v1 names stdin, stdout, stderr too).
func streamFlags(q url.Values) (stdin, stdout, stderr, tty bool) {
	on := func(names ...string) bool {
		for _, n := range names {
			if v := q.Get(n); v == "1" || v == "true" {
				return true
			}
		}
		return false
	}
	return on("input", "stdin"), on("output", "stdout"), on("error", "stderr"), on("tty")
}

func (s *handler) exec(w http.ResponseWriter, r *http.Request) {
	s.stream(w, r, func(ctx context.Context, id string) (string, error) {
		stdin, stdout, stderr, tty := streamFlags(r.URL.Query())
		resp, err := s.cfg.Runtime.RuntimeService().Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id,
			Cmd: r.URL.Query()["command"], Stdin: stdin, Stdout: stdout, Stderr: stderr && !tty, Tty: tty})
		return resp.GetUrl(), err
	})
}

func (s *handler) attach(w http.ResponseWriter, r *http.Request) {
	s.stream(w, r, func(ctx context.Context, id string) (string, error) {
		stdin, stdout, stderr, tty := streamFlags(r.URL.Query())
		resp, err := s.cfg.Runtime.RuntimeService().Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id,
			Stdin: stdin, Stdout: stdout, Stderr: stderr && !tty, Tty: tty})
		return resp.GetUrl(), err
	})
}

// stream asks the runtime for the container's streaming URL and proxies the upgraded
// connection to it.
func (s *handler) stream(w http.ResponseWriter, r *http.Request, get func(ctx context.Context, id string) (string, error)) {
	if s.cfg.Runtime == nil {
		http.Error(w, "no container runtime", http.StatusServiceUnavailable)
		return
	}
	c, err := s.cfg.Runtime.FindContainer(r.Context(), r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container"), false)
	if err != nil {
		runtimeError(w, err)
		return
	}
	u, err := get(r.Context(), c.ID)
	if err != nil {
		runtimeError(w, err)
		return
	}
	proxyTo(w, r, u)
}

func (s *handler) portForward(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Runtime == nil {
		http.Error(w, "no container runtime", http.StatusServiceUnavailable)
		return
	}
	id, err := s.cfg.Runtime.PodSandboxID(r.Context(), r.PathValue("ns"), r.PathValue("pod"))
	if err != nil {
		runtimeError(w, err)
		return
	}
	var ports []int32
	for _, p := range r.URL.Query()["port"] {
		if n, err := strconv.ParseUint(p, 10, 16); err == nil {
			ports = append(ports, int32(n))
		}
	}
	resp, err := s.cfg.Runtime.RuntimeService().PortForward(r.Context(), &runtimeapi.PortForwardRequest{PodSandboxId: id, Port: ports})
	if err != nil {
		runtimeError(w, err)
		return
	}
	proxyTo(w, r, resp.GetUrl())
}

type responder struct{}

func (responder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

// proxyTo proxies the request, upgraded (SPDY or websocket), to the runtime's streaming URL.
func proxyTo(w http.ResponseWriter, r *http.Request, streamURL string) {
	u, err := url.Parse(streamURL)
	if err != nil {
		http.Error(w, fmt.Sprintf("runtime's stream URL %q: %v", streamURL, err), http.StatusInternalServerError)
		return
	}
	h := proxy.NewUpgradeAwareHandler(u, nil, false, true, responder{})
	h.ServeHTTP(w, r)
}
