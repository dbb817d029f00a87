package predicates

import (
	"testing"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestClusterSelector(t *testing.T) {
	clusters := []*v1alpha1.KubernetesCluster{
		st.Cluster("aws-prod", st.Provider("aws"), st.Labels("tier", "prod", v1alpha1.LabelClusterVersion, "v1.35.4")),
		st.Cluster("gcp-prod", st.Provider("gcp"), st.Labels("tier", "prod", v1alpha1.LabelClusterVersion, "v1.34.2")),
		st.Cluster("aws-dev", st.Provider("aws"), st.Labels("tier", "dev")),
		st.Cluster("bare"),
	}
	r := ErrReasonSelector
	runFilterCases(t, NewClusterSelector, []filterCase{
		{name: "nil selector passes all", clusters: clusters, w: st.Workload("w"),
			want: map[string]string{"aws-prod": "", "gcp-prod": "", "aws-dev": "", "bare": ""}},
		{name: "one user label", clusters: clusters, w: st.Workload("w", st.Selector("tier", "prod")),
			want: map[string]string{"aws-prod": "", "gcp-prod": "", "aws-dev": r, "bare": r}},
		{name: "labels are ANDed", clusters: clusters, w: st.Workload("w", st.Selector("tier", "prod", v1alpha1.LabelCloudProvider, "aws")),
			want: map[string]string{"aws-prod": "", "gcp-prod": r, "aws-dev": r, "bare": r}},
		{name: "Crossplane aliases cloudProvider and clusterVersion", clusters: clusters, w: st.Workload("w", st.Selector("cloudProvider", "aws", "clusterVersion", "v1.35.4")),
			want: map[string]string{"aws-prod": "", "gcp-prod": r, "aws-dev": r, "bare": r}},
		{name: "the Crossplane design's clusterVersion without its v, and crossplane.io/provider", clusters: clusters,
			w:    st.Workload("w", st.Selector("clusterVersion", "1.35.4", v1alpha1.LabelCrossplaneProvider, "aws")),
			want: map[string]string{"aws-prod": "", "gcp-prod": r, "aws-dev": r, "bare": r}},
		{name: "built-in name and namespace (and their aliases)", clusters: clusters, w: st.Workload("w", st.Selector("clusterName", "bare", v1alpha1.LabelClusterNamespace, "default")),
			want: map[string]string{"aws-prod": r, "gcp-prod": r, "aws-dev": r, "bare": ""}},
		{name: "an empty value requires the label with an empty value", clusters: clusters, w: st.Workload("w", st.Selector("tier", "")),
			want: map[string]string{"aws-prod": r, "gcp-prod": r, "aws-dev": r, "bare": r}},
		{name: "a missing label fails", clusters: clusters, w: st.Workload("w", st.Selector("gpu", "true")),
			want: map[string]string{"aws-prod": r, "gcp-prod": r, "aws-dev": r, "bare": r}},
	})
}

// TestClusterSelectorLongName: a cluster whose name is longer than a label
// value is matched by the value its labels and its virtual node carry
// (v1alpha1.LabelValueOf), the only one a selector can hold, under
// cluster-name and crossplane.io/kubernetes alike.
func TestClusterSelectorLongName(t *testing.T) {
	long := "a-cluster-whose-name-is-longer-than-any-label-value-may-be.example.com"
	clusters := []*v1alpha1.KubernetesCluster{st.Cluster(long), st.Cluster("short")}
	r := ErrReasonSelector
	runFilterCases(t, NewClusterSelector, []filterCase{
		{name: "cluster-name", clusters: clusters, w: st.Workload("w", st.Selector("clusterName", v1alpha1.LabelValueOf(long))),
			want: map[string]string{long: "", "short": r}},
		{name: "crossplane.io/kubernetes", clusters: clusters,
			w:    st.Workload("w", st.Selector(v1alpha1.LabelCrossplaneKubernetes, v1alpha1.LabelValueOf("default."+long))),
			want: map[string]string{long: "", "short": r}},
		{name: "a short name as it is", clusters: clusters, w: st.Workload("w", st.Selector(v1alpha1.LabelCrossplaneKubernetes, "default.short")),
			want: map[string]string{long: r, "short": ""}},
	})
}
