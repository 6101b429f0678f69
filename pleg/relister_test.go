package pleg

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
)

func newTestRelister(t *testing.T, rt RuntimeService, mutate func(*Config)) (*Relister, *Cache, *testingclock.FakeClock) {
	t.Helper()
	cache := NewCache()
	clk := testingclock.NewFakeClock(t0)
	cfg := Config{Runtime: rt, Cache: cache, Clock: clk}
	if mutate != nil {
		mutate(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r, cache, clk
}

func TestNewValidation(t *testing.T) {
	rt := newFakeRuntime()
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{name: "minimal", cfg: Config{Runtime: rt, Cache: NewCache()}},
		{name: "nil runtime", cfg: Config{Cache: NewCache()}, wantErr: true},
		{name: "nil cache", cfg: Config{Runtime: rt}, wantErr: true},
		{name: "negative period", cfg: Config{Runtime: rt, Cache: NewCache(), RelistPeriod: -1}, wantErr: true},
		{name: "negative threshold", cfg: Config{Runtime: rt, Cache: NewCache(), RelistThreshold: -1}, wantErr: true},
		{name: "negative capacity", cfg: Config{Runtime: rt, Cache: NewCache(), EventChannelCapacity: -1}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(tc.cfg)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidConfig) || r != nil {
					t.Fatalf("New = %v, %v; want nil, ErrInvalidConfig", r, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			got := struct {
				Period, Threshold time.Duration
				Capacity          int
			}{r.period, r.threshold, cap(r.events)}
			want := struct {
				Period, Threshold time.Duration
				Capacity          int
			}{time.Second, 3 * time.Minute, 1000}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("defaults mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// step is one relist of a scenario: the runtime's pods and status failures before it, and
// what the relist must produce.
type step struct {
	name      string
	pods      []*Pod
	failPods  []types.UID // PodStatus fails for these
	wantErr   error       // errors.Is target; nil: no error
	want      []string    // events, as drain formats them
	wantCache map[types.UID][]string
	wantGone  []types.UID // pods without a cache entry
}

func runSteps(t *testing.T, deliverChanged bool, steps []step) {
	t.Helper()
	rt := newFakeRuntime()
	r, cache, clk := newTestRelister(t, rt, func(c *Config) { c.DeliverContainerChanged = deliverChanged })
	errFetch := errors.New("status unavailable")
	for i, s := range steps {
		clk.Step(time.Second)
		rt.set(s.pods...)
		rt.statusErr = map[types.UID]error{}
		for _, uid := range s.failPods {
			rt.failStatus(uid, errFetch)
		}
		start := clk.Now()
		err := r.Relist(context.Background())
		if s.wantErr == nil && err != nil || s.wantErr != nil && !errors.Is(err, s.wantErr) {
			t.Fatalf("step %d %q: Relist error = %v, want %v", i, s.name, err, s.wantErr)
		}
		if diff := cmp.Diff(s.want, drain(r.Events())); diff != "" {
			t.Errorf("step %d %q: events mismatch (-want +got):\n%s", i, s.name, diff)
		}
		for uid, want := range s.wantCache {
			st, _ := cache.Get(uid)
			if diff := cmp.Diff(want, summarize(st)); diff != "" {
				t.Errorf("step %d %q: cache of %s mismatch (-want +got):\n%s", i, s.name, uid, diff)
			}
		}
		for _, uid := range s.wantGone {
			cache.mu.Lock()
			_, ok := cache.pods[uid]
			cache.mu.Unlock()
			if ok {
				t.Errorf("step %d %q: cache still has pod %s", i, s.name, uid)
			}
		}
		if !errors.Is(err, ErrListPods) && !cache.timestamp.Equal(start) {
			t.Errorf("step %d %q: cache timestamp = %v, want the relist start %v", i, s.name, cache.timestamp, start)
		}
	}
}

// summarize lists a status's containers and sandboxes as "id state".
func summarize(s *PodStatus) []string {
	var out []string
	for _, c := range s.ContainerStatuses {
		out = append(out, c.ID+" "+string(c.State))
	}
	for _, sb := range s.SandboxStatuses {
		out = append(out, sb.ID+" "+string(sb.State))
	}
	return out
}

func TestRelistLifecycle(t *testing.T) {
	runSteps(t, false, []step{
		{
			name: "empty runtime",
		},
		{
			name: "pod starts",
			pods: []*Pod{mkPod("a", "s:sb1:r", "c:c1:r")},
			want: []string{"a ContainerStarted c1", "a ContainerStarted sb1"},
			wantCache: map[types.UID][]string{
				"a": {"c1 running", "sb1 ready"},
			},
		},
		{
			name: "no change",
			pods: []*Pod{mkPod("a", "s:sb1:r", "c:c1:r")},
		},
		{
			name: "second container created, then started",
			pods: []*Pod{mkPod("a", "s:sb1:r", "c:c1:r", "c:c2:c")},
			// created -> ContainerChanged, not delivered; the cache is still refreshed.
			wantCache: map[types.UID][]string{
				"a": {"c1 running", "c2 created", "sb1 ready"},
			},
		},
		{
			name: "c2 runs, c1 dies",
			pods: []*Pod{mkPod("a", "s:sb1:r", "c:c1:e", "c:c2:r")},
			want: []string{"a ContainerDied c1", "a ContainerStarted c2"},
		},
		{
			name: "c1 removed",
			pods: []*Pod{mkPod("a", "s:sb1:r", "c:c2:r")},
			want: []string{"a ContainerRemoved c1"},
		},
		{
			name: "sandbox dies and a new one starts",
			pods: []*Pod{mkPod("a", "s:sb2:r", "s:sb1:e", "c:c2:r")},
			want: []string{"a ContainerDied sb1", "a ContainerStarted sb2"},
			wantCache: map[types.UID][]string{
				"a": {"c2 running", "sb2 ready", "sb1 notready"},
			},
		},
		{
			name: "second pod appears",
			pods: []*Pod{mkPod("a", "s:sb2:r", "s:sb1:e", "c:c2:r"), mkPod("b", "s:sbb:r")},
			want: []string{"b ContainerStarted sbb"},
		},
		{
			name:     "pod a vanishes without being seen exited",
			pods:     []*Pod{mkPod("b", "s:sbb:r")},
			want:     []string{"a ContainerDied c2", "a ContainerRemoved c2", "a ContainerDied sb2", "a ContainerRemoved sb2", "a ContainerRemoved sb1"},
			wantGone: []types.UID{"a"},
		},
	})
}
