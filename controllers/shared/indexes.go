package shared

import (
	"context"
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"k8s.io/apimachinery/pkg/types"
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
	// their status.dependencies and status.placedNamespaces name (copies
	// placer made there, namespaces it used).
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
// IndexWorkloadDependencyClusters (RecordedClusters).
func DependencyClusters(o client.Object) []string {
	w, ok := o.(*v1alpha1.Workload)
	if !ok {
		return nil
	}
	keys := RecordedClusters(w)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.String()
	}
	return out
}

// RecordedClusters are the clusters where the Workload's status records
// something placer put there: copies (status.dependencies), namespaces
// (status.placedNamespaces; a runner-up's, before its first candidates),
// each once.
func RecordedClusters(w *v1alpha1.Workload) []types.NamespacedName {
	var out []types.NamespacedName
	add := func(ref *v1alpha1.ClusterReference) {
		if k := w.ClusterKey(ref); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	for i := range w.Status.Dependencies {
		add(&w.Status.Dependencies[i].Cluster)
	}
	for i := range w.Status.PlacedNamespaces {
		add(&w.Status.PlacedNamespaces[i].Cluster)
	}
	return out
}

// WorkloadsIn lists, from c's indexes (IndexWorkloads), the Workloads whose
// status names a cluster, or copies and namespaces placed there (a
// runner-up dropped while the cluster did not answer), each once.
func WorkloadsIn(ctx context.Context, c client.Reader, cluster types.NamespacedName, opts ...client.ListOption) ([]v1alpha1.Workload, error) {
	var out []v1alpha1.Workload
	seen := map[types.UID]bool{}
	for _, index := range []string{IndexWorkloadClusters, IndexWorkloadDependencyClusters} {
		l := &v1alpha1.WorkloadList{}
		if err := c.List(ctx, l, append(slices.Clone(opts), client.MatchingFields{index: cluster.String()})...); err != nil {
			return nil, errors.Wrapf(err, "cannot list the Workloads of cluster %s", cluster)
		}
		for _, w := range l.Items {
			if !seen[w.UID] {
				seen[w.UID] = true
				out = append(out, w)
			}
		}
	}
	return out, nil
}
