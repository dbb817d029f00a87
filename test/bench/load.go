package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// maxAddedP99 is what a phase may add at p99 to one pod's create →
// Running in an idle member (the bare-Pod baseline, unloaded) and still
// sustain a rate.
const maxAddedP99 = 3 * time.Second

// loadPhase is one phase of the offered-load measure: its namespace, what
// it is, and how it creates one single-replica item.
type loadPhase struct {
	ns, what string
	create   func(ctx context.Context, it item, i int) error
}

// loadResult is one phase at one offered rate (rate 0: unloaded, items
// created one at a time, each once the one before runs).
type loadResult struct {
	phase string
	rate  float64
	res   phaseResult
	// late: arrivals whose create began more than a tenth of a second
	// after its time (the creating side fell behind the offered rate).
	late int
	// tokenWait: the seconds placer's manager waited for its clients'
	// tokens meanwhile (its client limit binding, when large).
	tokenWait float64
	// groupCPU: each CPU group's seconds over the step (-cluster-cpus).
	groupCPU map[string]float64
}

// parseRates reads -rates: positive items per second, separated by commas,
// in increasing order.
func parseRates(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || r <= 0 {
			return nil, fmt.Errorf("-rates %q: want positive numbers of items per second, separated by commas", s)
		}
		out = append(out, r)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// arrivals is how many items a rate offers over the window (at least one).
func arrivals(rate float64, window time.Duration) int {
	return max(1, int(rate*window.Seconds()+0.5))
}

// arrival is when the i-th item of a rate arrives, from start.
func arrival(start time.Time, rate float64, i int) time.Time {
	return start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
}

// pace calls create for n arrivals at a fixed rate, open loop: each at its
// time, in a goroutine of its own (at most inFlight at once), whatever the
// ones before it are doing; at is the arrival's time, which is when its
// latency counts from. It returns once every call returned: the first
// error, and how many calls began more than a tenth of a second late.
func pace(ctx context.Context, rate float64, n, inFlight int, create func(ctx context.Context, i int, at time.Time) error) (late int, err error) {
	start := time.Now()
	slots := make(chan struct{}, inFlight)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for i := range n {
		at := arrival(start, rate, i)
		if d := time.Until(at); d > 0 {
			if err := sleep(ctx, d); err != nil {
				break
			}
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		if time.Since(at) > 100*time.Millisecond {
			late++
		}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := create(ctx, i, at); err != nil {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return late, first
}

// sustains: every item ran, and p99 create → Running added at most
// maxAddedP99 to the unloaded bare Pod's.
func sustains(r loadResult, base time.Duration) bool {
	return r.res.n > 0 && r.res.complete == r.res.n && r.res.runing.pct(99)-base <= maxAddedP99
}

// highestSustained is the highest rate a phase sustained, below which it
// sustained every rate measured too (0: none).
func highestSustained(rs []loadResult, phase string, base time.Duration) float64 {
	best := 0.0
	for _, r := range rs {
		if r.phase != phase || r.rate == 0 {
			continue
		}
		if !sustains(r, base) {
			break
		}
		best = r.rate
	}
	return best
}

// loadPhases are the baselines and placer's single-cluster phases, as
// the offered-load measure runs them (single-replica items).
func loadPhases(f *fleet, o options, mc client.Client) []loadPhase {
	var out []loadPhase
	for _, bp := range baselines(f, o) {
		out = append(out, loadPhase{ns: bp.ns, what: bp.what, create: bp.create})
	}
	for _, ph := range placerPhases(o) {
		out = append(out, loadPhase{ns: ph.ns, what: ph.what, create: func(ctx context.Context, it item, _ int) error {
			return mc.Create(ctx, newWorkload(ph.ns, it, ph.fanOut, ph.mode, nil))
		}})
	}
	out = append(out, loadPhase{ns: nsFrontend, what: "placer's front end: a source pod per item (a bare Pod annotated " + v1alpha1.AnnotationElect + "), placed as a Workload of one, fanOut 1; Running when the proxy pod shows its delegate Running",
		create: func(ctx context.Context, it item, _ int) error { return mc.Create(ctx, sourcePod(it.name)) }})
	return out
}

// offeredLoad measures each phase unloaded (o.unloaded items, one at a
// time), then at each rate, open loop, for o.rateWindow; a phase's higher
// rates are skipped once one is not sustained. load.md is written again
// after each step: a run cut short keeps what it measured.
func offeredLoad(ctx context.Context, o options, f *fleet, rates []float64) error {
	rec, mc, err := watchAndCreate(ctx, f, o)
	if err != nil {
		return err
	}
	baseline := kubernetes.NewForConfigOrDie(f.members[0].RESTConfig())
	phases := loadPhases(f, o, mc)
	if o.loadPhases != "" {
		phases = slices.DeleteFunc(phases, func(ph loadPhase) bool { return !slices.Contains(strings.Split(o.loadPhases, ","), ph.ns) })
	}
	if slices.ContainsFunc(phases, func(ph loadPhase) bool { return ph.ns == nsFrontend }) {
		if err := rec.watchProxyPods(ctx, f.mgmt.RESTConfig()); err != nil {
			return err
		}
	}
	var rs []loadResult
	step := func(ph loadPhase, rate float64) (loadResult, error) {
		r, err := loadStep(ctx, o, f, baseline, rec, ph, rate)
		if err != nil {
			return r, err
		}
		rs = append(rs, r)
		return r, writeLoad(o, f, phases, rs)
	}
	// The fleet settles first, as the burst's "at rest" does: a cluster
	// just started is still busy with its own.
	if err := sleep(ctx, restWindow); err != nil {
		return err
	}
	for _, ph := range phases {
		if _, err := step(ph, 0); err != nil {
			return err
		}
	}
	for _, ph := range phases {
		for _, rate := range rates {
			r, err := step(ph, rate)
			if err != nil {
				return err
			}
			if !sustains(r, unloadedP99(rs)) {
				break
			}
		}
	}
	fmt.Println()
	b, err := os.ReadFile(filepath.Join(o.out, "load.md"))
	fmt.Print(string(b))
	return err
}

// unloadedP99 is the bare-Pod baseline's unloaded p99 create → Running,
// what the other p99s are added to (0 when it was not measured).
func unloadedP99(rs []loadResult) time.Duration { return unloaded(rs, 99) }

// unloaded is a percentile of the bare-Pod baseline's unloaded create →
// Running (0 when it was not measured).
func unloaded(rs []loadResult, pct float64) time.Duration {
	for _, r := range rs {
		if r.phase == nsBaseline && r.rate == 0 {
			return r.res.runing.pct(pct)
		}
	}
	return 0
}

// loadStep runs one phase at one rate (0: unloaded) and cleans up after it.
func loadStep(ctx context.Context, o options, f *fleet, baseline kubernetes.Interface, rec *recorder, ph loadPhase, rate float64) (loadResult, error) {
	rec.reset(ph.ns)
	waitsBefore, err := scrapeWaits(ctx, f.metrics)
	if err != nil {
		return loadResult{}, err
	}
	hooksBefore, err := scrapeWebhooks(ctx, f.mgmt.RESTConfig())
	if err != nil {
		return loadResult{}, err
	}
	add := func(name string, at time.Time) item {
		it := item{name: name, replicas: 1}
		for _, r := range recordsOf(ph.ns, it) {
			r.created = at
			rec.add(r)
		}
		return it
	}
	r := loadResult{phase: ph.ns, rate: rate}
	cpuBefore := f.groups.usage()
	start := time.Now()
	if rate == 0 {
		for i := range o.unloaded {
			// The fleet idle when the item comes: what the item before
			// left to do (its status, its Events) done, or waited for.
			if i > 0 {
				if err := sleep(ctx, o.unloadedGap); err != nil {
					return r, err
				}
			}
			it := add(fmt.Sprintf("u%04d", i), time.Now())
			if err := ph.create(ctx, it, i); err != nil {
				return r, err
			}
			if rec.wait(ctx, ph.ns, i+1, o.timeout) <= i {
				break
			}
		}
	} else {
		n := arrivals(rate, o.rateWindow)
		r.late, err = pace(ctx, rate, n, 256, func(ctx context.Context, i int, at time.Time) error {
			return ph.create(ctx, add(fmt.Sprintf("r%g-%04d", rate, i), at), i)
		})
		if err != nil {
			return r, err
		}
		rec.wait(ctx, ph.ns, n, o.timeout)
	}
	what := "unloaded"
	if rate > 0 {
		what = fmt.Sprintf("%g items/s", rate)
	}
	r.res = summarize(ph.ns, what, rec.records(ph.ns), rec.phaseCounts(ph.ns))
	r.res.wall = time.Since(start)
	r.groupCPU = minus(f.groups.usage(), cpuBefore)
	waitsAfter, err := scrapeWaits(ctx, f.metrics)
	if err != nil {
		return r, err
	}
	for k, w := range waitsAfter.minus(waitsBefore) {
		if strings.HasPrefix(k, "tokens ") {
			r.tokenWait += w.sum
		}
	}
	hooksAfter, err := scrapeWebhooks(ctx, f.mgmt.RESTConfig())
	if err != nil {
		return r, err
	}
	r.res.webhooks = map[string]histogram{}
	for name, h := range hooksAfter {
		r.res.webhooks[name] = h.minus(hooksBefore[name])
	}
	logf("%s at %s: %d of %d Running, p99 %s ms, %d late", ph.ns, what, r.res.complete, r.res.n, ms(r.res.runing.pct(99)), r.late)
	return r, cleanPhase(ctx, f, baseline, ph.ns)
}

// recordsOf are an item's records: a baseline's (one per bare pod or
// Deployment), or a Workload's.
func recordsOf(ns string, it item) []*record {
	if isBaseline(ns) {
		return baselineRecords(ns, it)
	}
	return []*record{{phase: ns, name: it.name, replicas: it.replicas, proxy: ns == nsFrontend}}
}

// writeLoad writes load.md: each phase's unloaded p50 and p99, and at each
// rate the p50 and p99 create → Running, what they add to the unloaded
// bare Pod's, whether it sustained the rate, and the highest it sustained.
func writeLoad(o options, f *fleet, phases []loadPhase, rs []loadResult) error {
	var b strings.Builder
	header(&b, o, f, fmt.Sprintf("-rates %s -unloaded %d -unloaded-gap %s -rate-window %s -client-qps %g -client-burst %d", o.rates, o.unloaded, o.unloadedGap, o.rateWindow, o.qps, o.burst))
	base, base50 := unloadedP99(rs), unloaded(rs, 50)
	fmt.Fprintf(&b, "Offered load: single-replica items created open loop at a fixed rate for %s (each at its time, whatever the ones before are doing; its latency counts from that time), then until every one runs or %s. A phase sustains a rate when every item ran and p99 create → Running adds at most %s to the unloaded bare Pod's p99 (%s ms); once it does not, its higher rates are not run. \"p50 / p99 added\": over the unloaded bare Pod's p50 (%s ms) and p99. Unloaded: items created one at a time, each %s after the one before runs (no pods/s). \"late\": creates that began more than 100 ms after their time (the creating side fell behind); \"token wait\": seconds placer's manager waited for its clients' tokens (its client limit binding).\n\n",
		o.rateWindow, o.timeout, maxAddedP99, ms(base), ms(base50), o.unloadedGap)
	fmt.Fprintln(&b, "\"busiest group\": with -cluster-cpus, the group that used the largest share of its quota over the step (from its first create until its last item ran or the timeout), and that share: at 90% or more it bound the step.")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| phase | rate (items/s) | items run | → Running p50 / p99 (ms) | p50 / p99 added (ms) | pods/s | late | token wait (s) | busiest group | sustained |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|---|---|")
	quotas := f.groups.quotas()
	for _, r := range rs {
		rate, sus, pods := "unloaded", "–", "–"
		if r.rate > 0 {
			rate, sus, pods = strconv.FormatFloat(r.rate, 'g', -1, 64), "no", fmt.Sprintf("%.1f", r.res.throughput)
			if sustains(r, base) {
				sus = "yes"
			}
		}
		group := "–"
		if name, share := busiest(r.groupCPU, quotas, r.res.wall.Seconds()); name != "" {
			group = fmt.Sprintf("%s (%.0f%%)", name, 100*share)
		}
		fmt.Fprintf(&b, "| %s | %s | %d/%d | %s / %s | %s / %s | %s | %d | %.1f | %s | %s |\n", r.phase, rate, r.res.complete, r.res.n,
			ms(r.res.runing.pct(50)), ms(r.res.runing.pct(99)), ms(r.res.runing.pct(50)-base50), ms(r.res.runing.pct(99)-base),
			pods, r.late, r.tokenWait, group, sus)
	}
	var unloadedRs []phaseResult
	for _, r := range rs {
		if r.rate == 0 {
			res := r.res
			res.name += ", unloaded"
			unloadedRs = append(unloadedRs, res)
		}
	}
	if len(unloadedRs) > 0 {
		writeHops(&b, unloadedRs)
	}
	var steps []phaseResult
	for _, r := range rs {
		res := r.res
		res.name = r.phase + ", " + res.what
		steps = append(steps, res)
	}
	writeWebhook(&b, steps)
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "The highest rate each phase sustained, and what it is:")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| phase | what | sustained (items/s) |")
	fmt.Fprintln(&b, "|---|---|---|")
	for _, ph := range phases {
		fmt.Fprintf(&b, "| %s | %s | %g |\n", ph.ns, ph.what, highestSustained(rs, ph.ns, base))
	}
	return os.WriteFile(filepath.Join(o.out, "load.md"), []byte(b.String()), 0o644)
}

// loadOptions checks the offered-load flags and raises the creating
// client's QPS (and so the members' controller managers', kcmQPS) to
// twice the highest rate: no baseline bounded by a client.
func loadOptions(o *options) ([]float64, error) {
	rates, err := parseRates(o.rates)
	if err != nil {
		return nil, err
	}
	if o.unloaded <= 0 || o.rateWindow <= 0 || o.unloadedGap < 0 {
		return nil, fmt.Errorf("-unloaded %d, -rate-window %s, -unloaded-gap %s: want positive (the gap may be 0)", o.unloaded, o.rateWindow, o.unloadedGap)
	}
	top := rates[len(rates)-1]
	o.qps = max(o.qps, 2*top)
	o.burst = max(o.burst, int(2*top))
	return rates, nil
}
