package main

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestParseRates(t *testing.T) {
	got, err := parseRates("40, 10,20,10")
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{10, 20, 40}; len(got) != len(want) || got[0] != 10 || got[1] != 20 || got[2] != 40 {
		t.Errorf("parseRates: got %v, want %v (sorted, once each)", got, want)
	}
	for _, bad := range []string{"", "10,x", "0", "-5"} {
		if _, err := parseRates(bad); err == nil {
			t.Errorf("parseRates(%q): no error", bad)
		}
	}
}

func TestArrivals(t *testing.T) {
	if got := arrivals(40, 15*time.Second); got != 600 {
		t.Errorf("40/s over 15 s: %d items, want 600", got)
	}
	if got := arrivals(0.01, time.Second); got != 1 {
		t.Errorf("a rate too low for the window: %d items, want 1", got)
	}
	start := time.Unix(1000, 0)
	if got := arrival(start, 40, 10).Sub(start); got != 250*time.Millisecond {
		t.Errorf("the 10th arrival at 40/s: %s after the start, want 250ms", got)
	}
}

// TestPace: every arrival is created once, with its own time, spaced by
// the rate; a create that holds the only slot makes the next ones late;
// an error comes back.
func TestPace(t *testing.T) {
	var mu sync.Mutex
	ats := map[int]time.Time{}
	late, err := pace(context.Background(), 100, 20, 64, func(_ context.Context, i int, at time.Time) error {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := ats[i]; ok {
			t.Errorf("arrival %d created twice", i)
		}
		ats[i] = at
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ats) != 20 {
		t.Fatalf("%d arrivals created, want 20", len(ats))
	}
	for i := 1; i < 20; i++ {
		if d := ats[i].Sub(ats[0]); d != time.Duration(i)*10*time.Millisecond {
			t.Errorf("arrival %d at %s after the first, want %dms", i, d, 10*i)
		}
	}
	t.Logf("%d of 20 late with room to spare", late)

	// One slot, each create 200 ms, at 100/s: every arrival after the
	// first begins at least 190 ms after its time.
	late, err = pace(context.Background(), 100, 4, 1, func(context.Context, int, time.Time) error {
		time.Sleep(200 * time.Millisecond)
		return nil
	})
	if err != nil || late != 3 {
		t.Errorf("one slot held 200 ms: %d late (%v), want 3", late, err)
	}

	boom := errors.New("boom")
	if _, err := pace(context.Background(), 1000, 5, 5, func(_ context.Context, i int, _ time.Time) error {
		if i == 3 {
			return boom
		}
		return nil
	}); !errors.Is(err, boom) {
		t.Errorf("a create's error: got %v", err)
	}
}

func loadAt(phase string, rate float64, n int, running ...time.Duration) loadResult {
	l := append(latencies(nil), running...)
	return loadResult{phase: phase, rate: rate, res: phaseResult{n: n, complete: len(running), runing: l}}
}

func TestSustained(t *testing.T) {
	base := 500 * time.Millisecond
	rs := []loadResult{
		loadAt(nsBaseline, 0, 3, 400*time.Millisecond, 450*time.Millisecond, base),
		loadAt("fanout-1", 0, 2, time.Second, 2*time.Second),
		loadAt("fanout-1", 10, 2, time.Second, 3500*time.Millisecond), // adds 3 s at p99: sustained
		loadAt("fanout-1", 20, 2, time.Second, 3600*time.Millisecond), // adds 3.1 s: not
		loadAt("fanout-1", 40, 2, time.Second, time.Second),           // after a rate it did not sustain
		loadAt("spread", 10, 3, time.Second, time.Second),             // one item did not run
	}
	if got := unloadedP99(rs); got != base {
		t.Fatalf("unloaded p99 %s, want the bare Pods' %s", got, base)
	}
	if got := highestSustained(rs, "fanout-1", base); got != 10 {
		t.Errorf("fanout-1 sustained %g items/s, want 10", got)
	}
	if got := highestSustained(rs, "spread", base); got != 0 {
		t.Errorf("a phase whose items did not all run sustained %g, want 0", got)
	}
	if sustains(loadAt("x", 10, 0), base) {
		t.Error("a step with no items sustained its rate")
	}
}

func TestRecorderReset(t *testing.T) {
	r := newRecorder()
	r.add(&record{phase: "a", name: "x", replicas: 1})
	r.add(&record{phase: "b", name: "y", replicas: 1})
	r.done["a"], r.counts["a"].chaperons = 1, 3
	r.reset("a")
	if got := r.records("a"); len(got) != 0 || r.completed("a") != 0 || r.phaseCounts("a").chaperons != 0 {
		t.Errorf("after reset: %d records, %d done, %d chaperons; want none", len(got), r.completed("a"), r.phaseCounts("a").chaperons)
	}
	if len(r.records("b")) != 1 {
		t.Error("reset of a forgot b's record")
	}
}
