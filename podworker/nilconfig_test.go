package podworker

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podlife/podlife/pleg"
)

// ptrSyncer is a PodSyncer implemented on a pointer, so that a nil one is a typed nil.
type ptrSyncer struct{ PodSyncerFuncs }

// TestNewRejectsTypedNils: an interface field holding a nil pointer, func or the like is
// a configuration error (it would crash later, maybe in a worker goroutine).
func TestNewRejectsTypedNils(t *testing.T) {
	ok := PodSyncerFuncs{}
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"nil *ptrSyncer Syncer", Config{Syncer: (*ptrSyncer)(nil)}},
		{"nil *pleg.Relister View", Config{Syncer: ok, View: (*pleg.Relister)(nil)}},
		{"RuntimeViewFuncs without funcs", Config{Syncer: ok, View: RuntimeViewFuncs{}}},
		{"RuntimeViewFuncs without LastStatusFunc", Config{Syncer: ok, View: RuntimeViewFuncs{
			StatusAfterFunc: func(context.Context, types.UID, time.Time) (*pleg.PodStatus, error) { return nil, nil }}}},
		{"nil *FakeClock Clock", Config{Syncer: ok, Clock: (*clocktesting.FakeClock)(nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(tc.cfg)
			if !errors.Is(err, ErrInvalidConfig) || r != nil {
				t.Fatalf("New() = %v, %v; want nil, ErrInvalidConfig", r, err)
			}
		})
	}
	// Set and valid, or unset: accepted.
	rel, err := pleg.New(pleg.Config{Runtime: pleg.RuntimeServiceFuncs{}, Cache: pleg.NewCache()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Syncer: &ptrSyncer{}, View: rel, Clock: clocktesting.NewFakeClock(t0)}); err != nil {
		t.Errorf("New with valid fields: %v", err)
	}
}
