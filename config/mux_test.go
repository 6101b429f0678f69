package config

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// summary is a delivered PodUpdate reduced to what the tests compare.
type summary struct {
	Op     Op
	Source string
	Names  []string
}

func summarize(u PodUpdate) summary {
	s := summary{Op: u.Op, Source: u.Source}
	for _, p := range u.Pods {
		s.Names = append(s.Names, p.Name)
	}
	return s
}

// drain reads what is buffered on the mux's output.
func drain(m *Mux) []summary {
	var out []summary
	for {
		select {
		case u := <-m.Updates():
			out = append(out, summarize(u))
		default:
			return out
		}
	}
}

func newTestMux(t *testing.T, cfg MuxConfig) *Mux {
	t.Helper()
	if cfg.Clock == nil {
		cfg.Clock = clocktesting.NewFakePassiveClock(t0)
	}
	m, err := NewMux(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMuxOrderAndReady(t *testing.T) { bothModes(t, testMuxOrderAndReady) }

func testMuxOrderAndReady(t *testing.T, shared bool) {
	ctx := context.Background()
	m := newTestMux(t, MuxConfig{Sources: []string{"api", "file"}, SharedPods: shared})
	a, b, c, d := newPod("a", "uid-a"), newPod("b", "uid-b"), newPod("c", "uid-c"), newPod("d", "uid-d")
	steps := []struct {
		name        string
		update      PodUpdate
		want        []summary
		wantSeenAll bool
	}{
		{
			name:   "first Set of api: adds",
			update: set(a, b, c, d),
			want:   []summary{{Add, "api", []string{"a", "b", "c", "d"}}},
		},
		{
			name: "every category, in the kubelet's order",
			update: func() PodUpdate {
				b2, c2, d2 := b.DeepCopy(), c.DeepCopy(), d.DeepCopy()
				b2.Labels = nil
				c2.DeletionTimestamp = ts(1)
				d2.Status.Phase = v1.PodFailed
				return set(d2, c2, b2, newPod("e", "uid-e"))
			}(),
			want: []summary{
				{Remove, "api", []string{"a"}},
				{Add, "api", []string{"e"}},
				{Update, "api", []string{"b"}},
				{Delete, "api", []string{"c"}},
				{Reconcile, "api", []string{"d"}},
			},
		},
		{
			name:        "first Set of file with nothing: the empty Add ready signal",
			update:      PodUpdate{Op: Set, Source: "file"},
			want:        []summary{{Add, "file", nil}},
			wantSeenAll: true,
		},
		{
			name:        "second empty Set: nothing",
			update:      PodUpdate{Op: Set, Source: "file"},
			wantSeenAll: true,
		},
		{
			name:        "an unexpected source just passes through",
			update:      PodUpdate{Op: Add, Source: "http", Pods: []*v1.Pod{newPod("h", "uid-h")}},
			want:        []summary{{Add, "http", []string{"h"}}},
			wantSeenAll: true,
		},
	}
	for i, step := range steps {
		if err := m.Update(ctx, step.update); err != nil {
			t.Fatalf("step %d (%s): %v", i, step.name, err)
		}
		if diff := cmp.Diff(step.want, drain(m)); diff != "" {
			t.Errorf("step %d (%s): delivered (-want +got):\n%s", i, step.name, diff)
		}
		if got := m.SeenAllSources(); got != step.wantSeenAll {
			t.Errorf("step %d (%s): SeenAllSources = %v, want %v", i, step.name, got, step.wantSeenAll)
		}
	}
	select {
	case <-m.SourceReady("api"):
	default:
		t.Error("api not ready")
	}
	select {
	case <-m.SourceReady("http"):
		t.Error("http ready without a Set")
	default:
	}
}

func TestMuxFirstSetWithReconcileOnlyStillSignals(t *testing.T) {
	bothModes(t, testMuxFirstSetWithReconcileOnlyStillSignals)
}

func testMuxFirstSetWithReconcileOnlyStillSignals(t *testing.T, shared bool) {
	m := newTestMux(t, MuxConfig{SharedPods: shared})
	ctx := context.Background()
	a := newPod("a", "uid-a")
	// An Add before the first Set: not ready yet.
	if err := m.Update(ctx, PodUpdate{Op: Add, Source: "api", Pods: []*v1.Pod{a}}); err != nil {
		t.Fatal(err)
	}
	drain(m)
	a2 := a.DeepCopy()
	a2.Status.Phase = v1.PodSucceeded
	if err := m.Update(ctx, set(a2)); err != nil {
		t.Fatal(err)
	}
	want := []summary{{Add, "api", nil}, {Reconcile, "api", []string{"a"}}}
	if diff := cmp.Diff(want, drain(m)); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
}

// TestMuxTrustResourceVersions: MuxConfig.TrustResourceVersions reaches the store, so an
// "api" pod with an unchanged resourceVersion and a new label is an Update only without
// it (the zero MuxConfig classifies as the kubelet).
func TestMuxTrustResourceVersions(t *testing.T) {
	for _, tc := range []struct {
		trust bool
		want  []summary
	}{
		{trust: false, want: []summary{{Update, "api", []string{"a"}}}},
		{trust: true, want: nil},
	} {
		m := newTestMux(t, MuxConfig{TrustResourceVersions: tc.trust})
		ctx := context.Background()
		a := newPod("a", "uid-a")
		a.ResourceVersion = "7"
		if err := m.Update(ctx, set(a)); err != nil {
			t.Fatal(err)
		}
		drain(m)
		a2 := a.DeepCopy()
		a2.Labels = map[string]string{"app": "other"}
		if err := m.Update(ctx, set(a2)); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, drain(m)); diff != "" {
			t.Errorf("TrustResourceVersions %v: delivered (-want +got):\n%s", tc.trust, diff)
		}
	}
}

func TestMuxInvalidUpdates(t *testing.T) {
	m := newTestMux(t, MuxConfig{})
	ctx := context.Background()
	for _, c := range []struct {
		name string
		u    PodUpdate
		want error
	}{
		{"unknown op", PodUpdate{Op: 9, Source: "api"}, ErrUnknownOp},
		{"reconcile as input", PodUpdate{Op: Reconcile, Source: "api"}, ErrInvalidOp},
		{"no source", PodUpdate{Op: Set}, ErrEmptySource},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := m.Update(ctx, c.u); !errors.Is(err, c.want) {
				t.Errorf("error %v, want %v", err, c.want)
			}
			if got := drain(m); got != nil {
				t.Errorf("delivered %v", got)
			}
		})
	}
	if m.SeenAllSources() != true {
		t.Error("SeenAllSources with no expected sources must be true")
	}
}

