package podworkertest

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/podworker"
)

// The fake runtime: a pod marked running has one running container, any other pod
// nothing. Reads never block.

func (h *harness) status(uid types.UID) *pleg.PodStatus {
	s := &pleg.PodStatus{ID: uid, TimeStamp: h.clock.Now()}
	if h.running[uid] {
		s.ContainerStatuses = []*pleg.ContainerStatus{{ID: "c-" + string(uid), Name: "main", State: pleg.ContainerStateRunning}}
	}
	return s
}

func (h *harness) get(uid types.UID) (*pleg.PodStatus, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.status(uid), nil
}

// starting records the type of the pod's work about to read its status.
func (h *harness) starting(uid types.UID, wt podworker.WorkType) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.work[uid] = wt
}

// statusAfter answers at once with the fake runtime's status. Before a terminating or
// terminated work, which must see the runtime as the previous work left it (a
// RuntimeView inspects the pod then), it traces the inspection.
func (h *harness) statusAfter(_ context.Context, uid types.UID, minTime time.Time) (*pleg.PodStatus, error) {
	h.mu.Lock()
	wt := h.work[uid]
	h.mu.Unlock()
	if wt != podworker.SyncPod {
		h.trace(uid, "runtime refresh requested")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastMin[uid] = minTime
	return h.status(uid), nil
}

// begin records a syncer call and returns its result at once, or a held call.
func (h *harness) begin(uid types.UID, method, detail string) (podworker.Result, *call) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lines = append(h.lines, traceLine{pod: string(uid), text: method + detail})
	if h.hold[uid] {
		c := &call{uid: uid, method: method, done: make(chan podworker.Result, 1)}
		h.held[uid] = c
		return podworker.Result{}, c
	}
	var res podworker.Result
	key := map[string]string{
		"SyncPod": "sync", "SyncTerminatingPod": "terminating",
		"SyncTerminatingRuntimePod": "runtime", "SyncTerminatedPod": "terminated",
	}[method]
	if q := h.fails[uid][key]; len(q) > 0 {
		res.Err = errors.New(q[0])
		h.fails[uid][key] = q[1:]
	} else if method == "SyncPod" && h.term[uid] {
		res.IsTerminal = true
		delete(h.term, uid)
	}
	h.lines = append(h.lines, traceLine{pod: string(uid), text: method + " done: " + describe(res)})
	return res, nil
}

func describe(res podworker.Result) string {
	switch {
	case errors.Is(res.Err, context.Canceled):
		return "cancelled"
	case res.Err != nil:
		return "error " + res.Err.Error()
	case res.IsTerminal:
		return "terminal"
	}
	return "ok"
}

// finish completes the pod's held call with the command's result.
func (h *harness) finish(uid types.UID, a args) error {
	h.mu.Lock()
	c := h.held[uid]
	delete(h.held, uid)
	h.mu.Unlock()
	if c == nil {
		return fmt.Errorf("no held call for pod %s", uid)
	}
	var res podworker.Result
	if msg := a.kv["err"]; msg != "" {
		res.Err = errors.New(msg)
	}
	res.IsTerminal = a.flag["terminal"]
	h.trace(uid, "%s done: %s", c.method, describe(res))
	if h.mode == RunnerMode {
		c.done <- res
		return nil
	}
	rd, err := h.m.Complete(h.clock.Now(), uid, res, 0)
	if err != nil {
		return err
	}
	h.process(rd)
	return nil
}

// await blocks a Runner's syncer call until it is finished or its context ends.
func (h *harness) await(ctx context.Context, c *call) podworker.Result {
	if c == nil {
		return podworker.Result{}
	}
	select {
	case res := <-c.done:
		return res
	case <-ctx.Done():
		h.mu.Lock()
		if h.held[c.uid] == c {
			delete(h.held, c.uid)
		}
		h.lines = append(h.lines, traceLine{pod: string(c.uid), text: c.method + " done: cancelled"})
		h.mu.Unlock()
		return podworker.Result{Err: ctx.Err()}
	}
}

