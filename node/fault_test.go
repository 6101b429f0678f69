package node_test

import (
	"container/heap"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/node/nodetest"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/pleg/plegtest"
	"github.com/podlife/podlife/statusmgr"
	"github.com/podlife/podlife/statusmgr/statusmgrtest"
)

var (
	faultPods     = flag.Int("faults.pods", 400, "TestFaults: pods created per seed")
	faultSeeds    = flag.Int("faults.seeds", 5, "TestFaults: seeds to run (1..N)")
	faultSeed     = flag.Uint64("faults.seed", 0, "TestFaults: run only this seed (0: seeds 1..faults.seeds)")
	faultRate     = flag.Float64("faults.rate", 0.3, "TestFaults: share of API calls that fail")
	faultRestarts = flag.Int("faults.restarts", 3, "TestFaults: agent restarts per seed")
	faultTrace    = flag.String("faults.trace", "", "TestFaults: log every call and change of the pods of this name")
)

// TestFaults runs a node agent wired from the library (node.New + nodetest.FeedAPI +
// nodetest.Runtime) over an API server and a runtime that fail at random, on fake time,
// for many pods with every kind of life (see faultStory), restarting the agent now and
// then while pods terminate, and checks the lifecycle's invariants at the API server on
// every call and at the end (faultAPI). Flags: -faults.pods, -faults.seeds, -faults.seed,
// -faults.rate.
func TestFaults(t *testing.T) {
	seeds := make([]uint64, 0, *faultSeeds)
	if *faultSeed != 0 {
		seeds = append(seeds, *faultSeed)
	} else {
		for s := range *faultSeeds {
			seeds = append(seeds, uint64(s+1))
		}
	}
	for _, seed := range seeds {
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				h := runFaults(t, faultOpts{seed: seed, pods: *faultPods, rate: *faultRate, restarts: *faultRestarts})
				t.Logf("%s", h.summary())
				for _, v := range h.violations() {
					t.Errorf("violation: %s", v)
				}
			})
		})
	}
}

// TestFaultsCatchesPlantedBug plants bugs between the node and the checker and asserts
// that the checker reports each.
func TestFaultsCatchesPlantedBug(t *testing.T) {
	cases := []struct {
		name  string
		plant func(statusmgr.StatusPatcher) statusmgr.StatusPatcher
		want  string
	}{
		{"early delete", plantEarlyDelete, vDeleteNotTerminal},
		{"terminal patch dropped", plantDropTerminal, vStuck},
		{"patch without uid", plantStripUID, vPatchNoUID},
		{"delete with another pod's uid", plantWrongUID, vUnseenUID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				h := runFaults(t, faultOpts{seed: 7, pods: 40, rate: 0.1, restarts: 1, plant: tc.plant, settle: 3 * time.Minute})
				vs := h.violations()
				var kinds []string
				for _, v := range vs {
					kinds = append(kinds, v.Kind)
				}
				if !slices.Contains(kinds, tc.want) {
					t.Fatalf("planted bug not reported: want a %s violation, got %d: %q", tc.want, len(vs), kinds)
				}
				t.Logf("%d violations; first %s: %s", len(vs), tc.want, vs[slices.Index(kinds, tc.want)])
			})
		})
	}
}

// faultStory is the life a pod of the fault test has.
type faultStory int

const (
	storyRunDelete         faultStory = iota // runs, is deleted (grace 1-30 s), stops in its own time
	storyShorten                             // deleted with grace 30, deleted again with 1-5 s while it stops
	storyDeleteBeforeStart                   // created and deleted at once
	storyExitOwn                             // Never/OnFailure, exits on its own (0 or 1); sometimes deleted later
	storyRecreate                            // force-deleted (sometimes while terminating) and created again under the same name
	nStories
)

func (s faultStory) String() string {
	return [...]string{"run-delete", "shorten", "delete-before-start", "exit-own", "recreate"}[s]
}

type faultOpts struct {
	seed     uint64
	pods     int
	rate     float64
	restarts int
	plant    func(statusmgr.StatusPatcher) statusmgr.StatusPatcher
	// settle is how long the server may take to be empty after the last deletes
	// (0: 30 minutes).
	settle time.Duration
}

// faultHarness is one seed's run: the API server, the runtime, the node running now, and
// the faultSchedule of what happens to the pods.
type faultHarness struct {
	t     *testing.T
	o     faultOpts
	rng   *rand.Rand // the scenario's, used by the driver goroutine only
	start time.Time
	api   *statusmgrtest.FakeAPI
	mem   *plegtest.Runtime
	rt    *faultRuntime
	fa    *faultAPI

	cancel   context.CancelFunc
	runDone  chan error
	feedDone chan error
	nodes    int

	queue   faultSchedule
	seq     int
	names   []string // every name used
	stories [nStories]int
	extra   []violation   // of the harness itself (Run)
	settled time.Duration // from the last deletes to an empty server
}

