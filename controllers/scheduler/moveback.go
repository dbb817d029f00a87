package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// A spread Workload moves back (spec.placement.rebalance WhenPreferred, or
// placer rebalance) to the division it would be given afresh: after a
// failover or a drain moved a share away, the division that continues from
// the shares as they are keeps the replicas crowded where they fled; the
// one made afresh, with every cluster's room as if the Workload ran
// nowhere, is what its weights and spread constraints ask for. The move is
// judged once the division has settled (no share rejected, leaving or
// short of Ready) and has not changed for --rebalance-after; it must move
// --rebalance-margin percent of the replicas at least, and each cluster it
// grows in must have been Ready for --rebalance-after, with no NoExecute
// taint the Workload tolerates only for a while: hysteresis, so that a
// flapping cluster pulls nothing back and forth. It takes one place under
// --max-concurrent-moves for the whole move.
//
// Make-before-break: status.rebalancing records the division it goes to;
// each share that grows there is made (or grown) first, the others kept
// as they are; once every share holds its part of that division Ready,
// the others shrink to it (or go). Each share that grows is proven by the
// handshake like any other. A rejection, a share that must leave, or a
// change of the spec ends the move where it is: the division starts again
// from the shares as they are.

// Reasons of the Events of a move back.
const (
	reasonMovingBack event.Reason = "MovingBack"
	reasonMovedBack  event.Reason = "MovedBack"
)

// moveBack returns the division to apply while a move back is under way,
// or begins now, and otherwise d; and when to look again for one that
// waits out its window.
func (r *Reconciler) moveBack(s *divideScope, res *scheduler.Result, in scheduler.DivisionInput, d scheduler.Division) (scheduler.Division, time.Duration) {
	if mb := s.w.Status.Rebalancing; mb != nil {
		target := targetOf(s.w, mb)
		switch why := s.moveBackEnds(mb, target); {
		case why != "":
			s.w.Status.Rebalancing = nil
			r.writer.record.Event(s.w, event.Normal(reasonMovingBack, "the move back ends where it is: "+why))
			return d, 0
		case matches(s.shares, target):
			s.w.Status.Rebalancing = nil
			r.writer.record.Event(s.w, event.Normal(reasonMovedBack, "moved back: "+SharesText(target)))
			return d, 0
		}
		return movingDivision(s, target, mb), 0
	}
	target, why, wait := r.judgeMoveBack(s, res, in, d)
	if target == nil {
		return d, wait
	}
	if r.maxMoves > 0 {
		r.moveSlots.Lock()
		defer r.moveSlots.Unlock()
		if r.cache.Draining() >= r.maxMoves {
			// No place under --max-concurrent-moves: it looks again
			// later (a move back is never owed, and waits in no line).
			return d, rebalanceRetry
		}
	}
	mb := &v1alpha1.Rebalancing{Generation: s.w.Generation, Time: metav1.NewTime(s.now), Message: why}
	for _, sh := range target {
		mb.Shares = append(mb.Shares, v1alpha1.ClusterReplicas{Cluster: v1alpha1.ClusterReference{Name: sh.Cluster.Name, Namespace: sh.Cluster.Namespace}, Replicas: int32(sh.Replicas)})
	}
	s.w.Status.Rebalancing = mb
	r.cache.MovingBack(s.w.UID, s.orig.ResourceVersion)
	r.writer.record.Event(s.w, event.Normal(reasonMovingBack, "moving back: "+why))
	return movingDivision(s, targetOf(s.w, mb), mb), 0
}

// judgeMoveBack returns the division a settled spread Workload moves back
// to now, and why; or nil, and when to look again if it waits out a
// window.
func (r *Reconciler) judgeMoveBack(s *divideScope, res *scheduler.Result, in scheduler.DivisionInput, d scheduler.Division) ([]scheduler.Share, string, time.Duration) {
	w := s.w
	asked := rebalanceAsked(w, s.now)
	if !asked && w.Spec.Placement.Rebalance != v1alpha1.RebalanceWhenPreferred || w.Finished() || !s.settled(d) {
		return nil, "", 0
	}
	for key := range in.Current {
		if !slices.ContainsFunc(res.Ranked, func(c scheduler.ClusterScore) bool { return c.Cluster.Key == key }) {
			// A share's cluster not feasible now (cordoned, full): it
			// stays, as a placed Workload does, and so do the others.
			return nil, "", 0
		}
	}
	after, margin := r.rebalanceAfter, r.rebalanceMargin
	if asked {
		// placer rebalance: the operator asks now.
		after, margin = 0, 0
	}
	wait := after - s.now.Sub(w.Status.GetCondition(v1alpha1.TypeScheduled).LastTransitionTime.Time)
	if wait > 0 {
		return nil, "", wait
	}
	df, moved := Afresh(w, in, res)
	if df.Reason != "" || df.Unplaced > 0 || moved == 0 || moved*100 < margin*w.ReplicaCount() {
		return nil, "", 0
	}
	var grown []string
	for _, sh := range df.Shares {
		if sh.Replicas <= in.Current[sh.Cluster] {
			continue
		}
		ci := r.cache.Cluster(sh.Cluster)
		if ci == nil || ci.Ready.Status != corev1.ConditionTrue {
			return nil, "", 0
		}
		if leave, deadline := scheduler.MustLeave(w, ci, scheduler.ExecutionTolerations(w, r.defaultTolerations), s.now); leave != nil || deadline > 0 {
			// A NoExecute taint it tolerates only for a while: it would
			// have to leave again, back and forth.
			return nil, "", 0
		}
		wait = max(wait, after-s.now.Sub(ci.Ready.LastTransitionTime.Time))
		grown = append(grown, sh.Cluster.String())
	}
	if wait > 0 {
		return nil, "", wait
	}
	return df.Shares, fmt.Sprintf("the division it would be given afresh (%s) moves %d of its %d replicas, into %s, Ready for %s",
		SharesText(df.Shares), moved, w.ReplicaCount(), strings.Join(grown, ", "), after), 0
}

