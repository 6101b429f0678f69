package agent

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// TestPatcherAndSource runs the agent on an explicit Patcher and Source (what a real API
// server's adapters provide) rather than on Config.Server: the lifecycle is the same, and the
// observing patcher reports the status patches and the final delete.
func TestPatcherAndSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server := statusmgrtest.NewFakeAPI()
		h := &harness{t: t, server: server, runtime: plegtest.NewRuntime(nil), done: make(chan error, 1)}
		a, err := New(Config{Patcher: server, Source: WatchSource(server), Runtime: h.runtime,
			Containers: ContainerBehaviour{StopDelay: time.Second}, Observer: h.record})
		if err != nil {
			t.Fatal(err)
		}
		h.agent = a
		ctx, cancel := context.WithCancel(context.Background())
		h.cancel = cancel
		go func() { h.done <- a.Run(ctx) }()

		h.create("web", 30, v1.RestartPolicyAlways, nil)
		h.waitPhase("web", v1.PodRunning)
		synctest.Wait() // the write of the Running status returns and is observed
		if err := server.Delete("default", "web", nil); err != nil {
			t.Fatal(err)
		}
		h.waitGone("web")
		h.waitForgotten()
		h.stop()
		h.inOrder(
			"config ADD",
			"status patched status: phase Pending",
			"status patched status: phase Running",
			"config DELETE (graceful, 30s)",
			"status patched status: phase Succeeded",
			"delete final delete (grace 0)",
		)
		// The observing patcher reports the final delete once the call has returned, so the
		// watch's REMOVE may come before or after that line.
		h.inOrder("status patched status: phase Succeeded", "config REMOVE")
		if c := server.Counts(); c.Deletes != 1 {
			t.Errorf("final deletes = %d, want 1", c.Deletes)
		}
	})
}

func TestNewRequiresAnAPI(t *testing.T) {
	server := statusmgrtest.NewFakeAPI()
	rt := plegtest.NewRuntime(nil)
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{name: "server alone", cfg: Config{Server: server, Runtime: rt}},
		{name: "patcher and source", cfg: Config{Patcher: server, Source: WatchSource(server), Runtime: rt}},
		{name: "server with another patcher", cfg: Config{Server: server, Patcher: statusmgr.StatusPatcherFuncs{}, Runtime: rt}},
		{name: "patcher without source", cfg: Config{Patcher: server, Runtime: rt}, wantErr: true},
		{name: "source without patcher", cfg: Config{Source: WatchSource(server), Runtime: rt}, wantErr: true},
		{name: "no runtime", cfg: Config{Server: server}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if (err != nil) != tt.wantErr {
				t.Errorf("New = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}
