package statusmgr

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestCacheLanes scripts the cache's two write queues: pods not finished in laneStatus,
// finished pods in laneFinal, each in arrival order, a pod at most once, a pod that
// finishes while queued moved to laneFinal, and a pod set while its write is in flight
// queued again (in its lane as it is then) only when that write is done.
//
// Steps: "set P" stores a new version of pod P (a static pod when P starts with "s"),
// "finish P" its terminal version (TerminatePod), "status P" / "final P" take the next
// pod of that lane and expect P ("-": none), "done P" ends P's write, "take P,Q" expects
// takeQueue's UIDs ("-": none).
func TestCacheLanes(t *testing.T) {
	tests := []struct {
		name  string
		steps []string
	}{
		{"each lane in arrival order", []string{
			"set a", "set b", "finish c", "set d", "finish e",
			"final c", "status a", "status b", "final e", "status d", "status -", "final -"}},
		{"a pod finishing while queued moves to the final lane", []string{
			"set a", "set b", "finish a", "status b", "status -", "final a", "final -"}},
		{"a queued pod set again is queued once", []string{
			"set a", "set a", "finish b", "finish b", "status a", "status -", "final b", "final -"}},
		{"a pod set during its write waits for it", []string{
			"set a", "set b", "status a", "set a", "status b", "status -", "done a", "status a", "status -"}},
		{"a pod finished during its status write is written again in the final lane", []string{
			"set a", "status a", "finish a", "final -", "done a", "status -", "final a"}},
		{"the final lane is not held up by the status lane", []string{
			"set a", "set b", "set c", "finish d", "final d", "status a"}},
		{"a static pod set after TerminatePod is back in the status lane", []string{
			"set s1", "finish s1", "set s1", "final -", "status s1", "status -"}},
		{"take: finished pods first, each once", []string{
			"set a", "set b", "finish b", "finish c", "set d", "take b,c,a,d", "take -", "status -", "final -"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCache()
			pods := map[string]*v1.Pod{}
			for i, step := range tc.steps {
				verb, arg, _ := strings.Cut(step, " ")
				switch verb {
				case "set", "finish":
					p := pods[arg]
					if p == nil {
						p = podWith(func(p *v1.Pod) {
							p.Name, p.UID = arg, types.UID(arg)
							if strings.HasPrefix(arg, "s") {
								p.Annotations[ConfigSourceAnnotationKey] = "file"
							}
						})
						pods[arg] = p
					}
					status, mode := v1.PodStatus{Phase: v1.PodRunning}, setForced
					if e := c.entries[p.UID]; e != nil && IsTerminalPhase(e.status.Phase) {
						status.Phase = e.status.Phase
					}
					if verb == "finish" {
						status.Phase, mode = v1.PodFailed, setFinished
					}
					if changed, err := c.set(p, status, nil, mode, t0); err != nil || !changed {
						t.Fatalf("step %d %q: changed %v, %v", i, step, changed, err)
					}
				case "status", "final":
					l := laneStatus
					if verb == "final" {
						l = laneFinal
					}
					got := "-"
					if s, ok := c.next(l); ok {
						got = string(s.uid)
						if laneOf(s.finished) != l {
							t.Errorf("step %d %q: snapshot of the other lane", i, step)
						}
					}
					if got != arg {
						t.Errorf("step %d %q: got %s", i, step, got)
					}
				case "done":
					c.done(types.UID(arg))
				case "take":
					got := []string{}
					for _, uid := range c.takeQueue() {
						got = append(got, string(uid))
					}
					want := strings.Split(arg, ",")
					if arg == "-" {
						want = []string{}
					}
					if !slices.Equal(got, want) {
						t.Errorf("step %d %q: got %v", i, step, got)
					}
				default:
					t.Fatalf("step %d: unknown %q", i, step)
				}
			}
		})
	}
}