// Afresh is the division a spread Workload would be given afresh, as if
// it ran nowhere (no current shares, and each cluster's room with the
// replicas it holds there given back), over the cycle's feasible
// clusters, its shares in key order; and how
// many of its replicas a move there would move.
func Afresh(w *v1alpha1.Workload, in scheduler.DivisionInput, res *scheduler.Result) (d scheduler.Division, moved int) {
	fresh := in
	// The feasible clusters only: a cluster that holds a share but is not
	// feasible now takes none afresh.
	fresh.Ranked = res.Ranked
	fresh.Current = nil
	fresh.Room = maps.Clone(in.Room)
	for key, n := range in.Current {
		if room, ok := fresh.Room[key]; ok {
			fresh.Room[key] = room + n
		}
	}
	d = scheduler.Divide(fresh, PolicyOf(w))
	slices.SortFunc(d.Shares, func(a, b scheduler.Share) int { return byKey(a.Cluster, b.Cluster) })
	for _, sh := range d.Shares {
		moved += max(0, sh.Replicas-in.Current[sh.Cluster])
	}
	return d, moved
}

// settled reports whether nothing moves the spread Workload's shares now:
// none gives its replicas back, the division keeps each as it is, and
// each holds its replicas Ready.
func (s *divideScope) settled(d scheduler.Division) bool {
	if s.holding || len(s.gone)+len(s.kept)+len(s.waiting) > 0 || d.Reason != "" || d.Unplaced > 0 || len(d.Shares) != len(s.shares) {
		return false
	}
	for _, sh := range d.Shares {
		cur := s.shares[sh.Cluster]
		if cur == nil || cur.ReplicaCount() != sh.Replicas || !readyShare(cur, sh.Replicas) {
			return false
		}
	}
	return true
}

// readyShare reports whether a share holds n replicas Ready, as its
// present spec says.
func readyShare(sh *v1alpha1.Workload, n int) bool {
	return sh.Status.ReadyReplicas >= int32(n) && sh.Status.ObservedGeneration == sh.Generation
}

// moveBackEnds says why a move back under way ends before it is done
// (empty when it goes on).
func (s *divideScope) moveBackEnds(mb *v1alpha1.Rebalancing, target []scheduler.Share) string {
	if mb.Generation != s.w.Generation {
		return "the spec changed"
	}
	for _, key := range slices.SortedFunc(maps.Keys(s.gone), byKey) {
		return fmt.Sprintf("the share in %s gives its replicas back (%s)", key, s.gone[key])
	}
	for _, key := range slices.SortedFunc(maps.Keys(s.kept), byKey) {
		return fmt.Sprintf("%s reserved only %d of its share's %d replicas", key, s.kept[key].reserved, s.kept[key].of)
	}
	if len(target) == 0 {
		return "it records no division"
	}
	return ""
}

// movingDivision is the division while a move back is under way: every
// share at least as large as it is and as the target gives it, until each
// holds the target's part Ready; then the target.
func movingDivision(s *divideScope, target []scheduler.Share, mb *v1alpha1.Rebalancing) scheduler.Division {
	made := true
	for _, sh := range target {
		cur := s.shares[sh.Cluster]
		made = made && cur != nil && cur.ReplicaCount() >= sh.Replicas && readyShare(cur, sh.Replicas)
	}
	want := map[types.NamespacedName]int{}
	for _, sh := range target {
		want[sh.Cluster] = sh.Replicas
	}
	if !made {
		for key, cur := range s.shares {
			want[key] = max(want[key], cur.ReplicaCount())
		}
	}
	d := scheduler.Division{}
	for _, key := range slices.SortedFunc(maps.Keys(want), byKey) {
		if want[key] > 0 {
			d.Shares = append(d.Shares, scheduler.Share{Cluster: key, Replicas: want[key],
				Why: fmt.Sprintf("%d of %d replicas while it moves back: %s", want[key], s.w.ReplicaCount(), mb.Message)})
		}
	}
	return d
}

// targetOf is the division a move back goes to.
func targetOf(w *v1alpha1.Workload, mb *v1alpha1.Rebalancing) []scheduler.Share {
	out := make([]scheduler.Share, 0, len(mb.Shares))
	for _, cr := range mb.Shares {
		out = append(out, scheduler.Share{Cluster: w.ClusterKey(&cr.Cluster), Replicas: int(cr.Replicas)})
	}
	return out
}

// matches reports whether the shares are the division, each Ready.
func matches(shares map[types.NamespacedName]*v1alpha1.Workload, target []scheduler.Share) bool {
	n := 0
	for _, sh := range target {
		if sh.Replicas == 0 {
			continue
		}
		n++
		if cur := shares[sh.Cluster]; cur == nil || cur.ReplicaCount() != sh.Replicas || !readyShare(cur, sh.Replicas) {
			return false
		}
	}
	return n == len(shares)
}

// SharesText says a division: "default/a 4, default/b 4".
func SharesText(shares []scheduler.Share) string {
	parts := make([]string, len(shares))
	for i, sh := range shares {
		parts[i] = fmt.Sprintf("%s %d", sh.Cluster, sh.Replicas)
	}
	return strings.Join(parts, ", ")
}
