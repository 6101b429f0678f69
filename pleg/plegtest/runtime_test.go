package plegtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/pleg"
)

func startWeb(t *testing.T, r *Runtime, containers ...ContainerSpec) {
	t.Helper()
	if err := r.StartPod(context.Background(), PodSpec{UID: "u1", Name: "web", Namespace: "default", Containers: containers}); err != nil {
		t.Fatal(err)
	}
}

func states(t *testing.T, r *Runtime) (containers map[string]pleg.ContainerState, sandbox pleg.SandboxState) {
	t.Helper()
	st, err := r.PodStatus(context.Background(), "u1", "web", "default")
	if err != nil {
		t.Fatal(err)
	}
	containers = map[string]pleg.ContainerState{}
	for i := len(st.ContainerStatuses) - 1; i >= 0; i-- { // newest wins
		cs := st.ContainerStatuses[i]
		containers[cs.Name] = cs.State
	}
	if len(st.SandboxStatuses) > 0 {
		sandbox = st.SandboxStatuses[0].State
	}
	return containers, sandbox
}

func TestStartListStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewRuntime(clock.RealClock{})
		startWeb(t, r, ContainerSpec{Name: "app", Image: "busybox"}, ContainerSpec{Name: "side", Image: "envoy"})
		pods, err := r.ListPods(context.Background(), true)
		if err != nil {
			t.Fatal(err)
		}
		if len(pods) != 1 || len(pods[0].Containers) != 2 || len(pods[0].Sandboxes) != 1 {
			t.Fatalf("ListPods = %+v", pods)
		}
		for _, c := range append(pods[0].Containers, pods[0].Sandboxes...) {
			if c.State != pleg.ContainerStateRunning {
				t.Errorf("container %s is %s, want running", c.ID, c.State)
			}
		}
		got, sb := states(t, r)
		if diff := cmp.Diff(map[string]pleg.ContainerState{"app": "running", "side": "running"}, got); diff != "" || sb != pleg.SandboxReady {
			t.Errorf("states (-want +got):\n%s sandbox %s", diff, sb)
		}
		st, _ := r.PodStatus(context.Background(), "u1", "web", "default")
		if len(st.IPs) != 1 || !st.IsRunning() {
			t.Errorf("status = %+v, want one IP and running", st)
		}
		// Starting again is idempotent.
		startWeb(t, r, ContainerSpec{Name: "app"}, ContainerSpec{Name: "side"})
		if pods, _ := r.ListPods(context.Background(), true); len(pods[0].Containers) != 2 {
			t.Errorf("StartPod twice made %d containers, want 2", len(pods[0].Containers))
		}
	})
}

func TestExitOnItsOwnAndRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewRuntime(clock.RealClock{})
		startWeb(t, r, ContainerSpec{Name: "job", RunFor: 10 * time.Second, ExitCode: 3})
		time.Sleep(9 * time.Second) // fake time inside the bubble
		if got, _ := states(t, r); got["job"] != pleg.ContainerStateRunning {
			t.Fatalf("job at 9s is %s, want running", got["job"])
		}
		time.Sleep(time.Second)
		st, _ := r.PodStatus(context.Background(), "u1", "web", "default")
		cs := st.FindContainerStatusByName("job")
		if cs.State != pleg.ContainerStateExited || cs.ExitCode != 3 || cs.Reason != ReasonExited {
			t.Fatalf("job at 10s = %+v, want exited with code 3", cs)
		}
		// Without RestartExited the container stays exited.
		startWeb(t, r, ContainerSpec{Name: "job"})
		if got, _ := states(t, r); got["job"] != pleg.ContainerStateExited {
			t.Fatalf("job restarted without RestartExited")
		}
		if err := r.StartPod(context.Background(), PodSpec{UID: "u1", Name: "web", Containers: []ContainerSpec{{Name: "job"}}, RestartExited: true}); err != nil {
			t.Fatal(err)
		}
		st, _ = r.PodStatus(context.Background(), "u1", "web", "default")
		if len(st.ContainerStatuses) != 2 || st.ContainerStatuses[0].State != pleg.ContainerStateRunning || st.ContainerStatuses[0].RestartCount != 1 {
			t.Fatalf("after restart: %+v, want a new running instance with restart count 1", st.ContainerStatuses)
		}
	})
}

