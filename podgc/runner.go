package podgc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Runner runs garbage-collection cycles: once at the start of Run, then CheckPeriod after the
// end of each cycle, until Run's context ends. It is the thin, impure shell around Decide and
// Quarantine: it lists, keeps the quarantine, calls the caller's writes and counts.
//
// A Runner is safe for concurrent use, but only one cycle runs at a time: RunOnce during
// another cycle returns ErrCycleInProgress. No lock is held while the caller's Lister,
// PodWriter or NodeChecker run.
type Runner struct {
	cfg Config
	log *slog.Logger

	// running is true while a cycle runs; the goroutine that set it owns quarantine.
	running    atomic.Bool
	quarantine *Quarantine

	mu    sync.Mutex // guards stats
	stats Stats
}

// Stats are a Runner's cumulative counters since New.
type Stats struct {
	// Cycles counts cycles started, including abandoned ones.
	Cycles int
	// ListErrors counts cycles abandoned because listing pods or nodes failed.
	ListErrors int
	// NodeCheckErrors counts failed NodeChecker calls.
	NodeCheckErrors int
	// Skipped counts invalid list entries left out (nil pods and nodes, pods without name or
	// UID, nodes without name), once per cycle in which they were listed.
	Skipped int
	// Deleted counts pods deleted (or found already gone), by reason.
	Deleted map[Reason]int
	// Failed counts pods whose patch or delete failed, by reason; they are retried at the
	// next cycle if still selected.
	Failed map[Reason]int
}

// Report says what one cycle saw and did.
type Report struct {
	// Start is the clock's time when the cycle started; it is the Now of the cycle's Decide.
	Start time.Time
	// Quarantined lists the nodes missing from the node list at the end of the cycle
	// (including those found gone), sorted.
	Quarantined []string
	// Gone lists the nodes whose pods were treated as orphaned this cycle, sorted.
	Gone []string
	// Plan is the cycle's decision; Plan.Skipped holds the invalid entries left out.
	Plan Plan
	// Deleted are the deletions that succeeded (a pod already gone counts).
	Deleted []Deletion
	// Failed are the deletions that did not.
	Failed []Failure
	// Err joins every error of the cycle (list, node check, patch, delete); nil if none.
	Err error
}

// Failure is a deletion that failed, and its error (wrapping ErrPatch or ErrDelete, and the
// caller's error).
type Failure struct {
	Deletion Deletion
	Err      error
}

// New validates cfg and returns a Runner. Every problem of cfg (a missing Lister or Writer,
// an interface field holding a nil pointer or the like, a negative value) is reported,
// joined, each wrapping ErrInvalidConfig.
func New(cfg Config) (*Runner, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	q, err := NewQuarantine(cfg.QuarantinePeriod)
	if err != nil {
		return nil, err
	}
	return &Runner{
		cfg:        cfg,
		log:        cfg.Logger,
		quarantine: q,
		stats:      Stats{Deleted: map[Reason]int{}, Failed: map[Reason]int{}},
	}, nil
}

// Run runs a cycle at once and then one CheckPeriod after the end of each cycle, until ctx
// ends; it blocks until then and returns once the cycle in progress, if any, has returned
// (a cycle stops issuing writes when ctx ends). Errors of a cycle are logged, counted in
// Stats and retried at the next cycle; they do not stop Run. Run starts no goroutine that
// outlives it. Call it once per Runner: a second Run at the same time only finds its cycles
// skipped (ErrCycleInProgress, logged) whenever they meet the first one's.
func (r *Runner) Run(ctx context.Context) {
	r.log.InfoContext(ctx, "podgc: starting", "checkPeriod", r.cfg.CheckPeriod,
		"quarantinePeriod", r.cfg.QuarantinePeriod, "terminatedPodThreshold", r.cfg.TerminatedPodThreshold)
	defer r.log.InfoContext(ctx, "podgc: stopped")
	for {
		if ctx.Err() != nil {
			return
		}
		if _, err := r.RunOnce(ctx); errors.Is(err, ErrCycleInProgress) {
			r.log.WarnContext(ctx, "podgc: cycle skipped, another is running")
		}
		t := r.cfg.Clock.NewTimer(r.cfg.CheckPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// RunOnce runs one cycle now and returns its report and Report.Err:
//
//  1. list pods, then nodes (a failure abandons the cycle);
//  2. observe the missing nodes in the quarantine; for each one that expired, ask the
//     NodeChecker, if any (a node found after all restarts its quarantine; an error leaves
//     its pods alone this cycle);
//  3. Decide;
//  4. for each deletion, at most MaxConcurrentDeletes at once: write the Failed status if
//     the plan has one (NotFound: the pod is gone, done), then delete with grace 0 and the
//     UID precondition (NotFound counts as success).
//
// Once ctx ends, no further write starts; the deletions not started fail with ctx's error.
// RunOnce returns ErrCycleInProgress at once if another cycle of r is running.
func (r *Runner) RunOnce(ctx context.Context) (Report, error) {
	if !r.running.CompareAndSwap(false, true) {
		return Report{}, ErrCycleInProgress
	}
	defer r.running.Store(false)

	rep := r.cycle(ctx)
	r.record(rep)
	if r.cfg.OnCycle != nil {
		r.cfg.OnCycle(rep)
	}
	return rep, rep.Err
}

// cycle runs one cycle; the caller holds r.running.
func (r *Runner) cycle(ctx context.Context) Report {
	rep := Report{Start: r.cfg.Clock.Now()}
	pods, err := r.cfg.Lister.ListPods(ctx)
	if err != nil {
		rep.Err = fmt.Errorf("%w: pods: %w", ErrList, err)
		r.log.ErrorContext(ctx, "podgc: listing pods failed", "err", err)
		return rep
	}
	nodes, err := r.cfg.Lister.ListNodes(ctx)
	if err != nil {
		rep.Err = fmt.Errorf("%w: nodes: %w", ErrList, err)
		r.log.ErrorContext(ctx, "podgc: listing nodes failed", "err", err)
		return rep
	}

	expired := r.quarantine.Observe(MissingNodes(pods, nodes), rep.Start)
	var errs []error
	rep.Gone, errs = r.confirmGone(ctx, expired, rep.Start)
	rep.Quarantined = r.quarantine.Names()

	rep.Plan = Decide(Input{
		Pods:                   pods,
		Nodes:                  nodes,
		GoneNodes:              rep.Gone,
		TerminatedPodThreshold: r.cfg.TerminatedPodThreshold,
		Now:                    rep.Start,
	})
	for _, err := range rep.Plan.Skipped {
		r.log.WarnContext(ctx, "podgc: skipped invalid entry", "err", err)
	}

	results := r.execute(ctx, rep.Plan.Deletions)
	for i, d := range rep.Plan.Deletions {
		if results[i] != nil {
			rep.Failed = append(rep.Failed, Failure{Deletion: d, Err: results[i]})
			errs = append(errs, results[i])
			continue
		}
		rep.Deleted = append(rep.Deleted, d)
	}
	rep.Err = errors.Join(errs...)
	return rep
}

// confirmGone returns the expired names that are gone: all of them without a NodeChecker,
// else those it reports absent. It returns one error per failed check.
func (r *Runner) confirmGone(ctx context.Context, expired []string, now time.Time) ([]string, []error) {
	if r.cfg.NodeChecker == nil || len(expired) == 0 {
		return expired, nil
	}
	var gone []string
	var errs []error
	for _, name := range expired {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("%w: node %q: %w", ErrNodeCheck, name, err))
			continue
		}
		exists, err := r.cfg.NodeChecker.NodeExists(ctx, name)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%w: node %q: %w", ErrNodeCheck, name, err))
			r.log.ErrorContext(ctx, "podgc: checking node failed", "node", name, "err", err)
		case exists:
			r.quarantine.Restart(name, now)
			r.log.InfoContext(ctx, "podgc: node missing from the list exists, quarantine restarted", "node", name)
		default:
			gone = append(gone, name)
		}
	}
	return gone, errs
}