func TestMuxDrops(t *testing.T) {
	var got []error
	m := newTestMux(t, MuxConfig{OnDrop: func(d Drop) { got = append(got, d.Err) }})
	err := m.Update(context.Background(), set(newPod("a", "uid-a"), nil, newPod("a", "uid-a2")))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !errors.Is(got[0], ErrNilPod) || !errors.Is(got[1], ErrDuplicateName) {
		t.Errorf("OnDrop got %v", got)
	}
	if m.Dropped() != 2 {
		t.Errorf("Dropped() = %d, want 2", m.Dropped())
	}
}

func TestNewMuxValidation(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  MuxConfig
	}{
		{"negative buffer", MuxConfig{UpdatesBufferLen: -1}},
		{"empty source", MuxConfig{Sources: []string{"api", ""}}},
		{"duplicate source", MuxConfig{Sources: []string{"api", "api"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := NewMux(c.cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("error %v, want ErrInvalidConfig", err)
			}
		})
	}
	m, err := NewMux(MuxConfig{})
	if err != nil || cap(m.updates) != DefaultUpdatesBufferLen {
		t.Errorf("defaults: err %v, buffer %d", err, cap(m.updates))
	}
}

// TestMuxChannels feeds two sources through channels and stops them with the context.
func TestMuxChannels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		var errs []error
		m := newTestMux(t, MuxConfig{Sources: []string{"api", "file"}, OnError: func(_ string, err error) { errs = append(errs, err) }})
		api, file := m.Channel(ctx, "api"), m.Channel(ctx, "file")
		if again := m.Channel(ctx, "api"); again != api {
			t.Error("a second Channel call for a source returned another channel")
		}
		api <- PodUpdate{Op: Set, Source: "ignored", Pods: []*v1.Pod{newPod("a", "uid-a")}}
		synctest.Wait()
		if got, want := drain(m), []summary{{Add, "api", []string{"a"}}}; !cmp.Equal(got, want) {
			t.Errorf("api delivered %v, want %v", got, want)
		}
		if m.SeenAllSources() {
			t.Error("all sources seen before file's Set")
		}
		file <- PodUpdate{Op: 77}
		synctest.Wait()
		if len(errs) != 1 || !errors.Is(errs[0], ErrUnknownOp) {
			t.Errorf("OnError got %v, want one ErrUnknownOp", errs)
		}
		file <- PodUpdate{Op: Set}
		<-m.SourceReady("file")
		synctest.Wait()
		if !m.SeenAllSources() {
			t.Error("not all sources seen after both Sets")
		}
		if got, want := drain(m), []summary{{Add, "file", nil}}; !cmp.Equal(got, want) {
			t.Errorf("file delivered %v, want %v", got, want)
		}
		if !m.SeenAllSources("api") || m.SeenAllSources("api", "http") {
			t.Error("SeenAllSources with explicit sources is wrong")
		}
		cancel()
		synctest.Wait() // both serving goroutines have returned, or synctest reports a leak

		// A new context gets a new channel and goroutine.
		ctx2, cancel2 := context.WithCancel(t.Context())
		api2 := m.Channel(ctx2, "api")
		if api2 == api {
			t.Error("Channel after the context ended returned the dead channel")
		}
		api2 <- PodUpdate{Op: Set}
		synctest.Wait()
		if got, want := drain(m), []summary{{Remove, "api", []string{"a"}}}; !cmp.Equal(got, want) {
			t.Errorf("api delivered %v, want %v", got, want)
		}
		cancel2()
		synctest.Wait()
	})
}

