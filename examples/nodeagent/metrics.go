package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/examples/metrics"
)

// metricsServer serves the agent's /metrics and /healthz (-metrics-addr).
type metricsServer struct {
	addr string
	reg  *prometheus.Registry
	m    *metrics.Metrics
}

// newMetricsServer returns nil when addr is empty.
func newMetricsServer(addr string) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		return nil, err
	}
	return &metricsServer{addr: addr, reg: reg, m: m}, nil
}

// wire sets the agent's metrics hooks.
func (s *metricsServer) wire(cfg *agent.Config) {
	if s != nil {
		cfg.Metrics = s.m.Hooks()
	}
}

// serve listens on addr and serves /metrics and /healthz (the agent's PLEG health) until
// ctx ends; it returns once listening. stop waits for the server to end.
func (s *metricsServer) serve(ctx context.Context, a *agent.Agent, out io.Writer) (stop func(), err error) {
	if s == nil {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return nil, fmt.Errorf("-metrics-addr: %w", err)
	}
	srv := &http.Server{Handler: metrics.Handler(s.reg, a.Relister().Healthy), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(out, "# metrics server:", err)
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		<-ctx.Done()
		shutdown, cancelShutdown := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancelShutdown()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Fprintf(out, "# serving /metrics and /healthz on http://%s\n", ln.Addr())
	return func() { cancel(); <-done }, nil
}
