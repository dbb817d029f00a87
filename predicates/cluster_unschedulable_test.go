package predicates

import (
	"testing"
	"time"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestClusterUnschedulable(t *testing.T) {
	runFilterCases(t, NewClusterUnschedulable, []filterCase{{
		name:     "cordoned clusters fail",
		clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a"), st.Cluster("b", st.Cordoned())},
		w:        st.Workload("w"),
		want:     map[string]string{"a": "", "b": ErrReasonCordoned},
	}, {
		name:     "a cluster being deleted fails",
		clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a"), st.Cluster("b", st.Deleting(time.Now(), "compute.placer.dev/drain"))},
		w:        st.Workload("w"),
		want:     map[string]string{"a": "", "b": ErrReasonDeleting},
	}})
}
