package cluster

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/controllers/shared"
)

const (
	errListWorkloads = "cannot list the cluster's Workloads"

	reasonDraining event.Reason = "Draining"
	reasonLetGo    event.Reason = "LetGoUnreachable"
)

// drains remembers, per cluster being deleted, what its last Draining
// Event said, so that a Workload changing does not write the same Event
// again.
type drains struct {
	mu   sync.Mutex
	said map[types.NamespacedName]string
}

// news reports whether msg differs from what was said of the cluster.
func (d *drains) news(key types.NamespacedName, msg string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.said == nil {
		d.said = map[types.NamespacedName]string{}
	}
	if d.said[key] == msg {
		return false
	}
	d.said[key] = msg
	return true
}

func (d *drains) forget(key types.NamespacedName) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.said, key)
}

// drain lets a deleted cluster go once no Workload is placed on it and,
// while it answers, nothing of a Workload is left there (a Workload that
// left it, or a runner-up of a fan-out whose candidates are still there):
// the scheduler moves its Workloads away (the cluster is being deleted)
// and the propagator cleans up behind them. A cluster that does not
// answer is let go as soon as its Workloads have moved, with an Event
// naming the Workloads whose pods may remain there. Workloads changing
// requeue it; so does the next probe (next).
func (r *Reconciler) drain(ctx context.Context, kc *v1alpha1.KubernetesCluster, next reconcile.Result) (reconcile.Result, error) {
	key := types.NamespacedName{Namespace: kc.Namespace, Name: kc.Name}
	// Those it names, and those that recorded a namespace there (a
	// runner-up the scheduler dropped while the cluster did not answer).
	wls, err := shared.WorkloadsIn(ctx, r.client, key)
	if err != nil {
		return reconcile.Result{}, errors.Wrap(err, errListWorkloads)
	}
	conn := r.conns.Member(key)
	// holds reports whether the Workload may still hold candidates here:
	// a list that fails knows nothing, and nothing known is not nothing
	// there (the cluster answers, so the next probe looks again). A watch
	// that shows none is confirmed live, only in a cluster that answers
	// (one that does not is let go whatever it holds): a candidate made a
	// moment ago may not be in it yet, and the cluster let go would be
	// abandoned by the Workload's own cleanup.
	// Asked only when a Workload may be held here.
	reachable := len(wls) > 0 && answers(ctx, kc, conn)
	holds := func(w *v1alpha1.Workload) bool {
		chs, err := cluster.ConfirmedChaperons(ctx, conn, w.UID, reachable)
		return err != nil || len(chs) > 0
	}
	synced := conn != nil && conn.Synced()
	var placed, left []string
	for i := range wls {
		w := &wls[i]
		name := w.Namespace + "/" + w.Name
		switch r.holding(w, key, synced, reachable, holds) {
		case isPlaced:
			placed = append(placed, name)
		case isLeft:
			left = append(left, name)
		}
	}
	sort.Strings(placed)
	sort.Strings(left)
	// While the cluster answers, what its Workloads left there is not known
	// until the member's watch has listed (the first pass after a
	// restart) and the member has shown who it is: not known is not
	// nothing, and the drain waits for it.
	listing := reachable && !synced
	if len(placed) > 0 || reachable && len(left) > 0 || listing {
		msg := fmt.Sprintf("deleting: waiting for %d Workload(s) to move away (%s) and for %d to be cleaned up here (%s)",
			len(placed), short(placed), len(left), short(left))
		if listing {
			msg += fmt.Sprintf("; what %d Workload(s) left there is known once placer's watch of the member has listed", len(wls))
		}
		if r.drains.news(key, msg) {
			r.record.Event(kc, event.Normal(reasonDraining, msg))
		}
		return next, nil
	}
	if len(left) > 0 {
		r.record.Event(kc, event.Warning(reasonLetGo, errors.Errorf("deleted while it does not answer: pods of %d Workload(s) may remain there: %s", len(left), short(left))))
	}
	// Once the finalizer is gone, the object's deletion closes the
	// connection (Reconcile's NotFound branch).
	r.drains.forget(key)
	err = shared.PatchLocked(ctx, r.client, kc, func(kc *v1alpha1.KubernetesCluster) { meta.RemoveFinalizer(kc, clusterFinalizer) })
	return shared.IgnoreConflict(errors.Wrap(resource.IgnoreNotFound(err), errClusterFinalizer))
}

// holdsDrain is what a Workload is to a cluster's drain.
type holdsDrain int

