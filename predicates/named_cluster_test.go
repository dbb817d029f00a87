package predicates

import (
	"testing"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestNamedCluster(t *testing.T) {
	clusters := []*v1alpha1.KubernetesCluster{st.Cluster("a"), st.Cluster("b"), st.Cluster("c", st.InNamespace("other"))}
	runFilterCases(t, NewNamedCluster, []filterCase{
		{name: "no target passes all", clusters: clusters, w: st.Workload("w"), want: map[string]string{"a": "", "b": "", "c": ""}},
		{name: "target defaults to the workload's namespace", clusters: clusters, w: st.Workload("w", st.Target("b", "")),
			want: map[string]string{"a": ErrReasonNotNamed, "b": "", "c": ErrReasonNotNamed}},
		{name: "target in another namespace", clusters: clusters, w: st.Workload("w", st.Target("c", "other")),
			want: map[string]string{"a": ErrReasonNotNamed, "b": ErrReasonNotNamed, "c": ""}},
		{name: "same name, wrong namespace", clusters: clusters, w: st.Workload("w", st.Target("a", "other")),
			want: map[string]string{"a": ErrReasonNotNamed, "b": ErrReasonNotNamed, "c": ErrReasonNotNamed}},
		{name: "a target that does not exist fails every cluster", clusters: clusters, w: st.Workload("w", st.Target("zzz", "")),
			want: map[string]string{"a": ErrReasonNotNamed, "b": ErrReasonNotNamed, "c": ErrReasonNotNamed}},
	})
}
