package scheduler

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// roomScore names the score of a cluster's room
// (priorities.ResourceAllocationName; TestRoomScoreName holds them equal).
const roomScore = "ResourceAllocation"

// Defaults of the rebalance's hysteresis (Options.RebalanceAfter,
// Options.RebalanceMargin).
const (
	DefaultRebalanceAfter  = 5 * time.Minute
	DefaultRebalanceMargin = 20
)

// rebalanceRetry is when a move back that --max-concurrent-moves held
// looks again: a move back is never owed, and waits in no line.
const rebalanceRetry = 30 * time.Second

// rebalance says whether a placed Workload whose spec.placement.rebalance
// is WhenPreferred should leave its cluster for one it prefers more (a
// Leave of reason Rebalanced, and that cluster), or when to look again. A
// Workload still leaving a cluster (status.leftClusters) is not moved
// again.
func (r *Reconciler) rebalance(ctx context.Context, w *v1alpha1.Workload, current types.NamespacedName, now time.Time) (*scheduler.Leave, types.NamespacedName, time.Duration) {
	asked := rebalanceAsked(w, now)
	if (!asked && w.Spec.Placement.Rebalance != v1alpha1.RebalanceWhenPreferred) || w.Finished() || len(w.Status.LeftClusters) > 0 {
		return nil, types.NamespacedName{}, 0
	}
	after, margin := r.rebalanceAfter, r.rebalanceMargin
	if asked {
		// placer rebalance: the operator asks now.
		after, margin = 0, 0
	}
	if wait := after - now.Sub(w.Status.GetCondition(v1alpha1.TypeScheduled).LastTransitionTime.Time); wait > 0 {
		// Placed here lately: no cycle before the window ends (every
		// status write of the propagator's brings the Workload back).
		return nil, types.NamespacedName{}, wait
	}
	if r.maxMoves > 0 && r.cache.Draining() >= r.maxMoves {
		// No place for a move back under --max-concurrent-moves: no
		// cycle for it either.
		return nil, types.NamespacedName{}, rebalanceRetry
	}
	p := r.profiles[w.Spec.SchedulerName]
	res := p.Schedule(ctx, w, r.cache.Snapshot(), scheduler.Options{State: r.cycleState(w)})
	return Preferred(w, p, res, current, scheduler.ExecutionTolerations(w, r.defaultTolerations), after, margin, now)
}

// rebalanceAsked reports whether placer rebalance asked, lately and since
// the Workload's last placement (to the second, as the API keeps times),
// for a move back (v1alpha1.AnnotationRebalance).
func rebalanceAsked(w *v1alpha1.Workload, now time.Time) bool {
	v, ok := w.Annotations[v1alpha1.AnnotationRebalance]
	if !ok {
		return false
	}
	at, err := time.Parse(time.RFC3339, v)
	if err != nil || now.Sub(at) > v1alpha1.RebalanceRequestTTL || at.Sub(now) > v1alpha1.RebalanceRequestTTL {
		return false
	}
	placed := w.Status.GetCondition(v1alpha1.TypeScheduled).LastTransitionTime.Time
	return !at.Before(placed.Truncate(time.Second))
}

// preference is how much the Workload prefers a cluster: its weighted
// scores but the room's (ResourceAllocation), which changes with the
// fleet's load (and, normalized over the feasible clusters, makes a small
// difference of room a large one of score): a move back follows what the
// Workload asks for (cluster and workload affinity, taints it would rather
// avoid), not which cluster happens to be emptier.
func preference(p *scheduler.Profile, c scheduler.ClusterScore) int64 {
	var sum int64
	for _, ws := range p.Scores {
		if name := ws.Plugin.Name(); name != roomScore {
			sum += c.Score(name) * ws.Weight
		}
	}
	return sum
}

// Preferred is rebalance's judgement of a cycle's ranking (placer
// explain calls it too): the feasible
// cluster the Workload prefers most, if it is not its own, must be
// preferred over its own by margin percent (and by a point), carry no
// NoExecute taint the Workload tolerates only for a while, have been
// Ready for after, and the Workload placed where it is for after too:
// hysteresis, so that a cluster that flaps moves nothing. A Workload whose
// own cluster is not feasible now is not compared (it stays, as a placed
// Workload does).
func Preferred(w *v1alpha1.Workload, p *scheduler.Profile, res *scheduler.Result, current types.NamespacedName, tolerations []corev1.Toleration, after time.Duration, margin int, now time.Time) (*scheduler.Leave, types.NamespacedName, time.Duration) {
	none := types.NamespacedName{}
	i := slices.IndexFunc(res.Ranked, func(c scheduler.ClusterScore) bool { return c.Cluster.Key == current })
	if i < 0 {
		return nil, none, 0
	}
	here := preference(p, res.Ranked[i])
	best, bestAt := here, i
	for j, c := range res.Ranked {
		// Ranked is best first: of equal preference, the better ranked.
		if v := preference(p, c); v > best {
			best, bestAt = v, j
		}
	}
	if bestAt == i || best*100 < here*int64(100+margin) {
		return nil, none, 0
	}
	target := res.Ranked[bestAt].Cluster
	if target.Ready.Status != corev1.ConditionTrue {
		return nil, none, 0
	}
	if leave, deadline := scheduler.MustLeave(w, target, tolerations, now); leave != nil || deadline > 0 {
		// A NoExecute taint it tolerates only for a while: it would
		// have to leave again, back and forth.
		return nil, none, 0
	}
	wait := after - now.Sub(target.Ready.LastTransitionTime.Time)
	if placed := w.Status.GetCondition(v1alpha1.TypeScheduled); !placed.LastTransitionTime.IsZero() {
		wait = max(wait, after-now.Sub(placed.LastTransitionTime.Time))
	}
	if wait > 0 {
		return nil, none, wait
	}
	return &scheduler.Leave{Reason: v1alpha1.ReasonRebalanced, Message: fmt.Sprintf(
		"it prefers cluster %s (preference %d against %d here), Ready for %s", target.Key, best, here, after)}, target.Key, 0
}

// first puts the cluster first in the ranking, if it is there: the one a
// rebalance moves to.
func first(res *scheduler.Result, key types.NamespacedName) bool {
	i := slices.IndexFunc(res.Ranked, func(c scheduler.ClusterScore) bool { return c.Cluster.Key == key })
	if i < 0 {
		return false
	}
	c := res.Ranked[i]
	copy(res.Ranked[1:i+1], res.Ranked[:i])
	res.Ranked[0] = c
	return true
}
