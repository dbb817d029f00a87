package propagator

import (
	"context"
	"fmt"
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/apis/compute/validation"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/controllers/dependencies"
	"github.com/placer-dev/placer/controllers/shared"
)

// removeElsewhereOf deletes the Workload's candidates in the members that
// hold them, except those in keep. Which members hold them is a lookup in
// each member's watch (an index by Workload UID, no request), so a member
// gets a request only when it holds candidates, whatever the status says.
// A member registered more than once (say, in two namespaces, or at two
// addresses) is one cluster (cluster.OneCluster): its candidates are kept
// if any of its registrations is. An unreachable member is cleaned up
// when it answers again.
func (r *Reconciler) removeElsewhereOf(ctx context.Context, s *scope, keep map[types.NamespacedName]bool) error {
	w := s.w
	members := r.members.Members()
	var kept []cluster.Member
	for _, m := range members {
		if keep[m.ClusterKey()] {
			kept = append(kept, m)
		}
	}
	for _, m := range members {
		if keep[m.ClusterKey()] || !m.Synced() || slices.ContainsFunc(kept, func(k cluster.Member) bool { return cluster.OneCluster(k, m) }) {
			continue
		}
		chs, err := chaperonsOf(ctx, m, w)
		if err != nil {
			return err
		}
		if len(chs) == 0 {
			continue
		}
		st, _, err := r.reachOf(ctx, s, m.ClusterKey())
		if err != nil {
			return err
		}
		if !st.answers() {
			// What its watch last saw is there: it goes once the
			// cluster answers again (its Ready condition or its watch
			// coming back requeues).
			continue
		}
		// StopBeforeStart: in the foreground, so that a chaperon's absence
		// confirms its pod's.
		if err := r.deleteIn(ctx, m, w, chs, w.Spec.Placement.Move == v1alpha1.MoveStopBeforeStart); err != nil {
			return err
		}
	}
	return nil
}

// membersFor returns the members that may hold the Workload's objects:
// those its status names (placed, nominated, rejected or left on), and
// those serving its namespace whose watch shows its chaperons. Another
// tenant's clusters are never visited, and a member that never answered
// and that the status does not name holds nothing of it: neither holds
// its deletion. absent are the clusters the status names that have no
// connection (not registered yet after a restart, or gone): nothing there
// is confirmed.
func (r *Reconciler) membersFor(ctx context.Context, w *v1alpha1.Workload) (members []cluster.Member, absent []types.NamespacedName, err error) {
	touched := map[types.NamespacedName]bool{}
	for _, k := range w.NamedClusters() {
		touched[k] = true
	}
	for i := range w.Status.RejectedClusters {
		touched[w.ClusterKey(&w.Status.RejectedClusters[i].Cluster)] = true
	}
	for _, k := range shared.RecordedClusters(w) {
		touched[k] = true
	}
	ns := &corev1.Namespace{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: w.Namespace}, ns); resource.IgnoreNotFound(err) != nil {
		// Gone, it has no labels: only the clusters of its own namespace serve it.
		return nil, nil, errors.Wrap(err, errGetNamespace)
	}
	bound, err := r.boundBy(ctx, w.Namespace)
	if err != nil {
		return nil, nil, err
	}
	var out []cluster.Member
	registered := map[types.NamespacedName]bool{}
	for _, m := range r.members.Members() {
		registered[m.ClusterKey()] = true
		if touched[m.ClusterKey()] {
			out = append(out, m)
			continue
		}
		if !m.Synced() {
			continue
		}
		if chs, err := m.Chaperons(ctx, w.UID); err != nil || len(chs) == 0 {
			continue
		}
		kc := &v1alpha1.KubernetesCluster{}
		if err := r.client.Get(ctx, m.ClusterKey(), kc); err == nil && validation.Serves(kc, w.Namespace, ns.Labels, bound) {
			out = append(out, m)
		}
	}
	for k := range touched {
		if !registered[k] {
			absent = append(absent, k)
		}
	}
	slices.SortFunc(absent, v1alpha1.CompareKeys)
	return out, absent, nil
}

