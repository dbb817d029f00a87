package propagator

import (
	"context"
	"fmt"
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/propagator"
)

const reasonLeft event.Reason = "LeftCluster"

// reach is what placer knows of a cluster at this moment.
type reach int

const (
	// gone: its KubernetesCluster does not exist.
	gone reach = iota
	// silent: it does not answer (its probe failed, or nothing is known
	// of it), or its chaperon watch has not listed; what its watch last
	// saw may be stale, and no request is sent to it.
	silent
	// unready: it answers but is not Ready (placer's agent or candidate
	// scheduler stopped there, KubernetesCluster.Answers), and is watched:
	// what is there goes as in a cluster that answers (its own garbage
	// collector removes a deleted chaperon's pod), but the statuses its
	// agent mirrors may be stale, so nothing Ready is counted there.
	unready
	// syncing: Ready, and its chaperon watch has not listed yet.
	syncing
	// answering: Ready and watched: what its watch says is true now.
	answering
)

// answers reports whether the cluster is sent what cleans up there.
func (st reach) answers() bool {
	return st == unready || st == answering
}

// reachOf says how far the cluster answers, with its member when its
// chaperons are watched.
func (r *Reconciler) reachOf(ctx context.Context, s *scope, key types.NamespacedName) (reach, cluster.Member, error) {
	kc, err := r.cluster(ctx, s, key)
	switch {
	case err != nil:
		return silent, nil, err
	case kc == nil:
		return gone, nil, nil
	}
	m := r.member(key)
	switch {
	case kc.Status.GetCondition(xpv2.TypeReady).Status != corev1.ConditionTrue && m != nil && kc.Answers():
		return unready, m, nil
	case kc.Status.GetCondition(xpv2.TypeReady).Status != corev1.ConditionTrue:
		return silent, m, nil
	case m == nil:
		return syncing, nil, nil
	}
	return answering, m, nil
}

// leave follows the clusters the Workload moved away from
// (status.leftClusters, the scheduler's, written with the move): what is
// there goes once the new cluster runs every replica Ready
// (StartBeforeStop, the default: no downtime), or at once and in the
// foreground (StopBeforeStart, which holds the new cluster meanwhile).
// Each is answered in status.clusterCounts with what remains there; a
// cluster that does not answer keeps what was last seen there until it
// answers again (its Ready condition or its watch coming back requeues
// the Workload) or is deleted; a count of 0 tells the scheduler to let
// the entry go. It also keeps the counts the chosen cluster's: until the
// propagator counts there they are 0 but for what the clusters left
// still serve, and Ready is Unknown while one of them does not answer;
// and Ready is Unknown when the chosen cluster is not Ready, not the last
// counts.
func (r *Reconciler) leave(ctx context.Context, s *scope) (next, error) {
	w := s.w
	if st, _, err := r.reachOf(ctx, s, s.target); err != nil {
		return stop, err
	} else if (st == silent || st == unready) && s.chosen.committed() {
		w.Status.ReadyReplicas = 0
		w.Status.SetConditions(v1alpha1.ReadyUnknownOn(s.target.String(), w.Generation))
	}
	if err := r.pruneDependencies(ctx, s); err != nil {
		return stop, err
	}
	stopFirst := w.Spec.Placement.Move == v1alpha1.MoveStopBeforeStart
	// Replaced once every replica runs Ready in the new cluster, or ended
	// there on its own (a batch pod).
	var chosen propagator.State
	if s.chosen != nil {
		chosen = s.chosen.state
	}
	replaced := stopFirst || w.Finished() || s.chosen.committed() && chosen.Ready+chosen.Succeeded+chosen.Failed >= w.ReplicaCount()
	stillReady, unknown := 0, ""
	for i := range w.Status.LeftClusters {
		ready, silent, err := r.leaveCluster(ctx, s, &w.Status.LeftClusters[i], replaced)
		if err != nil {
			return stop, err
		}
		stillReady += ready
		if silent && unknown == "" {
			unknown = w.ClusterKey(&w.Status.LeftClusters[i].Cluster).String()
		}
	}
	switch {
	case !w.CountsChosen():
		// replicas and scheduledReplicas go to 0 with the next write
		// (uncounted): only Ready and readyReplicas say what serves.
		w.Status.ReadyReplicas = int32(stillReady)
		if unknown != "" && propagator.StageOf(w) != propagator.HeldForMove {
			w.Status.SetConditions(v1alpha1.ReadyUnknownOn(unknown, w.Generation))
		}
	case stillReady > 0:
		w.Status.ReadyReplicas = int32(chosen.Ready + stillReady)
	}
	return proceed, nil
}

