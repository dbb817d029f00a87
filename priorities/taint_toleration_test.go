package priorities

import (
	"testing"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestTaintToleration(t *testing.T) {
	clusters := []*v1alpha1.KubernetesCluster{
		st.Cluster("clean"),
		st.Cluster("spot", st.Taint("spot", "true", v1alpha1.TaintEffectPreferNoSchedule)),
		st.Cluster("two", st.Taint("spot", "true", v1alpha1.TaintEffectPreferNoSchedule), st.Taint("old", "", v1alpha1.TaintEffectPreferNoSchedule)),
		st.Cluster("hard", st.Taint("dedicated", "gpu", v1alpha1.TaintEffectNoSchedule)),
	}
	runScoreCases(t, NewTaintToleration, []scoreCase{
		{name: "each untolerated PreferNoSchedule taint costs one; NoSchedule is the filter's", clusters: clusters, w: st.Workload("w"),
			want: map[string]int64{"clean": 0, "spot": -1, "two": -2, "hard": 0}},
		{name: "a toleration without effect covers PreferNoSchedule", clusters: clusters, w: st.Workload("w", st.Tolerate("spot", "Exists", "", "")),
			want: map[string]int64{"clean": 0, "spot": 0, "two": -1, "hard": 0}},
		{name: "a NoSchedule toleration does not", clusters: clusters, w: st.Workload("w", st.Tolerate("spot", "Exists", "", v1alpha1.TaintEffectNoSchedule)),
			want: map[string]int64{"clean": 0, "spot": -1, "two": -2, "hard": 0}},
	})
}
