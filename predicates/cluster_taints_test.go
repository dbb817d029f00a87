package predicates

import (
	"testing"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestClusterTaints(t *testing.T) {
	clusters := []*v1alpha1.KubernetesCluster{
		st.Cluster("clean"),
		st.Cluster("gpu", st.Taint("dedicated", "gpu", v1alpha1.TaintEffectNoSchedule)),
		st.Cluster("evict", st.Taint("maintenance", "", v1alpha1.TaintEffectNoExecute)),
		st.Cluster("soft", st.Taint("spot", "true", v1alpha1.TaintEffectPreferNoSchedule)),
	}
	gpu := "cluster(s) had untolerated taint {dedicated: gpu}"
	evict := "cluster(s) had untolerated taint {maintenance: }"
	runFilterCases(t, NewClusterTaints, []filterCase{
		{name: "no tolerations: NoSchedule and NoExecute fail, PreferNoSchedule passes", clusters: clusters, w: st.Workload("w"),
			want: map[string]string{"clean": "", "gpu": gpu, "evict": evict, "soft": ""}},
		{name: "Equal toleration with the value", clusters: clusters, w: st.Workload("w", st.Tolerate("dedicated", "Equal", "gpu", v1alpha1.TaintEffectNoSchedule)),
			want: map[string]string{"clean": "", "gpu": "", "evict": evict, "soft": ""}},
		{name: "Equal toleration with another value", clusters: clusters, w: st.Workload("w", st.Tolerate("dedicated", "Equal", "cpu", "")),
			want: map[string]string{"clean": "", "gpu": gpu, "evict": evict, "soft": ""}},
		{name: "Exists toleration of a key, any effect", clusters: clusters, w: st.Workload("w", st.Tolerate("maintenance", "Exists", "", "")),
			want: map[string]string{"clean": "", "gpu": gpu, "evict": "", "soft": ""}},
		{name: "toleration with the wrong effect", clusters: clusters, w: st.Workload("w", st.Tolerate("dedicated", "Equal", "gpu", v1alpha1.TaintEffectNoExecute)),
			want: map[string]string{"clean": "", "gpu": gpu, "evict": evict, "soft": ""}},
		{name: "Exists without a key tolerates everything", clusters: clusters, w: st.Workload("w", st.Tolerate("", "Exists", "", "")),
			want: map[string]string{"clean": "", "gpu": "", "evict": "", "soft": ""}},
	})
}
