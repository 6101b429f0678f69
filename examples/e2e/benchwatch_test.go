package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// benchWatch records, for the pods with one label, when the admin's watch first showed each
// one up (Running, and whatever up adds) and when it showed each object gone. The
// measurements (TestE2ECRIMeasure, TestE2EW8SideBySide, TestE2EW5RealServer) time pods from
// their API call to these events.
type benchWatch struct {
	up func(*v1.Pod) bool

	mu      sync.Mutex
	running map[types.UID]time.Time
	gone    map[types.UID]time.Time
	changed chan struct{} // closed and replaced on every event
	ended   bool
}

// watchBench watches the pods matching selector until ctx ends, from now (a list's
// resourceVersion) and across the server's closing the watch (a retry watcher resumes from
// the last event: a loaded server does close them); up says when a pod counts as up (nil:
// Running and Ready).
func watchBench(t *testing.T, ctx context.Context, admin kubernetes.Interface, selector string, up func(*v1.Pod) bool) *benchWatch {
	t.Helper()
	if up == nil {
		up = func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning && ready(p) }
	}
	pods := admin.CoreV1().Pods(namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return pods.Watch(ctx, o)
		}})
	if err != nil {
		t.Fatal(err)
	}
	b := &benchWatch{up: up, running: map[types.UID]time.Time{}, gone: map[types.UID]time.Time{},
		changed: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			b.record(ev)
		}
		b.mu.Lock()
		b.ended = true
		close(b.changed)
		b.changed = make(chan struct{})
		b.mu.Unlock()
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return b
}

func (b *benchWatch) record(ev watch.Event) {
	p, ok := ev.Object.(*v1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, seen := b.running[p.UID]; !seen && ev.Type != watch.Deleted && b.up(p) {
		b.running[p.UID] = now
	}
	if ev.Type == watch.Deleted {
		b.gone[p.UID] = now
	}
	close(b.changed)
	b.changed = make(chan struct{})
}

// wait waits, without polling, until every pod of uids is up (gone false) or gone.
func (b *benchWatch) wait(t *testing.T, ctx context.Context, uids []types.UID, gone bool) time.Time {
	t.Helper()
	what := "up"
	if gone {
		what = "gone"
	}
	for {
		b.mu.Lock()
		m, changed, ended := b.running, b.changed, b.ended
		if gone {
			m = b.gone
		}
		k := 0
		var last time.Time
		for _, u := range uids {
			if at, ok := m[u]; ok {
				k++
				if at.After(last) {
					last = at
				}
			}
		}
		b.mu.Unlock()
		switch {
		case k == len(uids):
			return last
		case ended:
			t.Fatalf("waiting for %d pods %s: the watch ended with %d", len(uids), what, k)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("waiting for %d pods %s: %v; %d are", len(uids), what, ctx.Err(), k)
		}
	}
}

// since returns, for every pod of from, the time from its stamp in from to the watch's event
// (up, or gone).
func (b *benchWatch) since(from map[types.UID]time.Time, gone bool) []time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.running
	if gone {
		m = b.gone
	}
	out := make([]time.Duration, 0, len(from))
	for u, t0 := range from {
		out = append(out, m[u].Sub(t0))
	}
	return out
}

// pct is the p-th percentile (nearest rank) of ds, rounded to milliseconds.
func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (p*len(s)+99)/100 - 1
	i = max(0, min(i, len(s)-1))
	return s[i].Round(time.Millisecond)
}

// median is the median of ds (the mean of the middle two for an even count).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// medianF is median for numbers.
func medianF(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// loadAverage is /proc/loadavg's first three fields (the machine's load, for the log).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return fmt.Sprintf("%s %s %s", f[0], f[1], f[2])
}

// createAtOnce creates the pods as the admin, each from its own goroutine, and returns when
// each call was made; the pods are force-deleted when the test ends.
func createAtOnce(t *testing.T, ctx context.Context, admin kubernetes.Interface, pods []*v1.Pod) map[types.UID]time.Time {
	t.Helper()
	return atOnce(t, pods, func(i int, p *v1.Pod) (types.UID, error) {
		got, err := admin.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		pods[i] = got
		return got.UID, nil
	}, func() {
		for _, p := range pods {
			_ = admin.CoreV1().Pods(namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		}
	})
}

// deleteAtOnce deletes the pods (their own grace period), each from its own goroutine, and
// returns when each call was made.
func deleteAtOnce(t *testing.T, ctx context.Context, admin kubernetes.Interface, pods []*v1.Pod) map[types.UID]time.Time {
	t.Helper()
	return atOnce(t, pods, func(_ int, p *v1.Pod) (types.UID, error) {
		return p.UID, admin.CoreV1().Pods(namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
	}, nil)
}

// atOnce runs call for every pod concurrently, stamping each before its call; cleanup (if
// set) is registered first.
func atOnce(t *testing.T, pods []*v1.Pod, call func(int, *v1.Pod) (types.UID, error), cleanup func()) map[types.UID]time.Time {
	t.Helper()
	if cleanup != nil {
		t.Cleanup(cleanup)
	}
	stamps := make([]time.Time, len(pods))
	uids := make([]types.UID, len(pods))
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() {
			stamps[i] = time.Now()
			uids[i], errs[i] = call(i, p)
		})
	}
	wg.Wait()
	out := make(map[types.UID]time.Time, len(pods))
	for i := range pods {
		if errs[i] != nil {
			t.Fatalf("%s: %v", pods[i].Name, errs[i])
		}
		out[uids[i]] = stamps[i]
	}
	return out
}
