package vk

import (
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// TestHeartbeatClientIsItsOwn: the node controller's client is a copy with a rate limiter
// of its own; the status traffic's configuration is left as it was.
func TestHeartbeatClientIsItsOwn(t *testing.T) {
	shared := flowcontrol.NewTokenBucketRateLimiter(1, 1)
	rc := &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "t", QPS: 100, Burst: 200,
		RateLimiter: shared, UserAgent: "podlife-vk/vnode"}
	c, hc, err := heartbeatClient(rc, 0, 0)
	if err != nil || c == nil {
		t.Fatalf("heartbeatClient: %v", err)
	}
	if hc == rc || hc.RateLimiter != nil || hc.QPS != DefaultLeaseQPS || hc.Burst != DefaultLeaseBurst ||
		hc.Host != rc.Host || hc.BearerToken != "t" || hc.UserAgent != "podlife-vk/vnode (node heartbeat)" {
		t.Errorf("heartbeat config = %+v", hc)
	}
	if rc.RateLimiter != shared || rc.QPS != 100 || rc.Burst != 200 || rc.UserAgent != "podlife-vk/vnode" {
		t.Errorf("the status config changed: %+v", rc)
	}
	if _, hc, _ = heartbeatClient(rc, 20, 30); hc.QPS != 20 || hc.Burst != 30 {
		t.Errorf("QPS %v burst %d, want 20 and 30", hc.QPS, hc.Burst)
	}
}
