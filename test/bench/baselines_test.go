package main

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBaselineRecords(t *testing.T) {
	single, multi := item{name: "w-1", replicas: 1}, item{name: "m-1", replicas: 3}
	if rs := baselineRecords(nsSpread, multi); len(rs) != 3 || rs[2].name != "m-1-2" || rs[2].replicas != 1 {
		t.Errorf("bare pods of a 3-replica item: %+v", rs)
	}
	if rs := baselineRecords(nsBaseline, single); len(rs) != 1 || rs[0].name != "w-1" {
		t.Errorf("a bare pod of a single item: %+v", rs)
	}
	if rs := baselineRecords(nsDeployments, multi); len(rs) != 1 || rs[0].name != "m-1" || rs[0].replicas != 3 {
		t.Errorf("a Deployment of a 3-replica item: %+v", rs)
	}
	for _, tc := range []struct {
		pod           *corev1.Pod
		name, replica string
		ok            bool
	}{
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: nsSpread, Name: "m-1-2"}}, "m-1-2", "0", true},
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: nsDeployments, Name: "m-1-abc-xyz", Labels: map[string]string{"group": "m-1"}}}, "m-1", "m-1-abc-xyz", true},
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: nsDeployments, Name: "stray"}}, "", "stray", false},
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "fanout-1", Name: "x"}}, "", "", false},
	} {
		name, replica, ok := recordOf(tc.pod)
		if name != tc.name || replica != tc.replica || ok != tc.ok {
			t.Errorf("recordOf(%s/%s) = %q %q %v, want %q %q %v", tc.pod.Namespace, tc.pod.Name, name, replica, ok, tc.name, tc.replica, tc.ok)
		}
	}
	if !isBaseline(nsDeployments) || isBaseline("fanout-1") {
		t.Error("isBaseline")
	}
}

func TestKCMQPS(t *testing.T) {
	if got := kcmQPS(options{qps: 50}); got != 300 {
		t.Errorf("kcmQPS at 50 client QPS = %d, want 300", got)
	}
	if got := kcmQPS(options{qps: 2}); got != 20 {
		t.Errorf("kcmQPS at 2 client QPS = %d, want its floor 20", got)
	}
	if got := kcmQPS(options{qps: 50, kcmQPS: 80}); got != 80 {
		t.Errorf("kcmQPS set = %d, want 80", got)
	}
}

func TestWriteAgainst(t *testing.T) {
	lat := func(ms ...int) latencies {
		var l latencies
		for _, m := range ms {
			l = append(l, time.Duration(m)*time.Millisecond)
		}
		return l
	}
	rs := []phaseResult{
		{name: nsBaseline, throughput: 40, runing: lat(100, 200)},
		{name: nsSpread, throughput: 80, runing: lat(100, 200)},
		{name: nsDeployments, throughput: 20, runing: lat(300, 400)},
		{name: "fanout-1", throughput: 20, runing: lat(300, 600)},
	}
	var b strings.Builder
	writeAgainst(&b, rs)
	out := b.String()
	if !strings.Contains(out, "| fanout-1 | 200 ms |") || !strings.Contains(out, "| 0.50 | 0.25 | 1.00 |") {
		t.Errorf("writeAgainst:\n%s", out)
	}
	if strings.Contains(out, "| deployments |") {
		t.Errorf("a baseline compared with itself:\n%s", out)
	}
	if ratio(1, 0) != 0 {
		t.Error("ratio by zero")
	}
}