func runFaults(t *testing.T, o faultOpts) *faultHarness {
	mem := plegtest.NewRuntime(nil)
	api := statusmgrtest.NewFakeAPI()
	f := newFaults(o.seed)
	h := &faultHarness{t: t, o: o, rng: rand.New(rand.NewPCG(o.seed, 0x5eed)), start: time.Now(), api: api, mem: mem,
		rt: &faultRuntime{Runtime: nodetest.NewRuntime(mem, nodetest.ContainerBehaviour{}), faults: f, stats: map[string]int{}},
		fa: newFaultAPI(api, mem, f, o.rate)}
	if *faultTrace != "" {
		h.fa.trace = func(name, msg string) {
			if name == *faultTrace {
				t.Logf("%v %s: %s", time.Since(h.start), name, msg)
			}
		}
	}
	h.startNode(0)

	// Pods arrive every 200 ms; the agent restarts a few times meanwhile.
	arrivals := time.Duration(o.pods) * 200 * time.Millisecond
	for i := range o.pods {
		name := fmt.Sprintf("p%04d", i)
		h.names = append(h.names, name)
		at := time.Duration(i) * 200 * time.Millisecond
		h.at(at, func() { h.createPod(name, faultStory(h.rng.IntN(int(nStories)))) })
	}
	for range o.restarts {
		at := 10*time.Second + h.dur(int(arrivals/time.Millisecond))
		h.at(at, func() {
			h.stopNode()
			h.startNode(h.dur(10000))
		})
	}
	for h.queue.Len() > 0 {
		ev := heap.Pop(&h.queue).(*faultStep)
		if d := time.Until(h.start.Add(ev.at)); d > 0 {
			time.Sleep(d)
		}
		ev.do()
	}
	// Everything left is deleted; then time passes (the longest grace is 30 s, the
	// pod workers back off up to 10 s, full status syncs run every 10 s).
	time.Sleep(30 * time.Second)
	for _, name := range h.names {
		g := int64(1 + h.rng.IntN(10))
		_ = h.api.Delete("default", name, &g)
	}
	// Wait until the server holds no pod, for at most o.settle (a stuck pod never
	// goes; a slow status manager behind failing calls takes a while), then a little
	// more for the runtime's leftovers.
	deleted := time.Now()
	settle := o.settle
	if settle == 0 {
		settle = 30 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	_ = h.api.WaitForPods(ctx, func(pods map[types.NamespacedName]*v1.Pod) bool { return len(pods) == 0 })
	cancel()
	h.settled = time.Since(deleted)
	time.Sleep(30 * time.Second)
	h.fa.checkEnd()
	h.stopNode()
	for _, rp := range mustList(h.mem) {
		if h.mem.IsRunning(rp.ID) {
			h.extra = append(h.extra, violation{At: time.Now(), Kind: vRuntimeLeftover, Pod: rp.Namespace + "/" + rp.Name, UID: rp.ID,
				Detail: "still running in the runtime after every pod was deleted"})
		}
	}
	return h
}

func mustList(mem *plegtest.Runtime) []*pleg.Pod {
	pods, _ := mem.ListPods(context.Background(), true)
	return pods
}

func (h *faultHarness) violations() []violation {
	return append(h.fa.Violations(), h.extra...)
}

func (h *faultHarness) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d pods (", h.o.seed, h.o.pods)
	for s := range nStories {
		fmt.Fprintf(&b, "%s=%d ", s, h.stories[s])
	}
	fmt.Fprintf(&b, "), %d node runs, %v of fake time, the last pods gone %v after their delete; %s",
		h.nodes, time.Since(h.start).Round(time.Second), h.settled.Round(time.Second), h.fa.summary())
	h.rt.mu.Lock()
	keys := make([]string, 0, len(h.rt.stats))
	for k := range h.rt.stats {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, h.rt.stats[k])
	}
	h.rt.mu.Unlock()
	return b.String()
}

// at schedules do at the offset from the start.
func (h *faultHarness) at(at time.Duration, do func()) {
	h.seq++
	heap.Push(&h.queue, &faultStep{at: at, seq: h.seq, do: do})
}

// after schedules do d from now.
func (h *faultHarness) after(d time.Duration, do func()) { h.at(time.Since(h.start)+d, do) }

// startNode starts a new node on the API server and the runtime; its API source delivers
// its first list after delay (an API server slow to answer after a restart).
func (h *faultHarness) startNode(delay time.Duration) {
	var patcher statusmgr.StatusPatcher = h.fa
	if h.o.plant != nil {
		patcher = h.o.plant(h.fa)
	}
	cfg := node.Config{NodeName: nodeName, Runtime: h.rt, Patcher: patcher}
	if *faultTrace != "" {
		run := h.nodes + 1
		cfg.OnEvent = func(ev node.Event) {
			if ev.Pod != nil && ev.Pod.Name == *faultTrace {
				h.t.Logf("%v %s: node %d: %v %s %s %s %v", time.Since(h.start), ev.Pod.Name, run, ev.Kind, ev.Pod.UID, ev.Reason, ev.Message, ev.Err)
			}
		}
	}
	n, err := node.New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.nodes++
	h.t.Logf("%v: node run %d starts; its API source lists after %v", time.Since(h.start), h.nodes, delay)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.runDone, h.feedDone = make(chan error, 1), make(chan error, 1)
	go func() { h.runDone <- n.Run(ctx) }()
	go func() {
		if err := sleepCtx(ctx, delay); err != nil {
			h.feedDone <- nil
			return
		}
		h.feedDone <- nodetest.FeedAPI(ctx, n, h.api, nodeName)
	}()
}

