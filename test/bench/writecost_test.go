package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/placer-dev/placer/config"
)

func TestSummarizeWriteCosts(t *testing.T) {
	kinds := []writeKind{{name: "Pod create"}, {name: "Workload create", against: "Pod create"}, {name: "never measured"}}
	// Three rounds of 100 writes: CPU seconds of the API server and etcd.
	samples := map[string][]writeCostSample{
		"Pod create":      {{0.12, 0.02}, {0.10, 0.03}, {0.30, 0.02}},
		"Workload create": {{0.25, 0.03}, {0.20, 0.04}, {0.21, 0.03}},
	}
	rows := summarizeWriteCosts(kinds, samples, 100)
	if len(rows) != 2 {
		t.Fatalf("rows = %+v, want the two kinds measured", rows)
	}
	pod, wl := rows[0], rows[1]
	near := func(got, want float64) bool { return got > want-1e-9 && got < want+1e-9 }
	if !near(pod.medianAPI, 1.2) || !near(pod.min, 1.0) || !near(pod.max, 3.0) || !near(pod.medianDB, 0.2) {
		t.Errorf("Pod create = median %g (%g–%g), etcd %g; want 1.2 (1–3), etcd 0.2 ms per write", pod.medianAPI, pod.min, pod.max, pod.medianDB)
	}
	if !near(wl.medianAPI, 2.1) || !near(wl.medianDB, 0.3) {
		t.Errorf("Workload create = %g, etcd %g; want 2.1, etcd 0.3", wl.medianAPI, wl.medianDB)
	}

	report := writeCostReport(rows, 100, 3, "header")
	for _, want := range []string{
		"| Pod create | 1.20 (1.00–3.00) | 0.20 | – | – |",
		"| Workload create | 2.10 (2.00–2.50) | 0.30 | Pod create | 1.8 |",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}

func TestWithoutRules(t *testing.T) {
	crds, err := config.CRDs("compute.placer.dev")
	if err != nil {
		t.Fatal(err)
	}
	var wl *apiextensionsv1.CustomResourceDefinition
	for _, c := range crds {
		if c.Spec.Names.Kind == "Workload" {
			wl = c
		}
	}
	if wl == nil {
		t.Fatal("no Workload CRD")
	}
	// Counted in the CRD as it is written out, wherever a rule sits (not
	// by walking the schema as withoutRules does, so that a place the
	// walk misses shows).
	rules := func(c *apiextensionsv1.CustomResourceDefinition) int {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), `"x-kubernetes-validations"`)
	}
	before := rules(wl)
	if before == 0 {
		t.Fatal("the Workload CRD has no CEL rules to take away: the measure compares nothing")
	}
	c := withoutRules(wl)
	if got := rules(c); got != 0 {
		t.Errorf("%d rules left", got)
	}
	if c.Spec.Group != noRulesGroup || c.Name != "workloads."+noRulesGroup {
		t.Errorf("copy is %s in group %s, want workloads.%s", c.Name, c.Spec.Group, noRulesGroup)
	}
	if got := rules(wl); got != before {
		t.Errorf("the original lost rules: %d, had %d", got, before)
	}
}

func TestWriteFleetCPUWork(t *testing.T) {
	rest := &phaseResult{name: "at rest", what: "10s with nothing created", wall: 10 * time.Second, fleetCPU: map[string]float64{"etcd": 1, "kwok": 2}}
	rs := []phaseResult{{name: "fanout-1", pods: 100, wall: 5 * time.Second, fleetCPU: map[string]float64{"etcd": 2, "kwok": 4}}}
	b := &strings.Builder{}
	writeFleetCPU(b, rs, rest)
	// At rest 0.30 cores; the phase spent 6 s in 5 s: 6 - 1.5 = 4.5 s of
	// work, 45 ms per pod.
	for _, want := range []string{
		"| at rest | 10.0 | 3.0 | 0.30 | – | – | 2.0 | 1.0 |",
		"| fanout-1 | 5.0 | 6.0 | 1.20 | 4.5 | 45 | 4.0 | 2.0 |",
		"less the rest's 0.30 cores",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	// Without a rest measure, no work is claimed.
	b.Reset()
	writeFleetCPU(b, rs, nil)
	if !strings.Contains(b.String(), "| fanout-1 | 5.0 | 6.0 | 1.20 | – | – | 4.0 | 2.0 |") {
		t.Errorf("without rest:\n%s", b.String())
	}
}

func TestLessRest(t *testing.T) {
	// At rest 0.1 cores of API server and 0.02 of etcd, over 5 s.
	rest := cpuSpan{writeCostSample{apiserver: 0.5, etcd: 0.1}, 5 * time.Second}
	// 1.2 s of writes took 1.0 s of API server CPU: 0.12 of it was rest.
	got := cpuSpan{writeCostSample{apiserver: 1.0, etcd: 0.01}, 1200 * time.Millisecond}.lessRest(rest)
	if got.apiserver < 0.879 || got.apiserver > 0.881 {
		t.Errorf("API server = %g, want 0.88", got.apiserver)
	}
	if got.etcd != 0 {
		t.Errorf("etcd = %g, want 0 (never below zero)", got.etcd)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2 {
		t.Errorf("median of four = %g, want the lower middle one, 2", m)
	}
}
