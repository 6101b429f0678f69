package podworker

import (
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"

	"github.com/podlife/podlife/pleg"
)

// closeCounter drives a Machine to quiescence (every started work succeeds) and counts
// how often each channel is listed in Ready.Close.
type closeCounter struct {
	t      *testing.T
	m      *Machine
	closes map[*Completion]int
}

func (c *closeCounter) apply(rd Ready) {
	c.t.Helper()
	work := append([]Work(nil), rd.Start...)
	for _, ch := range rd.Close {
		c.closes[ch]++
	}
	for len(work) > 0 {
		w := work[0]
		work = work[1:]
		next, err := c.m.Complete(t0, w.UID, Result{}, 0)
		if err != nil {
			c.t.Fatal(err)
		}
		for _, ch := range next.Close {
			c.closes[ch]++
		}
		work = append(work, next.Start...)
	}
}

func (c *closeCounter) update(opts UpdatePodOptions) {
	c.t.Helper()
	rd, err := c.m.UpdatePod(t0, opts, RuntimeUnknown)
	if err != nil {
		c.t.Fatal(err)
	}
	c.apply(rd)
}

func kill(pod *v1.Pod, ch *Completion) UpdatePodOptions {
	return UpdatePodOptions{UpdateType: SyncPodKill, Pod: pod, KillPodOptions: &KillPodOptions{Completion: ch}}
}

func killRuntime(uid string, ch *Completion) UpdatePodOptions {
	return UpdatePodOptions{UpdateType: SyncPodKill, RunningPod: &pleg.Pod{ID: testPod(uid).UID, Name: uid, Namespace: "ns"},
		KillPodOptions: &KillPodOptions{Completion: ch}}
}

// TestCompletedChClosedOnce: a Completion given more than once (to one pod or to
// several, before or after it was closed, after its pods were forgotten) is listed in
// Ready.Close exactly once, and only once every pod it was given for is terminated.
func TestCompletedChClosedOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(c *closeCounter, ch *Completion)
	}{
		{"same pod, twice while it terminates", func(c *closeCounter, ch *Completion) {
			rd, _ := c.m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}, RuntimeUnknown)
			_ = rd // SyncPod left in flight
			c.update(kill(testPod("a"), ch))
			c.update(kill(testPod("a"), ch))
			next, err := c.m.Complete(t0, "a", Result{}, 0)
			if err != nil {
				c.t.Fatal(err)
			}
			c.apply(next)
		}},
		{"same pod, again once terminated", func(c *closeCounter, ch *Completion) {
			c.update(kill(testPod("a"), ch))
			c.update(kill(testPod("a"), ch))
		}},
		{"same pod, again once finished", func(c *closeCounter, ch *Completion) {
			c.update(kill(testPod("a"), ch))
			c.update(kill(testPod("a", deleted(0)), ch))
			c.update(kill(testPod("a", deleted(0)), ch))
		}},
		{"two pods, both pending", func(c *closeCounter, ch *Completion) {
			rd, _ := c.m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}, RuntimeUnknown)
			_ = rd // SyncPod of a left in flight
			rd, _ = c.m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("b")}, RuntimeUnknown)
			_ = rd // SyncPod of b left in flight
			c.update(kill(testPod("a"), ch))
			c.update(kill(testPod("b"), ch))
			next, err := c.m.Complete(t0, "a", Result{}, 0)
			if err != nil {
				c.t.Fatal(err)
			}
			c.apply(next)
			if c.closes[ch] != 0 {
				c.t.Error("closed while pod b was still running")
			}
			next, err = c.m.Complete(t0, "b", Result{}, 0)
			if err != nil {
				c.t.Fatal(err)
			}
			c.apply(next)
		}},
		{"two pods, the second after the first terminated", func(c *closeCounter, ch *Completion) {
			c.update(kill(testPod("a"), ch))
			c.update(kill(testPod("b"), ch))
		}},
		{"a pod and a runtime pod", func(c *closeCounter, ch *Completion) {
			rd, _ := c.m.UpdatePod(t0, UpdatePodOptions{UpdateType: SyncPodCreate, Pod: testPod("a")}, RuntimeUnknown)
			_ = rd // SyncPod of a left in flight
			c.update(kill(testPod("a"), ch))
			c.update(killRuntime("r", ch)) // killed and forgotten at once
			if c.closes[ch] != 0 {
				c.t.Error("closed while pod a was still running")
			}
			next, err := c.m.Complete(t0, "a", Result{}, 0)
			if err != nil {
				c.t.Fatal(err)
			}
			c.apply(next)
			c.update(killRuntime("r", ch))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &closeCounter{t: t, m: newTestMachine(t, MachineConfig{}), closes: map[*Completion]int{}}
			ch := NewCompletion()
			tc.run(c, ch)
			if n := c.closes[ch]; n != 1 {
				t.Errorf("channel listed in Ready.Close %d times, want 1", n)
			}
			// Once its pods are forgotten, nothing of the channel is kept.
			_, rd := c.m.SyncKnownPods(t0, nil)
			c.apply(rd)
			_, rd = c.m.SyncKnownPods(t0, nil)
			c.apply(rd)
			if c.m.Len() != 0 || len(c.m.chans) != 0 {
				t.Errorf("after forgetting every pod: %d pods, %d channels kept", c.m.Len(), len(c.m.chans))
			}
		})
	}
}

// TestRunnerCompletedChClosedOnce: the Runner closes a Completion given to several
// kills once, also when it is given again after every pod it was given for was
// forgotten; before, the Machine listed it again then and the Runner's second close
// panicked (recovered).
func TestRunnerCompletedChClosedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := New(Config{Syncer: PodSyncerFuncs{}})
		if err != nil {
			t.Fatal(err)
		}
		stop := startRun(t, r)
		ch := NewCompletion()
		for _, opts := range []UpdatePodOptions{
			kill(testPod("a"), ch), kill(testPod("a"), ch), // the same pod twice
			kill(testPod("b"), ch), killRuntime("r", ch), // other pods
			killRuntime("r2", ch), kill(testPod("c"), ch),
		} {
			if err := r.UpdatePod(opts); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
		}
		// Again once every pod it was given for is forgotten.
		r.SyncKnownPods(nil)
		if err := r.UpdatePod(kill(testPod("d"), ch)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		select {
		case <-ch.Done():
		default:
			t.Error("completion not closed")
		}
		stop()
	})
}

// TestCompletionListedOnceAfterForgotten: a Completion closed for a pod that was then
// forgotten is not listed again when it is given for another pod (the Machine once
// listed it again, leaving its driver a second close).
func TestCompletionListedOnceAfterForgotten(t *testing.T) {
	c := &closeCounter{t: t, m: newTestMachine(t, MachineConfig{}), closes: map[*Completion]int{}}
	ch := NewCompletion()
	c.update(kill(testPod("a"), ch))
	_, rd := c.m.SyncKnownPods(t0, nil) // a is finished and forgotten
	c.apply(rd)
	if c.m.Len() != 0 {
		t.Fatalf("%d pods known, want none", c.m.Len())
	}
	c.update(kill(testPod("b"), ch))
	c.update(killRuntime("r", ch))
	if n := c.closes[ch]; n != 1 {
		t.Errorf("listed in Ready.Close %d times, want 1", n)
	}
}
