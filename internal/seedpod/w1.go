package seedpod

import (
	"math/rand/v2"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// W1 sizes (BENCHMARKS.md): a source of 5,000 pods, 50 rounds, 1% of each kind of change.
const (
	W1Pods    = 5000
	W1Rounds  = 50
	w1Percent = W1Pods / 100
)

// W1 kinds of classification.
const (
	W1Add = iota
	W1Update
	W1Delete
	W1Remove
	W1Reconcile
	W1Kinds
)

// W1KindNames names the W1 kinds.
var W1KindNames = [W1Kinds]string{"add", "update", "delete", "remove", "reconcile"}

// W1 generates BENCHMARKS.md's W1 workload, the one input of config's benchmark and of
// hack/bench's side by side (same seed, same changes): each round one Set of the whole source in which 1% of the pods changed
// status only, 1% changed a label, 1% newly got a deletionTimestamp with grace 30, 1% are
// missing and 1% are new. A changed pod is a new deep copy; in informer mode the
// unchanged pods are the same objects every round, in fresh mode every pod is a new deep
// copy every round.
type W1 struct {
	r     *rand.Rand
	next  int
	seq   int
	pods  []*v1.Pod
	fresh bool
	// Want is what the last round must classify, by kind.
	Want [W1Kinds]map[types.UID]bool
}

// NewW1 returns the generator with its initial source of W1Pods seed pods.
func NewW1(fresh bool) *W1 {
	g := &W1{r: rand.New(rand.NewPCG(1, 1)), fresh: fresh}
	for range W1Pods {
		g.pods = append(g.pods, New(g.next))
		g.next++
	}
	return g
}

// List returns the current source (deep copies in fresh mode).
func (g *W1) List() []*v1.Pod {
	if !g.fresh {
		return append([]*v1.Pod(nil), g.pods...)
	}
	out := make([]*v1.Pod, len(g.pods))
	for i, p := range g.pods {
		out[i] = p.DeepCopy()
	}
	return out
}

// Round makes one round's changes and returns the Set to merge.
func (g *W1) Round() []*v1.Pod {
	var live []int
	for i, p := range g.pods {
		if p.DeletionTimestamp == nil {
			live = append(live, i)
		}
	}
	g.r.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	for k := range g.Want {
		g.Want[k] = map[types.UID]bool{}
	}
	changed := func(k, kind int, edit func(*v1.Pod)) {
		p := g.pods[live[k]].DeepCopy()
		edit(p)
		g.pods[live[k]] = p
		g.Want[kind][p.UID] = true
	}
	for k := range w1Percent {
		g.seq++
		mark := strconv.Itoa(g.seq)
		changed(k, W1Reconcile, func(p *v1.Pod) {
			p.Status.Conditions[1].Status = v1.ConditionFalse
			p.Status.Conditions[1].Reason = "Change" + mark
			p.ResourceVersion += "r"
		})
		changed(w1Percent+k, W1Update, func(p *v1.Pod) {
			p.Labels = map[string]string{"app": "busybox", "change": mark}
			p.ResourceVersion += "u"
		})
		changed(2*w1Percent+k, W1Delete, func(p *v1.Pod) {
			ts := metav1.Unix(1_800_000_000, 0)
			grace := int64(30)
			p.DeletionTimestamp = &ts
			p.DeletionGracePeriodSeconds = &grace
			p.ResourceVersion += "d"
		})
	}
	removed := map[int]bool{}
	for k := range w1Percent {
		i := live[3*w1Percent+k]
		removed[i] = true
		g.Want[W1Remove][g.pods[i].UID] = true
	}
	kept := g.pods[:0]
	for i, p := range g.pods {
		if !removed[i] {
			kept = append(kept, p)
		}
	}
	g.pods = kept
	for range w1Percent {
		p := New(g.next)
		g.next++
		g.pods = append(g.pods, p)
		g.Want[W1Add][p.UID] = true
	}
	return g.List()
}

// Check returns "" if got (by kind) is exactly the round's classification, else what differs.
func (g *W1) Check(got [W1Kinds][]*v1.Pod) string {
	for k := range W1Kinds {
		if len(got[k]) != len(g.Want[k]) {
			return strconv.Itoa(len(got[k])) + " " + W1KindNames[k] + ", want " + strconv.Itoa(len(g.Want[k]))
		}
		for _, p := range got[k] {
			if !g.Want[k][p.UID] {
				return p.Name + " classified " + W1KindNames[k] + " wrongly"
			}
		}
	}
	return ""
}