// countsAfterMove keeps Ready true to the clusters left when a pass ends
// before leave (no cluster is chosen, say, after a move that found no
// other): Unknown while a cluster left is not Ready (what runs there is
// not known). readyReplicas, what the clusters left still serve, is
// leave's; the other counts go to 0 with the next write (uncounted).
func (r *Reconciler) countsAfterMove(ctx context.Context, s *scope) {
	w := s.w
	if w.CountsChosen() || len(w.Status.ClusterCounts) == 0 {
		return
	}
	if propagator.StageOf(w) == propagator.HeldForMove {
		return
	}
	for i := range w.Status.LeftClusters {
		key := w.ClusterKey(&w.Status.LeftClusters[i].Cluster)
		if st, _, err := r.reachOf(ctx, s, key); err == nil && (st == silent || st == unready) {
			w.Status.SetConditions(v1alpha1.ReadyUnknownOn(key.String(), w.Generation))
			return
		}
	}
}

// recount records what remains in a cluster left (n > 0) when it changed:
// a count above 0 lets nothing go, so which move it answers (leftAt) is not
// worth a write of its own (a failover of 300 Workloads wrote 300 more).
func recount(w *v1alpha1.Workload, key types.NamespacedName, n int32, lc *v1alpha1.LeftCluster) {
	if c := w.Counted(key); c == nil || c.Replicas != n {
		w.SetCounted(key, n, lc.Time)
	}
}

// uncounted sets replicas and scheduledReplicas to 0 while the propagator
// has not counted in the chosen cluster (after a move they are still the
// last cluster's), with a status write that happens anyway: the
// scheduler's cache and connectChosen read CountsChosen, not them, and
// Ready says what serves meanwhile.
func uncounted(w *v1alpha1.Workload) {
	if w.Status.ClusterRef == nil || !w.CountsChosen() {
		w.Status.Replicas, w.Status.ScheduledReplicas = 0, 0
	}
}

// forgetCounts forgets the counts of clusters that are neither chosen nor
// left (the scheduler let the entry go, or an external scheduler moved
// the Workload without one), with a status write that happens anyway:
// such a count says nothing any more, and is not worth a write of its
// own.
func forgetCounts(w *v1alpha1.Workload) {
	for _, c := range slices.Clone(w.Status.ClusterCounts) {
		if key := w.ClusterKey(&c.Cluster); !w.PlacedOn(key) && w.Left(key) == nil {
			w.ForgetCounted(key)
		}
	}
}

// leaveCluster follows one cluster left (lc): what is there goes once
// replaced, and its count in status.clusterCounts answers lc with what
// remains there, 0 once nothing does. It reports how many replicas still
// run Ready there meanwhile (make before break), and whether what is
// there is unknown (silent: it has candidates and does not answer).
func (r *Reconciler) leaveCluster(ctx context.Context, s *scope, lc *v1alpha1.LeftCluster, replaced bool) (ready int, silent bool, err error) {
	w := s.w
	key := w.ClusterKey(&lc.Cluster)
	if key == s.target {
		// Chosen again: the scheduler lets the entry go, and what is
		// there is the chosen cluster's now, never the old copy.
		return 0, false, nil
	}
	if r.sameHost(key, s.target) {
		// The chosen cluster registered again: the same.
		w.SetCounted(key, 0, lc.Time)
		return 0, false, nil
	}
	st, m, err := r.reachOf(ctx, s, key)
	if err != nil {
		return 0, false, err
	}
	remaining := int32(-1)
	if c := w.Counted(key); c != nil {
		remaining = c.Replicas
	}
	if st == gone {
		forgetLeft(s, key, lc, remaining)
		return 0, false, nil
	}
	// syncing: its watch's first list brings the Workload back (OnSynced).
	// Whatever happens below, removeElsewhereOf leaves this cluster
	// to this phase: a copy not yet replaced stays, even if the
	// cluster answers between here and there.
	s.keep[key] = true
	var chs []*mcv1alpha1.PodChaperon
	if m != nil {
		if chs, err = cluster.ConfirmedChaperons(ctx, m, w.UID, st.answers()); err != nil {
			return 0, false, errors.Wrap(err, errListChaperons)
		}
		// Without a synced watch the count keeps what was last seen
		// there: an empty list is no news, and writing 0 now and the
		// count again once synced would be two writes for nothing.
		remaining = int32(len(chs))
	}
	switch {
	case !st.answers():
		// What its watch last saw, but never "nothing": only a cluster
		// that answers confirms that, and 0 lets it go (a watch that
		// stopped may show none while the pods run on).
		if remaining > 0 {
			recount(w, key, remaining, lc)
		}
		return 0, true, nil
	case len(chs) == 0:
		delete(s.keep, key)
		if !w.LeftBehind(lc) {
			// Answered already: the scheduler lets the entry go.
			return 0, false, nil
		}
		// And what was copied there for its pods, before the count
		// that lets the cluster go.
		if err := releaseLeft(ctx, s, m); err != nil {
			return 0, false, err
		}
		w.SetCounted(key, 0, lc.Time)
		s.statusEvent(event.Normal(reasonLeft, fmt.Sprintf("nothing of this Workload remains in %s, which it left (%s)", key, lc.Reason)))
		return 0, false, nil
	}
	recount(w, key, remaining, lc)
	switch {
	case !replaced && st == unready:
		// What serves there is not known: its agent mirrors nothing.
		return 0, true, nil
	case !replaced:
		// Make before break: the old pods serve until the new ones do.
		ready = propagator.Observe(w, chs).Ready
	case !allDeleting(chs):
		if err := r.deleteIn(ctx, m, w, chs, w.Spec.Placement.Move == v1alpha1.MoveStopBeforeStart); err != nil {
			return 0, false, err
		}
	}
	return ready, false, nil
}

