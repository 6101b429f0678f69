package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podlife/podlife/examples/agent"
)

// legend explains the kinds of timeline line, printed before the timeline.
const legend = `# Each line: seconds since the agent started, the kind of step, the pod, what happened.
#   api           the in-memory API server: a pod created, a graceful delete, a delete at once
#   config        a change of the node's pods as the sync loop sees it (ADD, UPDATE, DELETE, REMOVE, RECONCILE)
#   worker        a pod worker's stage: none -> syncing -> terminating -> terminated -> finished
#   work          a call of the pod worker into the runtime (SyncPod, SyncTerminatingPod, SyncTerminatedPod)
#   pleg          a container or sandbox event found by the relist (ContainerStarted, ContainerDied, ...)
#   runtime       the runtime's own work (housekeeping's removal of a finished pod's containers)
#   status        a status patch on the API server (a container killed shows its exit code 137)
#   delete        the final delete of the pod object (grace 0, UID precondition)
#   housekeeping  the periodic clean-up (finished pods forgotten)
#   error         a failed step (retried)
`

// entry is one line for the timeline: a step of the agent, or a line of the command's own
// (a "#" line) placed at since, or (await set) a wait on the measurements.
type entry struct {
	since time.Duration
	seq   uint64 // arrival order, for equal times
	text  string
	at    time.Time // arrival, on the printer's clock
	step  *agent.Step
	await *awaiter
}

// awaiter is a wait on the measurements: done is closed once cond holds.
type awaiter struct {
	cond func(*lifecycleStats) bool
	done chan struct{}
}

// sequencer puts entries in the order of their since time. Steps come from several
// goroutines, each stamped before it is handed over, so a step may arrive after a later
// one; an entry is released only once it has waited window since its arrival, and then in
// time order: a step that arrives less than window after a later one still comes out
// first. Pure: times are arguments; not safe for concurrent use.
type sequencer struct {
	window time.Duration
	seq    uint64
	buf    []entry // sorted by (since, seq)
}

// add takes an entry that arrived at e.at.
func (s *sequencer) add(e entry) {
	s.seq++
	e.seq = s.seq
	i, _ := slices.BinarySearchFunc(s.buf, e, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.since, b.since), cmp.Compare(a.seq, b.seq))
	})
	s.buf = slices.Insert(s.buf, i, e)
}

// due returns, in time order, the entries to print at now: the leading entries that have
// waited window.
func (s *sequencer) due(now time.Time) []entry {
	n := 0
	for n < len(s.buf) && !now.Before(s.buf[n].at.Add(s.window)) {
		n++
	}
	out := slices.Clone(s.buf[:n])
	s.buf = slices.Delete(s.buf, 0, n)
	return out
}

// next is when the first held entry is due (false: none is held).
func (s *sequencer) next() (time.Time, bool) {
	if len(s.buf) == 0 {
		return time.Time{}, false
	}
	return s.buf[0].at.Add(s.window), true
}

// drain returns every held entry, in time order.
func (s *sequencer) drain() []entry {
	out := s.buf
	s.buf = nil
	return out
}

// timeline is the single goroutine that prints the steps in time order (unless quiet),
// measures each pod's lifecycle from them, and prints a progress line every
// progressPeriod (if not zero). Every step, line and wait goes through its channel, and
// every line, the command's own and the progress lines included, is placed on the steps'
// scale (time since origin, the agent's start) and printed in time order with them.
type timeline struct {
	clock    clock.Clock
	origin   time.Time // the agent's start: Step.Since counts from it
	out      io.Writer
	quiet    bool
	progress time.Duration
	in       chan entry
	done     chan struct{}
	seq      sequencer
	stats    *lifecycleStats
	total    int
	names    map[types.UID]string // namespace/name of every pod seen, for steps that only have its UID
	waiting  []*awaiter
}

// orderWindow is how long a step is held for a step stamped earlier to arrive.
const orderWindow = 50 * time.Millisecond

// newTimeline starts the timeline of the agent that started at origin (agent.Started).
func newTimeline(clk clock.Clock, origin time.Time, out io.Writer, quiet bool, progress time.Duration, pods int) *timeline {
	t := &timeline{clock: clk, origin: origin, out: out, quiet: quiet, progress: progress, in: make(chan entry),
		done: make(chan struct{}), seq: sequencer{window: orderWindow}, stats: newLifecycleStats(), total: pods,
		names: map[types.UID]string{}}
	go t.run()
	return t
}

// step hands over a step of the agent (the agent's Observer).
func (t *timeline) step(s agent.Step) { t.in <- entry{since: s.Since, step: &s} }

// say hands over a line of the command's own, placed now on the steps' scale: a line said
// before an action comes out before the action's steps.
func (t *timeline) say(format string, args ...any) {
	t.in <- entry{since: t.clock.Since(t.origin), text: fmt.Sprintf(format, args...)}
}

