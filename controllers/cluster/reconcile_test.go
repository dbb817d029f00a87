package cluster

import (
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster/clustertest"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestProbedRecently: between probes a summary change is copied without a
// probe; a cluster not Ready, probed an interval ago, or not watched yet
// is probed.
func TestProbedRecently(t *testing.T) {
	r := &Reconciler{interval: 30 * time.Second}
	cluster := func(ago time.Duration, ready corev1.ConditionStatus) *v1alpha1.KubernetesCluster {
		kc := st.Cluster("a")
		at := metav1.NewTime(time.Now().Add(-ago))
		kc.Status.LastProbeTime, kc.Status.Version = &at, "v1.35.4"
		kc.Status.SetConditions(xpv2.Condition{Type: xpv2.TypeReady, Status: ready, Reason: v1alpha1.ReasonReady})
		return kc
	}
	watched, unwatched := clustertest.NewMember("a"), clustertest.NewMember("a", clustertest.NotSynced())
	cases := []struct {
		name string
		kc   *v1alpha1.KubernetesCluster
		m    *clustertest.Member
		want bool
	}{
		{"probed Ready 5s ago, watched", cluster(5*time.Second, corev1.ConditionTrue), watched, true},
		{"probed an interval ago", cluster(31*time.Second, corev1.ConditionTrue), watched, false},
		{"not Ready", cluster(5*time.Second, corev1.ConditionFalse), watched, false},
		{"not watched yet", cluster(5*time.Second, corev1.ConditionTrue), unwatched, false},
		{"never probed", st.Cluster("a"), watched, false},
	}
	for _, tc := range cases {
		if _, got := r.probedRecently(tc.kc, tc.m); got != tc.want {
			t.Errorf("%s: probedRecently = %t, want %t", tc.name, got, tc.want)
		}
	}
}
