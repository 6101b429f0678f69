package node

import (
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/podworker"
)

// EventRecorder receives the Kubernetes events (v1.Event: type, reason, message) that
// the kubelet would record about a pod. The node calls it outside every lock, from the
// pod workers' goroutines; Event must not block (queue the event and write it from
// another goroutine, dropping it when the queue is full, as client-go's
// record.EventRecorder does) and must be safe for concurrent use. The reasons the node
// records are the kubelet's (pkg/kubelet/events):
//
//   - Killing (Normal, "Stopping container <name>"): for each running container of a pod,
//     when the node asks the runtime to kill it (Runtime.KillPod), again on each retry.
//   - FailedKillPod (Warning, "error killing pod: <err>"): KillPod failed or left a
//     container running.
//   - FailedSync (Warning): the pod's runtime status could not be read ("error
//     determining status: <err>"), or Runtime.SyncPod failed ("error syncing pod: <err>").
//
// The runtime records its own, if it is given the recorder: Pulling, Pulled, Created,
// Started, BackOff ("Back-off restarting failed container ..."), NetworkNotReady, ...
// (examples/cri does, through cri.Config.Event).
type EventRecorder interface {
	Event(pod *v1.Pod, eventType, reason, message string)
}

// EventRecorderFunc adapts a function to an EventRecorder.
type EventRecorderFunc func(pod *v1.Pod, eventType, reason, message string)

var _ EventRecorder = EventRecorderFunc(nil)

// Event calls f.
func (f EventRecorderFunc) Event(pod *v1.Pod, eventType, reason, message string) {
	f(pod, eventType, reason, message)
}

// Metrics are the node's observation points, for metrics (package examples/metrics turns
// them into the kubelet's Prometheus series). A nil func is skipped; the zero value
// observes nothing. Every hook is called outside every lock; each must be quick and safe
// for concurrent use.
type Metrics struct {
	// PodWorkers are the pod workers' hooks: each sync started and finished (operation
	// type, duration, error) and each stage change (kubelet_pod_worker_duration_seconds,
	// kubelet_pod_worker_start_duration_seconds).
	PodWorkers podworker.Hooks
	// PLEG are the relister's hooks: each relist (duration, interval, health) and the
	// events dropped (kubelet_pleg_relist_duration_seconds,
	// kubelet_pleg_relist_interval_seconds, kubelet_pleg_last_seen_seconds,
	// kubelet_pleg_discard_events).
	PLEG pleg.Hooks
	// StatusSyncLatency is called each time a pod's status reaches the API server, with
	// the time since the oldest status it covers was set
	// (kubelet_pod_status_sync_duration_seconds; statusmgr.Config.ObserveSyncLatency).
	// It must not block.
	StatusSyncLatency func(time.Duration)
	// Housekeeping is called from the loop after every housekeeping round that ran
	// (kubelet_desired_pods, kubelet_working_pods, kubelet_orphaned_runtime_pods_total,
	// kubelet_restarted_pods_total).
	Housekeeping func(HousekeepingRound)
	// Probe is called after each probe the Runtime ran (a Prober's Probe without an
	// error), with its kind and result (prober_probe_total{probe_type, result}: Success
	// and Warning are "successful", Failure "failed", Unknown "unknown").
	Probe func(ProbeKind, ProbeResult)
}

// HousekeepingRound is what one housekeeping round found and did, as the kubelet's
// HandlePodCleanups reports it in its metrics.
type HousekeepingRound struct {
	// At is when the round started.
	At time.Time
	// DesiredPods and DesiredStaticPods count the desired pods that are not static, and
	// those that are (kubelet_desired_pods{static=""} and {static="true"}).
	DesiredPods, DesiredStaticPods int
	// Working counts the pods the pod workers know after the round, for each of the
	// kubelet's 15 label combinations of kubelet_working_pods (always all of them, zero
	// counts included).
	Working []WorkingPods
	// OrphansKilled counts the runtime pods found running without a pod worker in charge
	// and handed to the workers to be killed with grace 1 in this round
	// (kubelet_orphaned_runtime_pods_total).
	OrphansKilled int
	// Restarted and RestartedStatic count the desired pods unknown to the pod workers
	// (a UID reused) started again in this round (kubelet_restarted_pods_total{static=""}
	// and {static="true"}).
	Restarted, RestartedStatic int
}

