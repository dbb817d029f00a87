package predicates

import (
	"testing"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestWorkloadAffinity(t *testing.T) {
	r := ErrReasonWorkloadAffinity
	backend := st.Workload("backend", st.WLabels("app", "backend"), st.PlacedOn("eu-1"))
	runFilterCases(t, NewWorkloadAffinity, []filterCase{
		{name: "no affinity passes all", clusters: st.RegionFleet(), placed: []*v1alpha1.Workload{backend}, w: st.Workload("w"),
			want: map[string]string{"eu-1": "", "eu-2": "", "us-1": "", "none": ""}},
		{name: "front end lands in the back end's region", clusters: st.RegionFleet(), placed: []*v1alpha1.Workload{backend},
			w:    st.Workload("frontend", st.RequiredAffinity(st.WTerm(v1alpha1.LabelRegion, "app", "backend"))),
			want: map[string]string{"eu-1": "", "eu-2": "", "us-1": r, "none": r}},
		{name: "topologyKey cluster-name means the same cluster", clusters: st.RegionFleet(), placed: []*v1alpha1.Workload{backend},
			w:    st.Workload("frontend", st.RequiredAffinity(st.WTerm(v1alpha1.LabelClusterName, "app", "backend"))),
			want: map[string]string{"eu-1": "", "eu-2": r, "us-1": r, "none": r}},
		{name: "nothing placed matches: no cluster fits", clusters: st.RegionFleet(), placed: []*v1alpha1.Workload{backend},
			w:    st.Workload("frontend", st.RequiredAffinity(st.WTerm(v1alpha1.LabelRegion, "app", "db"))),
			want: map[string]string{"eu-1": r, "eu-2": r, "us-1": r, "none": r}},
		{name: "the first of a self-affine group goes where the key exists", clusters: st.RegionFleet(),
			w:    st.Workload("cache-0", st.WLabels("app", "cache"), st.RequiredAffinity(st.WTerm(v1alpha1.LabelRegion, "app", "cache"))),
			want: map[string]string{"eu-1": "", "eu-2": "", "us-1": "", "none": r}},
		{name: "the second of a self-affine group follows the first", clusters: st.RegionFleet(),
			placed: []*v1alpha1.Workload{st.Workload("cache-0", st.WLabels("app", "cache"), st.PlacedOn("us-1"))},
			w:      st.Workload("cache-1", st.WLabels("app", "cache"), st.RequiredAffinity(st.WTerm(v1alpha1.LabelRegion, "app", "cache"))),
			want:   map[string]string{"eu-1": r, "eu-2": r, "us-1": "", "none": r}},
		{name: "a workload does not satisfy its own term", clusters: st.RegionFleet(),
			placed: []*v1alpha1.Workload{st.Workload("cache-0", st.WLabels("app", "cache"), st.PlacedOn("us-1"), st.RequiredAffinity(st.WTerm(v1alpha1.LabelRegion, "app", "cache")))},
			w:      st.Workload("cache-0", st.WLabels("app", "cache"), st.RequiredAffinity(st.WTerm(v1alpha1.LabelRegion, "app", "cache"))),
			want:   map[string]string{"eu-1": "", "eu-2": "", "us-1": "", "none": r}},
		{name: "other namespaces are not selected by default", clusters: st.RegionFleet(),
			placed: []*v1alpha1.Workload{st.Workload("backend", st.WNamespace("team-b"), st.WLabels("app", "backend"), st.PlacedOn("eu-1"))},
			w:      st.Workload("frontend", st.RequiredAffinity(st.WTerm(v1alpha1.LabelRegion, "app", "backend"))),
			want:   map[string]string{"eu-1": r, "eu-2": r, "us-1": r, "none": r}},
		{name: "namespaces lists them", clusters: st.RegionFleet(),
			placed: []*v1alpha1.Workload{st.Workload("backend", st.WNamespace("team-b"), st.WLabels("app", "backend"), st.PlacedOn("us-1"))},
			w: st.Workload("frontend", st.RequiredAffinity(func() v1alpha1.WorkloadAffinityTerm {
				t := st.WTerm(v1alpha1.LabelRegion, "app", "backend")
				t.Namespaces = []string{"team-b"}
				return t
			}())),
			want: map[string]string{"eu-1": r, "eu-2": r, "us-1": "", "none": r}},
		{name: "namespaceSelector selects by namespace labels", clusters: st.RegionFleet(),
			ns:     map[string]map[string]string{"team-b": {"team": "b"}},
			placed: []*v1alpha1.Workload{st.Workload("backend", st.WNamespace("team-b"), st.WLabels("app", "backend"), st.PlacedOn("us-1"))},
			w: st.Workload("frontend", st.RequiredAffinity(func() v1alpha1.WorkloadAffinityTerm {
				t := st.WTerm(v1alpha1.LabelRegion, "app", "backend")
				t.NamespaceSelector = &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{"team": "b"}}
				return t
			}())),
			want: map[string]string{"eu-1": r, "eu-2": r, "us-1": "", "none": r}},
		{name: "matchExpressions select as label selectors do", clusters: st.RegionFleet(), placed: []*v1alpha1.Workload{backend},
			w: st.Workload("frontend", st.RequiredAffinity(v1alpha1.WorkloadAffinityTerm{TopologyKey: v1alpha1.LabelRegion, LabelSelector: &v1alpha1.LabelSelector{
				MatchExpressions: []v1alpha1.LabelSelectorRequirement{{Key: "app", Operator: "In", Values: []string{"backend", "db"}}}}})),
			want: map[string]string{"eu-1": "", "eu-2": "", "us-1": r, "none": r}},
		{name: "matchLabels with two keys needs both", clusters: st.RegionFleet(), placed: []*v1alpha1.Workload{backend},
			w:    st.Workload("frontend", st.RequiredAffinity(st.WTerm(v1alpha1.LabelRegion, "app", "backend", "tier", "gold"))),
			want: map[string]string{"eu-1": r, "eu-2": r, "us-1": r, "none": r}},
		{name: "a nil labelSelector selects nothing", clusters: st.RegionFleet(), placed: []*v1alpha1.Workload{backend},
			w:    st.Workload("frontend", st.RequiredAffinity(v1alpha1.WorkloadAffinityTerm{TopologyKey: v1alpha1.LabelRegion})),
			want: map[string]string{"eu-1": r, "eu-2": r, "us-1": r, "none": r}},
		{name: "a workload placed on an unknown cluster counts nowhere", clusters: st.RegionFleet(),
			placed: []*v1alpha1.Workload{st.Workload("backend", st.WLabels("app", "backend"), st.PlacedOn("gone"))},
			w:      st.Workload("frontend", st.RequiredAffinity(st.WTerm(v1alpha1.LabelRegion, "app", "backend"))),
			want:   map[string]string{"eu-1": r, "eu-2": r, "us-1": r, "none": r}},
	})
}
