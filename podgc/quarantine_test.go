package podgc

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestQuarantineObserve(t *testing.T) {
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	type step struct {
		at      time.Time
		missing []string
		restart string // name to Restart before observing
		want    []string
		wantIn  []string
	}
	tests := []struct {
		name   string
		period time.Duration
		steps  []step
	}{
		{
			name:   "expires exactly at the period, not before",
			period: 40 * time.Second,
			steps: []step{
				{at: sec(0), missing: []string{"n1"}, want: nil, wantIn: []string{"n1"}},
				{at: sec(20), missing: []string{"n1"}, want: nil, wantIn: []string{"n1"}},
				{at: sec(39), missing: []string{"n1"}, want: nil, wantIn: []string{"n1"}},
				{at: sec(40), missing: []string{"n1"}, want: []string{"n1"}, wantIn: []string{"n1"}},
				{at: sec(60), missing: []string{"n1"}, want: []string{"n1"}, wantIn: []string{"n1"}},
			},
		},
		{
			name:   "a node that shows up again is forgotten and its clock restarts",
			period: 40 * time.Second,
			steps: []step{
				{at: sec(0), missing: []string{"n1"}, wantIn: []string{"n1"}},
				{at: sec(20), missing: nil, wantIn: nil},
				{at: sec(39), missing: []string{"n1"}, wantIn: []string{"n1"}},
				{at: sec(60), missing: []string{"n1"}, wantIn: []string{"n1"}},
				{at: sec(79), missing: []string{"n1"}, want: []string{"n1"}, wantIn: []string{"n1"}},
			},
		},
		{
			name:   "each node has its own clock; result sorted",
			period: 40 * time.Second,
			steps: []step{
				{at: sec(0), missing: []string{"b"}, wantIn: []string{"b"}},
				{at: sec(20), missing: []string{"b", "a"}, wantIn: []string{"a", "b"}},
				{at: sec(40), missing: []string{"a", "b"}, want: []string{"b"}, wantIn: []string{"a", "b"}},
				{at: sec(60), missing: []string{"b", "a", "a"}, want: []string{"a", "b"}, wantIn: []string{"a", "b"}},
			},
		},
		{
			name:   "restart after a second look found the node",
			period: 40 * time.Second,
			steps: []step{
				{at: sec(0), missing: []string{"n1"}, wantIn: []string{"n1"}},
				{at: sec(40), missing: []string{"n1"}, want: []string{"n1"}, wantIn: []string{"n1"}},
				{at: sec(60), missing: []string{"n1"}, restart: "n1", want: nil, wantIn: []string{"n1"}},
				{at: sec(100), missing: []string{"n1"}, want: []string{"n1"}, wantIn: []string{"n1"}},
			},
		},
		{
			name:   "restart of an unknown name does nothing",
			period: 40 * time.Second,
			steps: []step{
				{at: sec(0), missing: nil, restart: "ghost", wantIn: nil},
			},
		},
		{
			name:   "clock going backwards never expires early",
			period: 40 * time.Second,
			steps: []step{
				{at: sec(100), missing: []string{"n1"}, wantIn: []string{"n1"}},
				{at: sec(0), missing: []string{"n1"}, wantIn: []string{"n1"}},
				{at: sec(139), missing: []string{"n1"}, wantIn: []string{"n1"}},
				{at: sec(140), missing: []string{"n1"}, want: []string{"n1"}, wantIn: []string{"n1"}},
			},
		},
		{
			name:   "period 0 expires at once; empty names ignored",
			period: 0,
			steps: []step{
				{at: sec(0), missing: []string{"", "n1"}, want: []string{"n1"}, wantIn: []string{"n1"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := NewQuarantine(tt.period)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				if s.restart != "" {
					q.Restart(s.restart, s.at)
				}
				got := q.Observe(s.missing, s.at)
				if diff := cmp.Diff(s.want, got); diff != "" {
					t.Errorf("step %d: expired (-want +got):\n%s", i, diff)
				}
				if diff := cmp.Diff(s.wantIn, q.Names()); diff != "" {
					t.Errorf("step %d: in quarantine (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestQuarantineSinceAndZeroValue(t *testing.T) {
	var q Quarantine // zero value: period 0, usable
	if got := q.Observe([]string{"n"}, t0); !cmp.Equal(got, []string{"n"}) {
		t.Errorf("zero value Observe = %v, want [n]", got)
	}
	since, ok := q.Since("n")
	if !ok || !since.Equal(t0) {
		t.Errorf("Since = %v, %v; want %v, true", since, ok, t0)
	}
	if _, ok := q.Since("other"); ok {
		t.Error("Since(other) reported a quarantine")
	}
	if _, err := NewQuarantine(-time.Second); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewQuarantine(-1s) error = %v, want ErrInvalidConfig", err)
	}
}
