package cri

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/utils/clock"
)

// TestAdmissionOrder: pods waiting for a slot get it in arrival order.
func TestAdmissionOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAdmission(1, time.Second, clock.RealClock{})
		first, err := a.enter(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var order []int
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				leave, err := a.enter(t.Context())
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				leave()
			})
			synctest.Wait() // i waits before i+1 arrives
		}
		first()
		wg.Wait()
		if !slices.Equal(order, []int{0, 1, 2, 3}) {
			t.Errorf("admitted in order %v, want [0 1 2 3]", order)
		}
	})
}

// TestAdmissionLease: a pod that keeps its slot longer than the lease lets the next one in;
// leaving later gives back nothing more.
func TestAdmissionLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAdmission(1, time.Second, clock.RealClock{})
		slow, err := a.enter(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		next, err := a.enter(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Errorf("the next pod waited %v, want the lease (1s)", waited)
		}
		slow() // its slot went with the lease: this must not free next's
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		third := make(chan time.Duration, 1)
		go func() {
			leave, err := a.enter(ctx)
			if err == nil {
				leave()
			}
			third <- time.Since(start)
		}()
		synctest.Wait()
		next()
		if got := <-third; got != time.Second {
			t.Errorf("the third pod got in after %v, want 1s (when the second left)", got)
		}
	})
}

// TestAdmissionCancel: a pod whose context ends while it waits is not admitted; no bound
// admits everyone.
func TestAdmissionCancel(t *testing.T) {
	a := newAdmission(1, 0, nil)
	leave, err := a.enter(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := a.enter(ctx); err == nil {
		t.Error("admitted with a cancelled context while the only slot is taken")
	}
	none := newAdmission(0, time.Second, clock.RealClock{})
	if none != nil {
		t.Fatalf("newAdmission(0) = %+v, want no bound", none)
	}
	for range 3 {
		if _, err := none.enter(ctx); err != nil {
			t.Errorf("no bound: %v", err)
		}
	}
}