// WorkingPods is one series of kubelet_working_pods: how many pods the pod workers know
// in a lifecycle stage ("sync", "terminating", "terminated"), by config ("desired",
// "orphan": no longer in a source, "runtime_only": a runtime pod no source ever had) and
// static ("true", "" or, for runtime_only, "unknown"): the kubelet's label values.
type WorkingPods struct {
	Lifecycle, Config, Static string
	Count                     int
}

// workingPods counts the pod workers' pods in the kubelet's label combinations.
func workingPods(known map[podworker.PodWorkerSync]int) []WorkingPods {
	var out []WorkingPods
	for _, c := range []struct {
		config            string
		orphan, hasConfig bool
		static            string
	}{
		{"desired", false, true, "true"},
		{"desired", false, true, ""},
		{"orphan", true, true, "true"},
		{"orphan", true, true, ""},
		{"runtime_only", true, false, "unknown"},
	} {
		for _, wt := range []podworker.WorkType{podworker.SyncPod, podworker.TerminatingPod, podworker.TerminatedPod} {
			k := podworker.PodWorkerSync{State: wt, Orphan: c.orphan, HasConfig: c.hasConfig, Static: c.static == "true"}
			out = append(out, WorkingPods{Lifecycle: wt.String(), Config: c.config, Static: c.static, Count: known[k]})
		}
	}
	return out
}

// countWorking counts the known pods by their PodWorkerSync (Static cleared for
// runtime-only pods, whose label is "unknown").
func countWorking(known map[types.UID]podworker.PodWorkerSync) map[podworker.PodWorkerSync]int {
	counts := make(map[podworker.PodWorkerSync]int, 8)
	for _, s := range known {
		if !s.HasConfig {
			s.Static = false
		}
		counts[s]++
	}
	return counts
}

// recordEvent hands an event to the recorder, if any.
func (n *Node) recordEvent(pod *v1.Pod, eventType, reason, format string, args ...any) {
	if n.cfg.Recorder == nil || pod == nil {
		return
	}
	n.cfg.Recorder.Event(pod, eventType, reason, fmt.Sprintf(format, args...))
}

// recordKilling records a Killing event for each running container of the pod.
func (n *Node) recordKilling(pod *v1.Pod, rs *pleg.PodStatus) {
	if n.cfg.Recorder == nil || rs == nil {
		return
	}
	for _, c := range rs.ContainerStatuses {
		if c != nil && c.State == pleg.ContainerStateRunning {
			n.recordEvent(pod, v1.EventTypeNormal, ReasonKilling, "Stopping container %s", c.Name)
		}
	}
}

// podWorkerHooks are the pod workers' hooks: the caller's, and the node's FailedSync
// event for a status that could not be read.
func (n *Node) podWorkerHooks() podworker.Hooks {
	h := n.cfg.Metrics.PodWorkers
	userTransition := h.Transition
	h.Transition = func(t podworker.Transition, at time.Time) {
		if t.To == podworker.StageNone || t.To == podworker.StageTerminating {
			n.reasons.forget(t.UID) // the worker is forgotten, or the pod terminates
			n.deadlines.set(t.UID, time.Time{})
		}
		if userTransition != nil {
			userTransition(t, at)
		}
	}
	if n.cfg.Recorder == nil {
		return h
	}
	user := h.SyncFinished
	h.SyncFinished = func(s podworker.Sync) {
		if s.Err != nil && s.Pod != nil && !s.Cancelled && errors.Is(s.Err, podworker.ErrRuntimeStatus) {
			n.recordEvent(s.Pod, v1.EventTypeWarning, ReasonFailedSync, "error determining status: %v", s.Err)
		}
		if user != nil {
			user(s)
		}
	}
	return h
}