func TestKillPod(t *testing.T) {
	cases := []struct {
		name     string
		spec     ContainerSpec
		grace    time.Duration
		wantTook time.Duration
		wantCode int
	}{
		{name: "exits after the stop delay", spec: ContainerSpec{Name: "c", StopDelay: 2 * time.Second}, grace: 30 * time.Second, wantTook: 2 * time.Second, wantCode: 0},
		{name: "preStop hook then the stop delay", spec: ContainerSpec{Name: "c", PreStop: 5 * time.Second, StopDelay: time.Second}, grace: 30 * time.Second, wantTook: 6 * time.Second, wantCode: 0},
		{name: "ignores the signal: killed at the grace period", spec: ContainerSpec{Name: "c", StopDelay: -1}, grace: 30 * time.Second, wantTook: 30 * time.Second, wantCode: ExitCodeKilled},
		{name: "slower than the grace period: killed", spec: ContainerSpec{Name: "c", StopDelay: 45 * time.Second}, grace: 30 * time.Second, wantTook: 30 * time.Second, wantCode: ExitCodeKilled},
		{name: "grace 0 kills at once", spec: ContainerSpec{Name: "c", StopDelay: 5 * time.Second}, grace: 0, wantTook: 0, wantCode: ExitCodeKilled},
		{name: "stops at once", spec: ContainerSpec{Name: "c"}, grace: 30 * time.Second, wantTook: 0, wantCode: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := NewRuntime(clock.RealClock{})
				startWeb(t, r, tc.spec)
				start := time.Now()
				if err := r.KillPod(context.Background(), "u1", tc.grace); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took != tc.wantTook {
					t.Errorf("KillPod took %v, want %v", took, tc.wantTook)
				}
				st, _ := r.PodStatus(context.Background(), "u1", "web", "default")
				cs := st.FindContainerStatusByName("c")
				if cs.State != pleg.ContainerStateExited || cs.ExitCode != tc.wantCode {
					t.Errorf("container = %+v, want exited with %d", cs, tc.wantCode)
				}
				if st.IsRunning() || len(st.IPs) != 0 {
					t.Errorf("pod still running after KillPod: %+v", st)
				}
			})
		})
	}
}

func TestKillPodShortenedAndCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewRuntime(clock.RealClock{})
		startWeb(t, r, ContainerSpec{Name: "c", StopDelay: -1})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- r.KillPod(ctx, "u1", 30*time.Second) }()
		time.Sleep(10 * time.Second)
		cancel() // the grace period was shortened: the pod worker cancels and calls again
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled KillPod = %v, want context.Canceled", err)
		}
		if !r.IsRunning("u1") {
			t.Fatal("a cancelled KillPod stopped the pod")
		}
		start := time.Now()
		if err := r.KillPod(context.Background(), "u1", 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 5*time.Second {
			t.Errorf("shortened KillPod took %v, want 5s", took)
		}
		// A longer period never postpones a kill already due.
		startWeb(t, r, ContainerSpec{Name: "c"}) // sandbox recreated; container stays exited
		if got, _ := states(t, r); got["c"] != pleg.ContainerStateExited {
			t.Errorf("container restarted without RestartExited")
		}
	})
}

func TestRemoveUnknownAndErrors(t *testing.T) {
	r := NewRuntime(nil)
	ctx := context.Background()
	if err := r.StartPod(ctx, PodSpec{Name: "x"}); !errors.Is(err, ErrInvalidPod) {
		t.Errorf("StartPod without UID = %v, want ErrInvalidPod", err)
	}
	if err := r.KillPod(ctx, "nope", time.Second); err != nil {
		t.Errorf("KillPod of an unknown pod = %v, want nil", err)
	}
	st, err := r.PodStatus(ctx, "nope", "n", "ns")
	if err != nil || st.ID != "nope" || len(st.ContainerStatuses) != 0 {
		t.Errorf("PodStatus of unknown pod = %+v, %v; want empty status", st, err)
	}
	startWeb(t, r, ContainerSpec{Name: "c"})
	boom := errors.New("boom")
	r.SetListError(boom)
	if _, err := r.ListPods(ctx, true); !errors.Is(err, boom) {
		t.Errorf("ListPods = %v, want boom", err)
	}
	r.SetListError(nil)
	r.SetPodStatusError("u1", boom)
	if _, err := r.PodStatus(ctx, "u1", "web", "default"); !errors.Is(err, boom) {
		t.Errorf("PodStatus = %v, want boom", err)
	}
	r.SetPodStatusError("u1", nil)
	if running, _ := r.ListPods(ctx, false); len(running) != 1 {
		t.Errorf("ListPods(running) = %d pods, want 1", len(running))
	}
	r.RemovePod("u1")
	if pods, _ := r.ListPods(ctx, true); len(pods) != 0 {
		t.Errorf("after RemovePod: %d pods", len(pods))
	}
	if c := r.Calls(); c.ListPods != 3 || c.PodStatus != 2 {
		t.Errorf("Calls = %+v, want 3 lists and 2 statuses", c)
	}
}

