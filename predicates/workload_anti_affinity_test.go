package predicates

import (
	"testing"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestWorkloadAntiAffinity(t *testing.T) {
	r, existing := ErrReasonAntiAffinity, ErrReasonExistingAntiAffinity
	runFilterCases(t, NewWorkloadAntiAffinity, []filterCase{
		{name: "spreads a group across regions; clusters without the key are in no domain", clusters: st.RegionFleet(),
			placed: []*v1alpha1.Workload{st.Workload("web-0", st.WLabels("app", "web"), st.PlacedOn("eu-2"))},
			w:      st.Workload("web-1", st.WLabels("app", "web"), st.RequiredAntiAffinity(st.WTerm(v1alpha1.LabelRegion, "app", "web"))),
			want:   map[string]string{"eu-1": r, "eu-2": r, "us-1": "", "none": ""}},
		{name: "anti-affinity against itself does not block the first", clusters: st.RegionFleet(),
			w:    st.Workload("web-0", st.WLabels("app", "web"), st.RequiredAntiAffinity(st.WTerm(v1alpha1.LabelRegion, "app", "web"))),
			want: map[string]string{"eu-1": "", "eu-2": "", "us-1": "", "none": ""}},
		{name: "a placed workload's anti-affinity keeps the newcomer away", clusters: st.RegionFleet(),
			placed: []*v1alpha1.Workload{st.Workload("noisy", st.PlacedOn("us-1"), st.RequiredAntiAffinity(st.WTerm(v1alpha1.LabelClusterName, "app", "web")))},
			w:      st.Workload("web-0", st.WLabels("app", "web")),
			want:   map[string]string{"eu-1": "", "eu-2": "", "us-1": existing, "none": ""}},
		{name: "the Crossplane design's crossplane.io/kubernetes topologyKey: each cluster is a domain of its own", clusters: st.RegionFleet(),
			placed: []*v1alpha1.Workload{st.Workload("web-0", st.WLabels("app", "web"), st.PlacedOn("eu-2"))},
			w:      st.Workload("web-1", st.WLabels("app", "web"), st.RequiredAntiAffinity(st.WTerm(v1alpha1.LabelCrossplaneKubernetes, "app", "web"))),
			want:   map[string]string{"eu-1": "", "eu-2": r, "us-1": "", "none": ""}},
		{name: "unrelated workloads do not count", clusters: st.RegionFleet(),
			placed: []*v1alpha1.Workload{st.Workload("db", st.WLabels("app", "db"), st.PlacedOn("eu-1"))},
			w:      st.Workload("web-0", st.WLabels("app", "web"), st.RequiredAntiAffinity(st.WTerm(v1alpha1.LabelRegion, "app", "web"))),
			want:   map[string]string{"eu-1": "", "eu-2": "", "us-1": "", "none": ""}},
	})
}
