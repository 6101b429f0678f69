package pleg_test

import (
	"errors"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
)

// TestNewRejectsTypedNils: an interface field holding a nil pointer (or a nil Cache) is
// a configuration error, not a crash in the relist goroutine later.
func TestNewRejectsTypedNils(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	rt := plegtest.NewRuntime(clk)
	for _, tc := range []struct {
		name string
		cfg  pleg.Config
	}{
		{"nil *plegtest.Runtime Runtime", pleg.Config{Runtime: (*plegtest.Runtime)(nil), Cache: pleg.NewCache()}},
		{"nil Cache", pleg.Config{Runtime: rt, Cache: (*pleg.Cache)(nil)}},
		{"nil *FakeClock Clock", pleg.Config{Runtime: rt, Cache: pleg.NewCache(), Clock: (*testingclock.FakeClock)(nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := pleg.New(tc.cfg)
			if !errors.Is(err, pleg.ErrInvalidConfig) || r != nil {
				t.Fatalf("New() = %v, %v; want nil, ErrInvalidConfig", r, err)
			}
		})
	}
	if _, err := pleg.New(pleg.Config{Runtime: rt, Cache: pleg.NewCache(), Clock: clk}); err != nil {
		t.Errorf("New with valid fields: %v", err)
	}
}
