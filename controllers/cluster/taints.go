package cluster

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/controllers/shared"
)

const errPatchTaints = "cannot patch the cluster's taints"

// conditionTaint is the condition taint a cluster's Ready condition calls
// for: unreachable while it does not answer, not-ready while it answers
// and is not ready for placement (or cannot be connected to); none while
// it is Ready.
func conditionTaint(ready xpv2.Condition) string {
	switch {
	case ready.Status == corev1.ConditionTrue:
		return ""
	case ready.Reason == v1alpha1.ReasonUnreachable:
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

// syncTaints writes the cluster's condition taints and stamps timeAdded,
// with a patch that carries the resourceVersion, so a taint a user adds
// meanwhile is never dropped (the conflict retries).
func (r *Reconciler) syncTaints(ctx context.Context, kc *v1alpha1.KubernetesCluster, ready xpv2.Condition) error {
	want := desiredTaints(kc.Spec.Taints, ready, metav1.Now())
	if equality.Semantic.DeepEqual(want, kc.Spec.Taints) {
		return nil
	}
	err := shared.PatchLocked(ctx, r.client, kc, func(kc *v1alpha1.KubernetesCluster) { kc.Spec.Taints = want })
	return errors.Wrap(resource.IgnoreNotFound(err), errPatchTaints)
}
