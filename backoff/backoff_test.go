package backoff_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/podlife/podlife/backoff"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at is t0 plus n seconds.
func at(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

// The delays after each failure (flowcontrol TestSlowBackoff, TestBackoffHighWaterMark,
// TestAlternateHasExpiredFunc and the kubelet's policies).
func TestNext(t *testing.T) {
	small := backoff.Policy{Initial: time.Second, Max: 50 * time.Second, ResetAfter: 100 * time.Second}
	five := backoff.Policy{Initial: time.Second, Max: 5 * time.Second, ResetAfter: 10 * time.Second}
	tests := []struct {
		name string
		p    backoff.Policy
		// failures are the failure times in seconds (event time = now).
		failures []int
		want     []time.Duration
	}{
		{name: "flowcontrol TestSlowBackoff: doubling to the maximum", p: small,
			failures: []int{1, 2, 3, 4, 5, 6, 7, 8, 9},
			want:     secs(1, 2, 4, 8, 16, 32, 50, 50, 50)},
		{name: "flowcontrol TestBackoffHighWaterMark: stays at the maximum within 2×max", p: five,
			failures: []int{1, 2, 3, 4, 5, 6, 12},
			want:     secs(1, 2, 4, 5, 5, 5, 5)},
		{name: "flowcontrol TestAlternateHasExpiredFunc: default expiry, within", p: small,
			failures: []int{0, 5}, want: secs(1, 2)},
		{name: "flowcontrol TestAlternateHasExpiredFunc: default expiry, after 101s", p: small,
			failures: []int{0, 5, 106}, want: secs(1, 2, 1)},
		{name: "kubelet Restart: 10s doubling to 300s", p: backoff.Restart,
			failures: []int{0, 10, 30, 70, 150, 310, 630, 940},
			want:     secs(10, 20, 40, 80, 160, 300, 300, 300)},
		{name: "kubelet Restart: reset after the container ran 10 minutes", p: backoff.Restart,
			failures: []int{0, 10, 610, 1211},
			want:     secs(10, 20, 40, 10)},
		{name: "kubelet ImagePull: 10s doubling to 300s", p: backoff.ImagePull,
			failures: []int{0, 10, 30, 70, 150, 310, 610},
			want:     secs(10, 20, 40, 80, 160, 300, 300)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e backoff.Entry
			var got []time.Duration
			for _, f := range tt.failures {
				e = tt.p.Next(e, at(f), at(f))
				got = append(got, e.Backoff)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("delays (-want +got):\n%s", d)
			}
		})
	}
}

func secs(n ...int) []time.Duration {
	out := make([]time.Duration, len(n))
	for i, s := range n {
		out[i] = time.Duration(s) * time.Second
	}
	return out
}

// kuberuntime TestDoBackOff and flowcontrol TestBackoffReset: whether a container that
// finished at eventTime is still in back-off at now.
func TestInBackOffSince(t *testing.T) {
	five := backoff.Policy{Initial: time.Second, Max: 5 * time.Second, ResetAfter: 10 * time.Second}
	minute := backoff.Policy{Initial: time.Second, Max: time.Minute, ResetAfter: 2 * time.Minute}
	tests := []struct {
		name       string
		p          backoff.Policy
		e          backoff.Entry
		event, now int
		want       bool
	}{
		{name: "TestDoBackOff: not in backoff (no entry)", p: minute, event: 0, now: 0, want: false},
		{name: "TestDoBackOff: in backoff (Next at the finish)", p: minute,
			e: minute.Next(backoff.Entry{}, at(0), at(0)), event: 0, now: 0, want: true},
		{name: "in backoff until the delay passed", p: minute,
			e: minute.Next(backoff.Entry{}, at(0), at(0)), event: 0, now: 1, want: false},
		{name: "TestBackoffReset: capped at the maximum", p: five,
			e: backoff.Entry{Backoff: 5 * time.Second, LastUpdate: at(6)}, event: 6, now: 6, want: true},
		{name: "TestBackoffReset: not after 2×max+step", p: five,
			e: backoff.Entry{Backoff: 5 * time.Second, LastUpdate: at(6)}, event: 6, now: 17, want: false},
		{name: "expired entry", p: five,
			e: backoff.Entry{Backoff: 5 * time.Second, LastUpdate: at(0)}, event: 11, now: 11, want: false},
		{name: "kubelet Restart: 10s after the first crash", p: backoff.Restart,
			e: backoff.Restart.Next(backoff.Entry{}, at(0), at(0)), event: 0, now: 9, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.InBackOffSince(tt.e, at(tt.event), at(tt.now)); got != tt.want {
				t.Errorf("InBackOffSince = %v, want %v", got, tt.want)
			}
		})
	}
}

