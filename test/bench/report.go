package main

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/placer-dev/placer/cluster/local"
)

// latencies of one measure, sorted.
type latencies []time.Duration

func (l latencies) pct(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(l)))) - 1
	return l[max(0, min(i, len(l)-1))]
}

// phaseResult sums up one phase.
type phaseResult struct {
	name, what                          string
	n, complete                         int
	pods                                int
	scheduled, committed, bound, runing latencies
	throughput                          float64 // completed pods per second, first create to last Running
	counts                              phaseCounts
	records                             []*record
	// writes the phase made, and the CPU seconds each placer process
	// spent; fleetCPU: every process of the run, by component, over the
	// phase's wall time.
	writes   phaseWrites
	cpu      map[string]float64
	fleetCPU map[string]float64
	// groupCPU: each CPU group's seconds (-cluster-cpus), by group.
	groupCPU map[string]float64
	wall     time.Duration
	// waits: the manager's waits for tokens and in work queues.
	waits waits
	// hops: of single-replica items, each step from create to Running
	// (hopNames), where both of its ends were seen.
	hops [len(hopNames)]latencies
	// webhooks: the management API server's calls of placer's mutating
	// webhooks during the phase, by webhook.
	webhooks map[string]histogram
}

// hopNames are the steps of a single-replica item from create to Running,
// each from the stamp before it: placer's decision, the chaperon, its pod,
// the binding, the start. The baseline has only the binding (its
// "Scheduled") and the start.
var hopNames = [...]string{"create → Scheduled", "→ chaperon", "→ pod", "→ bound", "→ Running"}

// hopsOf are rec's steps (hopNames); ok false where an end is missing.
// The stamps come from three watches (Workloads, chaperons, pods), whose
// events may arrive out of order: a step seen backwards took no longer
// than that jitter, and counts as zero.
func hopsOf(rec *record) (d [len(hopNames)]time.Duration, ok [len(hopNames)]bool) {
	stamps := [...]time.Time{rec.created, rec.scheduled, rec.candidates, rec.pods, rec.bound, rec.running}
	for i := range hopNames {
		d[i], ok[i] = since(stamps[i], stamps[i+1])
		d[i] = max(d[i], 0)
	}
	return d, ok
}

func since(from, to time.Time) (time.Duration, bool) {
	if from.IsZero() || to.IsZero() {
		return 0, false
	}
	return to.Sub(from), true
}

func summarize(name, what string, recs []*record, counts phaseCounts) phaseResult {
	r := phaseResult{name: name, what: what, n: len(recs), counts: counts, records: recs}
	var first, last time.Time
	for _, rec := range recs {
		r.pods += rec.replicas
		if first.IsZero() || rec.created.Before(first) {
			first = rec.created
		}
		if d, ok := since(rec.created, rec.scheduled); ok {
			r.scheduled = append(r.scheduled, d)
		}
		if d, ok := since(rec.created, rec.committed); ok {
			r.committed = append(r.committed, d)
		}
		if d, ok := since(rec.created, rec.bound); ok && rec.replicas == 1 {
			r.bound = append(r.bound, d)
		}
		if rec.replicas == 1 {
			d, ok := hopsOf(rec)
			for i := range d {
				if ok[i] {
					r.hops[i] = append(r.hops[i], d[i])
				}
			}
		}
		// Latency to Running is for single-replica items, so it compares
		// with the baseline's single pods.
		if d, ok := since(rec.created, rec.running); ok {
			r.complete++
			if rec.replicas == 1 {
				r.runing = append(r.runing, d)
			}
			if rec.running.After(last) {
				last = rec.running
			}
		}
	}
	for _, l := range append([]latencies{r.scheduled, r.committed, r.bound, r.runing}, r.hops[:]...) {
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	}
	if !last.IsZero() {
		completedPods := 0
		for _, rec := range recs {
			if !rec.running.IsZero() {
				completedPods += rec.replicas
			}
		}
		r.throughput = float64(completedPods) / last.Sub(first).Seconds()
	}
	return r
}

