package podgc_test

import (
	"errors"
	"testing"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/podgc"
	"github.com/podlife/podlife/podgc/podgctest"
)

// TestNewRejectsTypedNils: an interface field holding a nil pointer is a configuration
// error, not a crash in a cycle later.
func TestNewRejectsTypedNils(t *testing.T) {
	s := podgctest.NewServer()
	var nilServer *podgctest.Server
	for _, tc := range []struct {
		name string
		cfg  podgc.Config
	}{
		{"nil *podgctest.Server Lister", podgc.Config{Lister: nilServer, Writer: s}},
		{"nil *podgctest.Server Writer", podgc.Config{Lister: s, Writer: nilServer}},
		{"nil *podgctest.Server NodeChecker", podgc.Config{Lister: s, Writer: s, NodeChecker: nilServer}},
		{"nil *FakeClock Clock", podgc.Config{Lister: s, Writer: s, Clock: (*testingclock.FakeClock)(nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := podgc.New(tc.cfg)
			if !errors.Is(err, podgc.ErrInvalidConfig) || r != nil {
				t.Fatalf("New() = %v, %v; want nil, ErrInvalidConfig", r, err)
			}
		})
	}
	if _, err := podgc.New(podgc.Config{Lister: s, Writer: s, NodeChecker: s}); err != nil {
		t.Errorf("New with valid fields: %v", err)
	}
}
