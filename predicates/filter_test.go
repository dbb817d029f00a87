package predicates

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// filterCase is one table row for a filter plugin: clusters, placed
// workloads, the workload to place, and the reason per cluster ("" passes).
type filterCase struct {
	name     string
	clusters []*v1alpha1.KubernetesCluster
	placed   []*v1alpha1.Workload
	ns       map[string]map[string]string
	// bound: the cluster namespaces each namespace's ClusterBindings bind.
	bound map[string][]string
	w     *v1alpha1.Workload
	want  map[string]string
}

func runFilterCases(t *testing.T, f scheduler.PluginFactory, cases []filterCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := st.Snapshot(tc.clusters, tc.placed, tc.ns)
			snap.Bound = map[string]sets.Set[string]{}
			for ns, b := range tc.bound {
				snap.Bound[ns] = sets.New(b...)
			}
			got := st.Filter(t, f, tc.w, snap)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Filter() (-want,+got):\n%s", diff)
			}
		})
	}
}
