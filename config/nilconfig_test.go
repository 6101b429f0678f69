package config

import (
	"errors"
	"testing"

	clocktesting "k8s.io/utils/clock/testing"
)

// TestNewMuxRejectsTypedNils: a Clock holding a nil pointer is a configuration error, not
// a crash at the first merge.
func TestNewMuxRejectsTypedNils(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  MuxConfig
	}{
		{"nil *FakePassiveClock Clock", MuxConfig{Clock: (*clocktesting.FakePassiveClock)(nil)}},
		{"nil *FakeClock Clock", MuxConfig{Clock: (*clocktesting.FakeClock)(nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewMux(tc.cfg)
			if !errors.Is(err, ErrInvalidConfig) || m != nil {
				t.Fatalf("NewMux() = %v, %v; want nil, ErrInvalidConfig", m, err)
			}
		})
	}
}
