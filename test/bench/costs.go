package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/internal/promtext"
)

// writes counts an API server's mutating requests by resource (with its
// subresource) and verb, from its apiserver_request_total counter.
type writes map[string]float64

// mutating are the verbs of apiserver_request_total that write (a patch
// with the apply content type counts as APPLY).
var mutating = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// scrapeWrites reads the API server's /metrics once: its writes with
// each response code given ("" for all of them), in that order.
func scrapeWrites(ctx context.Context, cfg *rest.Config, codes ...string) ([]writes, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	b, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return parseWrites(b, codes...)
}

// parseWrites sums apiserver_request_total's writes in a /metrics page,
// in one pass: for each code given, those answered with it ("" for all;
// 409: the conflicts).
func parseWrites(b []byte, codes ...string) ([]writes, error) {
	out := make([]writes, len(codes))
	for i := range out {
		out[i] = writes{}
	}
	err := promtext.Each(b, func(_ string, l map[string]string, m *dto.Metric) {
		if !mutating[l["verb"]] {
			return
		}
		res := l["resource"]
		if l["subresource"] != "" {
			res += "/" + l["subresource"]
		}
		for i, code := range codes {
			if code == "" || l["code"] == code {
				out[i][res+" "+l["verb"]] += m.GetCounter().GetValue()
			}
		}
	}, "apiserver_request_total")
	return out, err
}

// minus returns w - before.
func (w writes) minus(before writes) writes { return minus(w, before) }

// minus is what each counter grew by, the counters that grew.
func minus(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// of sums the writes to resources with the given prefix ("workloads"
// counts workloads and workloads/status).
func (w writes) of(prefix string) float64 {
	var n float64
	for k, v := range w {
		res, _, _ := strings.Cut(k, " ")
		if res == prefix || strings.HasPrefix(res, prefix+"/") {
			n += v
		}
	}
	return n
}

// fleetWrites scrapes the management cluster ("mgmt") and every member.
func (f *fleet) fleetWrites(ctx context.Context) (map[string]writes, error) {
	out := map[string]writes{}
	w, err := scrapeWrites(ctx, f.mgmt.RESTConfig(), "")
	if err != nil {
		return nil, fmt.Errorf("management /metrics: %w", err)
	}
	out["mgmt"] = w[0]
	for _, m := range f.members {
		w, err := scrapeWrites(ctx, m.RESTConfig(), "")
		if err != nil {
			return nil, fmt.Errorf("%s /metrics: %w", m.Name(), err)
		}
		out[m.Name()] = w[0]
	}
	if f.karmada != nil {
		w, err := scrapeWrites(ctx, f.karmada.cluster.RESTConfig(), "")
		if err != nil {
			return nil, fmt.Errorf("karmada /metrics: %w", err)
		}
		out[groupKarmada] = w[0]
	}
	return out, nil
}

// controlPlane is the API server a phase's items are created in, whose
// writes it reports as the management's: Karmada's for its phase.
func controlPlane(phase string) string {
	if phase == nsKarmada || phase == nsKarmadaDivided {
		return groupKarmada
	}
	return "mgmt"
}

// phaseWrites is what a phase wrote: management and members summed.
type phaseWrites struct {
	mgmt, members writes
}

// diffWrites is what a phase wrote: its control plane's (management's or
// Karmada's) as the management's, the members' summed; the other
// control plane's left out.
func diffWrites(after, before map[string]writes, control string) phaseWrites {
	pw := phaseWrites{mgmt: writes{}, members: writes{}}
	for name, w := range after {
		d := w.minus(before[name])
		to := pw.members
		switch name {
		case control:
			to = pw.mgmt
		case "mgmt", groupKarmada:
			continue
		}
		for k, v := range d {
			to[k] += v
		}
	}
	return pw
}

// cpuSeconds reads the user and system CPU time of each placer process.
func (f *fleet) cpuSeconds() map[string]float64 {
	out := map[string]float64{}
	for name, p := range f.placerProcs() {
		if s, ok := procCPU(p.PID()); ok {
			out[name] = s
		}
	}
	return out
}

// fleetCPU reads the CPU time of every process of the run, summed by
// component: each cluster component over the management cluster or over
// the members, placer's components, and the benchmark itself. Beside the
// phase's length it says whether the machine's cores were the limit.
// placer is cpuSeconds, read at the same moment.
func (f *fleet) fleetCPU(placer map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for name, s := range placer {
		out[placerComponent(name)] += s
	}
	for i, c := range append([]*local.Cluster{f.mgmt}, f.members...) {
		where := "members"
		if i == 0 {
			where = "management"
		}
		for component, pid := range c.PIDs() {
			if s, ok := procCPU(pid); ok {
				out[component+" ("+where+")"] += s
			}
		}
	}
	if k := f.karmada; k != nil {
		for component, pid := range k.cluster.PIDs() {
			if s, ok := procCPU(pid); ok {
				out[component+" (karmada)"] += s
			}
		}
		for name, p := range k.procs {
			if s, ok := procCPU(p.PID()); ok {
				out[name] += s
			}
		}
	}
	if s, ok := procCPU(os.Getpid()); ok {
		out["benchmark"] = s
	}
	return out
}

// placerComponent names what a placer process is, whatever its member.
func placerComponent(process string) string {
	switch {
	case strings.HasSuffix(process, "-candidate-scheduler"):
		return "placer candidate schedulers"
	case strings.HasSuffix(process, "-agent"):
		return "placer agents"
	default:
		return "placer " + process
	}
}

// procCPU reads a process's user and system CPU time, in seconds.
func procCPU(pid int) (float64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// Fields after the command (which may hold spaces) in parentheses.
	_, rest, ok := bytes.Cut(b, []byte(") "))
	if !ok {
		return 0, false
	}
	fields := strings.Fields(string(rest))
	if len(fields) < 13 {
		return 0, false
	}
	// utime and stime are the 14th and 15th fields of the line, the 12th
	// and 13th after the command; in clock ticks (100 per second on
	// Linux, USER_HZ).
	ut, err1 := strconv.ParseFloat(fields[11], 64)
	st, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return (ut + st) / 100, true
}

// waits sums the manager's histograms of waiting, by what waited: its
// clients' token buckets ("tokens VERB PATH") and its controllers' work
// queues ("queue NAME").
type waits map[string]wait

type wait struct{ sum, count float64 }

// scrapeWaits reads the manager's /metrics.
func scrapeWaits(ctx context.Context, addr string) (waits, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return parseWaits(b)
}

// permitWaits reads how long the candidate schedulers held candidates at
// Permit (scheduler_permit_wait_duration_seconds), summed over the
// members, by result ("permit RESULT").
func (f *fleet) permitWaits(ctx context.Context) (waits, error) {
	out := waits{}
	for _, cm := range f.candidateMetrics {
		cfg := cm.member.RESTConfig()
		// Its serving certificate is its own, self-signed.
		cfg.Host, cfg.CAData, cfg.CAFile, cfg.Insecure = "https://"+cm.addr, nil, "", true
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		b, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s's candidate scheduler: %w", cm.member.Name(), err)
		}
		ws, err := parseWaits(b)
		if err != nil {
			return nil, err
		}
		for k, w := range ws {
			if strings.HasPrefix(k, "permit ") {
				sum := out[k]
				sum.sum, sum.count = sum.sum+w.sum, sum.count+w.count
				out[k] = sum
			}
		}
	}
	return out, nil
}

