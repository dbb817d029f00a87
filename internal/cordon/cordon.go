// Package cordon edits a KubernetesCluster's spec as placer cordon, drain
// and uncordon do: with a patch that fails if the cluster changed meanwhile
// (spec.taints is one list, which the cluster controller writes too),
// retried on conflict with backoff.
package cordon

import (
	"context"
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// Edit changes the KubernetesCluster's spec; edit reports whether it
// changed anything (nothing is written otherwise).
func Edit(ctx context.Context, c client.Client, key types.NamespacedName, edit func(kc *v1alpha1.KubernetesCluster) bool) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		kc := &v1alpha1.KubernetesCluster{}
		if err := c.Get(ctx, key, kc); err != nil {
			return errors.Wrapf(err, "cannot get KubernetesCluster %s", key)
		}
		orig := kc.DeepCopy()
		if !edit(kc) {
			return nil
		}
		return c.Patch(ctx, kc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	})
}

// Drain taints the cluster TaintClusterDraining:NoExecute, once.
func Drain(ctx context.Context, c client.Client, key types.NamespacedName) error {
	return Edit(ctx, c, key, func(kc *v1alpha1.KubernetesCluster) bool {
		if slices.ContainsFunc(kc.Spec.Taints, IsDrainTaint) {
			return false
		}
		now := metav1.Now()
		kc.Spec.Taints = append(kc.Spec.Taints, v1alpha1.ClusterTaint{Key: v1alpha1.TaintClusterDraining, Effect: v1alpha1.TaintEffectNoExecute, TimeAdded: &now})
		return true
	})
}

// Cordon sets spec.unschedulable: no new Workload lands on the cluster,
// and those there stay.
func Cordon(ctx context.Context, c client.Client, key types.NamespacedName) error {
	return Edit(ctx, c, key, func(kc *v1alpha1.KubernetesCluster) bool {
		if kc.Spec.Unschedulable {
			return false
		}
		kc.Spec.Unschedulable = true
		return true
	})
}

// Uncordon removes the drain taint and clears spec.unschedulable.
func Uncordon(ctx context.Context, c client.Client, key types.NamespacedName) error {
	return Edit(ctx, c, key, func(kc *v1alpha1.KubernetesCluster) bool {
		if !kc.Spec.Unschedulable && !slices.ContainsFunc(kc.Spec.Taints, IsDrainTaint) {
			return false
		}
		kc.Spec.Unschedulable = false
		kc.Spec.Taints = slices.DeleteFunc(kc.Spec.Taints, IsDrainTaint)
		return true
	})
}

// IsDrainTaint reports whether the taint is the one Drain sets.
func IsDrainTaint(t v1alpha1.ClusterTaint) bool {
	return t.Key == v1alpha1.TaintClusterDraining && t.Effect == v1alpha1.TaintEffectNoExecute
}