// cleanup deletes the Workload's candidates everywhere before letting it
// go (design §4.9). The finalizer goes only once every cluster its status
// names has confirmed that nothing of it is left, or is gone: a member
// that cannot be reached, or is not connected yet (a manager just
// restarted, a Secret missing), keeps it (the Workload stays Terminating,
// with an Event) until it answers or its KubernetesCluster is deleted;
// then what it may hold there is abandoned, with an Event naming the
// cluster. Pods are never left behind silently.
func (r *Reconciler) cleanup(ctx context.Context, w *v1alpha1.Workload) (reconcile.Result, error) {
	if !meta.FinalizerExists(w, finalizer) {
		return reconcile.Result{}, nil
	}
	members, absent, err := r.membersFor(ctx, w)
	if err != nil {
		return reconcile.Result{}, err
	}
	pending := []string{}
	var abandoned []string
	var cleaned []types.NamespacedName
	for _, key := range absent {
		kc := &v1alpha1.KubernetesCluster{}
		switch err := r.client.Get(ctx, key, kc); {
		case kerrors.IsNotFound(err):
			abandoned = append(abandoned, key.String())
		case err != nil:
			return reconcile.Result{}, errors.Wrap(err, errGetCluster)
		default:
			pending = append(pending, key.String()+" (not connected)")
		}
	}
	for _, m := range members {
		key := m.ClusterKey().String()
		if !m.Synced() {
			pending = append(pending, key+" (unreachable)")
			continue
		}
		// Read live when the watch shows nothing, Ready or not: a cluster
		// whose probes fail may still answer (a flapping link) while its
		// watch is behind, and deleteIn sends it requests anyway. A read
		// that fails keeps the finalizer.
		chs, err := cluster.ConfirmedChaperons(ctx, m, w.UID, true)
		if err != nil {
			pending = append(pending, key+" ("+cluster.DescribeError(err)+")")
			continue
		}
		if err := r.deleteIn(ctx, m, w, chs, stopsFirst(w)); err != nil {
			pending = append(pending, key+" ("+cluster.DescribeError(err)+")")
			continue
		}
		if len(chs) > 0 {
			pending = append(pending, key)
			continue
		}
		cleaned = append(cleaned, m.ClusterKey())
	}
	if len(pending) > 0 {
		if err := r.forgetCleaned(ctx, w, cleaned); err != nil {
			return reconcile.Result{}, err
		}
		r.record.Event(w, event.Normal(reasonCleanup, fmt.Sprintf("waiting for candidates to be deleted in %v", pending)))
		return reconcile.Result{RequeueAfter: cleanupRetry}, nil
	}
	if len(abandoned) > 0 {
		r.record.Event(w, event.Warning(reasonAbandoned, errors.Errorf("the KubernetesCluster of %v is gone: whatever of this Workload may remain in that cluster is abandoned", abandoned)))
	}
	return shared.IgnoreConflict(resource.IgnoreNotFound(r.patchFinalizers(ctx, w, meta.RemoveFinalizer)))
}

// forgetCleaned takes out of a deleted Workload's status what it records
// placer put in the clusters cleaned up in this pass (deleteIn let go of
// it there, and no chaperon is left), while another cluster holds the
// deletion: a cluster's drain waits for what a Workload records there,
// and so need not wait for this deletion's end.
func (r *Reconciler) forgetCleaned(ctx context.Context, w *v1alpha1.Workload, cleaned []types.NamespacedName) error {
	orig := w.DeepCopy()
	for _, key := range cleaned {
		forgetRecords(w, key)
	}
	_, err := shared.PatchStatus(ctx, r.client, r.client, w, orig)
	return err
}

// stopsFirst reports whether a deleted Workload goes only once its pods
// have stopped (its chaperons deleted in the foreground: a chaperon stays
// until its pod is gone): a proxy pod's, whose deletion, as any pod's, ends
// when its containers have stopped, so that a controller that makes a pod
// of the same name again (a StatefulSet) never has two running; but not
// once the pod is gone already (force-deleted: AnnotationProxyPodGone).
// Other Workloads go as a Deployment does (in the background): their pods
// stop after them.
func stopsFirst(w *v1alpha1.Workload) bool {
	return w.Labels[v1alpha1.LabelProxyPod] != "" && w.Annotations[v1alpha1.AnnotationProxyPodGone] != "true"
}

