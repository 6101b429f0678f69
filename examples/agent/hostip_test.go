package agent

import (
	"context"
	"net/netip"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/examples/nodeinfo"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// The pods' hostIP is the node's address: Config.HostIPs when given, else the host's own
// (nodeinfo.HostIPs), never a hard-coded one (issue 29 item 5).
func TestHostIPs(t *testing.T) {
	host, err := nodeinfo.HostIPs()
	if err != nil {
		t.Fatal(err)
	}
	families := map[bool]bool{}
	for _, ip := range host {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			t.Fatalf("nodeinfo.HostIPs() = %v: %v", host, err)
		}
		if families[a.Is4()] {
			t.Errorf("nodeinfo.HostIPs() = %v: two of one family", host)
		}
		families[a.Is4()] = true
		if a.IsLoopback() && len(host) > 1 {
			t.Errorf("nodeinfo.HostIPs() = %v: a loopback beside another address", host)
		}
	}
	for _, tc := range []struct {
		name string
		cfg  []string
		want string
	}{
		{"given", []string{"127.0.0.7"}, "127.0.0.7"},
		{"the host's", nil, host[0]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				server, runtime := statusmgrtest.NewFakeAPI(), plegtest.NewRuntime(nil)
				a, err := New(Config{Server: server, Runtime: runtime, HostIPs: tc.cfg})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- a.Run(ctx) }()
				h := &harness{t: t, server: server, runtime: runtime, agent: a}
				h.createRequesting("web", "100m")
				h.waitPhase("web", v1.PodRunning)
				got, err := server.GetPod(t.Context(), "default", "web")
				if err != nil {
					t.Fatal(err)
				}
				if got.Status.HostIP != tc.want {
					t.Errorf("hostIP %q, want %q", got.Status.HostIP, tc.want)
				}
				cancel()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
