// Package cheapest is a small external scheduler, an example of placer's
// schedulerName contract: placer's own scheduler ignores a Workload whose
// spec.schedulerName is not one of its profiles, and whatever writes
// status.clusterRef (and the Scheduled condition) decides where it goes.
// This one places each Workload with schedulerName example-cheapest on the
// Ready, uncordoned cluster whose provider is cheapest in a fixed price
// list, skipping clusters that rejected the Workload's candidates. The
// propagator then proves and delivers the placement as for any other.
package cheapest

import (
	"context"
	"fmt"
	"sort"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// SchedulerName is the spec.schedulerName this scheduler serves.
const SchedulerName = "example-cheapest"

// Prices per provider, cheapest first; unknown providers cost the most.
var Prices = map[string]int{"gcp": 1, "azure": 2, "aws": 3}

const unknownPrice = 100

// Setup adds the scheduler to a manager of the management cluster.
func Setup(mgr ctrl.Manager) error {
	r := &reconciler{client: mgr.GetClient()}
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		w, ok := o.(*v1alpha1.Workload)
		return ok && w.Spec.SchedulerName == SchedulerName
	})
	// A cluster that changes may let a pending Workload land.
	all := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		l := &v1alpha1.WorkloadList{}
		if err := r.client.List(ctx, l, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, w := range l.Items {
			if w.Spec.SchedulerName == SchedulerName && w.Status.ClusterRef == nil {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&w)})
			}
		}
		return out
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("example-cheapest").
		For(&v1alpha1.Workload{}, builder.WithPredicates(ours)).
		Watches(&v1alpha1.KubernetesCluster{}, all).
		Complete(r)
}

type reconciler struct{ client client.Client }

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	w := &v1alpha1.Workload{}
	if err := r.client.Get(ctx, req.NamespacedName, w); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if w.Spec.SchedulerName != SchedulerName || w.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	rejected := map[string]bool{}
	for _, rc := range w.Status.RejectedClusters {
		if rc.Generation == w.Generation {
			rejected[rc.Cluster.Name] = true
		}
	}
	if w.Status.ClusterRef != nil && !rejected[w.Status.ClusterRef.Name] {
		return reconcile.Result{}, nil
	}
	l := &v1alpha1.KubernetesClusterList{}
	if err := r.client.List(ctx, l, client.InNamespace(w.Namespace)); err != nil {
		return reconcile.Result{}, err
	}
	var candidates []v1alpha1.KubernetesCluster
	for _, kc := range l.Items {
		if kc.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue && !kc.Spec.Unschedulable && !rejected[kc.Name] {
			candidates = append(candidates, kc)
		}
	}
	price := func(kc v1alpha1.KubernetesCluster) int {
		if p, ok := Prices[kc.Spec.Provider]; ok {
			return p
		}
		return unknownPrice
	}
	sort.Slice(candidates, func(i, j int) bool {
		pi, pj := price(candidates[i]), price(candidates[j])
		return pi < pj || pi == pj && candidates[i].Name < candidates[j].Name
	})
	orig := w.DeepCopy()
	cond := xpv2.Condition{Type: v1alpha1.TypeScheduled, LastTransitionTime: metav1.Now(), ObservedGeneration: w.Generation}
	if len(candidates) == 0 {
		w.Status.ClusterRef = nil
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, v1alpha1.ReasonUnschedulable, fmt.Sprintf("%s: no Ready cluster left of %d", SchedulerName, len(l.Items))
	} else {
		best := candidates[0]
		w.Status.ClusterRef = &v1alpha1.ClusterReference{Name: best.Name, Namespace: best.Namespace}
		cond.Status, cond.Reason = corev1.ConditionTrue, "Scheduled"
		cond.Message = fmt.Sprintf("placed on %s/%s by %s: provider %s is the cheapest (price %d)", best.Namespace, best.Name, SchedulerName, best.Spec.Provider, price(best))
	}
	w.Status.SetConditions(cond)
	return reconcile.Result{}, client.IgnoreNotFound(r.client.Status().Patch(ctx, w, client.MergeFrom(orig)))
}