// writeHops tells where the time from create to Running goes: the p50
// of each step of single-replica items (the baseline's bound pod is its
// Scheduled, so it has no chaperon or pod step).
func writeHops(b *strings.Builder, rs []phaseResult) {
	fmt.Fprintln(b)
	fmt.Fprintln(b, "Where the time goes, single-replica items: each step from the one before it, milliseconds, p50 (p90); \"→ chaperon\" and \"→ pod\": the first in any member, \"→ bound\" holds the handshake (reserved, allowed), and the steps' p50s need not add up to → Running's:")
	fmt.Fprintln(b)
	fmt.Fprintln(b, "| phase | "+strings.Join(hopNames[:], " | ")+" |")
	fmt.Fprintln(b, "|---"+strings.Repeat("|---", len(hopNames))+"|")
	for _, r := range rs {
		cells := make([]string, len(hopNames))
		for i, l := range r.hops {
			cells[i] = "–"
			if len(l) > 0 {
				cells[i] = fmt.Sprintf("%s (%s)", ms(l.pct(50)), ms(l.pct(90)))
			}
		}
		fmt.Fprintf(b, "| %s | %s |\n", r.name, strings.Join(cells, " | "))
	}
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 0, 64)
}

// writeWhole reports, for the items of more than one replica, the time
// from create until every replica runs: a Divided Workload's last share
// included.
func writeWhole(b *strings.Builder, rs []phaseResult) {
	var rows []string
	for _, r := range rs {
		var l latencies
		for _, rec := range r.records {
			if d, ok := since(rec.created, rec.running); ok && rec.replicas > 1 {
				l = append(l, d)
			}
		}
		if len(l) == 0 {
			continue
		}
		sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
		rows = append(rows, fmt.Sprintf("| %s | %d | %s |", r.name, len(l), triple(l)))
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(b)
	fmt.Fprintln(b, "Items of more than one replica, from create until every replica runs, milliseconds, p50 / p90 / p99:")
	fmt.Fprintln(b)
	fmt.Fprintln(b, "| phase | items | → every replica Running |")
	fmt.Fprintln(b, "|---|---|---|")
	for _, row := range rows {
		fmt.Fprintln(b, row)
	}
}

func triple(l latencies) string {
	if len(l) == 0 {
		return "–"
	}
	return fmt.Sprintf("%s / %s / %s", ms(l.pct(50)), ms(l.pct(90)), ms(l.pct(99)))
}

// header says when and where the run was, and the command that repeats
// it: the fleet's flags, the components' limits, and the measure's own.
// It also names the commit the run ran ("-dirty": with changes not
// committed), and the member components that exited and were started
// again.
func header(b *strings.Builder, o options, f *fleet, measure string) {
	fmt.Fprintf(b, "%s\n\n", runLine(o))
	fmt.Fprintf(b, "%s\n\n", cpuMode(o))
	fmt.Fprintf(b, "Client limits: the benchmark's creating clients share %g QPS (burst %d); placer's components %g QPS (burst %d), the manager's proxy pods' client %g (burst %d); every cluster's kube-controller-manager %d QPS (burst %d).\n\n",
		o.qps, o.burst, o.componentQPS, o.componentBurst, 2*o.componentQPS, 2*o.componentBurst, kcmQPS(o), 2*kcmQPS(o))
	if r := f.restartCounts(); len(r) > 0 {
		fmt.Fprintf(b, "Started again after they exited: %v.\n\n", r)
	}
	fmt.Fprintf(b, "`go run ./test/bench -members %d -nodes %d -component-qps %g -component-burst %d -propagator-workers %d -proxy-pod-workers %d -max-runner-up-candidates %d %s`\n\n",
		o.members, o.nodes, o.componentQPS, o.componentBurst, o.propagatorWorkers, o.proxyPodWorkers, o.maxRunnerUps, measure)
}

// report writes results.csv, results.md and latency.svg, and prints the table.
func report(o options, f *fleet, rs []phaseResult, rest *phaseResult, rss map[string]int64) error {
	if err := writeCSV(filepath.Join(o.out, "results.csv"), rs); err != nil {
		return err
	}
	var b strings.Builder
	flags := fmt.Sprintf("-workloads %d -multi %d -multi-replicas %d -client-qps %g -client-burst %d", o.workloads, o.multi, o.multiReplicas, o.qps, o.burst)
	if o.divided > 0 {
		flags = fmt.Sprintf("-divided %d -divided-replicas %d -client-qps %g -client-burst %d", o.divided, o.dividedReplicas, o.qps, o.burst)
	}
	if o.phases != "" {
		flags += " -phases " + o.phases
	}
	header(&b, o, f, flags)
	fmt.Fprintln(&b, "Latency from create, milliseconds, p50 / p90 / p99 (Running: single-replica items only):")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| phase | what | items (pods) complete | → Scheduled | → committed | → bound (single) | → Running | throughput (pods/s) | candidates per placed pod | candidates reserved (or bound) per placed pod | reserved (or bound) transitions per placed pod |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		cand, cyc, trans := "–", "–", "–"
		if !isBaseline(r.name) && r.pods > 0 {
			cand = fmt.Sprintf("%.2f", float64(r.counts.chaperons)/float64(r.pods))
			cyc = fmt.Sprintf("%.2f", float64(r.counts.reserved)/float64(r.pods))
			trans = fmt.Sprintf("%.2f", float64(r.counts.reservations)/float64(r.pods))
		}
		fmt.Fprintf(&b, "| %s | %s | %d/%d (%d) | %s | %s | %s | %s | %.1f | %s | %s | %s |\n", r.name, r.what, r.complete, r.n, r.pods,
			triple(r.scheduled), triple(r.committed), triple(r.bound), triple(r.runing), r.throughput, cand, cyc, trans)
	}
	writeWhole(&b, rs)
	writeHops(&b, rs)
	writeCosts(&b, rs)
	writeFleetCPU(&b, rs, rest)
	if f.groups != nil {
		writeGroupCPU(&b, rs, rest, f.groups.quotas())
	}
	writeWaits(&b, rs)
	writeWebhook(&b, rs)
	writeAgainst(&b, rs)
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "Peak RSS (VmHWM) of placer's processes:")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| process | peak RSS (MiB) |")
	fmt.Fprintln(&b, "|---|---|")
	names := make([]string, 0, len(rss))
	for n := range rss {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "| %s | %.0f |\n", n, float64(rss[n])/1024)
	}
	if err := os.WriteFile(filepath.Join(o.out, "results.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, "latency.svg"), []byte(chart(rs)), 0o644); err != nil {
		return err
	}
	fmt.Println()
	fmt.Print(b.String())
	fmt.Printf("\nWritten: %s, %s, %s\n", filepath.Join(o.out, "results.md"), filepath.Join(o.out, "results.csv"), filepath.Join(o.out, "latency.svg"))
	return nil
}

