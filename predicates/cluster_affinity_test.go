package predicates

import (
	"testing"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestClusterAffinity(t *testing.T) {
	clusters := []*v1alpha1.KubernetesCluster{
		st.Cluster("eu", st.Labels(v1alpha1.LabelRegion, "eu-west", "nodes", "10")),
		st.Cluster("us", st.Labels(v1alpha1.LabelRegion, "us-east", "nodes", "100", "gpu", "true")),
		st.Cluster("bare"),
	}
	r := ErrReasonClusterAffinity
	runFilterCases(t, NewClusterAffinity, []filterCase{
		{name: "no affinity passes all", clusters: clusters, w: st.Workload("w"), want: map[string]string{"eu": "", "us": "", "bare": ""}},
		{name: "In", clusters: clusters, w: st.Workload("w", st.RequiredClusterAffinity(st.Term(st.Expr(v1alpha1.LabelRegion, "In", "eu-west", "ap-south")))),
			want: map[string]string{"eu": "", "us": r, "bare": r}},
		{name: "NotIn passes clusters without the label", clusters: clusters, w: st.Workload("w", st.RequiredClusterAffinity(st.Term(st.Expr(v1alpha1.LabelRegion, "NotIn", "eu-west")))),
			want: map[string]string{"eu": r, "us": "", "bare": ""}},
		{name: "Exists", clusters: clusters, w: st.Workload("w", st.RequiredClusterAffinity(st.Term(st.Expr("gpu", "Exists")))),
			want: map[string]string{"eu": r, "us": "", "bare": r}},
		{name: "DoesNotExist", clusters: clusters, w: st.Workload("w", st.RequiredClusterAffinity(st.Term(st.Expr("gpu", "DoesNotExist")))),
			want: map[string]string{"eu": "", "us": r, "bare": ""}},
		{name: "Gt compares integers; a missing label fails", clusters: clusters, w: st.Workload("w", st.RequiredClusterAffinity(st.Term(st.Expr("nodes", "Gt", "50")))),
			want: map[string]string{"eu": r, "us": "", "bare": r}},
		{name: "Lt", clusters: clusters, w: st.Workload("w", st.RequiredClusterAffinity(st.Term(st.Expr("nodes", "Lt", "50")))),
			want: map[string]string{"eu": "", "us": r, "bare": r}},
		{name: "expressions of a term are ANDed", clusters: clusters, w: st.Workload("w", st.RequiredClusterAffinity(st.Term(st.Expr(v1alpha1.LabelRegion, "Exists"), st.Expr("gpu", "DoesNotExist")))),
			want: map[string]string{"eu": "", "us": r, "bare": r}},
		{name: "terms are ORed", clusters: clusters, w: st.Workload("w", st.RequiredClusterAffinity(st.Term(st.Expr(v1alpha1.LabelRegion, "In", "eu-west")), st.Term(st.Expr("gpu", "Exists")))),
			want: map[string]string{"eu": "", "us": "", "bare": r}},
		{name: "built-in labels", clusters: clusters, w: st.Workload("w", st.RequiredClusterAffinity(st.Term(st.Expr(v1alpha1.LabelClusterName, "In", "bare")))),
			want: map[string]string{"eu": r, "us": r, "bare": ""}},
		{name: "matchFields on metadata.name", clusters: clusters, w: st.Workload("w", st.RequiredClusterAffinity(v1alpha1.ClusterSelectorTerm{
			MatchFields: []v1alpha1.ClusterFieldSelectorRequirement{{Key: "metadata.name", Operator: "NotIn", Values: []string{"eu"}}}})),
			want: map[string]string{"eu": r, "us": "", "bare": ""}},
		{name: "an empty term matches nothing", clusters: clusters, w: st.Workload("w", st.RequiredClusterAffinity(v1alpha1.ClusterSelectorTerm{})),
			want: map[string]string{"eu": r, "us": r, "bare": r}},
		{name: "a Gt value that is not an integer is reported with its field", clusters: clusters, w: st.Workload("w", st.RequiredClusterAffinity(st.Term(st.Expr("nodes", "Gt", "ten")))),
			want: map[string]string{
				"eu":   `spec.affinity.clusterAffinity.requiredDuringSchedulingIgnoredDuringExecution.clusterSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "ten": for 'Gt', 'Lt' operators, the value must be an integer`,
				"us":   `spec.affinity.clusterAffinity.requiredDuringSchedulingIgnoredDuringExecution.clusterSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "ten": for 'Gt', 'Lt' operators, the value must be an integer`,
				"bare": `spec.affinity.clusterAffinity.requiredDuringSchedulingIgnoredDuringExecution.clusterSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "ten": for 'Gt', 'Lt' operators, the value must be an integer`,
			}},
	})
}
