package controllers

import (
	"context"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/propagator"
)

const reasonLeft event.Reason = "LeftCluster"

// answers reports whether a cluster exists, is Ready and its member's
// chaperons are watched: only then is what its cache says true now, and
// only then is a request to it sent. exists is false for a cluster that
// is gone.
func (r *PropagatorReconciler) answers(ctx context.Context, key types.NamespacedName) (answers, exists bool, err error) {
	kc := &v1alpha1.KubernetesCluster{}
	if err := r.client.Get(ctx, key, kc); err != nil {
		if kerrors.IsNotFound(err) {
			return false, false, nil
		}
		return false, true, errors.Wrap(err, errGetCluster)
	}
	return kc.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue && r.member(key) != nil, true, nil
}

// leave follows the clusters the Workload moved away from
// (status.leftClusters, written by the scheduler with the move): what is
// there goes, once the new cluster runs every replica Ready
// (StartBeforeStop, the default: no downtime) or at once
// (StopBeforeStart, which holds the new cluster meanwhile). A cluster that
// does not answer keeps its entry, with what was last seen there, until
// it answers again (its watch coming back requeues the Workload) or is
// deleted. It also tells the truth about a chosen cluster that does not
// answer: Ready is Unknown, not the last counts.
func (r *PropagatorReconciler) leave(ctx context.Context, s *scope) (bool, error) {
	w := s.w
	if ok, exists, err := r.answers(ctx, s.target); err != nil {
		return true, err
	} else if exists && !ok && s.committed {
		w.Status.ReadyReplicas = 0
		w.Status.SetConditions(xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionUnknown, Reason: v1alpha1.ReasonClusterUnreachable,
			Message: fmt.Sprintf("cluster %s does not answer: how many replicas run there is not known", s.target), ObservedGeneration: w.Generation, LastTransitionTime: metav1.Now()})
	}
	if len(w.Status.LeftClusters) == 0 {
		return false, nil
	}
	replaced := w.Spec.Placement.Move == v1alpha1.MoveStopBeforeStart || s.committed && s.state.Ready >= w.ReplicaCount()
	kept := make([]v1alpha1.LeftCluster, 0, len(w.Status.LeftClusters))
	var stillReady int
	for _, lc := range w.Status.LeftClusters {
		key := w.ClusterKey(&lc.Cluster)
		ok, exists, err := r.answers(ctx, key)
		if err != nil {
			return true, err
		}
		if !exists {
			s.statusEvent(event.Warning(reasonLeft, errors.Errorf("cluster %s was deleted while it did not answer: %d candidate(s) of this Workload may remain there", key, lc.Remaining)))
			continue
		}
		var chs []*mcv1alpha1.PodChaperon
		if m := r.members.Member(key); m != nil && m.Synced() {
			if chs, err = m.Chaperons(ctx, w.UID); err != nil {
				return true, errors.Wrap(err, errListChaperons)
			}
		}
		lc.Remaining = int32(len(chs))
		switch {
		case ok && len(chs) == 0:
			s.statusEvent(event.Normal(reasonLeft, fmt.Sprintf("nothing of this Workload remains in %s, which it left (%s)", key, lc.Reason)))
			continue
		case ok && !replaced:
			// Make before break: the old pods serve until the new ones do.
			s.keep[key] = true
			stillReady += propagator.Observe(w, chs).Ready
		case ok:
			m := r.members.Member(key)
			if err := deleteIn(ctx, m, w, chs, w.Spec.Placement.Move == v1alpha1.MoveStopBeforeStart); err != nil {
				return true, err
			}
		}
		kept = append(kept, lc)
	}
	w.Status.LeftClusters = kept
	if len(kept) == 0 {
		w.Status.LeftClusters = nil
	}
	if stillReady > 0 {
		w.Status.ReadyReplicas += int32(stillReady)
	}
	return false, nil
}

// workloadsOf maps a cluster to the Workloads whose status names it.
func (r *PropagatorReconciler) workloadsOf(ctx context.Context, o client.Object) []reconcile.Request {
	wls := &v1alpha1.WorkloadList{}
	if err := r.client.List(ctx, wls, client.MatchingFields{indexWorkloadClusters: client.ObjectKeyFromObject(o).String()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(wls.Items))
	for i := range wls.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&wls.Items[i])}
	}
	return out
}

// readyChanged passes a cluster's creation, deletion, a change of its
// Ready status, and the start of its deletion.
func readyChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e ctrlevent.TypedUpdateEvent[client.Object]) bool {
			before, ok1 := e.ObjectOld.(*v1alpha1.KubernetesCluster)
			after, ok2 := e.ObjectNew.(*v1alpha1.KubernetesCluster)
			if !ok1 || !ok2 {
				return false
			}
			return before.Status.GetCondition(xpv2.TypeReady).Status != after.Status.GetCondition(xpv2.TypeReady).Status ||
				(before.DeletionTimestamp == nil) != (after.DeletionTimestamp == nil)
		},
	}
}