// writeWebhook says what each create of a phase waited for placer's
// mutating webhooks, from the management API server's histogram (buckets
// at 5, 25, 100 ms …: the quantiles are interpolated within them; the
// share within 5 ms is counted).
func writeWebhook(b *strings.Builder, rs []phaseResult) {
	var rows []string
	for _, r := range rs {
		for _, name := range slices.Sorted(maps.Keys(r.webhooks)) {
			h := r.webhooks[name]
			if h.count == 0 {
				continue
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %.0f | %.2f | %.1f | %.1f | %.1f%% |", r.name, name, h.count, 1000*h.sum/h.count,
				1000*h.quantile(0.5), 1000*h.quantile(0.99), 100*h.within(0.005)))
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(b)
	fmt.Fprintln(b, "placer's mutating webhooks, as the management API server timed its calls (apiserver_admission_webhook_admission_duration_seconds; p50 and p99 interpolated within its buckets, 5 ms the first): proxy-pods.placer.dev makes a source pod a proxy pod, workloads.placer.dev adds the propagator's finalizer to a new Workload:")
	fmt.Fprintln(b)
	fmt.Fprintln(b, "| phase | webhook | calls | mean (ms) | p50 (ms) | p99 (ms) | within 5 ms |")
	fmt.Fprintln(b, "|---|---|---|---|---|---|---|")
	for _, row := range rows {
		fmt.Fprintln(b, row)
	}
}

func writeCSV(path string, rs []phaseResult) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	w := csv.NewWriter(fh)
	_ = w.Write([]string{"phase", "name", "replicas", "scheduled_ms", "committed_ms", "running_ms"})
	for _, r := range rs {
		sort.Slice(r.records, func(i, j int) bool { return r.records[i].name < r.records[j].name })
		for _, rec := range r.records {
			cell := func(t time.Time) string {
				if d, ok := since(rec.created, t); ok {
					return ms(d)
				}
				return ""
			}
			_ = w.Write([]string{r.name, rec.name, strconv.Itoa(rec.replicas), cell(rec.scheduled), cell(rec.committed), cell(rec.running)})
		}
	}
	w.Flush()
	return w.Error()
}