func (h *harness) sinceOf(uid types.UID) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.since(h.lastMin[uid])
}

// syncer is the Runner's PodSyncer.
func (h *harness) syncer() podworker.PodSyncer {
	run := func(ctx context.Context, uid types.UID, method, detail string) podworker.Result {
		res, c := h.begin(uid, method, detail)
		if c != nil {
			res = h.await(ctx, c)
		}
		return res
	}
	return podworker.PodSyncerFuncs{
		SyncPodFunc: func(ctx context.Context, t podworker.SyncPodType, pod, _ *v1.Pod, _ *pleg.PodStatus) (bool, error) {
			res := run(ctx, pod.UID, "SyncPod", fmt.Sprintf("(%s), %s", t, h.sinceOf(pod.UID)))
			return res.IsTerminal, res.Err
		},
		SyncTerminatingPodFunc: func(ctx context.Context, pod *v1.Pod, _ *pleg.PodStatus, g int64, fn func(*v1.PodStatus)) error {
			return run(ctx, pod.UID, "SyncTerminatingPod", terminatingDetail(g, fn)+", "+h.sinceOf(pod.UID)).Err
		},
		SyncTerminatingRuntimePodFunc: func(ctx context.Context, rp *pleg.Pod) error {
			return run(ctx, rp.ID, "SyncTerminatingRuntimePod", "").Err
		},
		SyncTerminatedPodFunc: func(ctx context.Context, pod *v1.Pod, _ *pleg.PodStatus) error {
			return run(ctx, pod.UID, "SyncTerminatedPod", ", "+h.sinceOf(pod.UID)).Err
		},
	}
}

func terminatingDetail(g int64, fn func(*v1.PodStatus)) string {
	s := fmt.Sprintf("(grace=%d", g)
	if fn != nil {
		s += ", with status func"
	}
	return s + ")"
}

// process applies a Machine's Ready the way the Runner does, synchronously.
func (h *harness) process(shared podworker.Ready) {
	rd := shared.Clone()
	for _, t := range rd.Transitions {
		h.transition(t)
	}
	for _, uid := range rd.Cancel {
		h.mu.Lock()
		c := h.held[uid]
		delete(h.held, uid)
		h.mu.Unlock()
		if c == nil {
			continue
		}
		h.trace(uid, "%s done: cancelled", c.method)
		next, err := h.m.Complete(h.clock.Now(), uid, podworker.Result{Err: context.Canceled}, 0)
		if err != nil {
			h.trace(uid, "error: %v", err)
			continue
		}
		defer h.process(next)
	}
	for _, c := range rd.Close {
		c.Close()
	}
	for _, w := range rd.Start {
		h.execute(w)
	}
}

// execute runs one Work of the Machine against the fakes.
func (h *harness) execute(w podworker.Work) {
	if w.RunningPod == nil {
		h.starting(w.UID, w.WorkType)
		_, _ = h.statusAfter(context.Background(), w.UID, w.StatusNewerThan)
	}
	var res podworker.Result
	var c *call
	switch {
	case w.WorkType == podworker.TerminatedPod:
		res, c = h.begin(w.UID, "SyncTerminatedPod", ", "+h.sinceOf(w.UID))
	case w.WorkType == podworker.TerminatingPod && w.RunningPod != nil:
		res, c = h.begin(w.UID, "SyncTerminatingRuntimePod", "")
	case w.WorkType == podworker.TerminatingPod:
		res, c = h.begin(w.UID, "SyncTerminatingPod", terminatingDetail(w.GracePeriodSeconds, w.PodStatusFunc)+", "+h.sinceOf(w.UID))
	default:
		res, c = h.begin(w.UID, "SyncPod", fmt.Sprintf("(%s), %s", w.UpdateType, h.sinceOf(w.UID)))
	}
	if c != nil {
		return
	}
	next, err := h.m.Complete(h.clock.Now(), w.UID, res, 0)
	if err != nil {
		h.trace(w.UID, "error: %v", err)
		return
	}
	h.process(next)
}
