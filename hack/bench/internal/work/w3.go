package work

import (
	"fmt"
	"math/rand/v2"

	"k8s.io/apimachinery/pkg/types"
)

// W3 sizes (BENCHMARKS.md): 1,000 pods x 3 containers + 1 sandbox; every relist 10
// running containers exit, 10 exited ones are removed and 10 new ones start (1% of 3,000),
// each in a different pod, exactly as podlife's pleg/bench_test.go.
const (
	W3Pods       = 1000
	W3PerKind    = 10
	w3KindOffset = W3Pods / 3
)

// Container is one container of the W3 model.
type Container struct {
	ID, Name, Image string
	Running         bool
}

// W3Pod is one pod of the W3 model; it is replaced, never modified, when it changes.
type W3Pod struct {
	UID        types.UID
	Name       string
	Namespace  string
	Sandbox    string
	Containers []Container
}

// W3 is the model runtime of W3. Each side turns its pods into its own runtime's types
// (through a Lister): Changed lists the pods changed by the last Change.
type W3 struct {
	Pods    []*W3Pod
	Changed []int
	nextID  int
	turn    int
	shuffle *rand.Rand
}

// NewW3 returns the model with every pod running two containers and one exited.
func NewW3() *W3 {
	w := &W3{shuffle: rand.New(rand.NewPCG(3, 3))}
	for i := range W3Pods {
		w.Pods = append(w.Pods, &W3Pod{
			UID:       types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)),
			Name:      fmt.Sprintf("busybox-%d", i),
			Namespace: "default",
			Sandbox:   w.newID(),
			Containers: []Container{
				{ID: w.newID(), Name: "app", Image: "busybox", Running: true},
				{ID: w.newID(), Name: "sidecar", Image: "busybox", Running: true},
				{ID: w.newID(), Name: "init", Image: "busybox"},
			},
		})
	}
	return w
}

func (w *W3) newID() string {
	w.nextID++
	return fmt.Sprintf("%064x", w.nextID)
}

// Change applies the next 1% of changes.
func (w *W3) Change() {
	w.turn++
	w.Changed = w.Changed[:0]
	base := w.turn * W3PerKind
	for j := range W3PerKind {
		exit := (base + j) % W3Pods
		remove := (base + j + w3KindOffset) % W3Pods
		start := (base + j + 2*w3KindOffset) % W3Pods
		w.replace(exit, true, func(c Container) (Container, bool) { c.Running = false; return c, true })
		w.replace(remove, false, func(Container) (Container, bool) { return Container{}, false })
		p := *w.Pods[start]
		p.Containers = append(append([]Container(nil), p.Containers...), Container{ID: w.newID(), Name: "app", Image: "busybox", Running: true})
		w.Pods[start] = &p
		w.Changed = append(w.Changed, exit, remove, start)
	}
}

// replace replaces pod i by a copy whose first container with the given running state is
// f's result (dropped if f says so).
func (w *W3) replace(i int, running bool, f func(Container) (Container, bool)) {
	p := *w.Pods[i]
	out := make([]Container, 0, len(p.Containers))
	done := false
	for _, c := range p.Containers {
		if !done && c.Running == running {
			done = true
			var keep bool
			if c, keep = f(c); !keep {
				continue
			}
		}
		out = append(out, c)
	}
	if !done {
		panic(fmt.Sprintf("w3: pod %d has no container running=%v", i, running))
	}
	p.Containers = out
	w.Pods[i] = &p
}

// Order returns the order in which a CRI-like runtime lists the pods this time: random.
func (w *W3) Order() []int {
	o := w.shuffle.Perm(W3Pods)
	return o
}
