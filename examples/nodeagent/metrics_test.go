package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podlife/podlife/examples/agent"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// TestMetricsServer: -metrics-addr serves /metrics with the kubelet's series and /healthz,
// which is 500 while the PLEG has not relisted (the agent is not running), then 200 once
// it has, and stops with its context.
func TestMetricsServer(t *testing.T) {
	ms, err := newMetricsServer("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// One relist in the test: the next is an hour away.
	cfg := agent.Config{Server: statusmgrtest.NewFakeAPI(), Runtime: plegtest.NewRuntime(nil), RelistPeriod: time.Hour}
	ms.wire(&cfg)
	relisted, hook := make(chan struct{}), cfg.Metrics.PLEG.Relisted
	var once sync.Once
	cfg.Metrics.PLEG.Relisted = func(r pleg.Relist) {
		hook(r)
		once.Do(func() { close(relisted) })
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	stop, err := ms.serve(context.Background(), a, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	url := regexp.MustCompile(`http://\S+`).FindString(out.String())
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != http.StatusInternalServerError {
		t.Errorf("/healthz before any relist = %d %q, want 500", code, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	<-relisted
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz after a relist = %d %q, want 200", code, body)
	}
	code, body := get("/metrics")
	for _, want := range []string{"kubelet_pleg_relist_duration_seconds_count 1", "kubelet_pleg_last_seen_seconds", "kubelet_pleg_discard_events 0"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("/metrics (%d) lacks %q", code, want)
		}
	}
	if _, err := newMetricsServer(""); err != nil {
		t.Error(err)
	}
}
