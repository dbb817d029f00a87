package scheduler

import (
	"context"
	"github.com/placer-dev/placer/scheduler"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/placer-dev/placer/internal/informers"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// feedCache keeps the scheduler's cache in step with the manager's
// informers, and requeues pending Workloads on every change that could make
// them fit (as kube-scheduler's eventhandlers.go does for pods).
// It returns each handler's HasSynced: the decision loop and the divider
// start once all say true (shared.Trigger.SourceAfter), never on a cache
// that holds part of the fleet (a required anti-affinity's peer not in it
// yet, the moves in flight under --max-concurrent-moves miscounted).
func (r *Reconciler) feedCache(ctx context.Context, mgr ctrl.Manager) ([]toolscache.InformerSynced, error) {
	var synced []toolscache.InformerSynced
	for _, feed := range []func() (toolscache.ResourceEventHandlerRegistration, error){
		func() (toolscache.ResourceEventHandlerRegistration, error) {
			return watch(ctx, mgr, &v1alpha1.KubernetesCluster{}, r.addCluster, r.updateCluster, r.deleteCluster)
		},
		func() (toolscache.ResourceEventHandlerRegistration, error) {
			return watch(ctx, mgr, &v1alpha1.Workload{}, r.addWorkload, r.updateWorkload, r.deleteWorkload)
		},
		func() (toolscache.ResourceEventHandlerRegistration, error) {
			return watch(ctx, mgr, &corev1.Namespace{}, r.addNamespace, r.updateNamespace, r.deleteNamespace)
		},
		func() (toolscache.ResourceEventHandlerRegistration, error) {
			return watch(ctx, mgr, &v1alpha1.ClusterBinding{}, r.addBinding, func(_, cb *v1alpha1.ClusterBinding) { r.addBinding(cb) }, r.deleteBinding)
		},
	} {
		reg, err := feed()
		if err != nil {
			return nil, err
		}
		synced = append(synced, reg.HasSynced)
	}
	return synced, nil
}

// addBinding records a ClusterBinding; a new one may let pending Workloads
// of its namespace fit.
func (r *Reconciler) addBinding(cb *v1alpha1.ClusterBinding) {
	if r.cache.UpsertBinding(client.ObjectKeyFromObject(cb), cb.Spec.ClusterNamespace) {
		r.requeuePending(false)
	}
}

func (r *Reconciler) deleteBinding(cb *v1alpha1.ClusterBinding) {
	r.cache.DeleteBinding(client.ObjectKeyFromObject(cb))
}

// watch calls typed functions on the events of the manager's informer of a kind.
func watch[T client.Object](ctx context.Context, mgr ctrl.Manager, obj T, add func(T), update func(old, new T), del func(T)) (toolscache.ResourceEventHandlerRegistration, error) {
	inf, err := mgr.GetCache().GetInformer(ctx, obj)
	if err != nil {
		return nil, errors.Wrap(err, errInformer)
	}
	reg, err := inf.AddEventHandler(informers.Handler(add, update, del))
	return reg, errors.Wrap(err, errInformer)
}

func (r *Reconciler) addCluster(kc *v1alpha1.KubernetesCluster) {
	r.cache.UpsertCluster(kc)
	r.requeuePending(false)
}

func (r *Reconciler) updateCluster(before, kc *v1alpha1.KubernetesCluster) {
	opened := r.cache.UpsertCluster(kc)
	if schedulingRelevant(before, kc) {
		r.requeuePending(false)
	}
	if scheduler.MakesLeave(before) && !scheduler.MakesLeave(kc) {
		// Uncordoned, or answering again: what had to leave and could
		// not (MovePending) stays, and Scheduled must say where it is,
		// not why it should move.
		for _, key := range r.cache.PlacedOn(types.NamespacedName{Namespace: kc.Namespace, Name: kc.Name}) {
			r.trigger.Enqueue(key)
		}
	}
	if opened || becameReady(before, kc) || !maps.Equal(before.Labels, kc.Labels) {
		// A cluster some Workload prefers more may take it again (its
		// taints went, it answers again, it was relabelled;
		// spec.placement.rebalance WhenPreferred): each looks, and waits
		// out the cluster's stabilization if it must.
		for _, key := range r.cache.Rebalancing() {
			r.trigger.Enqueue(key)
		}
	}
	if opened || (before.DeletionTimestamp == nil) != (kc.DeletionTimestamp == nil) {
		// Its taints changed (or it is being deleted): what is placed
		// there may have to leave; or it opened up: what must leave
		// another cluster may go there. Not on every summary change.
		r.requeueLeaving()
	}
}

// becameReady reports whether the cluster's Ready condition turned True.
func becameReady(before, after *v1alpha1.KubernetesCluster) bool {
	return before.Status.GetCondition(xpv2.TypeReady).Status != corev1.ConditionTrue &&
		after.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
}

func (r *Reconciler) deleteCluster(kc *v1alpha1.KubernetesCluster) {
	r.cache.DeleteCluster(types.NamespacedName{Namespace: kc.Namespace, Name: kc.Name})
}

// shareChanged brings a share's Workload back to the division, a moment
// later: the changes of its shares in that moment (their replicas
// starting one by one) make one look, and one status write.
func (r *Reconciler) shareChanged(w *v1alpha1.Workload) {
	if of := w.Annotations[v1alpha1.AnnotationShareOf]; of != "" {
		r.divisions.EnqueueAfter(types.NamespacedName{Namespace: w.Namespace, Name: of}, shareSettle)
	}
}

// shareSettle is how long a share's change waits for the next before its
// Workload looks.
const shareSettle = 500 * time.Millisecond

func (r *Reconciler) addWorkload(w *v1alpha1.Workload) {
	r.shareChanged(w)
	r.cache.UpsertWorkload(w)
	if w.Status.ClusterRef != nil {
		// A placement can only satisfy another's required affinity: it
		// takes capacity and anti-affinity domains, it gives none.
		r.requeuePending(true)
	}
}

// updateWorkload requeues what the change can make feasible: a placement
// only pending workloads with required affinity; a workload leaving a
// cluster, or a placed one's labels or affinity changing, every pending
// one (it may free capacity or an anti-affinity domain).
func (r *Reconciler) updateWorkload(before, w *v1alpha1.Workload) {
	r.shareChanged(w)
	if r.cache.UpsertWorkload(w) {
		// The informer's copy confirmed a written decision: the decision
		// loop passed the Workload over while it was assumed.
		r.trigger.Enqueue(types.NamespacedName{Namespace: w.Namespace, Name: w.Name})
	}
	if r.maxMoves > 0 && (drainEnded(before, w) || countsAsMove(before) && !countsAsMove(w) || before.Status.Rebalancing != nil && w.Status.Rebalancing == nil ||
		w.IsShare() && w.Finished() && !before.Finished()) {
		// A drain, or a move back, ended, or a drain no longer counts (its
		// new cluster rejected it and it waits for another, or it is
		// being deleted; a share that ran to its end, Cache.UpsertWorkload):
		// one waiting for --max-concurrent-moves may go.
		r.wakeWaiters()
	}
	switch {
	case before.Status.ClusterRef != nil && !equality.Semantic.DeepEqual(before.Status.ClusterRef, w.Status.ClusterRef),
		w.Status.ClusterRef != nil && (!equality.Semantic.DeepEqual(before.Labels, w.Labels) || !equality.Semantic.DeepEqual(before.Spec.Affinity, w.Spec.Affinity)):
		r.requeuePending(false)
	case before.Status.ClusterRef == nil && w.Status.ClusterRef != nil:
		r.requeuePending(true)
	}
}

func (r *Reconciler) deleteWorkload(w *v1alpha1.Workload) {
	r.shareChanged(w)
	r.cache.DeleteWorkload(w)
	// Its place under --max-concurrent-moves, if it held or awaited one.
	r.waiters.done(types.NamespacedName{Namespace: w.Namespace, Name: w.Name})
	r.shareWaiters.done(types.NamespacedName{Namespace: w.Namespace, Name: w.Name})
	r.wakeWaiters()
	r.writer.backoff.Forget(types.NamespacedName{Namespace: w.Namespace, Name: w.Name})
	r.verdicts.Forget(types.NamespacedName{Namespace: w.Namespace, Name: w.Name})
	if w.Status.ClusterRef != nil {
		r.requeuePending(false)
	}
}

func (r *Reconciler) addNamespace(ns *corev1.Namespace) {
	r.cache.UpsertNamespace(ns.Name, ns.Labels)
}

func (r *Reconciler) updateNamespace(before, ns *corev1.Namespace) {
	r.cache.UpsertNamespace(ns.Name, ns.Labels)
	if !equality.Semantic.DeepEqual(before.Labels, ns.Labels) {
		r.requeuePending(false)
	}
}

func (r *Reconciler) deleteNamespace(ns *corev1.Namespace) {
	r.cache.DeleteNamespace(ns.Name)
}

// schedulingRelevant reports whether a cluster changed in a way that can
// change a scheduling decision; probe timestamps alone do not.
func schedulingRelevant(before, after *v1alpha1.KubernetesCluster) bool {
	b, a := before.Status, after.Status
	return (before.DeletionTimestamp == nil) != (after.DeletionTimestamp == nil) ||
		!equality.Semantic.DeepEqual(before.Labels, after.Labels) ||
		!equality.Semantic.DeepEqual(before.Spec, after.Spec) ||
		b.GetCondition(xpv2.TypeReady).Status != a.GetCondition(xpv2.TypeReady).Status ||
		!equality.Semantic.DeepEqual(b.Allocatable, a.Allocatable) ||
		!equality.Semantic.DeepEqual(b.Requested, a.Requested) ||
		!equality.Semantic.DeepEqual(b.LargestFreeNode, a.LargestFreeNode)
}

// countsAsMove reports whether the cache counts the Workload among the
// drains in flight (scheduler.Cache.Draining): placed, not being deleted,
// still leaving a cluster for a taint or a deletion.
func countsAsMove(w *v1alpha1.Workload) bool {
	return w.Status.ClusterRef != nil && w.DeletionTimestamp == nil &&
		slices.ContainsFunc(w.Status.LeftClusters, func(lc v1alpha1.LeftCluster) bool { return v1alpha1.IsDrain(lc.Reason) })
}

// drainEnded reports whether the update took a drain (IsDrain) out of
// the Workload's leftClusters.
func drainEnded(before, w *v1alpha1.Workload) bool {
	for _, lc := range before.Status.LeftClusters {
		if v1alpha1.IsDrain(lc.Reason) && w.Left(before.ClusterKey(&lc.Cluster)) == nil {
			return true
		}
	}
	return false
}

// requeueLeaving sends the placed workloads of clusters with a NoExecute
// taint, or being deleted, back to the decision loop, but for those
// waiting for a place under --max-concurrent-moves: a drain's end wakes
// them in turn (wakeWaiters). A waiter whose cluster no longer makes it
// leave (uncordoned) is sent back too, to say so.
func (r *Reconciler) requeueLeaving() {
	leaving := r.cache.Leaving()
	for _, key := range leaving {
		if !r.waiters.waiting(key) {
			r.trigger.Enqueue(key)
		}
	}
	for _, key := range r.waiters.dropExcept(leaving) {
		r.trigger.Enqueue(key)
	}
	r.wakeWaiters()
}

// wakeWaiters sends as many Workloads waiting for a place under
// --max-concurrent-moves back to the decision loop as there are places
// free, less those woken already and not yet looked at.
func (r *Reconciler) wakeWaiters() {
	if r.maxMoves <= 0 {
		return
	}
	free := r.maxMoves - r.cache.Draining()
	woken := r.waiters.wake(free)
	for _, key := range woken {
		r.trigger.Enqueue(key)
	}
	for _, key := range r.shareWaiters.wake(free - len(woken)) {
		r.divisions.Enqueue(key)
	}
}

// wakeEndedSince wakes the waiters for the places of moves that ended
// since a look, under moveSlots, that counted looked of them: the
// handlers that saw them end (outside the lock) woke no one for them when
// the looker was not in line yet. Moves are counted in only under
// moveSlots, so a count lower than the look's is a move that ended (one
// that began with no place, a failover, wakes the line at its own end).
func (r *Reconciler) wakeEndedSince(looked int) {
	if r.cache.Draining() < looked {
		r.wakeWaiters()
	}
}

// moveWaiters are the Workloads waiting for a place under
// --max-concurrent-moves, in the order they began to wait. Waking every
// one at each drain's end cost a decision per waiter per move (20,000
// passes for a 300-Workload drain); they are woken in turn instead.
type moveWaiters struct {
	mu    sync.Mutex
	order []types.NamespacedName
	in    map[types.NamespacedName]bool
	// woken were sent to the loop and not yet looked at.
	woken map[types.NamespacedName]bool
}

// wait puts the Workload in line, if it is not already.
func (m *moveWaiters) wait(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.in == nil {
		m.in, m.woken = map[types.NamespacedName]bool{}, map[types.NamespacedName]bool{}
	}
	delete(m.woken, key)
	if !m.in[key] {
		m.in[key] = true
		m.order = append(m.order, key)
	}
}

// done takes the Workload out of line: it moved, needs no move, or is gone.
func (m *moveWaiters) done(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.woken, key)
	if m.in[key] {
		delete(m.in, key)
		m.order = slices.DeleteFunc(m.order, func(k types.NamespacedName) bool { return k == key })
	}
}