// await blocks until cond holds of the measurements or ctx ends. cond runs on the
// timeline's goroutine, once now and after each step, until it holds; what it writes may
// be read once await has returned nil. The steps handed over before await are measured
// before cond first runs.
func (t *timeline) await(ctx context.Context, cond func(*lifecycleStats) bool) error {
	w := &awaiter{cond: cond, done: make(chan struct{})}
	t.in <- entry{await: w}
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close prints what is held and stops the goroutine; no step or line may follow. It
// returns the measurements.
func (t *timeline) close() *lifecycleStats {
	close(t.in)
	<-t.done
	return t.stats
}

func (t *timeline) run() {
	defer close(t.done)
	var flush clock.Timer
	var progress clock.Timer
	var progressC <-chan time.Time
	if t.progress > 0 {
		progress = t.clock.NewTimer(t.progress)
		defer func() { progress.Stop() }()
		progressC = progress.C()
	}
	for {
		var flushC <-chan time.Time
		if flush != nil {
			flushC = flush.C()
		}
		select {
		case e, ok := <-t.in:
			if !ok {
				if flush != nil {
					flush.Stop()
				}
				t.print(t.seq.drain())
				return
			}
			if e.await != nil {
				t.waiting = append(t.waiting, e.await)
				t.wake()
				break
			}
			e.at = t.clock.Now()
			if e.step != nil {
				t.name(e.step)
				e.text = e.step.String()
				t.stats.observe(*e.step)
				t.wake()
			}
			t.seq.add(e)
		case <-flushC:
			flush = nil
			t.print(t.seq.due(t.clock.Now()))
		case <-progressC:
			since := t.clock.Since(t.origin)
			t.seq.add(entry{since: since, at: t.clock.Now(),
				text: fmt.Sprintf("# %6.1fs  %s", since.Seconds(), t.stats.progress(t.total))})
			progress = t.clock.NewTimer(t.progress)
			progressC = progress.C()
		}
		if when, ok := t.seq.next(); ok && flush == nil {
			flush = t.clock.NewTimer(max(when.Sub(t.clock.Now()), time.Millisecond))
		}
	}
}

// name gives a step that names its pod only by UID (the node has forgotten the pod) the
// pod's namespace/name, as an earlier step showed it: the pod column keeps one identity.
func (t *timeline) name(s *agent.Step) {
	switch {
	case s.UID == "":
	case s.Pod != string(s.UID):
		t.names[s.UID] = s.Pod
	default:
		if n, ok := t.names[s.UID]; ok {
			s.Pod = n
		}
	}
}

// wake closes the waits whose condition holds.
func (t *timeline) wake() {
	t.waiting = slices.DeleteFunc(t.waiting, func(w *awaiter) bool {
		if w.cond(t.stats) {
			close(w.done)
			return true
		}
		return false
	})
}

func (t *timeline) print(es []entry) {
	for _, e := range es {
		if e.step != nil && t.quiet {
			continue
		}
		fmt.Fprintln(t.out, e.text)
	}
}

// podTimes is what the timeline saw of one pod, on the agent's clock.
type podTimes struct {
	created, running, deleting, gone, stopped time.Duration
	hasRunning, hasDeleting, hasGone          bool
	hasStopped                                bool
}

// lifecycleStats measures each pod's lifecycle from the steps: create to Running on the
// API server, delete to gone from it, delete to every container stopped; and collects the
// containers a status showed killed.
type lifecycleStats struct {
	pods  map[string]*podTimes
	order []string
	// killed are the containers a status showed killed (exit code 137), "namespace/name
	// container", in the order seen; killedAtGraceEnd counts those killed at the end of
	// the grace period.
	killed           []string
	killedAtGraceEnd int
}

func newLifecycleStats() *lifecycleStats { return &lifecycleStats{pods: map[string]*podTimes{}} }

// killedContainer matches a status step's note of a killed container (agent.killNote).
var killedContainer = regexp.MustCompile(fmt.Sprintf(`container (\S+) killed( at the end of the grace period)? \(exit code %d\)`,
	agent.ExitCodeKilled))

// The step details the measurements key on (statusmgrtest.FakeAPI's and the node's).
const (
	detailCreated        = "created"
	detailGraceful       = "graceful delete"
	detailDeletedAtOnce  = "deleted at once"
	detailRunning        = "phase Running"
	detailStoppedAllDone = "SyncTerminatingPod done: every container stopped"
)

func (l *lifecycleStats) observe(s agent.Step) {
	if s.Pod == "" || s.Pod == string(s.UID) {
		return
	}
	p := l.pods[s.Pod]
	if p == nil {
		if s.Kind != agent.KindAPI || s.Detail != detailCreated {
			return // not a pod of this run
		}
		p = &podTimes{created: s.Since}
		l.pods[s.Pod] = p
		l.order = append(l.order, s.Pod)
		return
	}
	if s.Kind == agent.KindStatus {
		for _, m := range killedContainer.FindAllStringSubmatch(s.Detail, -1) {
			if c := s.Pod + " " + m[1]; !slices.Contains(l.killed, c) {
				l.killed = append(l.killed, c)
				if m[2] != "" {
					l.killedAtGraceEnd++
				}
			}
		}
	}
	switch {
	case s.Kind == agent.KindStatus && strings.Contains(s.Detail, detailRunning) && !p.hasRunning:
		p.running, p.hasRunning = s.Since, true
	case s.Kind == agent.KindAPI && strings.HasPrefix(s.Detail, detailGraceful) && !p.hasDeleting:
		p.deleting, p.hasDeleting = s.Since, true
	case s.Kind == agent.KindAPI && strings.HasPrefix(s.Detail, detailDeletedAtOnce):
		if !p.hasDeleting {
			p.deleting, p.hasDeleting = s.Since, true
		}
		p.gone, p.hasGone = s.Since, true
	case s.Kind == agent.KindDelete:
		p.gone, p.hasGone = s.Since, true
	case s.Kind == agent.KindWork && s.Detail == detailStoppedAllDone && !p.hasStopped:
		p.stopped, p.hasStopped = s.Since, true
	}
}

// progress is the one-line state of the run.
func (l *lifecycleStats) progress(total int) string {
	var running, deleting, gone, stopped int
	for _, p := range l.pods {
		if p.hasRunning {
			running++
		}
		if p.hasDeleting {
			deleting++
		}
		if p.hasGone {
			gone++
		}
		if p.hasStopped {
			stopped++
		}
	}
	return fmt.Sprintf("progress: %d/%d created, %d Running, %d deleting, %d stopped, %d gone",
		len(l.pods), total, running, deleting, stopped, gone)
}

// The times of a pod the spans below run between.
func createdAt(p *podTimes) (time.Duration, bool)  { return p.created, true }
func runningAt(p *podTimes) (time.Duration, bool)  { return p.running, p.hasRunning }
func deletingAt(p *podTimes) (time.Duration, bool) { return p.deleting, p.hasDeleting }
func goneAt(p *podTimes) (time.Duration, bool)     { return p.gone, p.hasGone }

// span returns the earliest from and the latest to of the pods, once there are n pods and
// each has both (ok false before): "every pod is Running after" is span(n, createdAt,
// runningAt), on the steps' scale, as the timeline shows them.
func (l *lifecycleStats) span(n int, from, to func(*podTimes) (time.Duration, bool)) (first, last time.Duration, ok bool) {
	if len(l.order) < n || n == 0 {
		return 0, 0, false
	}
	for i, name := range l.order {
		p := l.pods[name]
		f, okf := from(p)
		t, okt := to(p)
		if !okf || !okt {
			return 0, 0, false
		}
		if i == 0 || f < first {
			first = f
		}
		if i == 0 || t > last {
			last = t
		}
	}
	return first, last, true
}

// durations returns each pod's span from one time to another, for the pods that have both.
func (l *lifecycleStats) durations(span func(*podTimes) (time.Duration, bool)) []time.Duration {
	var ds []time.Duration
	for _, name := range l.order {
		if d, ok := span(l.pods[name]); ok {
			ds = append(ds, d)
		}
	}
	return ds
}

func (l *lifecycleStats) createToRunning() []time.Duration {
	return l.durations(func(p *podTimes) (time.Duration, bool) { return p.running - p.created, p.hasRunning })
}

func (l *lifecycleStats) deleteToGone() []time.Duration {
	return l.durations(func(p *podTimes) (time.Duration, bool) { return p.gone - p.deleting, p.hasDeleting && p.hasGone })
}

func (l *lifecycleStats) deleteToStopped() []time.Duration {
	return l.durations(func(p *podTimes) (time.Duration, bool) {
		return p.stopped - p.deleting, p.hasDeleting && p.hasStopped
	})
}

// percentile is the nearest-rank q-th percentile (0 < q <= 100) of ds; 0 if ds is empty.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	rank := int(q/100*float64(len(s)) + 0.999999999)
	return s[min(max(rank, 1), len(s))-1]
}

// describe is "p50 X, p99 Y, max Z (n pods)" of ds.
func describe(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none measured"
	}
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("p50 %v, p99 %v, max %v (%d pods)", r(percentile(ds, 50)), r(percentile(ds, 99)), r(slices.Max(ds)), len(ds))
}

// killedLine is the summary's line of the containers killed with exit code 137 (they did
// not stop within the grace period), the first few named; "" if none was.
func (l *lifecycleStats) killedLine() string {
	if len(l.killed) == 0 {
		return ""
	}
	const named = 3
	which := strings.Join(l.killed[:min(len(l.killed), named)], ", ")
	if len(l.killed) > named {
		which += ", ..."
	}
	return fmt.Sprintf("# killed with exit code %d: %d container(s), %d of them at the end of the grace period (%s)",
		agent.ExitCodeKilled, len(l.killed), l.killedAtGraceEnd, which)
}
