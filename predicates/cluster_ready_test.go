package predicates

import (
	"testing"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestClusterReady(t *testing.T) {
	runFilterCases(t, NewClusterReady, []filterCase{{
		name: "ready, unreachable, not ready for other reasons",
		clusters: []*v1alpha1.KubernetesCluster{
			st.Cluster("a"),
			st.Cluster("b", st.NotReady(v1alpha1.ReasonUnreachable)),
			st.Cluster("c", st.NotReady(v1alpha1.ReasonBadKubeconfig)),
			st.Cluster("d", st.NotReady(v1alpha1.ReasonUnauthorized)),
		},
		w:    st.Workload("w"),
		want: map[string]string{"a": "", "b": ErrReasonUnreachable, "c": ErrReasonNotReady, "d": ErrReasonNotReady},
	}, {
		name:     "a cluster never probed has no Ready condition",
		clusters: []*v1alpha1.KubernetesCluster{{}},
		w:        st.Workload("w"),
		want:     map[string]string{"": ErrReasonNotReady},
	}})
}