// TestMuxBlockedDeliveryHonoursContext fills the output and checks that a blocked
// delivery and a source waiting for its turn both give up when their contexts end.
func TestMuxBlockedDeliveryHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newTestMux(t, MuxConfig{UpdatesBufferLen: 1})
		ctx1, cancel1 := context.WithCancel(t.Context())
		ctx2, cancel2 := context.WithCancel(t.Context())
		var err1, err2 error
		done := make(chan struct{}, 2)
		// Three categories, one slot: blocks after the first.
		b, c := newPod("b", "uid-b"), newPod("c", "uid-c")
		if err := m.Update(t.Context(), set(b, c)); err != nil {
			t.Fatal(err)
		}
		<-m.Updates()
		b2, c2 := b.DeepCopy(), c.DeepCopy()
		b2.Labels = nil
		c2.Status.Phase = v1.PodFailed
		go func() { err1 = m.Update(ctx1, set(b2, c2, newPod("d", "uid-d"))); done <- struct{}{} }()
		synctest.Wait()
		go func() { err2 = m.Update(ctx2, PodUpdate{Op: Set, Source: "file"}); done <- struct{}{} }()
		synctest.Wait()
		cancel2()
		<-done
		if !errors.Is(err2, context.Canceled) {
			t.Errorf("waiting source: error %v, want context.Canceled", err2)
		}
		cancel1()
		<-done
		if !errors.Is(err1, context.Canceled) {
			t.Errorf("blocked delivery: error %v, want context.Canceled", err1)
		}
		if got, want := drain(m), []summary{{Add, "api", []string{"d"}}}; !cmp.Equal(got, want) {
			t.Errorf("delivered %v, want %v", got, want)
		}
		// The mux is usable again.
		if err := m.Update(t.Context(), PodUpdate{Op: Set, Source: "file"}); err != nil {
			t.Fatal(err)
		}
		if got, want := drain(m), []summary{{Add, "file", nil}}; !cmp.Equal(got, want) {
			t.Errorf("delivered %v, want %v", got, want)
		}
	})
}

func TestSourcesDeliveredOnlyAfterTheFirstSetIsOnUpdates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		m := newTestMux(t, MuxConfig{Sources: []string{"api", "file"}, UpdatesBufferLen: 1})
		if m.SourcesDelivered() {
			t.Fatal("delivered before any Set")
		}
		all := m.AllSourcesDelivered()
		// A test source fills the buffer, so api's first Set is merged (seen) before its
		// changes fit on Updates.
		if err := m.Update(ctx, PodUpdate{Op: Add, Source: "test", Pods: []*v1.Pod{newPod("x", "uid-x")}}); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			done <- m.Update(ctx, PodUpdate{Op: Set, Source: "api", Pods: []*v1.Pod{newPod("a", "uid-a")}})
		}()
		synctest.Wait()
		if !m.SeenAllSources("api") {
			t.Fatal("api's Set not merged")
		}
		if m.SourcesDelivered("api") {
			t.Fatal("api delivered while its Add is still waiting for room on Updates")
		}
		<-m.Updates() // the test source's Add
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		select {
		case <-all:
			t.Fatal("AllSourcesDelivered closed while file has not listed")
		default:
		}
		if !m.SourcesDelivered("api") || m.SourcesDelivered() {
			t.Fatalf("SourcesDelivered(api)=%v SourcesDelivered()=%v, want true, false", m.SourcesDelivered("api"), m.SourcesDelivered())
		}
		if diff := cmp.Diff([]summary{{Op: Add, Source: "api", Names: []string{"a"}}}, drain(m)); diff != "" {
			t.Fatalf("after delivered, a non-blocking drain must hold the first Set's pods (-want +got):\n%s", diff)
		}
		if err := m.Update(ctx, PodUpdate{Op: Set, Source: "file"}); err != nil {
			t.Fatal(err)
		}
		drain(m)
		if !m.SourcesDelivered() {
			t.Fatal("every source delivered its first Set, SourcesDelivered says no")
		}
		select {
		case <-m.AllSourcesDelivered():
		default:
			t.Fatal("AllSourcesDelivered not closed once every source delivered")
		}
	})
}