// forgetLeft lets go of a cluster left that was deleted while it did not
// answer: what may remain there (remaining candidates, unknown when
// negative) is abandoned, with an Event.
func forgetLeft(s *scope, key types.NamespacedName, lc *v1alpha1.LeftCluster, remaining int32) {
	forgetRecords(s.w, key)
	s.w.SetCounted(key, 0, lc.Time)
	s.statusEvent(event.Warning(reasonLeft, errors.Errorf("cluster %s was deleted while it did not answer: %s of this Workload may remain there", key, countOf(remaining))))
}

// countOf says how many candidates a count is; unknown when negative.
func countOf(n int32) string {
	if n < 0 {
		return "candidates"
	}
	return fmt.Sprintf("%d candidate(s)", n)
}

// allDeleting reports whether every chaperon is being deleted already.
func allDeleting(chs []*mcv1alpha1.PodChaperon) bool {
	for _, ch := range chs {
		if ch.DeletionTimestamp == nil {
			return false
		}
	}
	return true
}

// workloadsOf maps a cluster to the Workloads whose status names it, or
// copies placed there (workloadsIn).
func (r *Reconciler) workloadsOf(ctx context.Context, o client.Object) []reconcile.Request {
	return r.workloadsIn(ctx, client.ObjectKeyFromObject(o))
}

// workloadsIn are the Workloads whose status names a cluster, or copies
// placed there (a runner-up dropped while the cluster did not answer: its
// copies go when it answers, or are forgotten when it is deleted), each
// once.
func (r *Reconciler) workloadsIn(ctx context.Context, key types.NamespacedName) []reconcile.Request {
	// Read-only: only their names are taken.
	wls, err := shared.WorkloadsIn(ctx, r.client, key, client.UnsafeDisableDeepCopy)
	if err != nil {
		// The indexes are added before any controller (IndexWorkloads).
		r.log.Info("cannot list the Workloads of a cluster", "cluster", key.String(), "error", err)
		return nil
	}
	return shared.RequestsFor(wls)
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

// sameHost reports whether two registrations are one member cluster.
func (r *Reconciler) sameHost(a, b types.NamespacedName) bool {
	return cluster.SameHost(r.members, a, b)
}

// pruneDependencies lets go of the copies status.dependencies names, and
// the namespaces status.placedNamespaces names, in a cluster the Workload
// no longer uses (neither chosen, nor left, nor keeping candidates in this
// pass: one that rejected it, a runner-up let go at commit or dropped by
// the scheduler, say; the chosen cluster of a batch Workload that ran to
// its end there, once that cluster is being deleted: gate), once nothing
// of it remains there; a cluster deleted meanwhile is forgotten. A
// runner-up kept with no candidate yet (its member holds as many as
// allowed) keeps its copy.
func (r *Reconciler) pruneDependencies(ctx context.Context, s *scope) error {
	w := s.w
	for _, key := range shared.RecordedClusters(w) {
		if s.keep[key] || key != s.target && r.sameHost(key, s.target) || w.Left(key) != nil {
			continue
		}
		st, m, err := r.reachOf(ctx, s, key)
		if err != nil {
			return err
		}
		switch {
		case st == gone:
			// Let go while it did not answer (a drain waits for copies
			// only in a cluster that answers): what placer copied there
			// stays there, never silently.
			forgetRecords(w, key)
			s.statusEvent(event.Warning(reasonAbandoned, errors.Errorf("the KubernetesCluster %s is gone: what placer made there for this Workload (the copies of its dependencies, its Service) is abandoned", key)))
		case st.answers():
			chs, err := cluster.ConfirmedChaperons(ctx, m, w.UID, true)
			if err != nil {
				return errors.Wrap(err, errListChaperons)
			}
			if len(chs) == 0 {
				if err := releaseLeft(ctx, s, m); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