// stopNode stops the node and its source and checks that Run returned (with every
// goroutine it started ended: Run waits for them) within a minute of fake time.
func (h *faultHarness) stopNode() {
	h.cancel()
	for _, ch := range []chan error{h.runDone, h.feedDone} {
		select {
		case err := <-ch:
			if err != nil {
				h.extra = append(h.extra, violation{At: time.Now(), Kind: vRunError, Detail: err.Error()})
			}
		case <-time.After(time.Minute):
			h.extra = append(h.extra, violation{At: time.Now(), Kind: vRunNotReturned, Detail: "Run or the source did not return a minute after the stop"})
		}
	}
}

// quantumMillis is the granularity of the scenario's random times: fewer distinct instants
// make fewer steps of the bubble's fake clock, each of which costs a round of wake-ups.
const quantumMillis = 1000

// dur returns a random duration of at most maxMillis ms, in quanta.
func (h *faultHarness) dur(maxMillis int) time.Duration {
	return time.Duration(h.rng.IntN(maxMillis/quantumMillis+1)) * quantumMillis * time.Millisecond
}

// createPod creates a pod under name and schedules the rest of its story.
func (h *faultHarness) createPod(name string, story faultStory) {
	h.stories[story]++
	grace := int64(1 + h.rng.IntN(30))
	policy := v1.RestartPolicyAlways
	ann := map[string]string{}
	switch h.rng.IntN(6) { // how its containers stop: at once, in their own time, or never
	case 0, 1:
	case 2:
		ann[nodetest.AnnotationStopDelay] = "never"
	default:
		ann[nodetest.AnnotationStopDelay] = h.dur(40000).String()
	}
	if h.rng.IntN(5) == 0 {
		ann[nodetest.AnnotationExitCode] = "1"
	}
	if story == storyShorten {
		grace = 30
		ann[nodetest.AnnotationStopDelay] = []string{"never", "25s"}[h.rng.IntN(2)]
	}
	if story == storyExitOwn {
		policy = []v1.RestartPolicy{v1.RestartPolicyNever, v1.RestartPolicyOnFailure}[h.rng.IntN(2)]
		ann[nodetest.AnnotationRunFor] = (time.Second + h.dur(10000)).String()
		ann[nodetest.AnnotationExitCode] = strconv.Itoa(h.rng.IntN(2))
	}
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: ann},
		Spec: v1.PodSpec{NodeName: nodeName, RestartPolicy: policy, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
	}
	if h.rng.IntN(3) == 0 {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "sidecar", Image: "busybox"})
	}
	if _, err := h.api.Create(p); err != nil {
		return // the name is still taken by a pod being deleted: skip this life
	}
	del := func(g int64) func() { return func() { _ = h.api.Delete("default", name, &g) } }
	switch story {
	case storyRunDelete:
		h.after(h.dur(15000), del(grace))
	case storyShorten:
		d := h.dur(10000)
		h.after(d, del(30))
		h.after(d+h.dur(8000), del(int64(1+h.rng.IntN(5))))
	case storyDeleteBeforeStart:
		del(grace)()
	case storyExitOwn:
		if h.rng.IntN(2) == 0 {
			h.after(h.dur(20000), del(grace))
		}
	case storyRecreate:
		d := h.dur(10000)
		if h.rng.IntN(2) == 0 {
			h.after(d, del(grace)) // terminating when it is force-deleted
			d += h.dur(5000)
		}
		next := faultStory(h.rng.IntN(int(nStories)))
		if next == storyRecreate {
			next = storyRunDelete
		}
		h.after(d, func() {
			zero := int64(0)
			_ = h.api.Delete("default", name, &zero)
			h.createPod(name, next)
		})
	}
}

// faultStep is one step of the scenario.
type faultStep struct {
	at  time.Duration
	seq int
	do  func()
}

// faultSchedule is a min-heap of steps by time, then by order of scheduling.
type faultSchedule []*faultStep

func (s faultSchedule) Len() int { return len(s) }
func (s faultSchedule) Less(i, j int) bool {
	return s[i].at < s[j].at || s[i].at == s[j].at && s[i].seq < s[j].seq
}
func (s faultSchedule) Swap(i, j int) { s[i], s[j] = s[j], s[i] }
func (s *faultSchedule) Push(x any)   { *s = append(*s, x.(*faultStep)) }
func (s *faultSchedule) Pop() any {
	old := *s
	x := old[len(old)-1]
	*s = old[:len(old)-1]
	return x
}
