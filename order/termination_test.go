package order

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

// allNames is the kubelet's getContainerNames: every container runs.
func allNames(p *v1.Pod) []string {
	var running []string
	for _, c := range p.Spec.InitContainers {
		running = append(running, c.Name)
	}
	for _, c := range p.Spec.Containers {
		running = append(running, c.Name)
	}
	return running
}

// waits plays a stop of the pod: every container's turn comes once what it waits for
// (Stop.After) stopped, or after budget; stopping takes it stop once its turn came. It
// returns how long each waited, in whole seconds (the kubelet's waitForTurn, truncated).
func waits(stops []Stop, budget time.Duration, stop map[string]time.Duration) map[string]int64 {
	done := map[string]time.Duration{}
	out := map[string]int64{}
	for len(done) < len(stops) {
		for _, s := range stops {
			if _, ok := done[s.Name]; ok {
				continue
			}
			var turn time.Duration
			ready := true
			for _, a := range s.After {
				d, ok := done[a]
				if !ok {
					ready = false
					break
				}
				turn = max(turn, d)
			}
			if !ready {
				continue
			}
			turn = min(turn, max(budget, 0))
			out[s.Name] = int64(turn.Seconds())
			done[s.Name] = turn + stop[s.Name]
		}
	}
	return out
}

func sidecars(names ...string) []v1.Container {
	var cs []v1.Container
	for _, n := range names {
		cs = append(cs, v1.Container{Name: n, Image: "busybox", RestartPolicy: &always})
	}
	return cs
}

// TestTerminationOrdering ports the kubelet's kuberuntime_termination_order_test.go
// (v1.37.2): TestTerminationOrderingSidecarStopAfterMain,
// TestTerminationOrderingSidecarsInReverseOrder and TestTerminationOrderingObeysGrace, as
// the delays each container waits for its turn.
func TestTerminationOrdering(t *testing.T) {
	for _, tc := range []struct {
		name  string
		inits []v1.Container
		grace map[string]int64 // the grace each waits with
		stop  map[string]time.Duration
		want  map[string]int64
	}{
		{
			name:  "TestTerminationOrderingSidecarStopAfterMain",
			inits: sidecars("init"),
			grace: map[string]int64{"init": 30, "main": 0},
			stop:  map[string]time.Duration{"main": time.Second},
			want:  map[string]int64{"init": 1, "main": 0},
		},
		{
			name:  "TestTerminationOrderingSidecarsInReverseOrder",
			inits: sidecars("sc1", "sc2", "sc3"),
			grace: map[string]int64{"sc1": 30, "sc2": 30, "sc3": 30, "main": 30},
			stop:  map[string]time.Duration{"sc1": 1250 * time.Millisecond, "sc2": 1250 * time.Millisecond, "sc3": 1250 * time.Millisecond, "main": 1250 * time.Millisecond},
			want:  map[string]int64{"sc1": 3, "sc2": 2, "sc3": 1, "main": 0},
		},
		{
			name:  "TestTerminationOrderingObeysGrace",
			inits: sidecars("sc1", "sc2", "sc3"),
			grace: map[string]int64{"sc1": 2, "sc2": 2, "sc3": 2, "main": 2},
			stop:  map[string]time.Duration{"sc1": time.Second, "sc2": time.Second, "sc3": time.Second, "main": time.Second},
			want:  map[string]int64{"sc1": 2, "sc2": 2, "sc3": 1, "main": 0},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: tc.inits, Containers: []v1.Container{{Name: "main", Image: "busybox"}}}}
			stops := Termination(pod, allNames(pod))
			// One budget per container: play each with its own.
			got := map[string]int64{}
			for _, s := range stops {
				got[s.Name] = waits(stops, TurnBudget(tc.grace[s.Name], 0), tc.stop)[s.Name]
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTermination(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		running []string
		want    []Stop
	}{
		{
			name:    "no sidecar: all at once",
			pod:     &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "init"}}, Containers: []v1.Container{{Name: "a"}, {Name: "b"}}}},
			running: []string{"a", "b"},
			want:    []Stop{{Name: "a"}, {Name: "b"}},
		},
		{
			name:    "sidecars after the running main containers, in reverse order",
			pod:     &v1.Pod{Spec: v1.PodSpec{InitContainers: append(sidecars("s1", "s2"), v1.Container{Name: "init"}), Containers: []v1.Container{{Name: "a"}, {Name: "b"}}}},
			running: []string{"s1", "s2", "a"},
			want:    []Stop{{Name: "s1", After: []string{"a", "s2"}}, {Name: "s2", After: []string{"a"}}, {Name: "a"}},
		},
		{
			// The kubelet's closed channel: s1 does not wait for s3 when s2 is gone.
			name:    "a sidecar that does not run breaks the chain",
			pod:     &v1.Pod{Spec: v1.PodSpec{InitContainers: sidecars("s1", "s2", "s3"), Containers: []v1.Container{{Name: "a"}}}},
			running: []string{"a", "s1", "s3"},
			want:    []Stop{{Name: "a"}, {Name: "s1", After: []string{"a"}}, {Name: "s3", After: []string{"a"}}},
		},
		{
			name:    "a name not in the spec stops at once",
			pod:     &v1.Pod{Spec: v1.PodSpec{InitContainers: sidecars("s1"), Containers: []v1.Container{{Name: "a"}}}},
			running: []string{"ghost", "s1"},
			want:    []Stop{{Name: "ghost"}, {Name: "s1"}},
		},
		{name: "nil pod", running: []string{"x"}, want: []Stop{{Name: "x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Termination(tc.pod, tc.running)); diff != "" {
				t.Errorf("Termination (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStopGrace: the kubelet's killContainer takes the preStop hook's time, then the wait
// for the turn, out of the grace period, each in whole seconds, and keeps at least 2 s.
func TestStopGrace(t *testing.T) {
	for _, tc := range []struct {
		name            string
		grace           int64
		preStop, waited time.Duration
		want            int64
		wantBudget      time.Duration
	}{
		{name: "nothing taken", grace: 30, want: 30, wantBudget: 30 * time.Second},
		{name: "preStop 10.9 s", grace: 30, preStop: 10900 * time.Millisecond, want: 20, wantBudget: 20 * time.Second},
		{name: "waited 5.5 s after a 10 s preStop", grace: 30, preStop: 10 * time.Second, waited: 5500 * time.Millisecond, want: 15, wantBudget: 20 * time.Second},
		{name: "waited the whole budget", grace: 2, waited: 2 * time.Second, want: 2, wantBudget: 2 * time.Second},
		{name: "preStop took it all", grace: 5, preStop: 9 * time.Second, want: 2, wantBudget: -4 * time.Second},
		{name: "grace 0", grace: 0, waited: time.Second, want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StopGrace(tc.grace, tc.preStop, tc.waited); got != tc.want {
				t.Errorf("StopGrace(%d, %v, %v) = %d, want %d", tc.grace, tc.preStop, tc.waited, got, tc.want)
			}
			if got := TurnBudget(tc.grace, tc.preStop); got != tc.wantBudget {
				t.Errorf("TurnBudget(%d, %v) = %v, want %v", tc.grace, tc.preStop, got, tc.wantBudget)
			}
		})
	}
}
