package cluster

import (
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

func TestDesiredTaints(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	earlier := metav1.NewTime(now.Add(-time.Minute))
	ready := xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonReady}
	unreachable := notReadyCondition(v1alpha1.ReasonUnreachable, "does not answer")
	secretMissing := notReadyCondition(v1alpha1.ReasonSecretNotFound, "no Secret")
	user := v1alpha1.ClusterTaint{Key: "team", Value: "x", Effect: v1alpha1.TaintEffectNoSchedule}
	taint := func(key string, at *metav1.Time) v1alpha1.ClusterTaint {
		return v1alpha1.ClusterTaint{Key: key, Effect: v1alpha1.TaintEffectNoExecute, TimeAdded: at}
	}
	cases := []struct {
		name   string
		taints []v1alpha1.ClusterTaint
		ready  xpv2.Condition
		want   []v1alpha1.ClusterTaint
	}{
		{name: "Ready, no taints", ready: ready, want: []v1alpha1.ClusterTaint{}},
		{name: "unreachable: tainted now", taints: []v1alpha1.ClusterTaint{user}, ready: unreachable,
			want: []v1alpha1.ClusterTaint{user, taint(v1alpha1.TaintClusterUnreachable, &now)}},
		{name: "still unreachable: the taint keeps its time", taints: []v1alpha1.ClusterTaint{taint(v1alpha1.TaintClusterUnreachable, &earlier)}, ready: unreachable,
			want: []v1alpha1.ClusterTaint{taint(v1alpha1.TaintClusterUnreachable, &earlier)}},
		{name: "answers again but not ready: not-ready replaces unreachable", taints: []v1alpha1.ClusterTaint{taint(v1alpha1.TaintClusterUnreachable, &earlier)}, ready: secretMissing,
			want: []v1alpha1.ClusterTaint{taint(v1alpha1.TaintClusterNotReady, &now)}},
		{name: "Ready again: the condition taints go, the user's stay", taints: []v1alpha1.ClusterTaint{user, taint(v1alpha1.TaintClusterNotReady, &earlier)}, ready: ready,
			want: []v1alpha1.ClusterTaint{user}},
		{name: "a user's NoExecute taint gets a timeAdded, once", taints: []v1alpha1.ClusterTaint{taint("drain", nil), taint("other", &earlier)}, ready: ready,
			want: []v1alpha1.ClusterTaint{taint("drain", &now), taint("other", &earlier)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := desiredTaints(tc.taints, tc.ready, now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("desiredTaints() (-want,+got):\n%s", diff)
			}
		})
	}
}
