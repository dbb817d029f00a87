package scheduler_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
	"github.com/placer-dev/placer/scheduler/registry"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestNormalize(t *testing.T) {
	cases := []struct {
		name string
		raw  []int64
		want []int64
	}{
		{"empty", []int64{}, []int64{}},
		{"one cluster", []int64{42}, []int64{1}},
		{"all equal carry no preference", []int64{7, 7, 7}, []int64{1, 1, 1}},
		{"all zero", []int64{0, 0}, []int64{1, 1}},
		{"non-negative scale from zero", []int64{0, 50, 100}, []int64{1, 6, 10}},
		{"close scores stay close", []int64{90, 100}, []int64{9, 10}},
		{"negatives scale from the lowest", []int64{-10, -5, 0}, []int64{1, 6, 10}},
		{"negative and positive", []int64{-4, 0, 4}, []int64{1, 6, 10}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := append([]int64{}, tc.raw...)
			scheduler.Normalize(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Normalize(%v) (-want,+got):\n%s", tc.raw, diff)
			}
		})
	}
}

func defaultProfile(t *testing.T) *scheduler.Profile {
	t.Helper()
	ps, err := registry.NewProfiles(scheduler.DefaultConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	return ps[v1alpha1.DefaultSchedulerName]
}

func ranked(r *scheduler.Result) []string {
	out := []string{}
	for _, c := range r.Ranked {
		out = append(out, c.Cluster.Key.Name)
	}
	return out
}

func TestScheduleRanksAndExplains(t *testing.T) {
	p := defaultProfile(t)
	clusters := []*v1alpha1.KubernetesCluster{
		st.Cluster("a", st.Labels("tier", "prod"), st.Capacity("10", "10Gi", "5", "5Gi", "5", "5Gi")),
		st.Cluster("b", st.Labels("tier", "prod"), st.Capacity("10", "10Gi", "0", "0", "10", "10Gi")),
		st.Cluster("c", st.Labels("tier", "prod"), st.Capacity("10", "10Gi", "0", "0", "10", "10Gi")),
		st.Cluster("dev", st.Labels("tier", "dev")),
		st.Cluster("down", st.Labels("tier", "prod"), st.NotReady(v1alpha1.ReasonUnreachable)),
		st.Cluster("gpu", st.Labels("tier", "prod"), st.Taint("dedicated", "gpu", v1alpha1.TaintEffectNoSchedule)),
	}
	snap := st.Snapshot(clusters, nil, nil)
	w := st.Workload("w", st.Selector("tier", "prod"), st.Requests("1", "1Gi"))
	r := p.Schedule(context.Background(), w, snap, scheduler.Options{})
	// b and c tie (emptiest) and are ordered by a hash of the UID; a is half full.
	if diff := cmp.Diff([]string{"b", "c", "a"}, ranked(r)); diff != "" {
		t.Errorf("ranking (-want,+got):\n%s", diff)
	}
	if got := r.Ranked[0].Scores()["ResourceAllocation"]; got != 10 {
		t.Errorf("ResourceAllocation of the emptiest = %d, want 10", got)
	}

	none := st.Workload("w", st.Selector("tier", "prod"), st.Requests("64", "1Gi"))
	r = p.Schedule(context.Background(), none, snap, scheduler.Options{})
	want := "0/6 clusters are available: 3 cluster(s) had no room for one replica (Insufficient cpu), " +
		"1 cluster(s) didn't match the cluster selector, 1 cluster(s) had untolerated taint {dedicated: gpu}, 1 cluster(s) were unreachable."
	if got := r.Message(); got != want {
		t.Errorf("Message():\n got %s\nwant %s", got, want)
	}

	r = p.Schedule(context.Background(), none, snap, scheduler.Options{AllFilters: true})
	if len(r.Filters) != len(clusters) {
		t.Fatalf("AllFilters recorded %d clusters, want %d", len(r.Filters), len(clusters))
	}
	for key, statuses := range r.Filters {
		if len(statuses) != len(p.Filters) {
			t.Errorf("%s: %d verdicts, want one per filter (%d)", key, len(statuses), len(p.Filters))
		}
	}
}

func TestScheduleNoClusters(t *testing.T) {
	r := defaultProfile(t).Schedule(context.Background(), st.Workload("w"), st.Snapshot(nil, nil, nil), scheduler.Options{})
	if len(r.Ranked) != 0 || r.Message() != "0/0 clusters are available." {
		t.Errorf("got %d ranked, message %q", len(r.Ranked), r.Message())
	}
}

func TestProfiles(t *testing.T) {
	write := func(t *testing.T, s string) string {
		p := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name    string
		config  string
		wantErr string
		check   func(t *testing.T, ps map[string]*scheduler.Profile)
	}{
		{name: "two profiles, weights, packing", config: `
profiles:
- schedulerName: placer-scheduler
- schedulerName: packer
  scoringStrategy: MostAllocated
  disabled: [ResourceFit, WorkloadAntiAffinity]
  weights: {ClusterAffinity: 5, ResourceAllocation: 0}
`, check: func(t *testing.T, ps map[string]*scheduler.Profile) {
			if len(ps) != 2 {
				t.Fatalf("want 2 profiles, got %d", len(ps))
			}
			p := ps["packer"]
			if p.ScoringStrategy() != scheduler.MostAllocated {
				t.Errorf("strategy = %s", p.ScoringStrategy())
			}
			for _, f := range p.Filters {
				if f.Name() == "ResourceFit" || f.Name() == "WorkloadAntiAffinity" {
					t.Errorf("disabled filter %s runs", f.Name())
				}
			}
			weights := map[string]int64{}
			for _, s := range p.Scores {
				weights[s.Plugin.Name()] = s.Weight
			}
			want := map[string]int64{"ClusterAffinity": 5, "WorkloadAffinity": 1, "TaintToleration": 1}
			if diff := cmp.Diff(want, weights); diff != "" {
				t.Errorf("weights (-want,+got):\n%s", diff)
			}
		}},
		{name: "unknown plugin", config: "profiles: [{schedulerName: x, disabled: [Nope]}]", wantErr: `disabled[0]: unknown plugin "Nope"`},
		{name: "duplicate schedulerName", config: "profiles: [{schedulerName: x}, {schedulerName: x}]", wantErr: `profiles[1].schedulerName: "x" is served by another profile`},
		{name: "bad strategy", config: "profiles: [{schedulerName: x, scoringStrategy: Random}]", wantErr: `scoringStrategy: "Random"`},
		{name: "weight out of range", config: "profiles: [{schedulerName: x, weights: {TaintToleration: 101}}]", wantErr: "weights[TaintToleration]: 101"},
		{name: "weight of a disabled plugin", config: "profiles: [{schedulerName: x, disabled: [TaintToleration], weights: {TaintToleration: 2}}]", wantErr: "weights[TaintToleration]: no such score plugin"},
		{name: "unknown field", config: "profiles: [{schedulerName: x, wieghts: {}}]", wantErr: `unknown field "wieghts"`},
		{name: "no profiles", config: "profiles: []", wantErr: "at least one profile"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := scheduler.LoadConfiguration(write(t, tc.config))
			var ps map[string]*scheduler.Profile
			if err == nil {
				ps, err = registry.NewProfiles(c)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want an error containing %q, got %v", tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, ps)
		})
	}
}

func registryProfiles() (map[string]*scheduler.Profile, error) {
	return registry.NewProfiles(scheduler.DefaultConfiguration())
}

// TestTiesSpreadButRepeat: among equal clusters each Workload always gets
// the same first choice, and Workloads spread over all of them rather
// than piling onto the first by name.
func TestTiesSpreadButRepeat(t *testing.T) {
	p := defaultProfile(t)
	var clusters []*v1alpha1.KubernetesCluster
	for _, n := range []string{"m0", "m1", "m2"} {
		clusters = append(clusters, st.Cluster(n, st.Capacity("16000", "64000Gi", "0", "0", "32", "128Gi")))
	}
	snap := st.Snapshot(clusters, nil, nil)
	first := map[string]int{}
	for i := range 300 {
		w := st.Workload(fmt.Sprintf("w%03d", i), st.Requests("100m", "128Mi"))
		w.UID = types.UID(fmt.Sprintf("uid-%03d", i))
		r := p.Schedule(context.Background(), w, snap, scheduler.Options{})
		again := p.Schedule(context.Background(), w, snap, scheduler.Options{})
		if diff := cmp.Diff(ranked(r), ranked(again)); diff != "" {
			t.Fatalf("%s: the order changed between two cycles (-first,+second):\n%s", w.Name, diff)
		}
		first[ranked(r)[0]]++
	}
	for _, n := range []string{"m0", "m1", "m2"} {
		if first[n] < 60 {
			t.Errorf("cluster %s was first for %d of 300 workloads, want a fair share (≥ 60): %v", n, first[n], first)
		}
	}
}
