package clientmetrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestObserve: with Observe, a client's requests report their waits for
// a token under their verb and path; the second of two requests on a
// bucket of one token waits for the next. Each reports how long the
// server took too (it answers 30 ms later).
func TestObserve(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(30 * time.Millisecond)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}`))
	}))
	defer srv.Close()
	Observe()
	cs := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL, QPS: 10, Burst: 1})
	for range 2 {
		if _, err := cs.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	histogram := func(v *prometheus.HistogramVec) *dto.Histogram {
		m := &dto.Metric{}
		if err := v.WithLabelValues("GET", "/api/v1/namespaces/{namespace}/pods/{name}").(prometheus.Metric).Write(m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram()
	}
	// The first request's answer took 30 ms of the 100 ms the second
	// waits for its token.
	if h := histogram(RateLimiterWait); h.GetSampleCount() != 2 || h.GetSampleSum() < 0.04 {
		t.Errorf("%d waits observed, %.3f s in all; want 2, the second about 0.07 s", h.GetSampleCount(), h.GetSampleSum())
	}
	if h := histogram(RequestDuration); h.GetSampleCount() != 2 || h.GetSampleSum() < 0.06 {
		t.Errorf("%d requests observed, %.3f s in all; want 2 of at least 30 ms", h.GetSampleCount(), h.GetSampleSum())
	}
}