// TestRemovePodKeepsCreationOrder: ListPods lists in creation order while pods are removed
// (lazily, then compacted) and a removed UID is started again (it lists last).
func TestRemovePodKeepsCreationOrder(t *testing.T) {
	ctx := context.Background()
	r := NewRuntime(nil)
	start := func(uid string) {
		t.Helper()
		if err := r.StartPod(ctx, PodSpec{UID: types.UID(uid), Name: uid, Namespace: "default"}); err != nil {
			t.Fatal(err)
		}
	}
	list := func() []string {
		t.Helper()
		pods, err := r.ListPods(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range pods {
			out = append(out, string(p.ID))
		}
		return out
	}
	for _, uid := range []string{"a", "b", "c", "d", "e"} {
		start(uid)
	}
	for _, step := range []struct {
		remove, start string
		want          []string
	}{
		{remove: "b", want: []string{"a", "c", "d", "e"}},
		{remove: "b", want: []string{"a", "c", "d", "e"}}, // twice: a no-op
		{start: "b", want: []string{"a", "c", "d", "e", "b"}},
		{remove: "a", want: []string{"c", "d", "e", "b"}},
		{remove: "d", want: []string{"c", "e", "b"}}, // compacts
		{remove: "e", want: []string{"c", "b"}},
		{start: "a", want: []string{"c", "b", "a"}},
		{remove: "c", want: []string{"b", "a"}},
		{remove: "b", want: []string{"a"}},
		{remove: "a", want: nil},
		{start: "e", want: []string{"e"}},
	} {
		if step.remove != "" {
			r.RemovePod(types.UID(step.remove))
		}
		if step.start != "" {
			start(step.start)
		}
		if diff := cmp.Diff(step.want, list()); diff != "" {
			t.Fatalf("after remove %q, start %q: (-want +got)\n%s", step.remove, step.start, diff)
		}
	}
}

// TestConcurrentPods drives many pods at once (for the race detector): each goroutine
// starts its pods, reads their status, kills and removes every other one, while another
// reads the pods of the first and another lists (each list in creation order); then each
// pod is in the state its calls left it in, the IDs are all distinct and every call was
// counted.
func TestConcurrentPods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewRuntime(clock.RealClock{})
		ctx := context.Background()
		const workers, each = 4, 24
		uid := func(w, i int) types.UID { return types.UID(fmt.Sprintf("p-%d-%d", w, i)) }
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					spec := PodSpec{UID: uid(w, i), Name: string(uid(w, i)), Containers: []ContainerSpec{{Name: "a"}, {Name: "b"}}}
					if err := r.StartPod(ctx, spec); err != nil {
						t.Error(err)
					}
					if st, err := r.PodStatus(ctx, spec.UID, spec.Name, ""); err != nil || !st.IsRunning() {
						t.Errorf("status of %s = %+v, %v; want running", spec.UID, st, err)
					}
					if i%2 == 1 {
						if err := r.KillPod(ctx, spec.UID, time.Second); err != nil {
							t.Error(err)
						}
						r.RemovePod(spec.UID)
					}
				}
			})
		}
		wg.Go(func() { // reads the pods that worker 0 starts and kills
			for i := range each {
				_, _ = r.PodStatus(ctx, uid(0, i), "", "")
				r.IsRunning(uid(0, i))
			}
		})
		wg.Go(func() { // lists: each worker's pods in the order it started them
			for range 20 {
				pods, err := r.ListPods(ctx, true)
				if err != nil {
					t.Error(err)
				}
				last := map[int]int{}
				for _, p := range pods {
					var w, i int
					if _, err := fmt.Sscanf(string(p.ID), "p-%d-%d", &w, &i); err != nil {
						t.Error(err)
						continue
					}
					if prev, ok := last[w]; ok && prev >= i {
						t.Errorf("pod %s listed after p-%d-%d", p.ID, w, prev)
					}
					last[w] = i
				}
			}
		})
		wg.Wait()
		pods, err := r.ListPods(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(pods) != workers*each/2 {
			t.Fatalf("%d pods listed, want %d", len(pods), workers*each/2)
		}
		ids := map[string]bool{}
		for _, p := range pods {
			for _, c := range append(p.Containers, p.Sandboxes...) {
				if ids[c.ID] {
					t.Errorf("ID %s given twice", c.ID)
				}
				ids[c.ID] = true
				if c.State != pleg.ContainerStateRunning {
					t.Errorf("pod %s: %s is %s, want running", p.ID, c.ID, c.State)
				}
			}
		}
		for w := range workers {
			for i := range each {
				if got, want := r.IsRunning(uid(w, i)), i%2 == 0; got != want {
					t.Errorf("IsRunning(%s) = %v, want %v", uid(w, i), got, want)
				}
			}
		}
		if c := r.Calls(); c.PodStatus != (workers+1)*each || c.ListPods != 21 {
			t.Errorf("Calls = %+v, want %d statuses and 21 lists", c, (workers+1)*each)
		}
	})
}

