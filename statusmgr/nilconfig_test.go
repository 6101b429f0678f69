package statusmgr_test

import (
	"errors"
	"testing"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

// ptrLookup is a PodLookup implemented on a pointer, so that a nil one is a typed nil.
type ptrLookup struct{ statusmgr.PodLookupFuncs }

// TestNewRejectsTypedNils: an interface field holding a nil pointer is a configuration
// error, not a crash in the sync loop later.
func TestNewRejectsTypedNils(t *testing.T) {
	api := statusmgrtest.NewFakeAPI()
	for _, tc := range []struct {
		name string
		cfg  statusmgr.Config
	}{
		{"nil *statusmgrtest.FakeAPI Patcher", statusmgr.Config{Patcher: (*statusmgrtest.FakeAPI)(nil)}},
		{"nil *ptrLookup Lookup", statusmgr.Config{Patcher: api, Lookup: (*ptrLookup)(nil)}},
		{"nil *FakeClock Clock", statusmgr.Config{Patcher: api, Clock: (*clocktesting.FakeClock)(nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := statusmgr.New(tc.cfg)
			if !errors.Is(err, statusmgr.ErrInvalidConfig) || m != nil {
				t.Fatalf("New() = %v, %v; want nil, ErrInvalidConfig", m, err)
			}
		})
	}
	if _, err := statusmgr.New(statusmgr.Config{Patcher: api, Lookup: &ptrLookup{}, Clock: clocktesting.NewFakeClock(epoch)}); err != nil {
		t.Errorf("New with valid fields: %v", err)
	}
}
