package controllers

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The manager's Prometheus metrics, served on its metrics endpoint with
// controller-runtime's own (reconcile counts, work queue depth, ...).
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
	handshakeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "placer_handshake_duration_seconds",
		Help:    "Time from a cluster's first candidate to its commit or rejection, by result.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
	}, []string{"result"})
	schedulerWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "placer_scheduler_writes_total",
		Help: "Scheduling decisions written to Workloads, by result: written, conflict (the Workload changed since the decision, or is gone; the decision is made again), superseded (not sent: the cache already held the Workload changed since the decision, which is made again at once) or error.",
	}, []string{"result"})
	propagatorWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "placer_propagator_status_writes_total",
		Help: "Propagator passes that had a Workload status to write, by result: written, conflict (the Workload changed since it was read, or is gone; the pass runs again), superseded (not sent: the cache already held the Workload changed since it was read) or error.",
	}, []string{"result"})
	runnerUpsDeferred = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "placer_runner_up_candidates_deferred_total",
		Help: "Propagator passes in which a nominated cluster other than the chosen one got no new candidates because it held --max-runner-up-candidates waiting runner-ups already.",
	})
	pendingWorkloads = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "placer_pending_workloads",
		Help: "Workloads served by this manager's scheduler that have no cluster.",
	})
	readyClusters = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "placer_ready_clusters",
		Help: "KubernetesClusters whose Ready condition is True.",
	})
)

func init() {
	metrics.Registry.MustRegister(schedulingAttempts, schedulingDuration, handshakeDuration, schedulerWrites, propagatorWrites, runnerUpsDeferred, pendingWorkloads, readyClusters)
}

// readiness counts Ready clusters for the gauge.
type readiness struct {
	mu    sync.Mutex
	ready map[types.NamespacedName]bool
}

func (r *readiness) set(key types.NamespacedName, ready bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ready == nil {
		r.ready = map[types.NamespacedName]bool{}
	}
	if ready {
		r.ready[key] = true
	} else {
		delete(r.ready, key)
	}
	readyClusters.Set(float64(len(r.ready)))
}
