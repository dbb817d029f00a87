package priorities

import (
	"testing"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestClusterAffinity(t *testing.T) {
	clusters := []*v1alpha1.KubernetesCluster{
		st.Cluster("prod-eu", st.Labels("tier", "production", v1alpha1.LabelRegion, "eu")),
		st.Cluster("prod-us", st.Labels("tier", "production", v1alpha1.LabelRegion, "us")),
		st.Cluster("dev"),
	}
	runScoreCases(t, NewClusterAffinity, []scoreCase{
		{name: "no preferences score zero", clusters: clusters, w: st.Workload("w"), want: map[string]int64{"prod-eu": 0, "prod-us": 0, "dev": 0}},
		{name: "weights of matching terms add up", clusters: clusters, w: st.Workload("w",
			st.PreferredClusterAffinity(50, st.Term(st.Expr("tier", "In", "production"))),
			st.PreferredClusterAffinity(30, st.Term(st.Expr(v1alpha1.LabelRegion, "In", "eu")))),
			want: map[string]int64{"prod-eu": 80, "prod-us": 50, "dev": 0}},
		{name: "DoesNotExist preference", clusters: clusters, w: st.Workload("w", st.PreferredClusterAffinity(10, st.Term(st.Expr("tier", "DoesNotExist")))),
			want: map[string]int64{"prod-eu": 0, "prod-us": 0, "dev": 10}},
		// The cluster is presented with its name only when a term matches
		// fields (ClusterInfo.MatchNode).
		{name: "matchFields on metadata.name, beside a labels-only term", clusters: clusters, w: st.Workload("w",
			st.PreferredClusterAffinity(20, v1alpha1.ClusterSelectorTerm{MatchFields: []v1alpha1.ClusterFieldSelectorRequirement{{Key: "metadata.name", Operator: "In", Values: []string{"dev"}}}}),
			st.PreferredClusterAffinity(5, st.Term(st.Expr("tier", "In", "production")))),
			want: map[string]int64{"prod-eu": 5, "prod-us": 5, "dev": 20}},
	})
}
