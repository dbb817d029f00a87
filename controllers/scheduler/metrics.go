package scheduler

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The scheduler's Prometheus metrics, served on the manager's metrics
// endpoint with controller-runtime's own (reconcile counts, work queue
// depth, ...).
var (
	schedulingAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "placer_scheduling_attempts_total",
		Help: "Scheduling cycles run, by result: scheduled or unschedulable.",
	}, []string{"result"})
	schedulingDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "placer_scheduling_cycle_duration_seconds",
		Help:    "Duration of one scheduling cycle (predicates and priorities over the fleet).",
		Buckets: prometheus.ExponentialBuckets(0.00005, 2, 16),
	})
	schedulerWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "placer_scheduler_writes_total",
		Help: "Scheduling decisions written to Workloads, by result: written, conflict (the Workload changed since the decision, or is gone; the decision is made again), superseded (not sent: the cache already held the Workload changed since the decision, which is made again at once) or error.",
	}, []string{"result"})
	pendingWorkloads = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "placer_pending_workloads",
		Help: "Workloads served by this manager's scheduler that have no cluster.",
	})
)

func init() {
	metrics.Registry.MustRegister(schedulingAttempts, schedulingDuration, schedulerWrites, pendingWorkloads)
}
