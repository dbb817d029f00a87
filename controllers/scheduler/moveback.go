package scheduler

import (
	"cmp"
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
// The clusters are ranked afresh by what the Workload prefers (its scores
// but the room's, as for a Single Workload's move back), a cluster that
// holds a share first among equals: which cluster happens to be emptier
// breaks no tie, so a move back is not undone by the next. A Workload
// weighed by room moves back only into a cluster it is not in (after a
// failover, the one it fled): its weights change with the fleet's load,
// and a move back does not chase the load.
//
// Make-before-break: status.rebalancing records the division it goes to;
// each share that grows there is made (or grown) first, the others kept
// as they are; once every share holds its part of that division Ready,
// the others shrink to it (or go). Each share that grows is proven by the
// handshake like any other. A rejection, a share that must leave (or
// waits for a place to), a change of the spec, or moveBackDeadline without
// the grown shares Ready ends the move where it is: the division starts
// again from the shares as they are. While the shares hold more replicas
// than the Workload asks for (a move ended part way, a scale down), the
// division counts a share short of Ready by its Ready replicas, as a
// ReplicaSet removes its not-Ready pods first: no Ready share shrinks for
// replicas that are not.

// Reasons of the Events of a move back.
const (
	reasonMovingBack    event.Reason = "MovingBack"
	reasonMovedBack     event.Reason = "MovedBack"
	reasonMoveBackEnded event.Reason = "MoveBackEnded"
)

// moveBackDeadline bounds how long a move back waits for the shares it
// grows to be Ready before it ends where it is.
const moveBackDeadline = 10 * time.Minute

// moveBack returns the division to apply while a move back is under way,
// or begins now, and otherwise d; and when to look again for one that
// waits out its window.
func (r *Reconciler) moveBack(s *divideScope, p *scheduler.Profile, res *scheduler.Result, in scheduler.DivisionInput, d scheduler.Division) (scheduler.Division, time.Duration) {
	if mb := s.w.Status.Rebalancing; mb != nil {
		target := targetOf(s.w, mb)
		// Done once the shares it shrank away are gone too: until then
		// their old copies still run, and the move holds its place
		// under --max-concurrent-moves, as a drain's does; but no longer
		// than its deadline (a share whose cluster does not answer stays
		// being deleted until it does).
		if matches(s.shares, target) && (s.stopping == 0 || s.now.Sub(mb.Time.Time) >= moveBackDeadline) {
			s.w.Status.Rebalancing = nil
			r.writer.record.Event(s.w, event.Normal(reasonMovedBack, "moved back: "+SharesText(target)))
			return d, 0
		}
		if why := s.moveBackEnds(mb, target); why != "" {
			// d counts the shares it grew by their Ready replicas
			// (divisionInput): no Ready share shrinks for them.
			s.w.Status.Rebalancing = nil
			r.writer.record.Event(s.w, event.Normal(reasonMoveBackEnded, "the move back ends where it is: "+why))
			return d, 0
		}
		return movingDivision(s, target, mb), moveBackDeadline - s.now.Sub(mb.Time.Time)
	}
	target, why, wait := r.judgeMoveBack(s, p, res, in, d)
	if target == nil {
		return d, wait
	}
	if r.maxMoves > 0 {
		if !s.slotsHeld {
			r.moveSlots.Lock()
			defer r.moveSlots.Unlock()
		}
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
	// Counted at once, under the lock; writeSpread keeps the count once
	// the record is written, and forgets it if the write fails. Nothing
	// is applied before the record is written (claimedMoveBack): the
	// next pass grows the shares from it.
	r.cache.MovingBack(s.w.UID, s.orig.ResourceVersion)
	s.claimedMoveBack = true
	r.writer.record.Event(s.w, event.Normal(reasonMovingBack, "moving back: "+why))
	return movingDivision(s, targetOf(s.w, mb), mb), 0
}

// judgeMoveBack returns the division a settled spread Workload moves back
// to now, and why; or nil, and when to look again if it waits out a
// window.
func (r *Reconciler) judgeMoveBack(s *divideScope, p *scheduler.Profile, res *scheduler.Result, in scheduler.DivisionInput, d scheduler.Division) ([]scheduler.Share, string, time.Duration) {
	w := s.w
	asked := rebalanceAsked(w, s.now)
	if !asked && w.Spec.Placement.Rebalance != v1alpha1.RebalanceWhenPreferred || w.Finished() || !s.settled(d) {
		return nil, "", 0
	}
	feasible := make(map[types.NamespacedName]bool, len(res.Ranked))
	for _, c := range res.Ranked {
		feasible[c.Cluster.Key] = true
	}
	for key := range in.Current {
		if !feasible[key] {
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
	df, moved := Afresh(w, p, in, res)
	if WorthMoving(w, in, df, moved, margin, asked) != "" {
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
// it ran nowhere: no current shares, each cluster's room with the
// replicas it holds there given back, over the cycle's feasible clusters
// ranked by preference (its scores but the room's), a cluster that holds
// a share first among equals; its shares in key order. moved is how many
// of its replicas a move there would move.
func Afresh(w *v1alpha1.Workload, p *scheduler.Profile, in scheduler.DivisionInput, res *scheduler.Result) (d scheduler.Division, moved int) {
	fresh := in
	// The feasible clusters only: a cluster that holds a share but is not
	// feasible now takes none afresh.
	fresh.Ranked = slices.Clone(res.Ranked)
	pref := make(map[types.NamespacedName]int64, len(fresh.Ranked))
	for _, c := range fresh.Ranked {
		pref[c.Cluster.Key] = preference(p, c)
	}
	slices.SortStableFunc(fresh.Ranked, func(a, b scheduler.ClusterScore) int {
		if c := cmp.Compare(pref[b.Cluster.Key], pref[a.Cluster.Key]); c != 0 {
			return c
		}
		_, ha := in.Current[a.Cluster.Key]
		_, hb := in.Current[b.Cluster.Key]
		switch {
		case ha && !hb:
			return -1
		case hb && !ha:
			return 1
		}
		return 0
	})
	fresh.Current = nil
	fresh.Room = maps.Clone(in.Room)
	for key, n := range in.Current {
		if room, ok := fresh.Room[key]; ok {
			fresh.Room[key] = room + n
		}
	}
	d = scheduler.Divide(fresh, PolicyOf(w))
	slices.SortFunc(d.Shares, func(a, b scheduler.Share) int { return v1alpha1.CompareKeys(a.Cluster, b.Cluster) })
	for _, sh := range d.Shares {
		moved += max(0, sh.Replicas-in.Current[sh.Cluster])
	}
	return d, moved
}

// WorthMoving says why a spread Workload does not move back to the
// division it would be given afresh (Afresh), empty when it does: that
// division must be whole, move margin percent of its replicas, and, for a
// Workload weighed by room (unless placer rebalance asked), give a share
// to a cluster it is not in.
func WorthMoving(w *v1alpha1.Workload, in scheduler.DivisionInput, df scheduler.Division, moved, margin int, asked bool) string {
	switch {
	case df.Reason != "" || df.Unplaced > 0:
		return "no division afresh holds every replica"
	case moved == 0:
		return "the division afresh is the one it has"
	case moved*100 < margin*w.ReplicaCount():
		return fmt.Sprintf("the division afresh moves %d of its %d replicas, fewer than %d%%", moved, w.ReplicaCount(), margin)
	}
	rs := w.Spec.Placement.ReplicaScheduling
	byRoom := false
	for _, sh := range df.Shares {
		_, known := in.Room[sh.Cluster]
		byRoom = byRoom || known
	}
	if asked || rs.Type == v1alpha1.ReplicaSchedulingDuplicated || len(rs.StaticWeights) > 0 || !byRoom {
		// placer rebalance asks whatever the load; static weights, and
		// a room no request bounds, do not change with it.
		return ""
	}
	for _, sh := range df.Shares {
		if in.Current[sh.Cluster] == 0 {
			return ""
		}
	}
	return "weighed by room, it moves back only into a cluster it is not in (placer rebalance moves it whatever the load), and the division afresh has none"
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
	for _, key := range slices.SortedFunc(maps.Keys(s.gone), v1alpha1.CompareKeys) {
		return fmt.Sprintf("the share in %s gives its replicas back (%s)", key, s.gone[key])
	}
	for _, key := range slices.SortedFunc(maps.Keys(s.kept), v1alpha1.CompareKeys) {
		return fmt.Sprintf("%s reserved only %d of its share's %d replicas", key, s.kept[key].reserved, s.kept[key].of)
	}
	for _, key := range slices.SortedFunc(maps.Keys(s.waiting), v1alpha1.CompareKeys) {
		// Its place under --max-concurrent-moves goes to the drain.
		return fmt.Sprintf("the share in %s must leave its cluster", key)
	}
	if len(target) == 0 {
		return "it records no division"
	}
	for _, sh := range target {
		if s.done[sh.Cluster] != nil {
			return fmt.Sprintf("%s, which it moves to, was deleted", sh.Cluster)
		}
	}
	if !made(s.shares, target) && s.now.Sub(mb.Time.Time) >= moveBackDeadline {
		return fmt.Sprintf("the shares it grows are not Ready after %s", moveBackDeadline)
	}
	return ""
}

// made reports whether every share of the division a move back goes to
// holds its part of it Ready.
func made(shares map[types.NamespacedName]*v1alpha1.Workload, target []scheduler.Share) bool {
	for _, sh := range target {
		if cur := shares[sh.Cluster]; sh.Replicas > 0 && (cur == nil || cur.ReplicaCount() < sh.Replicas || !readyShare(cur, sh.Replicas)) {
			return false
		}
	}
	return true
}

// movingDivision is the division while a move back is under way: every
// share at least as large as it is and as the target gives it, until each
// holds the target's part Ready (made); then the target.
func movingDivision(s *divideScope, target []scheduler.Share, mb *v1alpha1.Rebalancing) scheduler.Division {
	want := map[types.NamespacedName]int{}
	for _, sh := range target {
		want[sh.Cluster] = sh.Replicas
	}
	if !made(s.shares, target) {
		for key, cur := range s.shares {
			want[key] = max(want[key], cur.ReplicaCount())
		}
	}
	d := scheduler.Division{}
	for _, key := range slices.SortedFunc(maps.Keys(want), v1alpha1.CompareKeys) {
		if want[key] > 0 {
			d.Shares = append(d.Shares, scheduler.Share{Cluster: key, Replicas: want[key],
				Why: fmt.Sprintf("%d of %d replicas, its part of the division it moved back to: %s", want[key], s.w.ReplicaCount(), mb.Message)})
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

// matches reports whether the shares are the division, each Ready: made,
// and no share larger than its part or outside it.
func matches(shares map[types.NamespacedName]*v1alpha1.Workload, target []scheduler.Share) bool {
	n := 0
	for _, sh := range target {
		if cur := shares[sh.Cluster]; sh.Replicas > 0 {
			n++
			if cur != nil && cur.ReplicaCount() != sh.Replicas {
				return false
			}
		}
	}
	return n == len(shares) && made(shares, target)
}

// SharesText says a division: "default/a 4, default/b 4".
func SharesText(shares []scheduler.Share) string {
	parts := make([]string, len(shares))
	for i, sh := range shares {
		parts[i] = fmt.Sprintf("%s %d", sh.Cluster, sh.Replicas)
	}
	return strings.Join(parts, ", ")
}
