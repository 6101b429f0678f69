package pleg

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// W3 (BENCHMARKS.md): a runtime with 1,000 pods x 3 containers + 1 sandbox; every relist
// 1% of the containers change: 10 running containers exit, 10 exited ones are removed and
// 10 new ones start, each in a different pod. Every pod is visited once per 100 relists by
// each kind of change, so the population stays at about 3 containers per pod.
const (
	w3Pods       = 1000
	w3PerKind    = 10 // changes of each kind per relist: 30 = 1% of 3,000 containers
	w3KindOffset = w3Pods / 3
)

// w3World is the benchmark's runtime. It keeps two copies of every runtime pod (distinct
// structs, the same strings) and lists them alternately, so each relist compares structs
// the relister has never seen, as a runtime that keeps its pods and builds every list anew
// (a fake, a provider listing its stored pods) gives them; a changed pod is replaced by
// new objects, never modified. W3-cri lists new strings too.
type w3World struct {
	// cri makes every list new, as a CRI runtime's: pods in random order, every ID and
	// name a new string (equal contents).
	cri      bool
	rand     *rand.Rand
	listed   []*Pod         // what ListPods returns, made before the relist is timed
	model    [][]*Container // per pod: containers (the sandbox is separate)
	uids     []types.UID
	names    []string
	sandbox  []string
	copies   [2][]*Pod
	statuses map[types.UID]*PodStatus
	nextID   int
	turn     int // relists so far
}

func newW3World(cri bool) *w3World {
	w := &w3World{cri: cri, rand: rand.New(rand.NewPCG(3, 3)), statuses: make(map[types.UID]*PodStatus, w3Pods)}
	for i := range w3Pods {
		w.uids = append(w.uids, types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)))
		w.names = append(w.names, fmt.Sprintf("busybox-%d", i))
		w.sandbox = append(w.sandbox, w.newID())
		w.model = append(w.model, []*Container{
			{ID: w.newID(), Name: "app", Image: "busybox", State: ContainerStateRunning},
			{ID: w.newID(), Name: "sidecar", Image: "busybox", State: ContainerStateRunning},
			{ID: w.newID(), Name: "init", Image: "busybox", State: ContainerStateExited},
		})
	}
	for k := range 2 {
		w.copies[k] = make([]*Pod, w3Pods)
	}
	for i := range w3Pods {
		w.rebuild(i)
	}
	w.prepareList()
	return w
}

// prepareList makes the list of the current turn: the turn's copy, or in CRI mode a new
// list of it in random order with new strings.
func (w *w3World) prepareList() {
	pods := w.copies[w.turn%2]
	if !w.cri {
		w.listed = pods
		return
	}
	w.listed = make([]*Pod, len(pods))
	for i, k := range w.rand.Perm(len(pods)) {
		p := pods[k]
		w.listed[i] = &Pod{
			ID: types.UID(strings.Clone(string(p.ID))), Name: strings.Clone(p.Name), Namespace: strings.Clone(p.Namespace),
			Containers: cloneContainers(p.Containers), Sandboxes: cloneContainers(p.Sandboxes),
		}
	}
}

// cloneContainers returns new containers equal to cs, with new strings.
func cloneContainers(cs []*Container) []*Container {
	out := make([]*Container, len(cs))
	for i, c := range cs {
		out[i] = &Container{ID: strings.Clone(c.ID), Name: strings.Clone(c.Name), Image: strings.Clone(c.Image), State: c.State}
	}
	return out
}

func (w *w3World) newID() string {
	w.nextID++
	return fmt.Sprintf("%064x", w.nextID)
}

// rebuild makes new objects for pod i in both copies, and its status.
func (w *w3World) rebuild(i int) {
	for k := range 2 {
		// Fresh structs, the model's strings: the relister keeps the strings of the list
		// that first had a container, so these compare by pointer (W3-cri's do not).
		p := &Pod{ID: w.uids[i], Name: w.names[i], Namespace: "default", Containers: make([]*Container, len(w.model[i]))}
		for j, c := range w.model[i] {
			cp := *c
			p.Containers[j] = &cp
		}
		p.Sandboxes = []*Container{{ID: w.sandbox[i], State: ContainerStateRunning}}
		w.copies[k][i] = p
	}
	s := &PodStatus{ID: w.uids[i], Name: w.names[i], Namespace: "default", IPs: []string{"10.0.0.1"}}
	for _, c := range w.model[i] {
		s.ContainerStatuses = append(s.ContainerStatuses, &ContainerStatus{ID: c.ID, Name: c.Name, Image: c.Image, State: c.State})
	}
	s.SandboxStatuses = []*SandboxStatus{{ID: w.sandbox[i], State: SandboxReady}}
	w.statuses[w.uids[i]] = s
}

