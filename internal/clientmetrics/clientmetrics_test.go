package clientmetrics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestObserve: with Observe, a client's requests report their waits for
// a token under their verb and path; the second of two requests on a
// bucket of one token waits for the next.
func TestObserve(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
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
	m := &dto.Metric{}
	if err := RateLimiterWait.WithLabelValues("GET", "/api/v1/namespaces/{namespace}/pods/{name}").(interface{ Write(*dto.Metric) error }).Write(m); err != nil {
		t.Fatal(err)
	}
	h := m.GetHistogram()
	if h.GetSampleCount() != 2 || h.GetSampleSum() < 0.05 {
		t.Errorf("%d waits observed, %.3f s in all; want 2, the second about 0.1 s", h.GetSampleCount(), h.GetSampleSum())
	}
}
