package evict_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/eviction"
	"github.com/podlife/podlife/examples/evict"
	"github.com/podlife/podlife/node"
)

const mi = 1 << 20

func i64(n int64) *int64 { return &n }

func pod(name string, limit string) *v1.Pod {
	c := v1.Container{Name: "app"}
	if limit != "" {
		c.Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse(limit)}
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{Containers: []v1.Container{c}}}
}

// kill is one KillPod call as the fake node got it, with the status its function makes.
type kill struct {
	UID    types.UID
	Grace  int64
	Evict  bool
	Status v1.PodStatus
	// EventFirst: the Evicted event was recorded before the kill.
	EventFirst bool
}

type event struct{ Pod, Type, Reason, Message string }

// fakeNode records kills and events; a kill of a UID in fail fails.
type fakeNode struct {
	mu     sync.Mutex
	kills  []kill
	events []event
	fail   map[types.UID]bool
}

func (f *fakeNode) KillPod(_ context.Context, uid types.UID, opts node.KillPodOptions) error {
	var st v1.PodStatus
	if opts.Status != nil {
		opts.Status(&st)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k := kill{UID: uid, Evict: opts.Evict, Status: st, EventFirst: len(f.events) > 0 && f.events[len(f.events)-1].Pod == string(uid)}
	if opts.GracePeriodOverride != nil {
		k.Grace = *opts.GracePeriodOverride
	}
	f.kills = append(f.kills, k)
	if f.fail[uid] {
		return node.ErrUnknownPod
	}
	return nil
}

func (f *fakeNode) Event(p *v1.Pod, eventType, reason, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, event{string(p.UID), eventType, reason, message})
}

func (f *fakeNode) taken() ([]kill, []event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k, e := f.kills, f.events
	f.kills, f.events = nil, nil
	return k, e
}

const podMsg = "Pod ephemeral local storage usage exceeds the total limit of containers 1Mi. "

func evicted(uid types.UID, msg string) kill {
	return kill{UID: uid, Grace: 1, Evict: true, EventFirst: true,
		Status: v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: msg}}
}

// twoContainers is pod "two": app limited to 1Mi of ephemeral storage, side to 10Mi.
func twoContainers() *v1.Pod {
	p := pod("two", "1Mi")
	p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side", Resources: v1.ResourceRequirements{
		Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("10Mi")}}})
	return p
}

// twoContainersStats is pod "two" using 2Mi, all of it app's writable layer.
func twoContainersStats() map[string]eviction.PodStats {
	return map[string]eviction.PodStats{"two": {EphemeralStorageBytes: i64(2 * mi),
		Containers: []eviction.ContainerStats{{Name: "app", RootfsBytes: i64(2 * mi), LogsBytes: i64(0)}}}}
}