// deleteIn deletes the Workload's chaperons (chs, in whatever namespaces
// they are), its Service and its use of the copies of its dependencies in
// one member (in the target namespace, wherever its chaperons are, and
// wherever status.placedNamespaces says placer put something), as the
// Workload's tenant. What
// the member's API server forbids the tenant to read there, placer cannot
// have made. With foreground, a chaperon stays (being deleted) until its
// pod is gone, so that its absence confirms the pod's.
func (r *Reconciler) deleteIn(ctx context.Context, m cluster.Member, w *v1alpha1.Workload, chs []*mcv1alpha1.PodChaperon, foreground bool) error {
	cl, err := m.Tenant(w.Namespace)
	if err != nil {
		return err
	}
	// First, while its chaperons still bring the Workload back here if
	// this fails: in the target namespace and wherever its chaperons are
	// (the target namespace may have changed).
	namespaces := map[string]bool{m.TargetNamespace(w): true}
	for _, ch := range chs {
		namespaces[ch.Namespace] = true
	}
	for _, ns := range w.PlacedIn(m.ClusterKey()) {
		namespaces[ns] = true
	}
	for ns := range namespaces {
		if err := leaveNamespace(ctx, cl, m, w, ns); err != nil {
			return err
		}
	}
	for ns := range namespaces {
		if !slices.ContainsFunc(chs, func(ch *mcv1alpha1.PodChaperon) bool { return ch.Namespace == ns }) {
			continue
		}
		for _, ch := range chs {
			if ch.Namespace == ns {
				if err := passGrace(ctx, cl, w, ch); err != nil {
					return err
				}
			}
		}
		// Said either way: a chaperon deleted in the foreground before
		// (its pod does not stop, its node lost) goes in the background
		// once asked so (its proxy pod force-deleted since).
		policy := metav1.DeletePropagationBackground
		if foreground {
			policy = metav1.DeletePropagationForeground
		}
		opts := []client.DeleteAllOfOption{client.InNamespace(ns), client.MatchingLabels{mcv1alpha1.LabelWorkloadUID: string(w.UID)}, client.PropagationPolicy(policy)}
		err := cl.DeleteAllOf(ctx, &mcv1alpha1.PodChaperon{}, opts...)
		if err := resource.IgnoreNotFound(err); err != nil {
			return errors.Wrap(err, errDeleteChaperon)
		}
	}
	return nil
}

// leaveNamespace lets go, in one member namespace, of what went with the
// Workload's pods there: the copies of its dependencies it uses and its
// Service. What the member's API server forbids the tenant to read there,
// placer cannot have made.
func leaveNamespace(ctx context.Context, cl client.Client, m cluster.Member, w *v1alpha1.Workload, ns string) error {
	if err := dependencies.Release(ctx, cl, m, w, ns); err != nil {
		return err
	}
	return dropService(ctx, cl, w, ns)
}

// dropService deletes the Service placer made for the Workload in the
// namespace, if there is one: a Service of its name that is not placer's
// for this Workload (its UID label), or one the tenant may not read, is
// left alone.
func dropService(ctx context.Context, cl client.Client, w *v1alpha1.Workload, ns string) error {
	svc := &corev1.Service{}
	err := cl.Get(ctx, types.NamespacedName{Namespace: ns, Name: w.ServiceName()}, svc)
	if kerrors.IsForbidden(err) || err == nil && svc.Labels[mcv1alpha1.LabelWorkloadUID] != string(w.UID) {
		return nil
	}
	if err != nil {
		return errors.Wrap(resource.IgnoreNotFound(err), errGetService)
	}
	return errors.Wrap(resource.IgnoreNotFound(cl.Delete(ctx, svc, client.Preconditions{UID: &svc.UID})), errDeleteService)
}

// emptied returns the namespaces other than ns that hold chaperons (of
// all) and none once those in deleted are gone.
func emptied(all, deleted []*mcv1alpha1.PodChaperon, ns string) []string {
	left := map[string]int{}
	for _, ch := range all {
		left[ch.Namespace]++
	}
	for _, ch := range deleted {
		left[ch.Namespace]--
	}
	var out []string
	for _, ch := range deleted {
		if ch.Namespace != ns && left[ch.Namespace] == 0 && !slices.Contains(out, ch.Namespace) {
			out = append(out, ch.Namespace)
		}
	}
	return out
}

// patchFinalizers adds or removes the propagator's finalizer with a patch of
// metadata.finalizers alone: a full Update would write the defaults of the
// client's copy into the spec (strategy: {}, empty template metadata) and
// bump metadata.generation behind the conditions' observedGeneration. The
// resourceVersion in the patch keeps another controller's finalizer, added
// meanwhile, from being dropped.
func (r *Reconciler) patchFinalizers(ctx context.Context, w *v1alpha1.Workload, change func(metav1.Object, string)) error {
	return errors.Wrap(shared.PatchLocked(ctx, r.client, w, func(w *v1alpha1.Workload) { change(w, finalizer) }), errFinalizer)
}
