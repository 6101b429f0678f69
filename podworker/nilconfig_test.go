package podworker

import (
	"errors"
	"testing"

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
		{"nil *pleg.Cache Cache", Config{Syncer: ok, Cache: (*pleg.Cache)(nil)}},
		{"nil StatusCacheFunc Cache", Config{Syncer: ok, Cache: StatusCacheFunc(nil)}},
		{"nil *pleg.Relister Refresher", Config{Syncer: ok, Refresher: (*pleg.Relister)(nil)}},
		{"nil RefresherFunc Refresher", Config{Syncer: ok, Refresher: RefresherFunc(nil)}},
		{"nil *pleg.Cache StatusGetter", Config{Syncer: ok, StatusGetter: (*pleg.Cache)(nil)}},
		{"nil StatusGetterFunc StatusGetter", Config{Syncer: ok, StatusGetter: StatusGetterFunc(nil)}},
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
	if _, err := New(Config{Syncer: &ptrSyncer{}, Cache: pleg.NewCache(), StatusGetter: pleg.NewCache(),
		Refresher: RefresherFunc(func(types.UID) {}), Clock: clocktesting.NewFakeClock(t0)}); err != nil {
		t.Errorf("New with valid fields: %v", err)
	}
}
