package predicates

import (
	"testing"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestHandshakeRejected(t *testing.T) {
	clusters := []*v1alpha1.KubernetesCluster{st.Cluster("a"), st.Cluster("b")}
	runFilterCases(t, NewHandshakeRejected, []filterCase{
		{name: "no rejections", clusters: clusters, w: st.Workload("w"), want: map[string]string{"a": "", "b": ""}},
		{name: "rejected in this generation", clusters: clusters, w: st.Workload("w", st.Rejected("a", 1, "0/3 nodes are available: 3 Insufficient cpu.")),
			want: map[string]string{"a": "cluster(s) rejected the candidate pods (0/3 nodes are available: 3 Insufficient cpu.)", "b": ""}},
		{name: "a rejection of an older generation no longer counts", clusters: clusters, w: st.Workload("w", st.Rejected("a", 0, "old")),
			want: map[string]string{"a": "", "b": ""}},
	})
}
