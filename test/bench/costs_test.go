package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseWrites(t *testing.T) {
	page := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",group="compute.placer.dev",resource="workloads",scope="resource",subresource="",verb="POST",version="v1alpha1"} 310
apiserver_request_total{code="200",component="apiserver",group="compute.placer.dev",resource="workloads",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 637
apiserver_request_total{code="409",component="apiserver",group="compute.placer.dev",resource="workloads",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 3
apiserver_request_total{code="200",component="apiserver",group="compute.placer.dev",resource="workloads",scope="resource",subresource="",verb="GET",version="v1alpha1"} 99
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="namespace",subresource="",verb="DELETECOLLECTION",version="v1"} 2
`
	both, err := parseWrites([]byte(page), "", "409")
	if err != nil {
		t.Fatal(err)
	}
	w, conflicts := both[0], both[1]
	want := writes{"workloads POST": 310, "workloads/status PATCH": 640, "pods DELETECOLLECTION": 2}
	if len(w) != len(want) {
		t.Fatalf("writes = %v, want %v", w, want)
	}
	for k, v := range want {
		if w[k] != v {
			t.Errorf("%s = %g, want %g", k, w[k], v)
		}
	}
	if got := w.of("workloads"); got != 950 {
		t.Errorf("of(workloads) = %g, want 950 (workloads and workloads/status)", got)
	}
	if len(conflicts) != 1 || conflicts["workloads/status PATCH"] != 3 {
		t.Errorf("conflicts = %v, want workloads/status PATCH 3", conflicts)
	}
}

func TestParseWaits(t *testing.T) {
	page := histogramText("placer_rest_client_rate_limiter_duration_seconds", `path="/apis/compute.placer.dev/v1alpha1/namespaces/{namespace}/workloads/{name}",verb="PATCH"`, 310, 6.5) +
		histogramText("placer_rest_client_request_duration_seconds", `path="/api/v1/namespaces/{namespace}/pods/{name}/binding",verb="POST"`, 350, 70) +
		histogramText("workqueue_work_duration_seconds", `controller="proxypod",name="proxypod"`, 1100, 330) +
		histogramText("workqueue_queue_duration_seconds", `controller="propagator",name="propagator"`, 1000, 20) +
		histogramText("scheduler_permit_wait_duration_seconds", `result="Success"`, 40, 12) + `# HELP controller_runtime_reconcile_errors_total x
# TYPE controller_runtime_reconcile_errors_total counter
controller_runtime_reconcile_errors_total{controller="propagator"} 233
controller_runtime_reconcile_errors_total{controller="scheduler"} 0
# HELP placer_propagator_member_busy_total x
# TYPE placer_propagator_member_busy_total counter
placer_propagator_member_busy_total 17
`
	w, err := parseWaits([]byte(page))
	if err != nil {
		t.Fatal(err)
	}
	tokens := w["tokens PATCH /apis/compute.placer.dev/v1alpha1/namespaces/{namespace}/workloads/{name}"]
	if tokens.count != 310 || tokens.sum != 6.5 {
		t.Errorf("tokens = %+v, want 310 waits, 6.5 s", tokens)
	}
	if r := w["request POST /api/v1/namespaces/{namespace}/pods/{name}/binding"]; r.count != 350 || r.sum != 70 {
		t.Errorf("request POST binding = %+v, want 350 requests, 70 s", r)
	}
	if p := w["pass proxypod"]; p.count != 1100 || p.sum != 330 {
		t.Errorf("pass proxypod = %+v, want 1100 passes, 330 s", p)
	}
	if p := w["permit Success"]; p.count != 40 || p.sum != 12 {
		t.Errorf("permit Success = %+v, want 40 waits, 12 s", p)
	}
	if e := w[countedPrefix+"errors propagator"]; e.count != 233 || e.sum != 0 {
		t.Errorf("errors propagator = %+v, want 233 counted, no time", e)
	}
	if b := w[countedPrefix+"member busy, propagator"]; b.count != 17 {
		t.Errorf("member busy = %+v, want 17 counted", b)
	}
	var rb strings.Builder
	writeWaitsOf(&rb, "phase", []namedWaits{{name: "fanout-1", waits: w.minus(waits{countedPrefix + "errors propagator": {count: 200}})}})
	if !strings.Contains(rb.String(), "| fanout-1 | request POST /api/v1/namespaces/{namespace}/pods/{name}/binding | 350 | 70.00 | 200.0 |") ||
		!strings.Contains(rb.String(), "| fanout-1 | pass proxypod | 1100 | 330.00 | 300.0 |") {
		t.Errorf("the waits table has no row of the binding's requests or of the proxy pods' passes:\n%s", rb.String())
	}
	if !strings.Contains(rb.String(), "| fanout-1 | errors propagator | 33 | – | – |") || strings.Contains(rb.String(), "errors scheduler") {
		t.Errorf("the waits table counts the errors since before as\n%s\nwant 33 for the propagator, no row for the scheduler's none", rb.String())
	}
	before := waits{"queue propagator": {sum: 5, count: 400}}
	if d := w.minus(before)["queue propagator"]; d.count != 600 || d.sum != 15 {
		t.Errorf("queue propagator since before = %+v, want 600 waits, 15 s", d)
	}
}

func TestProcCPU(t *testing.T) {
	start, ok := procCPU(os.Getpid())
	if !ok {
		t.Fatal("cannot read this process's CPU time")
	}
	// Spend CPU until the clock-tick counters move (10 ms a tick).
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	for time.Now().Before(deadline) {
		for i := range 1_000_000 {
			x ^= i
		}
		if now, _ := procCPU(os.Getpid()); now > start {
			return
		}
	}
	t.Errorf("CPU time stayed at %g s after 10 s of work (%d)", start, x)
}

func TestPlacerComponent(t *testing.T) {
	for process, want := range map[string]string{
		"manager":                      "placer manager",
		"member-2-agent":               "placer agents",
		"member-0-candidate-scheduler": "placer candidate schedulers",
	} {
		if got := placerComponent(process); got != want {
			t.Errorf("placerComponent(%q) = %q, want %q", process, got, want)
		}
	}
	if _, ok := procCPU(-1); ok {
		t.Error("procCPU(-1) read a CPU time")
	}
}

// histogramText is a histogram of one series in the text format of a
// /metrics page: its +Inf bucket, sum and count.
func histogramText(name, labels string, count int, sum float64) string {
	return fmt.Sprintf("# HELP %[1]s x\n# TYPE %[1]s histogram\n%[1]s_bucket{%[2]s,le=\"+Inf\"} %[3]d\n%[1]s_sum{%[2]s} %[4]g\n%[1]s_count{%[2]s} %[3]d\n",
		name, labels, count, sum)
}
