package node_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/podworker"
)

// failOnce is a runtime whose first SyncPod fails.
type failOnce struct {
	node.Runtime
	mu     sync.Mutex
	failed bool
}

func (f *failOnce) SyncPod(ctx context.Context, pod *v1.Pod, rs *pleg.PodStatus) error {
	f.mu.Lock()
	first := !f.failed
	f.failed = true
	f.mu.Unlock()
	if first {
		return errors.New("injected failure")
	}
	return f.Runtime.SyncPod(ctx, pod, rs)
}

// observations records what the recorder and the metrics hooks were given.
type observations struct {
	mu           sync.Mutex
	events       []string
	syncs        []string
	transitions  []string
	relists      int
	healthy      bool
	statusSyncs  int
	housekeeping []node.HousekeepingRound
}

func (o *observations) add(list *[]string, format string, args ...any) {
	o.mu.Lock()
	*list = append(*list, fmt.Sprintf(format, args...))
	o.mu.Unlock()
}

func (o *observations) metrics() node.Metrics {
	return node.Metrics{
		PodWorkers: podworker.Hooks{
			SyncFinished: func(s podworker.Sync) {
				o.add(&o.syncs, "%s %s err=%v", s.PodName(), s.OperationType(), s.Err != nil)
			},
			Transition: func(t podworker.Transition, _ time.Time) {
				o.add(&o.transitions, "%s %s->%s", t.PodName(), t.From, t.To)
			},
		},
		PLEG: pleg.Hooks{Relisted: func(r pleg.Relist) {
			o.mu.Lock()
			o.relists++
			o.healthy = r.Healthy
			o.mu.Unlock()
		}},
		StatusSyncLatency: func(time.Duration) { o.mu.Lock(); o.statusSyncs++; o.mu.Unlock() },
		Housekeeping: func(r node.HousekeepingRound) {
			o.mu.Lock()
			o.housekeeping = append(o.housekeeping, r)
			o.mu.Unlock()
		},
	}
}

// TestObserve: a pod created, whose first sync fails, then deleted: the recorder gets
// the kubelet's events (FailedSync, Killing) and the metrics hooks fire with the pod's
// syncs, stage changes, relists, status writes and housekeeping counts.
func TestObserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := &observations{}
		rec := node.EventRecorderFunc(func(p *v1.Pod, typ, reason, msg string) {
			o.add(&o.events, "%s/%s %s %s: %s", p.Namespace, p.Name, typ, reason, msg)
		})
		e := start(t, nil, nil, envOpts{recorder: rec, metrics: o.metrics(),
			wrap: func(rt node.Runtime) node.Runtime { return &failOnce{Runtime: rt} }})
		e.create(newPod("web", 30, v1.RestartPolicyAlways, nil))
		e.waitPhase("web", v1.PodRunning)
		time.Sleep(3 * time.Second) // a housekeeping round sees the pod
		synctest.Wait()
		o.mu.Lock()
		during := o.housekeeping[len(o.housekeeping)-1]
		o.mu.Unlock()
		if err := e.api.Delete("default", "web", nil); err != nil {
			t.Fatal(err)
		}
		e.waitGone("web")
		time.Sleep(5 * time.Second)
		e.stop()

		o.mu.Lock()
		defer o.mu.Unlock()
		want := []string{
			"default/web Warning FailedSync: error syncing pod: injected failure",
			"default/web Normal Killing: Stopping container app",
		}
		if diff := cmp.Diff(want, o.events); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		if len(o.syncs) < 3 || o.syncs[0] != "default/web create err=true" ||
			!slices.Contains(o.syncs, "default/web kill err=false") || !slices.Contains(o.syncs, "default/web terminated err=false") {
			t.Errorf("syncs = %q", o.syncs)
		}
		wantT := []string{"default/web none->syncing", "default/web syncing->terminating",
			"default/web terminating->terminated", "default/web terminated->finished", "default/web finished->none"}
		if diff := cmp.Diff(wantT, o.transitions); diff != "" {
			t.Errorf("transitions (-want +got):\n%s", diff)
		}
		if o.relists == 0 || !o.healthy || o.statusSyncs == 0 {
			t.Errorf("relists %d (healthy %v), status syncs %d", o.relists, o.healthy, o.statusSyncs)
		}
		if during.DesiredPods != 1 || during.DesiredStaticPods != 0 || len(during.Working) != 15 {
			t.Errorf("housekeeping while running = %+v", during)
		}
		for _, w := range during.Working {
			want := 0
			if w == (node.WorkingPods{Lifecycle: "sync", Config: "desired", Static: "", Count: w.Count}) {
				want = 1
			}
			if w.Count != want {
				t.Errorf("working pods %+v, want count %d", w, want)
			}
		}
		if last := o.housekeeping[len(o.housekeeping)-1]; last.DesiredPods != 0 {
			t.Errorf("housekeeping after the delete = %+v", last)
		}
	})
}

// TestObserveOrphan: a runtime pod no source knows is killed by housekeeping and counted.
func TestObserveOrphan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := &observations{}
		mem := plegtest.NewRuntime(nil)
		if err := mem.StartPod(context.Background(), plegtest.PodSpec{UID: "orphan", Name: "old", Namespace: "default",
			Containers: []plegtest.ContainerSpec{{Name: "app"}}}); err != nil {
			t.Fatal(err)
		}
		e := start(t, nil, mem, envOpts{metrics: o.metrics()})
		time.Sleep(5 * time.Second)
		e.stop()
		o.mu.Lock()
		defer o.mu.Unlock()
		killed := 0
		for _, r := range o.housekeeping {
			killed += r.OrphansKilled
		}
		if killed != 1 {
			t.Errorf("orphans killed = %d, want 1", killed)
		}
		if !slices.Contains(o.syncs, "default/old kill err=false") {
			t.Errorf("syncs = %q, want the orphan's kill", o.syncs)
		}
	})
}
