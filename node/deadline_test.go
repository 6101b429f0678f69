package node_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/podlife/podlife/node"
)

// The kubelet's TestActiveDeadlineHandler (active_deadline_test.go) as a table, with the
// time left until the deadline.
func TestActiveDeadlineExceeded(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	start := now.Add(-time.Minute)
	withDeadline := func(s *int64) *v1.Pod { return &v1.Pod{Spec: v1.PodSpec{ActiveDeadlineSeconds: s}} }
	tests := []struct {
		name     string
		pod      *v1.Pod
		start    time.Time
		exceeded bool
		wait     time.Duration
	}{
		{name: "exceeded its active deadline (30s, started 1m ago)", pod: withDeadline(ptr.To[int64](30)), start: start, exceeded: true},
		{name: "not yet (120s, started 1m ago)", pod: withDeadline(ptr.To[int64](120)), start: start, wait: time.Minute},
		{name: "no deadline", pod: withDeadline(nil), start: start},
		{name: "no start time", pod: withDeadline(ptr.To[int64](120))},
		{name: "exactly at the deadline", pod: withDeadline(ptr.To[int64](60)), start: start, exceeded: true},
		{name: "nil pod", start: start},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exceeded, wait := node.ActiveDeadlineExceeded(tt.pod, tt.start, now)
			if exceeded != tt.exceeded || wait != tt.wait {
				t.Errorf("ActiveDeadlineExceeded = %v, %s; want %v, %s", exceeded, wait, tt.exceeded, tt.wait)
			}
		})
	}
}

// A pod with a 2 s active deadline ends Failed DeadlineExceeded, its containers killed,
// with the kubelet's Normal event; a deadline shortened by an update is honoured.
func TestActiveDeadlineThroughNode(t *testing.T) {
	for _, shorten := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			var events []string
			rec := node.EventRecorderFunc(func(p *v1.Pod, typ, reason, msg string) {
				mu.Lock()
				events = append(events, typ+" "+reason+": "+msg)
				mu.Unlock()
			})
			e := start(t, nil, nil, envOpts{recorder: rec})
			p := newPod("web", 30, v1.RestartPolicyAlways, nil)
			p.Spec.ActiveDeadlineSeconds = ptr.To[int64](2)
			if shorten {
				p.Spec.ActiveDeadlineSeconds = ptr.To[int64](3600)
			}
			begin := time.Now()
			p = e.create(p)
			e.waitPhase("web", v1.PodRunning)
			if shorten {
				time.Sleep(time.Second)
				cur, _ := e.api.Pod("default", "web")
				cur = cur.DeepCopy()
				cur.Spec.ActiveDeadlineSeconds = ptr.To[int64](2)
				e.api.Put(cur)
			}
			e.waitPhase("web", v1.PodFailed)
			if took := time.Since(begin); took < 2*time.Second || took > 3*time.Second {
				t.Errorf("Failed after %s, want 2s", took)
			}
			var got *v1.Pod
			e.waitPod("web", func(p *v1.Pod, ok bool) bool {
				got = p
				return ok && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
			})
			if d := cmp.Diff([]string{node.ReasonDeadlineExceeded, node.MessageDeadlineExceeded},
				[]string{got.Status.Reason, got.Status.Message}); d != "" {
				t.Errorf("reason, message (-want +got):\n%s", d)
			}
			mu.Lock()
			want := "Normal DeadlineExceeded: Pod was active on the node longer than the specified deadline"
			if !contains(events, want) {
				t.Errorf("events %q, want %q", events, want)
			}
			mu.Unlock()
			e.stop()
		})
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
