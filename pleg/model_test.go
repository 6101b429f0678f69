package pleg

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// FuzzRelistModel drives a runtime of three pods through random changes, relists, status
// failures and refreshes, and checks the relister's promise: applying the delivered events
// to a model of container states (Started: running, Died: exited, Changed: unknown,
// Removed: gone) reproduces the runtime's normalized states after every relist in which no
// status fetch failed, and the cache then holds every listed pod's current containers.
func FuzzRelistModel(f *testing.F) {
	f.Add([]byte{0x00, 0x11, 0x22, 0xf0, 0x05, 0x31, 0xf0, 0xe1, 0xf0, 0xf0})
	f.Add([]byte{0x10, 0x20, 0x30, 0xf0, 0xd0, 0x13, 0xf0, 0xf0, 0xc2, 0xf0})
	f.Add([]byte{0x01, 0x41, 0x51, 0xf0, 0xe0, 0xe1, 0xe2, 0xf0, 0x01, 0xf0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const pods = 3
		states := []ContainerState{ContainerStateRunning, ContainerStateExited, ContainerStateCreated,
			ContainerStateUnknown, "odd", ContainerStateNonExistent /* gone */}
		// runtime[p][id] = state; a pod with no map is not listed.
		runtime := make([]map[string]ContainerState, pods)
		order := make([][]string, pods) // IDs in listing order
		rt := newFakeRuntime()
		r, cache, clk := newTestRelister(t, rt, func(c *Config) {
			c.DeliverContainerChanged = true
			c.EventChannelCapacity = 10000
		})
		model := map[types.UID]map[string]ContainerState{}
		failing := map[types.UID]bool{}
		publish := func() {
			var list []*Pod
			for p := range pods {
				if runtime[p] == nil {
					continue
				}
				pod := &Pod{ID: types.UID(fmt.Sprint("pod", p)), Name: fmt.Sprint("n", p)}
				for _, id := range order[p] {
					s, ok := runtime[p][id]
					if !ok {
						continue
					}
					c := &Container{ID: id, State: s}
					if id[0] == 's' {
						pod.Sandboxes = append(pod.Sandboxes, c)
					} else {
						pod.Containers = append(pod.Containers, c)
					}
				}
				list = append(list, pod)
			}
			rt.set(list...)
			rt.mu.Lock()
			rt.statusErr = map[types.UID]error{}
			for uid := range failing {
				rt.statusErr[uid] = errors.New("injected")
			}
			rt.mu.Unlock()
		}
		apply := func() {
			for {
				select {
				case e := <-r.Events():
					m := model[e.ID]
					if m == nil {
						m = map[string]ContainerState{}
						model[e.ID] = m
					}
					id, _ := e.Data.(string)
					switch e.Type {
					case ContainerStarted:
						m[id] = ContainerStateRunning
					case ContainerDied:
						m[id] = ContainerStateExited
					case ContainerChanged:
						m[id] = ContainerStateUnknown
					case ContainerRemoved:
						delete(m, id)
					}
					if len(m) == 0 {
						delete(model, e.ID)
					}
				default:
					return
				}
			}
		}
		check := func(step int) {
			want := map[types.UID]map[string]ContainerState{}
			for p := range pods {
				if runtime[p] == nil {
					continue
				}
				m := map[string]ContainerState{}
				for id, s := range runtime[p] {
					if n := normalize(s); n != ContainerStateNonExistent {
						m[id] = n
					}
				}
				if len(m) > 0 {
					want[types.UID(fmt.Sprint("pod", p))] = m
				}
			}
			if diff := cmp.Diff(want, model); diff != "" {
				t.Fatalf("op %d: events do not reproduce the runtime (-runtime +events):\n%s", step, diff)
			}
			for uid, m := range want {
				st, err := cache.Get(uid)
				if err != nil {
					t.Fatalf("op %d: cache of %s has error %v", step, uid, err)
				}
				got := map[string]ContainerState{}
				for _, cs := range st.ContainerStatuses {
					if n := normalize(cs.State); n != ContainerStateNonExistent {
						got[cs.ID] = n
					}
				}
				for _, sb := range st.SandboxStatuses {
					got[sb.ID] = map[SandboxState]ContainerState{SandboxReady: ContainerStateRunning}[sb.State]
					if got[sb.ID] == "" {
						got[sb.ID] = ContainerStateExited
					}
				}
				if diff := cmp.Diff(m, got); diff != "" {
					t.Fatalf("op %d: cache of %s is stale (-runtime +cache):\n%s", step, uid, diff)
				}
			}
		}
		for step, op := range ops {
			p := int(op>>4) % pods
			switch low := op & 0x0f; {
			case op >= 0xf0: // relist
				clk.Step(1)
				publish()
				_ = r.Relist(context.Background())
				apply()
				if len(failing) == 0 {
					check(step)
				}
			case op >= 0xe0: // toggle a status failure of pod low%pods
				u := types.UID(fmt.Sprint("pod", int(low)%pods))
				if failing[u] {
					delete(failing, u)
				} else {
					failing[u] = true
				}
			case op >= 0xd0: // remove the pod from the runtime
				runtime[int(low)%pods], order[int(low)%pods] = nil, nil
			case op >= 0xc0: // refresh the pod
				clk.Step(1)
				publish()
				r.mu.Lock()
				known := r.recordFor(types.UID(fmt.Sprint("pod", int(low)%pods))) != nil
				r.mu.Unlock()
				if known { // a refresh of a pod the runtime lists; it must not break the model
					uid := types.UID(fmt.Sprint("pod", int(low)%pods))
					_, _ = r.refresh(context.Background(), uid, r.cache.podHash(uid))
					apply()
				}
			default: // set container low%6 (ids c0..c4, s5 a sandbox) to a state
				k := int(low) % 6
				id := fmt.Sprint("c", k)
				if k == 5 {
					id = "s5"
				}
				s := states[int(low>>1+op>>6)%len(states)]
				if k == 5 { // sandboxes are only ready (running) or not (exited), see Pod
					s = []ContainerState{ContainerStateRunning, ContainerStateExited, ContainerStateNonExistent}[int(op>>4)%3]
				}
				if runtime[p] == nil {
					runtime[p] = map[string]ContainerState{}
				}
				if _, ok := runtime[p][id]; !ok {
					order[p] = append(order[p], id)
				}
				if s == ContainerStateNonExistent {
					delete(runtime[p], id)
					order[p] = slicesDelete(order[p], id)
				} else {
					runtime[p][id] = s
				}
			}
		}
		// Finally everything recovers.
		clear(failing)
		clk.Step(1)
		publish()
		if err := r.Relist(context.Background()); err != nil {
			t.Fatal(err)
		}
		apply()
		check(len(ops))
		if d := r.DroppedEvents(); d != 0 {
			t.Fatalf("%d events dropped", d)
		}
	})
}

func slicesDelete(s []string, v string) []string {
	out := s[:0]
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}
