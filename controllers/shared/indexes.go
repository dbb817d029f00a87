package shared

import (
	"context"
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

const (
	// IndexWorkloadClusters indexes Workloads by the clusters their status
	// names (Workload.NamedClusters): placed on, nominated, or left with
	// objects still there. The cluster controller's drain and the
	// propagator look them up.
	IndexWorkloadClusters = "placer.workloadClusters"
	// IndexWorkloadDependencyClusters indexes Workloads by the clusters
	// their status.dependencies name (copies placer made there).
	IndexWorkloadDependencyClusters = "placer.workloadDependencyClusters"
)

// IndexWorkloads adds both indexes to the manager: once per manager,
// before any controller is set up.
func IndexWorkloads(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.Workload{}, IndexWorkloadClusters, WorkloadClusters); err != nil {
		return errors.Wrap(err, "cannot index Workloads by cluster")
	}
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.Workload{}, IndexWorkloadDependencyClusters, DependencyClusters)
	return errors.Wrap(err, "cannot index Workloads by the clusters of their dependencies")
}

// WorkloadClusters is the index function of IndexWorkloadClusters.
func WorkloadClusters(o client.Object) []string {
	w, ok := o.(*v1alpha1.Workload)
	if !ok {
		return nil
	}
	keys := w.NamedClusters()
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.String()
	}
	return out
}

// DependencyClusters is the index function of
// IndexWorkloadDependencyClusters.
func DependencyClusters(o client.Object) []string {
	w, ok := o.(*v1alpha1.Workload)
	if !ok {
		return nil
	}
	var out []string
	for i := range w.Status.Dependencies {
		if k := w.ClusterKey(&w.Status.Dependencies[i].Cluster).String(); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}
