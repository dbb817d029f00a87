// Package clientmetrics reports how long this process's API requests wait
// in their clients' token buckets (--kube-api-qps and the like) and how
// long they take once sent, by verb and path: client-go's
// rest_client_rate_limiter_duration_seconds and
// rest_client_request_duration_seconds, served with controller-runtime's
// metrics and by path rather than by host (the manager's clients share one
// host, and a path names the resource whose client's bucket it waited in).
package clientmetrics

import (
	"context"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientgometrics "k8s.io/client-go/tools/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// RateLimiterWait is the time requests waited for a token.
var RateLimiterWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "placer_rest_client_rate_limiter_duration_seconds",
	Help:    "Time API requests waited in their client's token bucket, by verb and path (names and namespaces as {name} and {namespace}).",
	Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
}, []string{"verb", "path"})

// RequestDuration is the time requests took once sent, until their
// answer (a watch's until its headers).
var RequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "placer_rest_client_request_duration_seconds",
	Help:    "Time API requests took from being sent to their answer, by verb and path (names and namespaces as {name} and {namespace}).",
	Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
}, []string{"verb", "path"})

func init() { metrics.Registry.MustRegister(RateLimiterWait, RequestDuration) }

// latency observes into one histogram by verb and path.
type latency struct{ h *prometheus.HistogramVec }

func (l latency) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	path, err := url.PathUnescape(u.Path)
	if err != nil {
		path = u.Path
	}
	l.h.WithLabelValues(verb, path).Observe(d.Seconds())
}

// Observe makes every client of this process report its waits; call it
// before the first client is made. It replaces what client-go's one-time
// registration set (kube-scheduler's, in the same binary, for its own
// registry), in this process only.
func Observe() {
	clientgometrics.RateLimiterLatency = latency{RateLimiterWait}
	clientgometrics.RequestLatency = latency{RequestDuration}
}