// TestPodStatusParts: a status lists every sandbox and container, newest first, with the
// pod's IP while its newest sandbox is ready, whether the pod has one of each (the
// status's own memory) or more.
func TestPodStatusParts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := NewRuntime(clock.RealClock{})
		ctx := context.Background()
		startWeb(t, r, ContainerSpec{Name: "app"})
		st, _ := r.PodStatus(ctx, "u1", "web", "default")
		if len(st.SandboxStatuses) != 1 || len(st.ContainerStatuses) != 1 || len(st.IPs) != 1 || st.IPs[0] != st.SandboxStatuses[0].IP {
			t.Fatalf("status = %+v, want one sandbox, one container, the sandbox's IP", st)
		}
		if err := r.KillPod(ctx, "u1", 0); err != nil {
			t.Fatal(err)
		}
		startWeb(t, r, ContainerSpec{Name: "app"}, ContainerSpec{Name: "side"}, ContainerSpec{Name: "more"})
		st, _ = r.PodStatus(ctx, "u1", "web", "default")
		var got []string
		for _, sb := range st.SandboxStatuses {
			got = append(got, fmt.Sprintf("%s %s %d", sb.ID, sb.State, sb.Attempt))
		}
		for _, cs := range st.ContainerStatuses {
			got = append(got, fmt.Sprintf("%s %s %s", cs.ID, cs.Name, cs.State))
		}
		want := []string{
			"sandbox-000003 ready 1", "sandbox-000001 notready 0",
			"container-000005 more running", "container-000004 side running", "container-000002 app exited",
		}
		if diff := cmp.Diff(want, got); diff != "" || len(st.IPs) != 1 {
			t.Errorf("status parts (-want +got):\n%s\nIPs %v", diff, st.IPs)
		}
	})
}

// TestStartPodIDs: a start numbers the new sandbox, then the new containers in the spec's
// order (a name listed twice starts once), and gives the pod the IP of the IDs given out
// before it; a start with nothing to start gives out no ID.
func TestStartPodIDs(t *testing.T) {
	ctx := context.Background()
	r := NewRuntime(nil)
	ids := func(uid types.UID) []string {
		t.Helper()
		st, err := r.PodStatus(ctx, uid, "", "")
		if err != nil {
			t.Fatal(err)
		}
		out := st.IPs
		for _, sb := range st.SandboxStatuses {
			out = append(out, sb.ID)
		}
		for _, cs := range st.ContainerStatuses {
			out = append(out, cs.Name+"="+cs.ID)
		}
		return out
	}
	spec := PodSpec{UID: "a", Name: "a", Containers: []ContainerSpec{{Name: "x"}, {Name: "x"}, {Name: "y"}}}
	for range 2 { // the second start has nothing to start
		if err := r.StartPod(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.StartPod(ctx, PodSpec{UID: "b", Name: "b", Containers: []ContainerSpec{{Name: "z"}}}); err != nil {
		t.Fatal(err)
	}
	want := map[types.UID][]string{
		"a": {"10.88.0.1", "sandbox-000001", "y=container-000003", "x=container-000002"},
		"b": {"10.88.0.4", "sandbox-000004", "z=container-000005"},
	}
	for uid, w := range want {
		if diff := cmp.Diff(w, ids(uid)); diff != "" {
			t.Errorf("pod %s (-want +got):\n%s", uid, diff)
		}
	}
}
