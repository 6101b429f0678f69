// Package metrics exports a podlife node's figures to Prometheus under the kubelet's own
// metric names, label names and buckets (pkg/kubelet/metrics of Kubernetes 1.37), so the
// kubelet's dashboards and alerts work on a podlife node agent:
//
//	kubelet_pod_worker_duration_seconds{operation_type}  histogram  a pod worker's work: create, update, sync, kill, terminated
//	kubelet_pod_worker_start_duration_seconds             histogram  from the pod's first sight (config.seen) to its first sync
//	kubelet_pleg_relist_duration_seconds                  histogram  one relist
//	kubelet_pleg_relist_interval_seconds                  histogram  from one successful relist's start to the next's
//	kubelet_pleg_last_seen_seconds                        gauge      Unix time of the last successful relist's start
//	kubelet_pleg_discard_events                           counter    PLEG events dropped for a full channel
//	kubelet_pod_status_sync_duration_seconds              histogram  from a status set to its write to the API server
//	kubelet_working_pods{lifecycle,config,static}         gauge      the pod workers' pods, after each housekeeping
//	kubelet_desired_pods{static}                          gauge      the sources' pods, after each housekeeping
//	kubelet_orphaned_runtime_pods_total                   counter    runtime pods found running that nothing runs, killed
//	kubelet_restarted_pods_total{static}                  counter    desired pods started again (a UID reused)
//
// Wire it with New (one Registerer per node: no global state) and node.Config.Metrics:
//
//	reg := prometheus.NewRegistry()
//	m, err := metrics.New(reg)
//	n, err := node.New(node.Config{..., Metrics: m.Hooks()})
//	http.Handle("/", metrics.Handler(reg, n.Relister().Healthy))  // /metrics and /healthz
//
// The hooks only update Prometheus collectors: they never block.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/podlife/podlife/config"
	"github.com/podlife/podlife/node"
	"github.com/podlife/podlife/pleg"
	"github.com/podlife/podlife/podworker"
)

// Subsystem is the kubelet's metrics subsystem.
const Subsystem = "kubelet"

// defBuckets are the kubelet's metrics.DefBuckets (prometheus.DefBuckets).
var defBuckets = prometheus.DefBuckets

// Metrics holds the collectors of one node.
type Metrics struct {
	PodWorkerDuration      *prometheus.HistogramVec
	PodWorkerStartDuration prometheus.Histogram
	PLEGRelistDuration     prometheus.Histogram
	PLEGRelistInterval     prometheus.Histogram
	PLEGLastSeen           prometheus.Gauge
	PLEGDiscardEvents      prometheus.Counter
	PodStatusSyncDuration  prometheus.Histogram
	WorkingPods            *prometheus.GaugeVec
	DesiredPods            *prometheus.GaugeVec
	OrphanedRuntimePods    prometheus.Counter
	RestartedPods          *prometheus.CounterVec
}

// New creates the collectors and registers them with reg (an error if one is already
// registered there).
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		PodWorkerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: Subsystem, Name: "pod_worker_duration_seconds",
			Help:    "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
			Buckets: defBuckets,
		}, []string{"operation_type"}),
		PodWorkerStartDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: Subsystem, Name: "pod_worker_start_duration_seconds",
			Help:    "Duration in seconds from kubelet seeing a pod to starting a worker.",
			Buckets: defBuckets,
		}),
		PLEGRelistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: Subsystem, Name: "pleg_relist_duration_seconds",
			Help:    "Duration in seconds for relisting pods in PLEG.",
			Buckets: defBuckets,
		}),
		PLEGRelistInterval: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: Subsystem, Name: "pleg_relist_interval_seconds",
			Help:    "Interval in seconds between relisting in PLEG.",
			Buckets: defBuckets,
		}),
		PLEGLastSeen: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: Subsystem, Name: "pleg_last_seen_seconds",
			Help: "Timestamp in seconds when PLEG was last seen active.",
		}),
		PLEGDiscardEvents: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: Subsystem, Name: "pleg_discard_events",
			Help: "The number of discard events in PLEG.",
		}),
		PodStatusSyncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: Subsystem, Name: "pod_status_sync_duration_seconds",
			Help:    "Duration in seconds to sync a pod status update. Measures time from detection of a change to pod status until the API is successfully updated for that pod, even if multiple intevening changes to pod status occur.",
			Buckets: []float64{0.010, 0.050, 0.100, 0.500, 1, 5, 10, 20, 30, 45, 60},
		}),
		WorkingPods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: Subsystem, Name: "working_pods",
			Help: "Number of pods the kubelet is actually running, broken down by lifecycle phase, whether the pod is desired, orphaned, or runtime only (also orphaned), and whether the pod is static. An orphaned pod has been removed from local configuration or force deleted in the API and consumes resources that are not otherwise visible.",
		}, []string{"lifecycle", "config", "static"}),
		DesiredPods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: Subsystem, Name: "desired_pods",
			Help: "The number of pods the kubelet is being instructed to run. static is true if the pod is not from the apiserver.",
		}, []string{"static"}),
		OrphanedRuntimePods: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: Subsystem, Name: "orphaned_runtime_pods_total",
			Help: "Number of pods that have been detected in the container runtime without being already known to the pod worker. This typically indicates the kubelet was restarted while a pod was force deleted in the API or in the local configuration, which is unusual.",
		}),
		RestartedPods: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: Subsystem, Name: "restarted_pods_total",
			Help: "Number of pods that have been restarted because they were deleted and recreated with the same UID while the kubelet was watching them (common for static pods, extremely uncommon for API pods)",
		}, []string{"static"}),
	}
	for _, c := range []prometheus.Collector{m.PodWorkerDuration, m.PodWorkerStartDuration, m.PLEGRelistDuration,
		m.PLEGRelistInterval, m.PLEGLastSeen, m.PLEGDiscardEvents, m.PodStatusSyncDuration, m.WorkingPods,
		m.DesiredPods, m.OrphanedRuntimePods, m.RestartedPods} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Hooks returns the node's hooks that update the collectors.
