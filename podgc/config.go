package podgc

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/utils/clock"

	"github.com/podlife/podlife/internal/validate"
)

const (
	// DefaultCheckPeriod is the time between the end of one cycle and the start of the next,
	// as in the controller.
	DefaultCheckPeriod = 20 * time.Second
	// DefaultTerminatedPodThreshold is kube-controller-manager's default for
	// --terminated-pod-gc-threshold. Config does not apply it by itself: a zero
	// Config.TerminatedPodThreshold disables the terminated pass, as in the controller.
	DefaultTerminatedPodThreshold = 12500
	// DefaultMaxConcurrentDeletes is how many pods a cycle deletes at once by default.
	DefaultMaxConcurrentDeletes = 10
)

// Config configures a Runner. Lister and Writer are required; every other field has a
// default.
type Config struct {
	// Lister lists pods and nodes at the start of each cycle. Required.
	Lister Lister
	// Writer patches pod statuses and deletes pods. Required.
	Writer PodWriter
	// NodeChecker, when set, confirms that a node out of quarantine is really gone before
	// its pods are deleted as orphans. Nil trusts the node list.
	NodeChecker NodeChecker

	// TerminatedPodThreshold is how many terminated pods may remain before the oldest are
	// deleted. Zero or negative disables the terminated pass (the other passes still run).
	// kube-controller-manager uses DefaultTerminatedPodThreshold.
	TerminatedPodThreshold int
	// CheckPeriod is the pause between the end of a cycle and the start of the next.
	// Zero means DefaultCheckPeriod; negative is invalid.
	CheckPeriod time.Duration
	// QuarantinePeriod is how long a node must be missing from the node list before the
	// pods bound to it are deleted as orphans. Zero means DefaultQuarantinePeriod; negative
	// is invalid.
	QuarantinePeriod time.Duration
	// MaxConcurrentDeletes bounds the pods a cycle patches and deletes at once. Zero means
	// DefaultMaxConcurrentDeletes; 1 writes one pod at a time; negative is invalid.
	MaxConcurrentDeletes int

	// Clock gives the time and the period timer. Nil means the real clock.
	Clock clock.Clock
	// Logger receives one record per deletion, failure and skipped entry. Nil discards.
	Logger *slog.Logger
	// OnCycle, when set, is called with each cycle's Report at the end of the cycle, on the
	// goroutine that ran it (for metrics and tests). It must not call RunOnce.
	OnCycle func(Report)
}

// validate returns every problem of cfg, joined, each wrapping ErrInvalidConfig.
func (cfg Config) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if cfg.Lister == nil {
		bad("Lister is required")
	}
	if cfg.Writer == nil {
		bad("Writer is required")
	}
	for _, msg := range validate.TypedNils(
		validate.Field{Name: "Lister", Value: cfg.Lister},
		validate.Field{Name: "Writer", Value: cfg.Writer},
		validate.Field{Name: "NodeChecker", Value: cfg.NodeChecker},
		validate.Field{Name: "Clock", Value: cfg.Clock},
	) {
		bad("%s", msg)
	}
	if cfg.CheckPeriod < 0 {
		bad("CheckPeriod %v is negative", cfg.CheckPeriod)
	}
	if cfg.QuarantinePeriod < 0 {
		bad("QuarantinePeriod %v is negative", cfg.QuarantinePeriod)
	}
	if cfg.MaxConcurrentDeletes < 0 {
		bad("MaxConcurrentDeletes %d is negative", cfg.MaxConcurrentDeletes)
	}
	return errors.Join(errs...)
}

// withDefaults returns cfg with every zero optional field set to its default.
func (cfg Config) withDefaults() Config {
	if cfg.CheckPeriod == 0 {
		cfg.CheckPeriod = DefaultCheckPeriod
	}
	if cfg.QuarantinePeriod == 0 {
		cfg.QuarantinePeriod = DefaultQuarantinePeriod
	}
	if cfg.MaxConcurrentDeletes == 0 {
		cfg.MaxConcurrentDeletes = DefaultMaxConcurrentDeletes
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg
}
