package main

import (
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

func TestHistogramQuantile(t *testing.T) {
	// 100 calls: 90 within 5 ms, 9 within 25 ms, 1 within 100 ms.
	h := histogram{buckets: map[float64]float64{0.005: 90, 0.025: 99, 0.1: 100, math.Inf(1): 100}, sum: 0.5, count: 100}
	before := histogram{buckets: map[float64]float64{0.005: 0, 0.025: 0, 0.1: 0, math.Inf(1): 0}}
	d := h.minus(before)
	if got := d.quantile(0.5); math.Abs(got-0.005*50/90) > 1e-9 {
		t.Errorf("p50 = %g, want %g (within the first bucket)", got, 0.005*50/90)
	}
	if got := d.quantile(0.99); math.Abs(got-0.025) > 1e-9 {
		t.Errorf("p99 = %g, want 0.025 (the 99th call ends the second bucket)", got)
	}
	if got := d.within(0.005); got != 0.9 {
		t.Errorf("within 5 ms = %g, want 0.9", got)
	}
	if got := (histogram{}).quantile(0.5); !math.IsNaN(got) {
		t.Errorf("an empty histogram's p50 = %g, want NaN", got)
	}
}

// TestOfferedSourcePod: an offered-load source pod's record keeps its
// arrival time when the proxy pod is first seen, and counts once Running.
func TestOfferedSourcePod(t *testing.T) {
	p := sourcePod("r10-0001")
	if _, ok := p.Annotations[v1alpha1.AnnotationElect]; !ok || p.Namespace != nsFrontend {
		t.Fatalf("source pod %s/%s, annotations %v: want the front end's namespace and %s", p.Namespace, p.Name, p.Annotations, v1alpha1.AnnotationElect)
	}
	r := newRecorder()
	at := time.Now().Add(-time.Second)
	recs := recordsOf(nsFrontend, item{name: p.Name, replicas: 1})
	if len(recs) != 1 || !recs[0].proxy {
		t.Fatalf("records %+v: want one proxy pod's", recs)
	}
	recs[0].created = at
	r.add(recs[0])
	r.proxyPod(p)
	if got := r.records(nsFrontend); len(got) != 1 || !got[0].created.Equal(at) {
		t.Fatalf("after the pod was seen: %d records; want one created at its arrival", len(got))
	}
	if r.completed(nsFrontend) != 0 {
		t.Error("a Pending proxy pod counted as Running")
	}
	p.Status.Phase = corev1.PodRunning
	r.proxyPod(p)
	r.proxyPod(p)
	if got := r.completed(nsFrontend); got != 1 {
		t.Errorf("Running proxy pod seen twice: %d done, want 1", got)
	}
}

// TestCheckProfile: -profile takes a phase the burst runs, and only in the
// burst; without -profile nothing is checked. -phases names the burst's
// phases, and only in the burst.
func TestCheckProfile(t *testing.T) {
	for _, c := range []struct {
		o  options
		ok bool
	}{
		{options{profile: true, profilePhase: nsFrontend}, true},
		{options{profile: true, profilePhase: "fanout-1"}, true},
		{options{profile: true, profilePhase: "fanout1"}, false},
		{options{profile: true, profilePhase: "baseline"}, false},
		{options{profile: true, profilePhase: "fanout-1", rates: "10"}, false},
		{options{profile: true, profilePhase: "fanout-1", divided: 30}, false},
		{options{profilePhase: "anything"}, true},
		{options{phases: "baseline,fanout-1,frontend"}, true},
		{options{phases: "fanout-1,frontend", profile: true, profilePhase: "frontend"}, true},
		{options{phases: "fanout-1", profile: true, profilePhase: "frontend"}, false},
		{options{phases: "fanout1"}, false},
		{options{phases: "fanout-1", rates: "10"}, false},
		{options{phases: "fanout-1," + nsKarmada}, false},
		{options{phases: "fanout-1," + nsKarmada, karmada: true}, true},
	} {
		if err := checkProfile(c.o); (err == nil) != c.ok {
			t.Errorf("checkProfile(profile %v, phase %q, phases %q, rates %q, divided %d) = %v, want ok %v", c.o.profile, c.o.profilePhase, c.o.phases, c.o.rates, c.o.divided, err, c.ok)
		}
	}
}
