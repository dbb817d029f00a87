package cluster

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// conditionTaint is the condition taint a cluster's Ready condition calls
// for: unreachable while it does not answer (or its kubeconfig reaches
// another cluster than the one placer placed in), not-ready while it answers
// and is not ready for placement (or cannot be connected to); none while
// it is Ready.
func conditionTaint(ready xpv2.Condition) string {
	switch {
	case ready.Status == corev1.ConditionTrue:
		return ""
	case ready.Reason == v1alpha1.ReasonUnreachable, ready.Reason == v1alpha1.ReasonClusterIdentityChanged:
		return v1alpha1.TaintClusterUnreachable
	default:
		return v1alpha1.TaintClusterNotReady
	}
}

// desiredTaints returns the cluster's taints with the condition taint
// that ready calls for (keeping its timeAdded while it stays) and the
// other condition taint gone, and a timeAdded on every NoExecute taint:
// a toleration's seconds count from it, across restarts.
func desiredTaints(taints []v1alpha1.ClusterTaint, ready xpv2.Condition, now metav1.Time) []v1alpha1.ClusterTaint {
	want := conditionTaint(ready)
	out := make([]v1alpha1.ClusterTaint, 0, len(taints)+1)
	has := false
	for _, t := range taints {
		if t.Key == v1alpha1.TaintClusterUnreachable || t.Key == v1alpha1.TaintClusterNotReady {
			if t.Key != want || t.Effect != v1alpha1.TaintEffectNoExecute || has {
				continue
			}
			has = true
		}
		if t.Effect == v1alpha1.TaintEffectNoExecute && t.TimeAdded == nil {
			t.TimeAdded = now.DeepCopy()
		}
		out = append(out, t)
	}
	if want != "" && !has {
		out = append(out, v1alpha1.ClusterTaint{Key: want, Effect: v1alpha1.TaintEffectNoExecute, TimeAdded: now.DeepCopy()})
	}
	return out
}
