package controllers

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

const (
	errListWorkloads = "cannot list the cluster's Workloads"

	// indexWorkloadClusters indexes Workloads by the clusters their status
	// names: placed on, nominated, or left with objects still there.
	indexWorkloadClusters = "placer.workloadClusters"

	reasonDraining event.Reason = "Draining"
	reasonLetGo    event.Reason = "LetGoUnreachable"
)

// workloadClusters returns the keys of the clusters a Workload's status names.
func workloadClusters(o client.Object) []string {
	w, ok := o.(*v1alpha1.Workload)
	if !ok {
		return nil
	}
	var out []string
	if w.Status.ClusterRef != nil {
		out = append(out, w.ClusterKey(w.Status.ClusterRef).String())
	}
	for i := range w.Status.NominatedClusters {
		out = append(out, w.ClusterKey(&w.Status.NominatedClusters[i]).String())
	}
	for i := range w.Status.LeftClusters {
		out = append(out, w.ClusterKey(&w.Status.LeftClusters[i].Cluster).String())
	}
	return out
}

// drain lets a deleted cluster go once no Workload is placed or nominated
// on it and, while it answers, none has objects left there: the scheduler
// moves its Workloads away (the cluster is being deleted) and the
// propagator cleans up behind them. A cluster that does not answer is let
// go as soon as its Workloads have moved, with an Event naming the
// Workloads whose pods may remain there. Workloads changing requeue it.
func (r *ClusterReconciler) drain(ctx context.Context, kc *v1alpha1.KubernetesCluster) (reconcile.Result, error) {
	key := types.NamespacedName{Namespace: kc.Namespace, Name: kc.Name}
	wls := &v1alpha1.WorkloadList{}
	if err := r.client.List(ctx, wls, client.MatchingFields{indexWorkloadClusters: key.String()}); err != nil {
		return reconcile.Result{}, errors.Wrap(err, errListWorkloads)
	}
	var placed, left []string
	for i := range wls.Items {
		w := &wls.Items[i]
		name := w.Namespace + "/" + w.Name
		if lc := w.Left(key); lc != nil && (w.Status.ClusterRef == nil || w.ClusterKey(w.Status.ClusterRef) != key) {
			left = append(left, name)
			continue
		}
		placed = append(placed, name)
	}
	sort.Strings(placed)
	sort.Strings(left)
	reachable := kc.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
	if len(placed) > 0 || reachable && len(left) > 0 {
		msg := fmt.Sprintf("deleting: waiting for %d Workload(s) to move away (%s) and for %d to be cleaned up here (%s)",
			len(placed), short(placed), len(left), short(left))
		r.record.Event(kc, event.Normal(reasonDraining, msg))
		return reconcile.Result{}, nil
	}
	if len(left) > 0 {
		r.record.Event(kc, event.Warning(reasonLetGo, errors.Errorf("deleted while it does not answer: pods of %d Workload(s) may remain there: %s", len(left), short(left))))
	}
	r.watches.remove(key)
	r.registry.Remove(key)
	r.ready.set(key, false)
	orig := kc.DeepCopy()
	meta.RemoveFinalizer(kc, clusterFinalizer)
	return ignoreConflict(errors.Wrap(resource.IgnoreNotFound(r.client.Patch(ctx, kc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))), errClusterFinalizer))
}

// short lists at most ten names.
func short(names []string) string {
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more", len(names)-10)
	}
	return strings.Join(names, ", ")
}

// deletingClustersOf maps a Workload to the clusters its status names
// that are being deleted: their drain looks again.
func (r *ClusterReconciler) deletingClustersOf(ctx context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, k := range workloadClusters(o) {
		ns, name, _ := strings.Cut(k, "/")
		kc := &v1alpha1.KubernetesCluster{}
		if err := r.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, kc); err == nil && kc.DeletionTimestamp != nil {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
		}
	}
	return out
}
