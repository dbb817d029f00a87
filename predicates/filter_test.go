package predicates

import (
	"testing"

	"github.com/google/go-cmp/cmp"

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
	w        *v1alpha1.Workload
	want     map[string]string
}

func runFilterCases(t *testing.T, f scheduler.PluginFactory, cases []filterCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := st.Filter(t, f, tc.w, st.Snapshot(tc.clusters, tc.placed, tc.ns))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Filter() (-want,+got):\n%s", diff)
			}
		})
	}
}
