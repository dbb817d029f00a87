package priorities

import (
	"testing"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestWorkloadAffinity(t *testing.T) {
	placed := []*v1alpha1.Workload{
		st.Workload("db-0", st.WLabels("app", "db"), st.PlacedOn("eu-1")),
		st.Workload("db-1", st.WLabels("app", "db"), st.PlacedOn("eu-2")),
		st.Workload("db-2", st.WLabels("app", "db"), st.PlacedOn("us-1")),
		st.Workload("cache", st.WLabels("app", "cache"), st.PlacedOn("us-1")),
	}
	runScoreCases(t, NewWorkloadAffinity, []scoreCase{
		{name: "no terms", clusters: st.RegionFleet(), placed: placed, w: st.Workload("w"), want: map[string]int64{"eu-1": 0, "eu-2": 0, "us-1": 0, "none": 0}},
		{name: "weight times workloads in the domain", clusters: st.RegionFleet(), placed: placed,
			w:    st.Workload("w", st.PreferredAffinity(10, st.WTerm(v1alpha1.LabelRegion, "app", "db")), st.PreferredAffinity(7, st.WTerm(v1alpha1.LabelClusterName, "app", "cache"))),
			want: map[string]int64{"eu-1": 20, "eu-2": 20, "us-1": 17, "none": 0}},
	})
	runScoreCases(t, NewWorkloadAntiAffinity, []scoreCase{
		{name: "anti-affinity subtracts", clusters: st.RegionFleet(), placed: placed,
			w:    st.Workload("w", st.PreferredAntiAffinity(5, st.WTerm(v1alpha1.LabelRegion, "app", "db"))),
			want: map[string]int64{"eu-1": -10, "eu-2": -10, "us-1": -5, "none": 0}},
	})
}