// countedPrefix marks a counter among the waits: a count, no time.
const countedPrefix = "counted: "

// parseWaits reads the token-bucket, request and work-queue histograms
// of a /metrics page (a queue's waits and its passes' time), and the
// Permit waits of a scheduler's.
func parseWaits(b []byte) (waits, error) {
	key := map[string]func(map[string]string) string{
		"placer_rest_client_rate_limiter_duration_seconds": func(l map[string]string) string { return "tokens " + l["verb"] + " " + l["path"] },
		"placer_rest_client_request_duration_seconds":      func(l map[string]string) string { return "request " + l["verb"] + " " + l["path"] },
		"workqueue_queue_duration_seconds":                 func(l map[string]string) string { return "queue " + l["name"] },
		"workqueue_work_duration_seconds":                  func(l map[string]string) string { return "pass " + l["name"] },
		"scheduler_permit_wait_duration_seconds":           func(l map[string]string) string { return "permit " + l["result"] },
		// Counters, counted only (no time): passes that failed (and
		// went on the queue's backoff), and propagator passes a member
		// with no request slot free stopped.
		"controller_runtime_reconcile_errors_total": func(l map[string]string) string { return countedPrefix + "errors " + l["controller"] },
		"placer_propagator_member_busy_total":       func(map[string]string) string { return countedPrefix + "member busy, propagator" },
	}
	out := waits{}
	err := promtext.Each(b, func(family string, l map[string]string, m *dto.Metric) {
		k := key[family](l)
		w := out[k]
		if c := m.GetCounter(); c != nil {
			w.count += c.GetValue()
		} else {
			h := m.GetHistogram()
			w.sum += h.GetSampleSum()
			w.count += float64(h.GetSampleCount())
		}
		out[k] = w
	}, slices.Collect(maps.Keys(key))...)
	return out, err
}

func (w waits) minus(before waits) waits {
	out := waits{}
	for k, v := range w {
		d := wait{sum: v.sum - before[k].sum, count: v.count - before[k].count}
		if d.count > 0 {
			out[k] = d
		}
	}
	return out
}
