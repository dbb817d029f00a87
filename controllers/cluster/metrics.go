package cluster

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The cluster controller's Prometheus metrics, served on the manager's metrics
// endpoint with controller-runtime's own (reconcile counts, work queue
// depth, ...).
var (
	readyClusters = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "placer_ready_clusters",
		Help: "KubernetesClusters whose Ready condition is True.",
	})
)

func init() {
	metrics.Registry.MustRegister(readyClusters)
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