func (m *Metrics) Hooks() node.Metrics {
	return node.Metrics{
		PodWorkers: podworker.Hooks{SyncStarted: m.syncStarted, SyncFinished: m.syncFinished},
		PLEG:       pleg.Hooks{Relisted: m.relisted, EventsDropped: func(n int) { m.PLEGDiscardEvents.Add(float64(n)) }},
		StatusSyncLatency: func(d time.Duration) {
			m.PodStatusSyncDuration.Observe(d.Seconds())
		},
		Housekeeping: m.housekeeping,
	}
}

// syncStarted observes the start latency of a pod's first sync (the kubelet records it
// when it syncs a pod for a create, from the pod's config.seen annotation).
func (m *Metrics) syncStarted(s podworker.Sync) {
	if s.WorkType != podworker.SyncPod || s.UpdateType != podworker.SyncPodCreate || s.Pod == nil {
		return
	}
	v, ok := s.Pod.Annotations[config.ConfigFirstSeenAnnotationKey]
	if !ok {
		return
	}
	seen, err := time.Parse(config.SeenTimeLayout, v)
	if err != nil {
		return
	}
	m.PodWorkerStartDuration.Observe(s.Started.Sub(seen).Seconds())
}

func (m *Metrics) syncFinished(s podworker.Sync) {
	m.PodWorkerDuration.WithLabelValues(s.OperationType()).Observe(s.Duration.Seconds())
}

func (m *Metrics) relisted(r pleg.Relist) {
	m.PLEGRelistDuration.Observe(r.Duration.Seconds())
	if r.Interval > 0 {
		m.PLEGRelistInterval.Observe(r.Interval.Seconds())
	}
	if !r.LastSeen.IsZero() {
		m.PLEGLastSeen.Set(float64(r.LastSeen.Unix()))
	}
}

func (m *Metrics) housekeeping(r node.HousekeepingRound) {
	m.DesiredPods.WithLabelValues("").Set(float64(r.DesiredPods))
	m.DesiredPods.WithLabelValues("true").Set(float64(r.DesiredStaticPods))
	for _, w := range r.Working {
		m.WorkingPods.WithLabelValues(w.Lifecycle, w.Config, w.Static).Set(float64(w.Count))
	}
	m.OrphanedRuntimePods.Add(float64(r.OrphansKilled))
	m.RestartedPods.WithLabelValues("true").Add(float64(r.RestartedStatic))
	m.RestartedPods.WithLabelValues("").Add(float64(r.Restarted))
}

// Handler serves /metrics (the gatherer's series) and /healthz: 200 "ok" while healthy
// reports true (pass a pleg.Relister's Healthy, as the kubelet's PLEG health check), 500
// with the error otherwise. A nil healthy is always healthy.
func Handler(g prometheus.Gatherer, healthy func() (bool, error)) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if healthy != nil {
			if ok, err := healthy(); !ok {
				msg := "not healthy"
				if err != nil {
					msg = err.Error()
				}
				http.Error(w, "[-]pleg failed: "+msg, http.StatusInternalServerError)
				return
			}
		}
		_, _ = w.Write([]byte("ok"))
	})
	return mux
}
