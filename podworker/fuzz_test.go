package podworker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg"
)

// FuzzMachine drives a Machine with random sequences of updates, completions, ticks and
// SyncKnownPods, and checks its invariants after every step: at most one work per pod,
// the concurrency bound, static pods (or, with SerializeByName, any pods) of one full
// name never started together, stages only move forward, no work for a finished pod, no
// SyncPod once terminating started, every completion channel closed exactly once (a
// double close panics), and a pod that is forgotten leaves nothing behind.
func FuzzMachine(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0x10, 0x31, 0x52, 0x03, 0x24, 0x45, 0x66, 0x87, 0xa8, 0xc9, 0xea, 0x0b})
	f.Add([]byte{0x00, 0x08, 0x10, 0x18, 0x21, 0x09, 0x11, 0x33, 0x44, 0x55, 0x06, 0x07, 0x0f})
	f.Add([]byte("static pods racing on one full name, eviction, force delete"))
	f.Fuzz(func(t *testing.T, data []byte) {
		bound, byName := 0, false
		if len(data) > 0 {
			bound, byName = int(data[0]%3), data[0]&4 != 0
		}
		m, err := NewMachine(MachineConfig{MaxConcurrentSyncs: bound, SerializeByName: byName})
		if err != nil {
			t.Fatal(err)
		}
		now := t0
		working := map[types.UID]Work{}
		stage := map[types.UID]Stage{}
		opened := 0
		closed := 0
		apply := func(rd Ready) {
			for _, tr := range rd.Transitions {
				if stage[tr.UID] != tr.From {
					t.Fatalf("transition %v from %v, but the pod was %v", tr, tr.From, stage[tr.UID])
				}
				if tr.To <= tr.From && !(tr.From == StageFinished && tr.To == StageNone) {
					t.Fatalf("backward transition %+v", tr)
				}
				stage[tr.UID] = tr.To
			}
			for _, c := range rd.Close {
				c.Close()
				closed++
			}
			for _, w := range rd.Start {
				if _, busy := working[w.UID]; busy {
					t.Fatalf("second work for %s", w.UID)
				}
				st := m.pods[w.UID]
				if st == nil || st.finished {
					t.Fatalf("work for a finished or unknown pod %s", w.UID)
				}
				if w.WorkType == SyncPod && st.terminationStarted {
					t.Fatalf("SyncPod for %s after termination started", w.UID)
				}
				if w.WorkType == TerminatingPod && w.GracePeriodSeconds < 1 {
					t.Fatalf("grace %d", w.GracePeriodSeconds)
				}
				working[w.UID] = w
			}
		}
		for i := 1; i+1 < len(data); i += 2 {
			op, arg := data[i], data[i+1]
			uid := types.UID(fmt.Sprint("p", arg%4))
			pod := testPod(string(uid))
			pod.Name = fmt.Sprint("n", arg%2) // two UIDs share each full name
			if arg&0x10 != 0 {
				static(pod)
			}
			now = now.Add(time.Duration(arg) * 100 * time.Millisecond)
			var rd Ready
			switch op % 9 {
			case 0:
				rd, err = m.UpdatePod(now, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: pod}, RuntimeHint(arg>>5&1))
			case 1:
				rd, err = m.UpdatePod(now, UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: pod}, RuntimeUnknown)
			case 2:
				deleted(int64(arg % 40))(pod)
				rd, err = m.UpdatePod(now, UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: pod}, RuntimeUnknown)
			case 3:
				ch := NewCompletion()
				opened++
				rd, err = m.UpdatePod(now, UpdatePodOptions{UpdateType: SyncPodKill, Pod: pod, KillPodOptions: &KillPodOptions{
					Completion: ch, Evict: arg&1 == 0, PodTerminationGracePeriodSecondsOverride: ptr(int64(arg % 7))}}, RuntimeUnknown)

			case 4:
				rd, err = m.UpdatePod(now, UpdatePodOptions{UpdateType: SyncPodKill, RunningPod: &pleg.Pod{ID: uid, Name: pod.Name}}, RuntimeUnknown)
			case 5:
				phase(v1.PodSucceeded)(pod)
				rd, err = m.UpdatePod(now, UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: pod}, RuntimeHint(arg>>5&1))
			case 6, 7:
				w, busy := working[uid]
				if !busy {
					continue
				}
				delete(working, uid)
				res := Result{}
				switch arg % 5 {
				case 0:
					res.Err = errors.New("boom")
				case 1:
					res.Err = context.Canceled
				case 2:
					res.IsTerminal = w.WorkType == SyncPod
				}
				rd, err = m.Complete(now, uid, res, 0)
			case 8:
				if arg&1 == 0 {
					rd = m.Tick(now)
				} else {
					var desired []*v1.Pod
					if arg&2 == 0 {
						desired = append(desired, pod)
					}
					_, rd = m.SyncKnownPods(now, desired)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			apply(rd)
			checkInvariants(t, m, working, bound)
		}
		// Drain: let retries come due, complete everything successfully, forget everything.
		for range 8 {
			now = now.Add(time.Hour)
			apply(m.Tick(now))
			for len(working) > 0 {
				for uid := range working {
					delete(working, uid)
					rd, err := m.Complete(now, uid, Result{}, 0)
					if err != nil {
						t.Fatal(err)
					}
					apply(rd)
				}
			}
			_, rd := m.SyncKnownPods(now, nil)
			apply(rd)
		}
		if m.Len() != 0 || len(m.requeue) != 0 || len(m.nameHolders) != 0 || len(m.nameWaiters) != 0 || m.inFlight != 0 {
			t.Fatalf("left behind after forgetting all: pods=%d heap=%d started=%v waiting=%v inFlight=%d",
				m.Len(), len(m.requeue), m.nameHolders, m.nameWaiters, m.inFlight)
		}
		if closed != opened {
			t.Fatalf("%d completion channels, %d closed", opened, closed)
		}
	})
}

func checkInvariants(t *testing.T, m *Machine, working map[types.UID]Work, bound int) {
	t.Helper()
	if m.inFlight != len(working) {
		t.Fatalf("inFlight %d, driver sees %d", m.inFlight, len(working))
	}
	if bound > 0 && m.inFlight > bound {
		t.Fatalf("inFlight %d above bound %d", m.inFlight, bound)
	}
	running := map[string]types.UID{}
	for uid, st := range m.pods {
		if _, busy := working[uid]; st.working != busy {
			t.Fatalf("pod %s: working=%t, driver sees %t", uid, st.working, busy)
		}
		if st.finished && (st.hasPending || st.queued || st.heapIdx >= 0) {
			t.Fatalf("finished pod %s still scheduled", uid)
		}
		if st.byName && st.isStarted() && !st.finished && !st.isTerminated() {
			if other, dup := running[st.fullname]; dup {
				t.Fatalf("pods %s and %s serialized by name both started under %s", other, uid, st.fullname)
			}
			running[st.fullname] = uid
		}
	}
}