func TestSynchronize(t *testing.T) {
	over := eviction.PodStats{EphemeralStorageBytes: i64(2 * mi),
		Containers: []eviction.ContainerStats{{Name: "app", RootfsBytes: i64(2 * mi), LogsBytes: i64(0)}}}
	under := eviction.PodStats{EphemeralStorageBytes: i64(mi / 2),
		Containers: []eviction.ContainerStats{{Name: "app", RootfsBytes: i64(mi / 2), LogsBytes: i64(0)}}}
	critical := pod("critical", "1Mi")
	critical.Namespace, critical.Spec.PriorityClassName = "kube-system", "system-node-critical"
	critical.Spec.Priority = new(int32(2000001000))
	type want struct {
		Evicted []string
		Kills   []kill
		Events  []event
	}
	for _, tc := range []struct {
		name      string
		pods      []*v1.Pod
		stats     map[string]eviction.PodStats
		statsErr  map[string]bool
		listErr   bool
		fail      map[types.UID]bool
		dedicated bool
		want      want
	}{
		{name: "a pod over its limit is evicted at once with the kubelet's status and event",
			pods:  []*v1.Pod{pod("big", "1Mi"), pod("small", "1Mi"), pod("unlimited", "")},
			stats: map[string]eviction.PodStats{"big": over, "small": under, "unlimited": over},
			want: want{Evicted: []string{"big"}, Kills: []kill{evicted("uid-big", podMsg)},
				Events: []event{{"uid-big", "Warning", "Evicted", podMsg}}}},
		{name: "every pod over a limit, one after the other",
			pods:  []*v1.Pod{pod("a", "1Mi"), pod("b", "1Mi")},
			stats: map[string]eviction.PodStats{"a": over, "b": over},
			want: want{Evicted: []string{"a", "b"}, Kills: []kill{evicted("uid-a", podMsg), evicted("uid-b", podMsg)},
				Events: []event{{"uid-a", "Warning", "Evicted", podMsg}, {"uid-b", "Warning", "Evicted", podMsg}}}},
		{name: "a failed kill still counts as an eviction",
			pods: []*v1.Pod{pod("a", "1Mi")}, stats: map[string]eviction.PodStats{"a": over},
			fail: map[types.UID]bool{"uid-a": true},
			want: want{Evicted: []string{"a"}, Kills: []kill{evicted("uid-a", podMsg)},
				Events: []event{{"uid-a", "Warning", "Evicted", podMsg}}}},
		{name: "a pod whose stats fail is skipped",
			pods: []*v1.Pod{pod("a", "1Mi"), pod("b", "1Mi")}, stats: map[string]eviction.PodStats{"a": over, "b": over},
			statsErr: map[string]bool{"a": true},
			want: want{Evicted: []string{"b"}, Kills: []kill{evicted("uid-b", podMsg)},
				Events: []event{{"uid-b", "Warning", "Evicted", podMsg}}}},
		{name: "no pods when the list fails", pods: []*v1.Pod{pod("a", "1Mi")},
			stats: map[string]eviction.PodStats{"a": over}, listErr: true},
		{name: "critical pods are never evicted", pods: []*v1.Pod{critical},
			stats: map[string]eviction.PodStats{"critical": over}},
		{name: "a dedicated image filesystem keeps the writable layer out of a container's limit",
			pods:      []*v1.Pod{twoContainers()},
			stats:     twoContainersStats(),
			dedicated: true},
		{name: "without one, the container over its own limit is evicted",
			pods:  []*v1.Pod{twoContainers()},
			stats: twoContainersStats(),
			want: want{Evicted: []string{"two"},
				Kills:  []kill{evicted("uid-two", `Container app exceeded its local ephemeral storage limit "1Mi". `)},
				Events: []event{{"uid-two", "Warning", "Evicted", `Container app exceeded its local ephemeral storage limit "1Mi". `}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeNode{fail: tc.fail}
			e, err := evict.New(evict.Config{Node: f, Recorder: f, DedicatedImageFs: tc.dedicated,
				ActivePods: func(context.Context) ([]*v1.Pod, error) {
					if tc.listErr {
						return nil, errors.New("list failed")
					}
					return tc.pods, nil
				},
				Stats: func(_ context.Context, p *v1.Pod) (eviction.PodStats, error) {
					if tc.statsErr[p.Name] {
						return eviction.PodStats{}, errors.New("no stats")
					}
					return tc.stats[p.Name], nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			var got want
			for _, p := range e.Synchronize(t.Context()) {
				got.Evicted = append(got.Evicted, p.Name)
			}
			got.Kills, got.Events = f.taken()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Run checks at once, then Period after each round, and stops with its context.
func TestRunPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeNode{}
		var mu sync.Mutex
		usage := int64(0)
		rounds := 0
		p := pod("grows", "1Mi")
		e, err := evict.New(evict.Config{Node: f, Period: 3 * time.Second,
			ActivePods: func(context.Context) ([]*v1.Pod, error) {
				mu.Lock()
				defer mu.Unlock()
				rounds++
				return []*v1.Pod{p}, nil
			},
			Stats: func(context.Context, *v1.Pod) (eviction.PodStats, error) {
				mu.Lock()
				defer mu.Unlock()
				return eviction.PodStats{EphemeralStorageBytes: i64(usage)}, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		check := func(wantRounds, wantKills int) {
			t.Helper()
			synctest.Wait()
			mu.Lock()
			r := rounds
			mu.Unlock()
			f.mu.Lock()
			k := len(f.kills)
			f.mu.Unlock()
			if r != wantRounds || k != wantKills {
				t.Fatalf("rounds %d, kills %d; want %d, %d", r, k, wantRounds, wantKills)
			}
		}
		check(1, 0)
		time.Sleep(2 * time.Second)
		check(1, 0)
		mu.Lock()
		usage = 2 * mi
		mu.Unlock()
		time.Sleep(time.Second)
		check(2, 1)
		time.Sleep(3 * time.Second)
		check(3, 2)
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func TestNewInvalid(t *testing.T) {
	pods := func(context.Context) ([]*v1.Pod, error) { return nil, nil }
	stats := func(context.Context, *v1.Pod) (eviction.PodStats, error) { return eviction.PodStats{}, nil }
	for _, tc := range []struct {
		name string
		cfg  evict.Config
	}{
		{"no node", evict.Config{ActivePods: pods, Stats: stats}},
		{"no pods", evict.Config{Node: &fakeNode{}, Stats: stats}},
		{"no stats", evict.Config{Node: &fakeNode{}, ActivePods: pods}},
		{"negative period", evict.Config{Node: &fakeNode{}, ActivePods: pods, Stats: stats, Period: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := evict.New(tc.cfg); !errors.Is(err, evict.ErrInvalidConfig) {
				t.Errorf("New: %v, want ErrInvalidConfig", err)
			}
		})
	}
}
