package priorities

import (
	"testing"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestResourceAllocation(t *testing.T) {
	clusters := []*v1alpha1.KubernetesCluster{
		st.Cluster("empty", st.Capacity("100", "100Gi", "0", "0", "10", "10Gi")),
		st.Cluster("half", st.Capacity("100", "100Gi", "50", "50Gi", "10", "10Gi")),
		st.Cluster("full", st.Capacity("100", "100Gi", "100", "100Gi", "0", "0")),
		st.Cluster("unknown"),
	}
	w := st.Workload("w", st.Requests("5", "5Gi"), st.Replicas(2))
	runScoreCases(t, NewResourceAllocation, []scoreCase{
		{name: "LeastAllocated: free share after placing every replica", strategy: scheduler.LeastAllocated, clusters: clusters, w: w,
			want: map[string]int64{"empty": 90, "half": 40, "full": 0, "unknown": 0}},
		{name: "MostAllocated: used share after placing every replica", strategy: scheduler.MostAllocated, clusters: clusters, w: w,
			want: map[string]int64{"empty": 10, "half": 60, "full": 100, "unknown": 0}},
	})
}
