package main

import "testing"

func TestParseWrites(t *testing.T) {
	page := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",group="compute.placer.dev",resource="workloads",scope="resource",subresource="",verb="POST",version="v1alpha1"} 310
apiserver_request_total{code="200",component="apiserver",group="compute.placer.dev",resource="workloads",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 637
apiserver_request_total{code="409",component="apiserver",group="compute.placer.dev",resource="workloads",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 3
apiserver_request_total{code="200",component="apiserver",group="compute.placer.dev",resource="workloads",scope="resource",subresource="",verb="GET",version="v1alpha1"} 99
apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="namespace",subresource="",verb="DELETECOLLECTION",version="v1"} 2
`
	w, err := parseWrites([]byte(page))
	if err != nil {
		t.Fatal(err)
	}
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
}