// looked forgets that the Workload was woken, and reports whether it was
// still: the loop saw it without deciding about its move (which takes it
// out of line or puts it back).
func (m *moveWaiters) looked(key types.NamespacedName) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	woken := m.woken[key]
	delete(m.woken, key)
	return woken
}

func (m *moveWaiters) waiting(key types.NamespacedName) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.in[key]
}

// wake takes up to free Workloads from the front of the line, less those
// woken and not yet looked at.
func (m *moveWaiters) wake(free int) []types.NamespacedName {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := min(free-len(m.woken), len(m.order))
	if n <= 0 {
		return nil
	}
	out := slices.Clone(m.order[:n])
	m.order = m.order[n:]
	for _, k := range out {
		delete(m.in, k)
		m.woken[k] = true
	}
	return out
}

// dropExcept takes out of line, and returns, the waiters not in keep.
func (m *moveWaiters) dropExcept(keep []types.NamespacedName) []types.NamespacedName {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []types.NamespacedName
	m.order = slices.DeleteFunc(m.order, func(k types.NamespacedName) bool {
		if slices.Contains(keep, k) {
			return false
		}
		out = append(out, k)
		delete(m.in, k)
		return true
	})
	return out
}

// requeuePending sends pending workloads back to the decision loop; with
// affinityOnly, only those with required workload affinity.
func (r *Reconciler) requeuePending(affinityOnly bool) {
	for _, key := range r.cache.Pending(r.served, affinityOnly) {
		r.trigger.Enqueue(key)
	}
}