const (
	isNothing holdsDrain = iota
	// isPlaced: placed there, it must move away first.
	isPlaced
	// isLeft: what it holds there is to be cleaned up first (while the
	// cluster answers).
	isLeft
)

// holding says what the Workload is to the drain of cluster key: synced
// says whether the member's watch has listed, reachable whether the
// cluster answers, holds whether the Workload's candidates are there.
func (r *Reconciler) holding(w *v1alpha1.Workload, key types.NamespacedName, synced, reachable bool, holds func(*v1alpha1.Workload) bool) holdsDrain {
	switch {
	case w.DeletionTimestamp != nil && !synced:
		// Being deleted, it never moves: while what it holds here is
		// not known, its cleanup here is waited for while the cluster
		// answers (the drain waits for the watch meanwhile), and
		// otherwise it is let go (its own deletion then abandons what
		// it left here).
		if meta.FinalizerExists(w, v1alpha1.FinalizerPropagator) && (w.PlacedOn(key) || w.Left(key) != nil) {
			return isLeft
		}
	case w.DeletionTimestamp != nil && !meta.FinalizerExists(w, v1alpha1.FinalizerPropagator):
		// Its cleanup done (another finalizer keeps it): what it
		// abandoned stays so.
	case w.DeletionTimestamp != nil:
		// Only while its chaperons or the copies it records are here
		// (its cleanup forgets them once let go here): another cluster
		// holding its deletion does not hold this drain.
		if holds(w) || reachable && r.copiesIn(w, key) {
			return isLeft
		}
	case w.PlacedOn(key) && !w.Finished():
		return isPlaced
	case w.LeftBehindIn(key):
		return isLeft
	case !synced:
		// A runner-up's candidates, or copies, here: not known yet (the
		// drain waits for the watch while the cluster answers).
	default:
		// Only nominated (a runner-up), or a batch Workload that ended
		// there and is not moved: what it may still hold there goes,
		// its copies too (its own pass lets them go once its
		// candidates are gone).
		if holds(w) || reachable && r.copiesIn(w, key) {
			return isLeft
		}
	}
	return isNothing
}

// copiesIn reports whether the Workload recorded copies or a namespace in
// the cluster that its own pass has still to let go (pruneDependencies):
// not those of a Workload whose chosen cluster is the same member
// registered again, which it keeps.
func (r *Reconciler) copiesIn(w *v1alpha1.Workload, key types.NamespacedName) bool {
	if !slices.Contains(shared.RecordedClusters(w), key) {
		return false
	}
	if w.Status.ClusterRef == nil {
		return true
	}
	target := w.ClusterKey(w.Status.ClusterRef)
	return target == key || !cluster.SameHost(r.conns, key, target)
}

// answers reports whether a cluster being deleted is sent what cleans up
// there. Not Ready, it may still answer (its agent or candidate scheduler
// stopped, KubernetesCluster.Answers): what is there is cleaned up all
// the same, while its chaperons are watched and served. A member whose
// placer CRDs, or placer's grant, went first never lists them, or no
// longer serves them (its watch listed once, before): nothing could be
// cleaned up there, and waiting would hold the cluster for ever. One live
// list says.
func answers(ctx context.Context, kc *v1alpha1.KubernetesCluster, conn cluster.Member) bool {
	if kc.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue {
		return true
	}
	if !kc.Answers() || conn == nil || !conn.Synced() {
		return false
	}
	_, err := conn.ChaperonsLive(ctx, kc.UID)
	return !kerrors.IsNotFound(err) && !kerrors.IsForbidden(err) && !apimeta.IsNoMatchError(err)
}

// short lists at most ten names.
func short(names []string) string {
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more", len(names)-10)
	}
	return strings.Join(names, ", ")
}

// deletingClustersOf maps a Workload to the clusters its status names, or
// where it recorded something, that are being deleted: their drain looks
// again.
func (r *Reconciler) deletingClustersOf(ctx context.Context, o client.Object) []reconcile.Request {
	w, ok := o.(*v1alpha1.Workload)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	// And those where it recorded copies or a namespace (a runner-up
	// the scheduler dropped), as the drain finds it (WorkloadsIn).
	keys := w.NamedClusters()
	for _, k := range shared.RecordedClusters(w) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		kc := &v1alpha1.KubernetesCluster{}
		if err := r.client.Get(ctx, k, kc); err == nil && kc.DeletionTimestamp != nil {
			out = append(out, reconcile.Request{NamespacedName: k})
		}
	}
	return out
}
