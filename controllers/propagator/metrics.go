package propagator

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The propagator's Prometheus metrics, served on the manager's metrics
// endpoint with controller-runtime's own (reconcile counts, work queue
// depth, ...).
var (
	handshakeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "placer_handshake_duration_seconds",
		Help:    "Time from a cluster's first candidate to its commit or rejection, by result.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
	}, []string{"result"})
	propagatorWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "placer_propagator_status_writes_total",
		Help: "Propagator passes that had a Workload status to write, by result: written, conflict (the Workload changed since it was read, or is gone; the pass runs again), superseded (not sent: the cache already held the Workload changed since it was read) or error.",
	}, []string{"result"})
	runnerUpsDeferred = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "placer_runner_up_candidates_deferred_total",
		Help: "Propagator passes in which a nominated cluster other than the chosen one got no new candidates because it held --max-runner-up-candidates waiting runner-ups already.",
	})
	memberBusy = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "placer_propagator_member_busy_total",
		Help: "Propagator passes stopped by a member that had --cluster-max-in-flight requests in flight already (the request was not sent); the Workload comes back once the member has a slot free.",
	})
)

func init() {
	metrics.Registry.MustRegister(handshakeDuration, propagatorWrites, runnerUpsDeferred, memberBusy)
}