// change applies the next 1% of changes to the model.
func (w *w3World) change() {
	base := w.turn * w3PerKind
	for j := range w3PerKind {
		exit := (base + j) % w3Pods
		remove := (base + j + w3KindOffset) % w3Pods
		start := (base + j + 2*w3KindOffset) % w3Pods
		w.model[exit] = w.replaceFirst(w.model[exit], ContainerStateRunning, func(c *Container) *Container {
			cp := *c
			cp.State = ContainerStateExited
			return &cp
		})
		w.model[remove] = w.replaceFirst(w.model[remove], ContainerStateExited, func(*Container) *Container { return nil })
		w.model[start] = append(w.model[start][:len(w.model[start]):len(w.model[start])],
			&Container{ID: w.newID(), Name: "app", Image: "busybox", State: ContainerStateRunning})
		w.rebuild(exit)
		w.rebuild(remove)
		w.rebuild(start)
	}
}

// replaceFirst returns cs with its first container in state replaced by f's result
// (dropped if nil), as a new slice.
func (w *w3World) replaceFirst(cs []*Container, state ContainerState, f func(*Container) *Container) []*Container {
	out := make([]*Container, 0, len(cs))
	done := false
	for _, c := range cs {
		if !done && c.State == state {
			done = true
			if c = f(c); c == nil {
				continue
			}
		}
		out = append(out, c)
	}
	if !done {
		panic(fmt.Sprintf("w3: no %s container to change", state))
	}
	return out
}

func (w *w3World) runtime() RuntimeService {
	return RuntimeServiceFuncs{
		ListPodsFunc: func(ctx context.Context, all bool) ([]*Pod, error) {
			return w.listed, nil
		},
		PodStatusFunc: func(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error) {
			return w.statuses[uid], nil
		},
	}
}

func benchmarkW3(b *testing.B, changing, cri bool) {
	w := newW3World(cri)
	r, err := New(Config{Runtime: w.runtime(), Cache: NewCache()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// Warm up: the first relist sees every container as new.
	if err := r.Relist(ctx); err != nil {
		b.Fatal(err)
	}
	// (With the default capacity of 1,000, most of its 4,000 events are dropped.)
	if got, want := len(drain(r.Events()))+int(r.DroppedEvents()), w3Pods*4; got != want {
		b.Fatalf("warm-up relist sent %d events, want %d", got, want)
	}
	dropped := r.DroppedEvents()
	want := map[EventType]int{}
	if changing {
		want = map[EventType]int{ContainerDied: w3PerKind, ContainerRemoved: w3PerKind, ContainerStarted: w3PerKind}
	}
	counts := map[EventType]int{}
	total := 0
	// The relister's own CPU time: its thread's, read around each relist (a loaded
	// machine inflates the wall time by the time the thread waits for a core).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu time.Duration
	_, cpuOK := threadCPU()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		w.turn++
		if changing {
			w.change()
		}
		w.prepareList()
		b.StartTimer()
		cpu0, _ := threadCPU()
		if err := r.Relist(ctx); err != nil {
			b.Fatal(err)
		}
		cpu1, _ := threadCPU()
		b.StopTimer()
		cpu += cpu1 - cpu0
		clear(counts)
	drain:
		for {
			select {
			case e := <-r.Events():
				counts[e.Type]++
				total++
			default:
				break drain
			}
		}
		if len(counts) != len(want) {
			b.Fatalf("relist %d: events %v, want %v", i, counts, want)
		}
		for typ, n := range want {
			if counts[typ] != n {
				b.Fatalf("relist %d: events %v, want %v", i, counts, want)
			}
		}
		if d := r.DroppedEvents(); d != dropped {
			b.Fatalf("relist %d: %d events dropped", i, d-dropped)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(total)/float64(b.N), "events/relist")
	if cpuOK {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkW3Relist is W3: each relist sees 1% of the containers change.
func BenchmarkW3Relist(b *testing.B) { benchmarkW3(b, true, false) }

// BenchmarkW3RelistNoChange is W3 without changes: the steady-state cost of a relist.
func BenchmarkW3RelistNoChange(b *testing.B) { benchmarkW3(b, false, false) }

// BenchmarkW3RelistCRI is W3-cri: W3 with every list in random order and with new ID
// strings, as a CRI runtime lists.
func BenchmarkW3RelistCRI(b *testing.B) { benchmarkW3(b, true, true) }

// BenchmarkW3RelistCRINoChange is W3-cri without changes.
func BenchmarkW3RelistCRINoChange(b *testing.B) { benchmarkW3(b, false, true) }