// chart draws the distributions of create → Running, one CDF per phase.
func chart(rs []phaseResult) string {
	const W, H, left, bottom, top, right = 720, 420, 70, 50, 30, 160
	maxD := time.Duration(1)
	for _, r := range rs {
		if len(r.runing) > 0 && r.runing[len(r.runing)-1] > maxD {
			maxD = r.runing[len(r.runing)-1]
		}
	}
	x := func(d time.Duration) float64 { return left + float64(d)/float64(maxD)*(W-left-right) }
	y := func(f float64) float64 { return H - bottom - f*(H-bottom-top) }
	colors := []string{"#444444", "#1f77b4", "#d62728", "#2ca02c"}
	var b strings.Builder
	w := bufio.NewWriter(&b)
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(w, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(w, `<text x="%d" y="18" font-size="14">create → all pods Running, single-replica items (CDF)</text>`+"\n", left)
	fmt.Fprintf(w, `<line x1="%d" y1="%g" x2="%d" y2="%g" stroke="black"/>`+"\n", left, y(0), W-right, y(0))
	fmt.Fprintf(w, `<line x1="%d" y1="%g" x2="%d" y2="%g" stroke="black"/>`+"\n", left, y(0), left, y(1))
	for i := 0; i <= 4; i++ {
		f := float64(i) / 4
		fmt.Fprintf(w, `<text x="%d" y="%g" text-anchor="end">%d%%</text>`+"\n", left-6, y(f)+4, i*25)
		d := time.Duration(float64(maxD) * f)
		fmt.Fprintf(w, `<text x="%g" y="%d" text-anchor="middle">%s</text>`+"\n", x(d), H-bottom+18, d.Round(time.Millisecond))
	}
	fmt.Fprintf(w, `<text x="%g" y="%d" text-anchor="middle">latency</text>`+"\n", x(maxD/2), H-12)
	for i, r := range rs {
		if len(r.runing) == 0 {
			continue
		}
		c := colors[i%len(colors)]
		var pts []string
		for j, d := range r.runing {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(d), y(float64(j+1)/float64(len(r.runing)))))
		}
		fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		fmt.Fprintf(w, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s (p50 %s ms)</text>`+"\n",
			W-right+10, top+20*i, c, W-right+28, top+20*i+11, r.name, ms(r.runing.pct(50)))
	}
	fmt.Fprintln(w, "</svg>")
	_ = w.Flush()
	return b.String()
}

// peakRSS reads the high-water mark of each placer process's resident set.
func (f *fleet) peakRSS() map[string]int64 {
	out := map[string]int64{}
	for name, p := range f.placerProcs() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				out[name] = kb
			}
		}
	}
	return out
}

// writeCosts reports each phase's API writes (from the API servers'
// apiserver_request_total, so every writer counts: placer, kube-scheduler,
// kwok, the benchmark's own creates) and the CPU seconds of placer's
// processes.
func writeCosts(b *strings.Builder, rs []phaseResult) {
	fmt.Fprintln(b)
	fmt.Fprintf(b, "API writes per phase (%s; every writer), per item and per pod:\n", strings.Join(slices.Sorted(maps.Keys(mutating)), ", "))
	fmt.Fprintln(b)
	fmt.Fprintln(b, "| phase | management: Workloads | per item | members: PodChaperons | per pod | members: Pods | per pod | Events (management and members) | all writes per pod |")
	fmt.Fprintln(b, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		if r.n == 0 || r.pods == 0 {
			continue
		}
		wl, ch, pods := r.writes.mgmt.of("workloads"), r.writes.members.of("podchaperons"), r.writes.members.of("pods")
		var all float64
		for _, w := range []writes{r.writes.mgmt, r.writes.members} {
			for k, v := range w {
				if !strings.HasPrefix(k, "leases") {
					all += v
				}
			}
		}
		fmt.Fprintf(b, "| %s | %.0f | %.2f | %.0f | %.2f | %.0f | %.2f | %.0f | %.2f |\n", r.name, wl, wl/float64(r.n), ch, ch/float64(r.pods),
			pods, pods/float64(r.pods), r.writes.members.of("events")+r.writes.mgmt.of("events"), all/float64(r.pods))
	}
	fmt.Fprintln(b)
	fmt.Fprintln(b, "Writes by resource and verb (management; members summed), leases left out:")
	fmt.Fprintln(b)
	for _, r := range rs {
		control := "management"
		if controlPlane(r.name) == groupKarmada {
			control = "Karmada's API server"
		}
		fmt.Fprintf(b, "- %s: %s %s; members %s\n", r.name, control, r.writes.mgmt.String(), r.writes.members.String())
	}
	fmt.Fprintln(b)
	fmt.Fprintln(b, "CPU seconds (user + system) of placer's processes per phase:")
	fmt.Fprintln(b)
	var names []string
	for _, r := range rs {
		for n := range r.cpu {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	fmt.Fprintf(b, "| phase | %s |\n", strings.Join(names, " | "))
	fmt.Fprintf(b, "|---|%s\n", strings.Repeat("---|", len(names)))
	for _, r := range rs {
		cells := make([]string, len(names))
		for i, n := range names {
			cells[i] = fmt.Sprintf("%.1f", r.cpu[n])
		}
		fmt.Fprintf(b, "| %s | %s |\n", r.name, strings.Join(cells, " | "))
	}
}

// writeFleetCPU reports the CPU seconds of every process of the run per
// phase, by component, the largest first, and how many of the machine's
// cores they kept busy over the phase (from its first create until every
// item ran): near the core count, the machine was the limit. rest, when
// measured, is the fleet doing nothing (kwok's node heartbeats, the
// control planes' own loops): its row comes first, and each phase's work
// is what it spent beyond the rest's rate over its wall time, per pod.
func writeFleetCPU(b *strings.Builder, rs []phaseResult, rest *phaseResult) {
	all := rs
	if rest != nil {
		all = append([]phaseResult{*rest}, rs...)
	}
	total := map[string]float64{}
	for _, r := range all {
		for k, v := range r.fleetCPU {
			total[k] += v
		}
	}
	names := slices.SortedFunc(maps.Keys(total), func(x, y string) int { return cmp.Or(cmp.Compare(total[y], total[x]), cmp.Compare(x, y)) })
	var restRate float64
	if rest != nil && rest.wall > 0 {
		restRate = sumValues(rest.fleetCPU) / rest.wall.Seconds()
	}
	fmt.Fprintln(b)
	fmt.Fprintf(b, "CPU seconds (user + system) of every process of the run per phase, by component, and the cores they kept busy (%d here)", runtime.NumCPU())
	if rest != nil {
		fmt.Fprintf(b, "; first the fleet at rest (%s), and for each phase its work: all it spent less the rest's %.2f cores over its wall time, in all and per pod", rest.what, restRate)
	}
	fmt.Fprintln(b, ":")
	fmt.Fprintln(b)
	fmt.Fprintf(b, "| phase | wall (s) | all | cores busy | work (s) | work per pod (ms) | %s |\n", strings.Join(names, " | "))
	fmt.Fprintf(b, "|---|---|---|---|---|---|%s\n", strings.Repeat("---|", len(names)))
	for row, r := range all {
		var sum float64
		cells := make([]string, len(names))
		for i, n := range names {
			sum += r.fleetCPU[n]
			cells[i] = fmt.Sprintf("%.1f", r.fleetCPU[n])
		}
		busy, work, perPod := "–", "–", "–"
		if r.wall > 0 {
			busy = fmt.Sprintf("%.2f", sum/r.wall.Seconds())
		}
		if rest != nil && row > 0 {
			w := sum - restRate*r.wall.Seconds()
			work = fmt.Sprintf("%.1f", w)
			if r.pods > 0 {
				perPod = fmt.Sprintf("%.0f", w*1000/float64(r.pods))
			}
		}
		fmt.Fprintf(b, "| %s | %.1f | %.1f | %s | %s | %s | %s |\n", r.name, r.wall.Seconds(), sum, busy, work, perPod, strings.Join(cells, " | "))
	}
}

// writeWaits reports where the manager's requests and reconciles waited
// in each phase: its clients' token buckets by request, its controllers'
// work queues.
func writeWaits(b *strings.Builder, rs []phaseResult) {
	named := make([]namedWaits, len(rs))
	for i, r := range rs {
		named[i] = namedWaits{r.name, r.waits}
	}
	writeWaitsOf(b, "phase", named)
}

// namedWaits are the waits of a phase or a measure.
type namedWaits struct {
	name  string
	waits waits
}

// writeWaitsOf writes the table of writeWaits for phases or measures.
func writeWaitsOf(b *strings.Builder, what string, rs []namedWaits) {
	fmt.Fprintln(b)
	fmt.Fprintf(b, "Where the manager waited per %s: for tokens (placer_rest_client_rate_limiter_duration_seconds, by request; the six longest), for answers once a request was sent (placer_rest_client_request_duration_seconds; the six longest), in work queues (workqueue_queue_duration_seconds) and in the passes their workers ran (workqueue_work_duration_seconds, \"pass\"); where measured, how long the members' candidate schedulers held candidates at Permit (scheduler_permit_wait_duration_seconds, by result, every member); and last, counted, not timed: passes that failed, by controller (controller_runtime_reconcile_errors_total: each goes on its queue's backoff), and propagator passes a member with no request slot free stopped (placer_propagator_member_busy_total: each waits for a slot):\n", what)
	fmt.Fprintln(b)
	fmt.Fprintf(b, "| %s | what waited (or was counted) | waits (count) | total (s) | mean (ms) |\n", what)
	fmt.Fprintln(b, "|---|---|---|---|---|")
	for _, r := range rs {
		var tokens, requests, queues, counted []string
		for k := range r.waits {
			switch {
			case strings.HasPrefix(k, "tokens "):
				tokens = append(tokens, k)
			case strings.HasPrefix(k, "request "):
				requests = append(requests, k)
			case strings.HasPrefix(k, countedPrefix):
				counted = append(counted, k)
			default:
				queues = append(queues, k)
			}
		}
		longest := func(x, y string) int { return cmp.Compare(r.waits[y].sum, r.waits[x].sum) }
		slices.SortFunc(tokens, longest)
		slices.SortFunc(requests, longest)
		sort.Strings(queues)
		sort.Strings(counted)
		for _, k := range slices.Concat(tokens[:min(6, len(tokens))], requests[:min(6, len(requests))], queues, counted) {
			w := r.waits[k]
			if name, ok := strings.CutPrefix(k, countedPrefix); ok {
				fmt.Fprintf(b, "| %s | %s | %.0f | – | – |\n", r.name, name, w.count)
				continue
			}
			fmt.Fprintf(b, "| %s | %s | %.0f | %.2f | %.1f |\n", r.name, k, w.count, w.sum, 1000*w.sum/w.count)
		}
	}
}

// String lists the writes, largest first, leases left out.
func (w writes) String() string {
	keys := make([]string, 0, len(w))
	for k := range w {
		if !strings.HasPrefix(k, "leases") {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return w[keys[i]] > w[keys[j]] || w[keys[i]] == w[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f", k, w[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// runLine says when and where the run ran, and at which commit ("-dirty":
// with changes not committed).
func runLine(o options) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("Run %s to %s on %s (%d cores, %s/%s), at commit %s.", o.started.UTC().Format(time.RFC3339), time.Now().UTC().Format("15:04:05Z"),
		host, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, o.commit)
}

// cpuMode says how the run shared the machine's CPU.
func cpuMode(o options) string {
	if o.clusterCPUs <= 0 {
		return fmt.Sprintf("CPU: one shared pool: every cluster, kwok and the benchmark on the machine's %d cores, no quotas.", runtime.NumCPU())
	}
	quota := func(q float64) string {
		if q <= 0 {
			return "no quota, accounted"
		}
		return fmt.Sprintf("a quota of %g CPU", q)
	}
	period := cmp.Or(o.cpuPeriod, local.DefaultCFSPeriod)
	return fmt.Sprintf("CPU: each cluster a machine of its own: a cgroup (v1 cpu and cpuacct) with a quota of %g CPU per %v CFS period holding its control plane and the placer components that run in it; kwok (every member's nodes) %s; the benchmark %s (`-cluster-cpus %g -kwok-cpus %g -bench-cpus %g -cpu-period %v`).",
		o.clusterCPUs, period, quota(o.kwokCPUs), quota(o.benchCPUs), o.clusterCPUs, o.kwokCPUs, o.benchCPUs, period)
}

// writeGroupCPU reports each group's CPU seconds per phase beside what its
// quota allowed over the phase, and names the group that bound it.
func writeGroupCPU(b *strings.Builder, rs []phaseResult, rest *phaseResult, quotas map[string]float64) {
	all := rs
	if rest != nil {
		all = append([]phaseResult{*rest}, rs...)
	}
	names := groupNames(quotas)
	fmt.Fprintln(b)
	fmt.Fprintln(b, "CPU seconds of each group per phase, and the share of its quota it used (quota × wall time); the bound group is the one at 90% or more of its quota:")
	fmt.Fprintln(b)
	heads := make([]string, len(names))
	for i, n := range names {
		heads[i] = fmt.Sprintf("%s (%s)", n, quotaLabel(quotas[n]))
	}
	fmt.Fprintf(b, "| phase | wall (s) | %s | bound by |\n", strings.Join(heads, " | "))
	fmt.Fprintf(b, "|---|---|%s---|\n", strings.Repeat("---|", len(names)))
	for _, r := range all {
		cells := make([]string, len(names))
		for i, n := range names {
			cells[i] = groupCell(r.groupCPU[n], quotas[n], r.wall.Seconds())
		}
		bound := "none"
		if name, share := binding(r.groupCPU, quotas, r.wall.Seconds()); name != "" {
			bound = fmt.Sprintf("%s (%.0f%%)", name, share*100)
		}
		fmt.Fprintf(b, "| %s | %.1f | %s | %s |\n", r.name, r.wall.Seconds(), strings.Join(cells, " | "), bound)
	}
}

func quotaLabel(q float64) string {
	if q <= 0 {
		return "no quota"
	}
	return fmt.Sprintf("%g CPU", q)
}

// groupCell is a group's seconds, and its share of its quota when it has one.
func groupCell(used, quota, wall float64) string {
	if quota <= 0 || wall <= 0 {
		return fmt.Sprintf("%.1f", used)
	}
	return fmt.Sprintf("%.1f (%.0f%%)", used, used*100/(quota*wall))
}

// writeAgainst compares each placer phase with the baselines: latency
// added to the member-0 pods' (create → Running, single-replica), and
// throughput as a ratio of each baseline's.
func writeAgainst(b *strings.Builder, rs []phaseResult) {
	var bases []phaseResult
	for _, r := range rs {
		if isBaseline(r.name) {
			bases = append(bases, r)
		}
	}
	if len(bases) == 0 {
		return
	}
	base := bases[0]
	heads := make([]string, len(bases))
	for i, bp := range bases {
		heads[i] = "throughput ÷ " + bp.name
	}
	fmt.Fprintln(b)
	fmt.Fprintf(b, "placer against the baselines (latency: create → Running, single-replica, against %s):\n", base.name)
	fmt.Fprintln(b)
	fmt.Fprintf(b, "| phase | p50 added | p99 added | p50 ratio | p99 ratio | %s |\n", strings.Join(heads, " | "))
	fmt.Fprintf(b, "|---|---|---|---|---|%s\n", strings.Repeat("---|", len(bases)))
	for _, r := range rs {
		if isBaseline(r.name) || len(r.runing) == 0 || len(base.runing) == 0 {
			continue
		}
		ratios := make([]string, len(bases))
		for i, bp := range bases {
			ratios[i] = fmt.Sprintf("%.2f", ratio(r.throughput, bp.throughput))
		}
		fmt.Fprintf(b, "| %s | %s ms | %s ms | %.2f | %.2f | %s |\n", r.name,
			ms(r.runing.pct(50)-base.runing.pct(50)), ms(r.runing.pct(99)-base.runing.pct(99)),
			float64(r.runing.pct(50))/float64(base.runing.pct(50)), float64(r.runing.pct(99))/float64(base.runing.pct(99)),
			strings.Join(ratios, " | "))
	}
}

// ratio is a/b, 0 when b is.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
