package priorities

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// scoreCase is one table row for a score plugin: the raw score per cluster.
type scoreCase struct {
	name     string
	strategy scheduler.ScoringStrategy
	clusters []*v1alpha1.KubernetesCluster
	placed   []*v1alpha1.Workload
	w        *v1alpha1.Workload
	want     map[string]int64
}

func runScoreCases(t *testing.T, f scheduler.PluginFactory, cases []scoreCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := st.Score(t, f, tc.strategy, tc.w, st.Snapshot(tc.clusters, tc.placed, nil))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Score() (-want,+got):\n%s", diff)
			}
		})
	}
}
