package predicates

import (
	"testing"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestResourceFit(t *testing.T) {
	clusters := []*v1alpha1.KubernetesCluster{
		st.Cluster("roomy", st.Capacity("64", "256Gi", "0", "0", "32", "128Gi")),
		st.Cluster("fragmented", st.Capacity("64", "256Gi", "40", "0", "2", "128Gi")),
		st.Cluster("gpu", st.Capacity("16", "64Gi", "0", "0", "16", "64Gi"), st.Extended("nvidia.com/gpu", "4", "3")),
		st.Cluster("unknown"),
	}
	cpu := "cluster(s) had no room for one replica (Insufficient cpu)"
	mem := "cluster(s) had no room for one replica (Insufficient memory)"
	gpu := "cluster(s) had no room for one replica (Insufficient nvidia.com/gpu)"
	runFilterCases(t, NewResourceFit, []filterCase{
		{name: "no requests fit everywhere", clusters: clusters, w: st.Workload("w"),
			want: map[string]string{"roomy": "", "fragmented": "", "gpu": "", "unknown": ""}},
		{name: "cpu must fit the largest free node, not the total", clusters: clusters, w: st.Workload("w", st.Requests("4", "1Gi")),
			want: map[string]string{"roomy": "", "fragmented": cpu, "gpu": "", "unknown": ""}},
		{name: "memory", clusters: clusters, w: st.Workload("w", st.Requests("1", "100Gi")),
			want: map[string]string{"roomy": "", "fragmented": "", "gpu": mem, "unknown": ""}},
		{name: "extended resources against the free total", clusters: clusters, w: st.Workload("w", st.Requests("1", "1Gi", "nvidia.com/gpu", "1")),
			want: map[string]string{"roomy": gpu, "fragmented": gpu, "gpu": "", "unknown": ""}},
		{name: "two GPUs do not fit one free", clusters: clusters, w: st.Workload("w", st.Requests("1", "1Gi", "nvidia.com/gpu", "2")),
			want: map[string]string{"roomy": gpu, "fragmented": gpu, "gpu": gpu, "unknown": ""}},
		{name: "several shortfalls report the first by name", clusters: clusters, w: st.Workload("w", st.Requests("64", "1Ti")),
			want: map[string]string{"roomy": cpu, "fragmented": cpu, "gpu": cpu, "unknown": ""}},
	})
}
