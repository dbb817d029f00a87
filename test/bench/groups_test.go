package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestGroupOf(t *testing.T) {
	for process, want := range map[string]string{
		"manager":                       "management",
		"member-0-agent":                "member-0",
		"member-12-candidate-scheduler": "member-12",
		"member-x-agent":                groupBench,
		"something":                     groupBench,
	} {
		if got := groupOf(process); got != want {
			t.Errorf("groupOf(%q) = %q, want %q", process, got, want)
		}
	}
}

func TestBinding(t *testing.T) {
	quotas := map[string]float64{"management": 0.5, "member-0": 0.5, "kwok": 0}
	for _, tc := range []struct {
		name      string
		used      map[string]float64
		wall      float64
		want      string
		wantShare float64
	}{
		{"the management cluster at its quota", map[string]float64{"management": 4.8, "member-0": 2, "kwok": 30}, 10, "management", 0.96},
		{"nobody near its quota; kwok has none", map[string]float64{"management": 2, "member-0": 3, "kwok": 30}, 10, "", 0.6},
		{"a member first", map[string]float64{"management": 4.6, "member-0": 5}, 10, "member-0", 1},
		{"no wall time", map[string]float64{"management": 1}, 0, "", 0},
	} {
		got, share := binding(tc.used, quotas, tc.wall)
		if got != tc.want || share < tc.wantShare-0.001 || share > tc.wantShare+0.001 {
			t.Errorf("%s: binding = %q at %.3f, want %q at %.3f", tc.name, got, share, tc.want, tc.wantShare)
		}
	}
	// The busiest group is named below 90% too (the offered load's
	// table), never one without a quota.
	if got, share := busiest(map[string]float64{"management": 2, "member-0": 3, "kwok": 30}, quotas, 10); got != "member-0" || share < 0.599 || share > 0.601 {
		t.Errorf("busiest = %q at %.3f, want member-0 at 0.6", got, share)
	}
}

func TestGroupCellAndNames(t *testing.T) {
	if got := groupCell(4.5, 0.5, 10); got != "4.5 (90%)" {
		t.Errorf("groupCell = %q", got)
	}
	if got := groupCell(30, 0, 10); got != "30.0" {
		t.Errorf("groupCell without a quota = %q", got)
	}
	got := groupNames(map[string]float64{"bench": 0, "member-1": 1, "kwok": 0, "management": 1, "member-0": 1})
	if strings.Join(got, ",") != "management,member-0,member-1,kwok,bench" {
		t.Errorf("groupNames = %v", got)
	}
	if m := cpuMode(options{}); !strings.Contains(m, "one shared pool") {
		t.Errorf("cpuMode shared: %q", m)
	}
	if m := cpuMode(options{clusterCPUs: 0.4}); !strings.Contains(m, "a quota of 0.4 CPU per 100ms") || !strings.Contains(m, "-cluster-cpus 0.4") {
		t.Errorf("cpuMode per cluster: %q", m)
	}
	if m := cpuMode(options{clusterCPUs: 0.4, cpuPeriod: 10 * time.Millisecond}); !strings.Contains(m, "per 10ms CFS period") || !strings.Contains(m, "-cpu-period 10ms") {
		t.Errorf("cpuMode with a period: %q", m)
	}
}

// TestNewCPUGroups: a group per cluster with the cluster quota, kwok's
// and the benchmark's with theirs, and the benchmark moved into its own;
// in a temporary folder standing in for /sys/fs/cgroup.
func TestNewCPUGroups(t *testing.T) {
	root := t.TempDir()
	g, err := newCPUGroups(options{clusterCPUs: 0.4, kwokCPUs: 0, benchCPUs: 1}, root, []string{"management", "member-0"})
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, "cpu", g.root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for group, want := range map[string]string{"management": "40000", "member-0": "40000", groupKwok: "-1", groupBench: "100000"} {
		if got := read(group + "/cpu.cfs_quota_us"); got != want {
			t.Errorf("%s quota %s, want %s", group, got, want)
		}
	}
	if got := read(groupBench + "/cgroup.procs"); got != strconv.Itoa(os.Getpid()) {
		t.Errorf("the benchmark's group holds %q, want its pid", got)
	}
	if g.of("member-0") == nil || g.of("member-9") != nil || (*cpuGroups)(nil).of("member-0") != nil {
		t.Error("of: the wrong group")
	}
	if q := g.quotas(); q["member-0"] != 0.4 || q[groupBench] != 1 || q[groupKwok] != 0 {
		t.Errorf("quotas = %v", q)
	}
	// An unusable root says what -cluster-cpus needs and the way out.
	if _, err := newCPUGroups(options{clusterCPUs: 0.4}, "/proc/no-such", []string{"management"}); err == nil || !strings.Contains(err.Error(), "run without -cluster-cpus") {
		t.Errorf("an unusable root: %v", err)
	}
}