// execute performs the deletions, at most MaxConcurrentDeletes at once, and returns one
// error (or nil) per deletion, in order.
func (r *Runner) execute(ctx context.Context, dels []Deletion) []error {
	results := make([]error, len(dels))
	sem := make(chan struct{}, r.cfg.MaxConcurrentDeletes)
	var wg sync.WaitGroup
	for i, d := range dels {
		acquired := false
		select {
		case <-ctx.Done():
		case sem <- struct{}{}:
			acquired = true
		}
		if err := ctx.Err(); err != nil {
			if acquired {
				<-sem
			}
			results[i] = fmt.Errorf("%w: %s: not attempted: %w", ErrDelete, podRef(d), err)
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i] = r.deleteOne(ctx, d)
		})
	}
	wg.Wait()
	return results
}

// deleteOne marks d's pod Failed when the plan says so, then deletes it.
func (r *Runner) deleteOne(ctx context.Context, d Deletion) error {
	pod := d.Pod
	log := r.log.With("pod", podRef(d), "uid", pod.UID, "reason", d.Reason.String())
	log.InfoContext(ctx, "podgc: force deleting pod")
	if d.Status != nil {
		patch, err := StatusPatch(pod, *d.Status)
		if err != nil {
			log.ErrorContext(ctx, "podgc: building status patch failed", "err", err)
			return err
		}
		if err := r.cfg.Writer.PatchPodStatus(ctx, pod.Namespace, pod.Name, patch); err != nil {
			if apierrors.IsNotFound(err) {
				log.InfoContext(ctx, "podgc: pod already gone")
				return nil
			}
			log.ErrorContext(ctx, "podgc: marking pod Failed failed", "err", err)
			return fmt.Errorf("%w: %s (%s): %w", ErrPatch, podRef(d), d.Reason, err)
		}
	}
	if err := r.cfg.Writer.DeletePod(ctx, pod.Namespace, pod.Name, DeleteOptions(pod)); err != nil {
		if apierrors.IsNotFound(err) {
			log.InfoContext(ctx, "podgc: pod already gone")
			return nil
		}
		log.ErrorContext(ctx, "podgc: deleting pod failed", "err", err)
		return fmt.Errorf("%w: %s (%s): %w", ErrDelete, podRef(d), d.Reason, err)
	}
	return nil
}

// record adds rep to the counters.
func (r *Runner) record(rep Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.Cycles++
	if errors.Is(rep.Err, ErrList) {
		r.stats.ListErrors++
	}
	r.stats.Skipped += len(rep.Plan.Skipped)
	for _, d := range rep.Deleted {
		r.stats.Deleted[d.Reason]++
	}
	for _, f := range rep.Failed {
		r.stats.Failed[f.Deletion.Reason]++
	}
	for _, err := range unjoin(rep.Err) {
		if errors.Is(err, ErrNodeCheck) {
			r.stats.NodeCheckErrors++
		}
	}
}

// Stats returns a copy of the counters.
func (r *Runner) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Deleted = maps.Clone(r.stats.Deleted)
	s.Failed = maps.Clone(r.stats.Failed)
	return s
}

// unjoin returns the errors joined in err (err itself if it is not a join).
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func podRef(d Deletion) string {
	return d.Pod.Namespace + "/" + d.Pod.Name
}
