package main

import (
	"math"
	"testing"
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
