package pleg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

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
			if cache.has(uid) {
				t.Errorf("step %d %q: cache still has pod %s", i, s.name, uid)
			}
		}
		if got := cache.globalTime(); !errors.Is(err, ErrListPods) && !got.Equal(start) {
			t.Errorf("step %d %q: cache timestamp = %v, want the relist start %v", i, s.name, got, start)
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

func TestRelistStatusFailureThenRecovery(t *testing.T) {
	runSteps(t, false, []step{
		{
			name: "pod starts",
			pods: []*Pod{mkPod("a", "s:sb1:r", "c:c1:r"), mkPod("b", "s:sbb:r")},
			want: []string{"a ContainerStarted c1", "a ContainerStarted sb1", "b ContainerStarted sbb"},
		},
		{
			name:     "c1 dies but its status fails: events dropped, error cached",
			pods:     []*Pod{mkPod("a", "s:sb1:r", "c:c1:e"), mkPod("b", "s:sbb:e")},
			failPods: []types.UID{"a"},
			wantErr:  ErrPodStatus,
			want:     []string{"b ContainerDied sbb"},
			wantCache: map[types.UID][]string{
				"a": nil, // the failed fetch replaced the entry: Get gives an empty status (and the error)
			},
		},
		{
			name:     "still failing: the same events are dropped again",
			pods:     []*Pod{mkPod("a", "s:sb1:r", "c:c1:e"), mkPod("b", "s:sbb:e")},
			failPods: []types.UID{"a"},
			wantErr:  ErrPodStatus,
		},
		{
			name: "recovered: the kept record yields the events",
			pods: []*Pod{mkPod("a", "s:sb1:r", "c:c1:e"), mkPod("b", "s:sbb:e")},
			want: []string{"a ContainerDied c1"},
			wantCache: map[types.UID][]string{
				"a": {"c1 exited", "sb1 ready"},
			},
		},
		{
			name: "nothing left to re-inspect",
			pods: []*Pod{mkPod("a", "s:sb1:r", "c:c1:e"), mkPod("b", "s:sbb:e")},
		},
		{
			name:     "fails, then the runtime is back where the record is: PodSync",
			pods:     []*Pod{mkPod("a", "s:sb1:r", "c:c1:e"), mkPod("b", "s:sbb:r")},
			failPods: []types.UID{"b"},
			wantErr:  ErrPodStatus,
		},
		{
			name: "re-inspection without events",
			pods: []*Pod{mkPod("a", "s:sb1:r", "c:c1:e"), mkPod("b", "s:sbb:e")},
			want: []string{"b PodSync"},
		},
	})
}

func TestRelistContainerChangedDelivery(t *testing.T) {
	for _, deliver := range []bool{false, true} {
		want := []string{"a ContainerStarted c1", "a ContainerChanged c2"}
		if !deliver {
			want = want[:1]
		}
		t.Run(map[bool]string{false: "kubelet default", true: "delivered"}[deliver], func(t *testing.T) {
			runSteps(t, deliver, []step{
				{
					name: "a running and a created container",
					pods: []*Pod{mkPod("a", "c:c1:r", "c:c2:c")},
					want: want,
				},
				{
					name: "created to unknown is no change",
					pods: []*Pod{mkPod("a", "c:c1:r", "c:c2:u")},
				},
				{
					name: "unknown string counts as unknown",
					pods: []*Pod{mkPod("a", "c:c1:r", "c:c2:paused")},
				},
			})
		})
	}
}

func TestRelistInvalidListEntries(t *testing.T) {
	runSteps(t, false, []step{
		{
			name: "nil pod, pod without UID and a duplicate UID are ignored",
			pods: []*Pod{nil, mkPod("", "c:x:r"), mkPod("a", "c:c1:r"), mkPod("a", "c:c9:r")},
			want: []string{"a ContainerStarted c1"},
		},
		{
			name: "the duplicate disappears: no change for a",
			pods: []*Pod{mkPod("a", "c:c1:r")},
		},
		{
			name: "order changes: still no change",
			pods: []*Pod{mkPod("b"), mkPod("a", "c:c1:r")},
		},
	})
}

func TestRelistListFailure(t *testing.T) {
	rt := newFakeRuntime(mkPod("a", "c:c1:r"))
	r, cache, clk := newTestRelister(t, rt, nil)
	if err := r.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	drain(r.Events())
	clk.Step(time.Second)
	rt.listErr = errors.New("runtime down")
	rt.set()
	if err := r.Relist(context.Background()); !errors.Is(err, ErrListPods) {
		t.Fatalf("Relist = %v, want ErrListPods", err)
	}
	if got := drain(r.Events()); got != nil {
		t.Fatalf("events after a failed list: %v", got)
	}
	if !cache.globalTime().Equal(t0) {
		t.Fatalf("cache timestamp = %v, want unchanged %v", cache.globalTime(), t0)
	}
	if st, _ := cache.Get("a"); len(st.ContainerStatuses) != 1 {
		t.Fatalf("cache of a = %v; a failed list must not touch it", st)
	}
	r.healthMu.Lock()
	last := r.relistTime
	r.healthMu.Unlock()
	if !last.Equal(t0) {
		t.Fatalf("relist time = %v, want %v (only successful lists count)", last, t0)
	}
}

func TestRelistKeepsIPsOfStoppedPod(t *testing.T) {
	rt := newFakeRuntime(mkPod("a", "s:sb1:r", "c:c1:r"))
	r, cache, clk := newTestRelister(t, rt, nil)
	ctx := context.Background()
	if err := r.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ := cache.Get("a")
	if diff := cmp.Diff([]string{"10.0.0.1"}, st.IPs); diff != "" {
		t.Fatalf("IPs mismatch (-want +got):\n%s", diff)
	}
	if !st.TimeStamp.Equal(t0) {
		t.Fatalf("TimeStamp = %v, want %v", st.TimeStamp, t0)
	}
	clk.Step(time.Second)
	rt.set(mkPod("a", "s:sb1:e", "c:c1:e"))
	if err := r.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ = cache.Get("a")
	if diff := cmp.Diff([]string{"10.0.0.1"}, st.IPs); diff != "" {
		t.Fatalf("a pod without a ready sandbox lost its IPs (-want +got):\n%s", diff)
	}
	if !st.TimeStamp.Equal(t0.Add(time.Second)) {
		t.Fatalf("TimeStamp = %v, want %v", st.TimeStamp, t0.Add(time.Second))
	}
}

func TestRelistChannelFull(t *testing.T) {
	rt := newFakeRuntime(mkPod("a", "c:c1:r", "c:c2:r", "c:c3:r"), mkPod("b", "c:c4:r"))
	var logs bytes.Buffer
	r, cache, _ := newTestRelister(t, rt, func(c *Config) {
		c.EventChannelCapacity = 2
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	if err := r.Relist(context.Background()); err != nil { // must not block
		t.Fatal(err)
	}
	if got := len(drain(r.Events())); got != 2 {
		t.Fatalf("delivered %d events, want 2", got)
	}
	if got := r.DroppedEvents(); got != 2 {
		t.Fatalf("DroppedEvents = %d, want 2", got)
	}
	if st, _ := cache.Get("b"); len(st.ContainerStatuses) != 1 {
		t.Fatalf("cache of b = %v; dropped events must not skip the cache", st)
	}
	if n := strings.Count(logs.String(), "events dropped"); n != 1 || !strings.Contains(logs.String(), "dropped=2") {
		t.Fatalf("want one log line reporting 2 drops, got:\n%s", logs.String())
	}
}

// TestEventDataAfterDrops: a container whose first events were dropped (its ID never
// boxed) gets its ID as the Data of its next delivered event, from a relist and from a
// refresh, and two delivered events of one container share the boxed ID.
func TestEventDataAfterDrops(t *testing.T) {
	rt := newFakeRuntime(mkPod("a", "c:a1:r", "c:a2:r", "s:sa:r"))
	r, _, clk := newTestRelister(t, rt, func(c *Config) { c.EventChannelCapacity = 1 })
	ctx := context.Background()
	if err := r.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	if got := drain(r.Events()); len(got) != 1 || r.DroppedEvents() != 2 {
		t.Fatalf("delivered %v, dropped %d; want 1 and 2", got, r.DroppedEvents())
	}
	var data []any
	for _, step := range []struct {
		pod     *Pod
		refresh bool
		want    string
	}{
		{pod: mkPod("a", "c:a1:r", "c:a2:e", "s:sa:r"), want: "a ContainerDied a2"},
		{pod: mkPod("a", "c:a1:r", "c:a2:r", "s:sa:r"), refresh: true, want: "a ContainerStarted a2"},
	} {
		clk.Step(time.Second)
		rt.set(step.pod)
		if step.refresh {
			if _, err := r.Refresh(ctx, "a"); err != nil {
				t.Fatal(err)
			}
		} else if err := r.Relist(ctx); err != nil {
			t.Fatal(err)
		}
		events := drainEvents(r.Events())
		if len(events) != 1 {
			t.Fatalf("%d events, want 1", len(events))
		}
		e := events[0]
		if got := fmt.Sprintf("%s %s %v", e.ID, e.Type, e.Data); got != step.want || e.Data != any("a2") {
			t.Fatalf("event %q (Data %#v), want %q", got, e.Data, step.want)
		}
		data = append(data, e.Data)
	}
	box := func(v *any) unsafe.Pointer { return (*[2]unsafe.Pointer)(unsafe.Pointer(v))[1] }
	if box(&data[0]) != box(&data[1]) {
		t.Errorf("the events of a2 carry two boxes of its ID")
	}
}

func TestHealthy(t *testing.T) {
	rt := newFakeRuntime()
	r, _, clk := newTestRelister(t, rt, func(c *Config) { c.RelistThreshold = time.Minute })
	check := func(when string, want bool) {
		t.Helper()
		ok, err := r.Healthy()
		if ok != want || ok != (err == nil) || (err != nil && !errors.Is(err, ErrNotHealthy)) {
			t.Fatalf("%s: Healthy = %v, %v; want %v", when, ok, err, want)
		}
	}
	check("before any relist", false)
	if err := r.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("just relisted", true)
	clk.Step(time.Minute)
	check("at the threshold", true)
	clk.Step(time.Nanosecond)
	check("past the threshold", false)
	rt.listErr = errors.New("down")
	_ = r.Relist(context.Background())
	check("after a failed relist", false)
	rt.listErr = nil
	if err := r.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("after a successful relist", true)
}

func TestRelistAbandonedWhenContextEnds(t *testing.T) {
	rt := newFakeRuntime(mkPod("a", "c:c1:r"), mkPod("b", "c:c2:r"))
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	wrapped := RuntimeServiceFuncs{
		ListPodsFunc: rt.ListPods,
		PodStatusFunc: func(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error) {
			calls++
			cancel() // the context ends while the first pod is inspected
			return rt.PodStatus(ctx, uid, name, namespace)
		},
	}
	r, cache, _ := newTestRelister(t, wrapped, nil)
	if err := r.Relist(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Relist = %v, want context.Canceled", err)
	}
	if calls != 1 || !cache.globalTime().IsZero() {
		t.Fatalf("PodStatus calls = %d (want 1), cache timestamp %v (want zero)", calls, cache.globalTime())
	}
	if diff := cmp.Diff([]string{"a ContainerStarted c1"}, drain(r.Events())); diff != "" {
		t.Fatalf("events mismatch (-want +got):\n%s", diff)
	}
	if err := r.Relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b ContainerStarted c2"}, drain(r.Events())); diff != "" {
		t.Fatalf("the next relist must pick up b (-want +got):\n%s", diff)
	}
}

// TestRecordMemory checks where a record keeps what a relist reads for each listed pod: the
// view's entries inside the record while they fit, through relists, a refresh and a push.
func TestRecordMemory(t *testing.T) {
	many := []string{"s:big-sb:r"}
	for i := range inlineEntries {
		many = append(many, fmt.Sprintf("c:big-%d:r", i))
	}
	rt := newFakeRuntime(mkPod("a", "c:a1:r", "c:a2:e", "s:a-sb:r"), mkPod("big", many...), mkPod("empty"))
	r, _, clk := newTestRelister(t, rt, nil)
	ctx := context.Background()
	check := func(when string, wantInline map[types.UID]bool) {
		t.Helper()
		r.mu.Lock()
		defer r.mu.Unlock()
		records := r.allRecords()
		if len(records) != len(wantInline) {
			t.Fatalf("%s: %d records, want %d", when, len(records), len(wantInline))
		}
		for key, rec := range records {
			if key != rec.uid {
				t.Errorf("%s: record %q has uid %q", when, key, rec.uid)
			}
			inline := cap(rec.view.entries) == inlineEntries && &rec.view.entries[:1][0] == &rec.inline[0]
			if inline != wantInline[key] {
				t.Errorf("%s: pod %s: entries inline = %v, want %v", when, key, inline, wantInline[key])
			}
		}
	}
	if err := r.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	check("first relist", map[types.UID]bool{"a": true, "big": false, "empty": true})

	clk.Step(time.Second)
	rt.set(mkPod("a", "c:a1:e", "c:a3:r", "s:a-sb:r"), mkPod("big", many[:3]...))
	if err := r.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	check("after a change", map[types.UID]bool{"a": true, "big": false})

	clk.Step(time.Second)
	rt.set(mkPod("a", "c:a3:r", "s:a-sb:r"), mkPod("big", many[:3]...), mkPod("new", "c:n1:r"))
	if _, err := r.Refresh(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Refresh(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	check("after refreshes", map[types.UID]bool{"a": true, "big": false, "new": true})

	clk.Step(time.Second)
	if _, err := r.PushStatus(statusOf(mkPod("pushed", "c:p1:r")), clk.Now()); err != nil {
		t.Fatal(err)
	}
	check("after a push", map[types.UID]bool{"a": true, "big": false, "new": true, "pushed": true})
	if got := len(drain(r.Events())); got == 0 {
		t.Errorf("no events")
	}
}

// TestRecordKeepsListedStrings checks that a record keeps the runtime's strings, from the
// list that first had each container, rather than copies: a runtime that lists the same
// strings again gets them compared by pointer. A list with new strings of equal contents
// changes nothing, and a pod rebuilt for a new container keeps the strings of the others.
func TestRecordKeepsListedStrings(t *testing.T) {
	rt := newFakeRuntime()
	var listed []*Pod // what ListPods returns: the very strings of the test's pods
	r, _, clk := newTestRelister(t, RuntimeServiceFuncs{
		ListPodsFunc:  func(context.Context, bool) ([]*Pod, error) { return listed, nil },
		PodStatusFunc: rt.PodStatus,
	}, nil)
	ctx := context.Background()
	relist := func(pods ...*Pod) {
		t.Helper()
		listed = pods
		rt.set(pods...)
		clk.Step(time.Second)
		if err := r.Relist(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ids := func() []*byte {
		t.Helper()
		r.mu.Lock()
		defer r.mu.Unlock()
		var out []*byte
		for _, e := range r.recordFor("a").view.entries {
			out = append(out, unsafe.StringData(e.id))
		}
		return out
	}
	first := mkPod("a", "c:a1:r", "s:a-sb:r")
	relist(first)
	want := []*byte{unsafe.StringData(first.Containers[0].ID), unsafe.StringData(first.Sandboxes[0].ID)}
	if got := ids(); !slices.Equal(got, want) {
		t.Fatalf("after the first list: the view's IDs are not the listed strings")
	}
	drain(r.Events())

	relist(copyPod(first)) // equal contents, new strings
	if got := ids(); !slices.Equal(got, want) {
		t.Fatalf("after a list of copies: the view's IDs changed")
	}
	if got := drain(r.Events()); len(got) != 0 {
		t.Fatalf("a list of copies sent %v", got)
	}

	grown := mkPod("a", "c:a1:r", "c:a2:r", "s:a-sb:r")
	relist(copyPod(grown))
	got := ids()
	if len(got) != 3 || got[0] != want[0] || got[2] != want[1] {
		t.Fatalf("after a new container: the known IDs are not the first-listed strings")
	}
	if diff := cmp.Diff([]string{"a ContainerStarted a2"}, drain(r.Events())); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
}

// TestRelistListOrder covers the matching of listed pods to records (by position in the
// previous list while that works, else by UID) and of containers to a record's entries
// (position by position while the layout holds): a list in another order, a pod that
// moves, another pod at a known position, duplicate UIDs and reordered containers give
// exactly the events of the changes.
func TestRelistListOrder(t *testing.T) {
	t.Run("few pods", func(t *testing.T) {
		a := func(specs ...string) *Pod { return mkPod("a", specs...) }
		runSteps(t, false, []step{
			{
				name: "first list",
				pods: []*Pod{a("c:a1:r", "c:a2:r", "s:a-sb:r"), mkPod("b", "c:b1:r"), mkPod("c", "c:c1:e")},
				want: []string{"a ContainerStarted a1", "a ContainerStarted a2", "a ContainerStarted a-sb", "b ContainerStarted b1", "c ContainerDied c1"},
			},
			{
				name: "another order: no events",
				pods: []*Pod{mkPod("c", "c:c1:e"), a("c:a1:r", "c:a2:r", "s:a-sb:r"), mkPod("b", "c:b1:r")},
			},
			{
				name: "a pod moves and changes",
				pods: []*Pod{mkPod("b", "c:b1:r"), mkPod("c", "c:c1:e"), a("c:a1:e", "c:a2:r", "s:a-sb:r")},
				want: []string{"a ContainerDied a1"},
			},
			{
				name: "containers reordered within a pod: no events",
				pods: []*Pod{mkPod("b", "c:b1:r"), mkPod("c", "c:c1:e"), a("c:a2:r", "c:a1:e", "s:a-sb:r")},
			},
			{
				name: "a change after the reorder",
				pods: []*Pod{mkPod("b", "c:b1:r"), mkPod("c", "c:c1:e"), a("c:a2:e", "c:a1:e", "s:a-sb:r")},
				want: []string{"a ContainerDied a2"},
			},
			{
				name:     "another UID at a known position, with the same container ID",
				pods:     []*Pod{mkPod("e", "c:b1:r"), mkPod("c", "c:c1:e"), a("c:a2:e", "c:a1:e", "s:a-sb:r")},
				want:     []string{"b ContainerDied b1", "b ContainerRemoved b1", "e ContainerStarted b1"},
				wantGone: []types.UID{"b"},
			},
			{
				name: "a duplicate UID elsewhere: the first counts",
				pods: []*Pod{mkPod("e", "c:b1:r"), mkPod("c", "c:c1:e"), mkPod("e", "c:x9:r"), a("c:a2:e", "c:a1:e", "s:a-sb:r")},
			},
			{
				name: "a duplicate UID at its own position: the first counts",
				pods: []*Pod{mkPod("e", "c:x9:r"), mkPod("e", "c:b1:e"), mkPod("c", "c:c1:e"), a("c:a2:e", "c:a1:e", "s:a-sb:r")},
				want: []string{"e ContainerDied b1", "e ContainerRemoved b1", "e ContainerStarted x9"},
			},
		})
	})
	t.Run("more pods than position guesses", func(t *testing.T) {
		pods := func(order []int, specs map[int]string) []*Pod {
			var out []*Pod
			for _, i := range order {
				spec := fmt.Sprintf("c:k%d:r", i)
				if s, ok := specs[i]; ok {
					spec = s
				}
				out = append(out, mkPod(types.UID(fmt.Sprint("p", i)), spec))
			}
			return out
		}
		var want []string
		for i := range 8 {
			want = append(want, fmt.Sprintf("p%d ContainerStarted k%d", i, i))
		}
		runSteps(t, false, []step{
			{name: "first list", pods: pods([]int{0, 1, 2, 3, 4, 5, 6, 7}, nil), want: want},
			{
				name: "reversed, one change",
				pods: pods([]int{7, 6, 5, 4, 3, 2, 1, 0}, map[int]string{3: "c:k3:e"}),
				want: []string{"p3 ContainerDied k3"},
			},
			{
				name:     "rotated, one pod replaced by a new one",
				pods:     pods([]int{6, 8, 4, 3, 2, 1, 0, 7}, map[int]string{3: "c:k3:e"}),
				want:     []string{"p5 ContainerDied k5", "p5 ContainerRemoved k5", "p8 ContainerStarted k8"},
				wantGone: []types.UID{"p5"},
			},
			{
				name: "the same order again, one change",
				pods: pods([]int{6, 8, 4, 3, 2, 1, 0, 7}, map[int]string{3: "c:k3:e", 0: "c:k0:e"}),
				want: []string{"p0 ContainerDied k0"},
			},
		})
	})
}

// TestRelistAfterAFailedRefresh: a refresh of a pod fails while a relist waits for the same
// pod's status (the refresh's error is cached as the newer observation). The relist must not
// take its older status as handled: the next relist fetches the pod again, so the cache
// ends with the pod's status, not the error, and the container's death is reported once.
func TestRelistAfterAFailedRefresh(t *testing.T) {
	fake := newFakeRuntime(mkPod("a", "s:sa:r", "c:a1:r"))
	var armed atomic.Bool
	entered, release := make(chan struct{}), make(chan struct{})
	rt := &probeRuntime{RuntimeService: fake, onStatus: func(types.UID) {
		if armed.CompareAndSwap(true, false) {
			close(entered)
			<-release
		}
	}}
	r, cache, clk := newTestRelister(t, rt, nil)
	ctx := t.Context()
	if err := r.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	drainEvents(r.Events())
	fake.set(mkPod("a", "s:sa:r", "c:a1:e"))
	clk.Step(time.Second)
	armed.Store(true)
	done := make(chan error, 1)
	go func() { done <- r.Relist(ctx) }()
	<-entered // the relist waits in its PodStatus call for pod a
	clk.Step(time.Second)
	fake.failStatus("a", errors.New("boom"))
	if _, err := r.Refresh(ctx, "a"); !errors.Is(err, ErrPodStatus) {
		t.Fatalf("refresh: %v, want an error wrapping ErrPodStatus", err)
	}
	fake.failStatus("a", nil)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Get("a"); err == nil {
		t.Fatal("the refresh's newer error is not cached")
	}
	clk.Step(time.Second)
	if err := r.Relist(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := cache.Get("a")
	if err != nil {
		t.Fatalf("after the next relist the cache still has the refresh's error: %v", err)
	}
	if cs := st.FindContainerStatusByName("n-a1"); cs == nil || cs.State != ContainerStateExited {
		t.Errorf("container a1 in the cache: %+v, want exited", cs)
	}
	died := 0
	for _, e := range drainEvents(r.Events()) {
		if e.Type == ContainerDied {
			died++
		}
	}
	if died != 1 {
		t.Errorf("%d ContainerDied events, want 1", died)
	}
}

// A vanished pod's cache entry is gone before its events are sent, as the kubelet's relist
// updates the cache before it sends a pod's events: a worker woken by one of them never
// reads the status from before the pod vanished. The reader checks the cache as each event
// arrives, while the relist is still sending the others (a pod of many containers).
func TestVanishedPodLeavesTheCacheBeforeItsEvents(t *testing.T) {
	specs := []string{"s:sb:r"}
	for i := range 200 {
		specs = append(specs, fmt.Sprintf("c:c%d:r", i))
	}
	for round := range 10 {
		rt := newFakeRuntime(mkPod("a", specs...))
		r, cache, _ := newTestRelister(t, rt, func(c *Config) { c.EventChannelCapacity = 1024 })
		if err := r.Relist(context.Background()); err != nil {
			t.Fatal(err)
		}
		drainEvents(r.Events())
		rt.removePod("a")
		stale := make(chan int, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range len(specs) * 2 { // every container's Died and Removed
				ev := <-r.Events()
				if s, err := cache.Get(ev.ID); err == nil && len(s.ContainerStatuses) > 0 {
					stale <- len(s.ContainerStatuses)
					return
				}
			}
		}()
		if err := r.Relist(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-done
		select {
		case n := <-stale:
			t.Fatalf("round %d: an event of the vanished pod found its old status (%d containers) in the cache", round, n)
		default:
		}
	}
}