// flowcontrol TestIsInBackOffSinceUpdate: a failure recorded whenever the key is not in
// back-off, asked every second.
func TestInBackOffSinceUpdate(t *testing.T) {
	p := backoff.Policy{Initial: time.Second, Max: 10 * time.Second, ResetAfter: 20 * time.Second}
	type step struct {
		tick      int
		inBackOff bool
		value     int
	}
	steps := []step{{0, false, 0}, {1, false, 1}, {2, true, 2}, {3, false, 2}, {4, true, 4}, {5, true, 4},
		{6, true, 4}, {7, false, 4}, {8, true, 8}, {14, true, 8}, {15, false, 8}, {16, true, 10}, {24, true, 10},
		{25, false, 10}, {26, true, 10}, {34, true, 10}, {35, false, 10}, {56, false, 0}, {57, false, 1}}
	var e backoff.Entry
	for _, s := range steps {
		now := at(s.tick)
		if got := p.InBackOffSinceUpdate(e, now); got != s.inBackOff {
			t.Errorf("tick %d: InBackOffSinceUpdate = %v, want %v", s.tick, got, s.inBackOff)
		}
		if s.inBackOff && e.Backoff != time.Duration(s.value)*time.Second {
			t.Errorf("tick %d: backoff %s, want %ds", s.tick, e.Backoff, s.value)
		}
		if !s.inBackOff {
			e = p.Next(e, now, now)
		}
	}
}

// flowcontrol TestBackoffGC and TestSlowBackoff's Reset, on Map.
func TestMap(t *testing.T) {
	m := &backoff.Map{Policy: backoff.Policy{Initial: time.Second, Max: 5 * time.Second, ResetAfter: 10 * time.Second}}
	for i := 1; i <= 6; i++ {
		m.Next("id", at(i), at(i))
	}
	m.GC(at(12))
	if got := m.Get("id").Backoff; got != 5*time.Second {
		t.Errorf("after GC within 2×max: backoff %s, want 5s", got)
	}
	if !m.InBackOffSince("id", at(12), at(12)) {
		t.Error("InBackOffSince = false, want true")
	}
	m.GC(at(18))
	if got := m.Get("id"); got != (backoff.Entry{}) {
		t.Errorf("after GC past 2×max: entry %+v, want none", got)
	}
	m.Next("id", at(20), at(20))
	m.Reset("id")
	if got := m.Get("id"); got != (backoff.Entry{}) {
		t.Errorf("after Reset: entry %+v, want none", got)
	}
}

func TestMessages(t *testing.T) {
	tests := []struct{ name, got, want string }{
		{"CrashLoopBackOff (kuberuntime doBackOff)",
			backoff.CrashLoopBackOffMessage(10*time.Second, "app", backoff.FormatPod("web", "default", "u1")),
			"back-off 10s restarting failed container=app pod=web_default(u1)"},
		{"CrashLoopBackOff 5m", backoff.CrashLoopBackOffMessage(300*time.Second, "app", "p"),
			"back-off 5m0s restarting failed container=app pod=p"},
		{"ImagePullBackOff (images image_manager)", backoff.ImagePullBackOffMessage("busybox", ""),
			`Back-off pulling image "busybox"`},
		{"ImagePullBackOff with the last error", backoff.ImagePullBackOffMessage("busybox", "not found"),
			`Back-off pulling image "busybox": not found`},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
