package scheduler

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/predicates"
	"github.com/placer-dev/placer/scheduler"
)

// A Divided or Duplicated Workload is placed as shares. One cycle ranks the
// clusters for it as for any Workload (the same profile, predicates and
// scores); scheduler.Divide splits its replicas over them; and each
// cluster's share is a Workload of its own, owned by it, pinned to the
// cluster by targetCluster and labelled compute.placer.dev/share-of, which
// the scheduler and the propagator place like any other: its own gang in
// the handshake, its dependencies, overrides and move policy. The
// Workload's status lists the shares (status.placements) and adds up
// their ready replicas. A share whose cluster rejected it, or that must
// leave its cluster, gives its replicas back to the division; the share
// that replaces it starts at once, and the old one goes once every share
// is Ready (make-before-break).

// annotationShareSpec, on a share, is the hash of the spec it was last
// given, so that a share is updated only when what it should be changes
// (the API server's defaults never make it differ).
const annotationShareSpec = "compute.placer.dev/share-spec"

// annotationShareReason, on a share, is why it has its share.
const annotationShareReason = "compute.placer.dev/share-reason"

// Reasons of the Events of a spread Workload.
const (
	reasonDivided     event.Reason = "Divided"
	reasonShareGone   event.Reason = "ShareRemoved"
	reasonShareKept   event.Reason = "ShareReduced"
	reasonCommitted   event.Reason = "Committed"
	reasonCannotShare event.Reason = "CannotDivide"
)

// divideScope is one reconcile of a spread Workload.
type divideScope struct {
	w, orig *v1alpha1.Workload
	// shares are its share Workloads, by cluster; stopping counts those
	// being deleted, not gone yet.
	shares   map[types.NamespacedName]*v1alpha1.Workload
	stopping int
	// done are the shares that ran to their end in a cluster since
	// deleted (setAside): out of the division, their replicas done.
	done map[types.NamespacedName]*v1alpha1.Workload
	// gone are the clusters whose share gives its replicas back, and why.
	gone map[types.NamespacedName]string
	// kept are the clusters whose share rejected some of its candidates
	// after it reserved others: the share keeps that many, and gives the
	// rest back.
	kept map[types.NamespacedName]keptShare
	// leaving are the shares that begin to leave their cluster for a
	// drain in this pass (the reason), each taking a place under
	// --max-concurrent-moves; waiting, those that wait for one (why).
	leaving, waiting map[types.NamespacedName]string
	// holding: the shares commit together (commit Together or
	// AllowPartial) and none has bound yet: new shares are held.
	holding bool
	// unplaced replicas found no room in the division.
	unplaced int
	// leaveAfter is when the first share tolerated on a cluster it must
	// leave must leave it, or a move back's window ends; zero when
	// neither.
	leaveAfter time.Duration
	// slotsHeld: this pass holds r.moveSlots (claimMoves);
	// claimedMoveBack: it began a move back, counted by the cache until
	// its record is written (writeSpread).
	slotsHeld, claimedMoveBack bool
	now                        time.Time
}

// retry is when to look again: after d, or sooner when a share's
// toleration, or a move back's window, ends.
func (s *divideScope) retry(d time.Duration) time.Duration {
	if s.leaveAfter > 0 {
		return min(d, s.leaveAfter)
	}
	return d
}

// lookAgain has the Workload looked at again after d at the latest.
func (s *divideScope) lookAgain(d time.Duration) {
	if s.leaveAfter == 0 || d < s.leaveAfter {
		s.leaveAfter = d
	}
}

// keptShare is what a share keeps of a rejected handshake.
type keptShare struct {
	// reserved of the share's replicas (its candidates its cluster did
	// reserve), and why the others went back.
	reserved, of int
	why          string
}

// reconcileDivision is the divider's reconcile: one spread Workload.
func (r *Reconciler) reconcileDivision(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cached := &v1alpha1.Workload{}
	if err := r.client.Get(ctx, req.NamespacedName, cached); err != nil {
		if kerrors.IsNotFound(err) {
			r.spreadWritten.Forget(req.NamespacedName)
		}
		return reconcile.Result{}, errors.Wrap(resource.IgnoreNotFound(err), errGetWorkload)
	}
	// Woken for a place under --max-concurrent-moves, it is looked at
	// now; one it did not take goes to the next in line.
	if r.shareWaiters.looked(req.NamespacedName) {
		defer func() {
			if !r.shareWaiters.waiting(req.NamespacedName) {
				r.wakeWaiters()
			}
		}()
	}
	// The divider's own last write, while the cache has not caught up:
	// a pass right after a rejection was recorded must see it.
	w := r.spreadWritten.Latest(req.NamespacedName, cached)
	if _, ok := r.profiles[w.Spec.SchedulerName]; !ok || w.DeletionTimestamp != nil || !w.Spreads() {
		if w.Status.Rebalancing != nil && w.DeletionTimestamp == nil {
			// A move back of a Workload placer divides no more (another
			// scheduler's now) ends where it is, and its place under
			// --max-concurrent-moves goes.
			s := &divideScope{w: w.DeepCopy(), orig: w}
			s.w.Status.Rebalancing = nil
			return r.writeSpread(ctx, s, reconcile.Result{})
		}
		return reconcile.Result{}, nil
	}
	return r.divide(ctx, w)
}

// divide places a Divided or Duplicated Workload through its shares.
func (r *Reconciler) divide(ctx context.Context, w *v1alpha1.Workload) (reconcile.Result, error) {
	s := &divideScope{w: w.DeepCopy(), orig: w, gone: map[types.NamespacedName]string{}, kept: map[types.NamespacedName]keptShare{},
		leaving: map[types.NamespacedName]string{}, waiting: map[types.NamespacedName]string{}, now: time.Now(),
		done: map[types.NamespacedName]*v1alpha1.Workload{}}
	if errs := r.verdicts.For(w).Errors(); len(errs) > 0 {
		s.w.Status.SetConditions(v1alpha1.NotScheduled(v1alpha1.ReasonInvalidTemplate, "invalid pod template: "+errs.ToAggregate().Error(), w.Generation))
		s.w.Status.Rebalancing = nil
		return r.writeSpread(ctx, s, reconcile.Result{})
	}
	var err error
	if s.shares, s.stopping, err = r.sharesOf(ctx, w); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.setAside(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	s.holding = holding(w, s.shares)
	if finished(s.all(), w.ReplicaCount()) {
		// A batch Workload whose every replica ran to its end: nothing
		// is divided again, or moved back.
		s.w.Status.Rebalancing = nil
		r.statusOfShares(s, nil)
		return r.writeSpread(ctx, s, reconcile.Result{})
	}
	r.giveBack(s)
	if !equality.Semantic.DeepEqual(s.w.Status.RejectedClusters, s.orig.Status.RejectedClusters) {
		// Recorded before the rejected share goes, and looked at again:
		// no pass may choose the cluster without seeing its rejection.
		return r.writeSpread(ctx, s, reconcile.Result{RequeueAfter: time.Millisecond})
	}
	letGo := r.claimMoves(s)
	defer letGo()
	p := r.profiles[w.Spec.SchedulerName]
	res := p.Schedule(ctx, s.w, r.cache.Snapshot(), scheduler.Options{Exclude: s.gone, State: r.cycleState(w)})
	in, known := r.divisionInput(s, res)
	if !known {
		// A share's cluster the scheduler's cache has not seen yet (the
		// manager just started): nothing is decided on half a fleet.
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	d, wait := r.moveBack(s, p, res, in, scheduler.Divide(in, s.policy()))
	if wait > 0 {
		s.lookAgain(wait)
	}
	if s.claimedMoveBack {
		// Its record first: the shares grow from it in the next pass.
		s.w.Status.SetConditions(v1alpha1.Scheduled(divisionMessage(s, d), w.Generation))
		return r.writeSpread(ctx, s, reconcile.Result{RequeueAfter: time.Millisecond})
	}
	if d.Reason != "" || len(d.Shares) == 0 && in.Replicas > 0 {
		why := d.Reason
		if len(res.Ranked) == 0 {
			why = res.Message()
		}
		s.w.Status.SetConditions(v1alpha1.NotScheduled(v1alpha1.ReasonUnschedulable, why, w.Generation))
		r.writer.record.Event(w, event.Warning(reasonCannotShare, errors.New(why)))
		r.statusOfShares(s, nil)
		return r.writeSpread(ctx, s, reconcile.Result{RequeueAfter: s.retry(nextRetry(s.w, s.now))})
	}
	// The shares that leave are marked first, and counted: no share grows
	// for a move the API does not record. Then the places are let go.
	err = r.markLeaving(ctx, s)
	letGo()
	if err == nil {
		err = r.applyShares(ctx, s, d)
	}
	if err != nil {
		// The status of what was written goes anyway; the error retries.
		_, werr := r.writeSpread(ctx, s, reconcile.Result{})
		return reconcile.Result{}, errors.Join(err, werr)
	}
	s.w.Status.SetConditions(v1alpha1.Scheduled(divisionMessage(s, d), w.Generation))
	if !s.orig.Status.GetCondition(v1alpha1.TypeScheduled).Equal(s.w.Status.GetCondition(v1alpha1.TypeScheduled)) {
		r.writer.record.Event(w, event.Normal(reasonDivided, s.w.Status.GetCondition(v1alpha1.TypeScheduled).Message))
	}
	// Again when a rejection's backoff ends, and now and then anyway.
	return r.writeSpread(ctx, s, reconcile.Result{RequeueAfter: s.retry(nextRetry(s.w, s.now))})
}

// sharesOf lists the Workload's shares, by cluster, but those being
// deleted, which stopping counts.
func (r *Reconciler) sharesOf(ctx context.Context, w *v1alpha1.Workload) (shares map[types.NamespacedName]*v1alpha1.Workload, stopping int, err error) {
	l := &v1alpha1.WorkloadList{}
	if err := r.client.List(ctx, l, client.InNamespace(w.Namespace), client.MatchingLabels{v1alpha1.LabelShareOf: v1alpha1.LabelValueOf(w.Name)}); err != nil {
		return nil, 0, errors.Wrap(err, "cannot list the Workload's shares")
	}
	shares = map[types.NamespacedName]*v1alpha1.Workload{}
	for i := range l.Items {
		sh := &l.Items[i]
		if !metav1.IsControlledBy(sh, w) || sh.Spec.TargetCluster == nil {
			continue
		}
		// A share being deleted is on its way out: what it still runs
		// counts for nothing here (its cluster's summary has its pods),
		// but the move that deleted it lasts until it is gone.
		if sh.DeletionTimestamp != nil {
			stopping++
			continue
		}
		shares[sh.ClusterKey(sh.Spec.TargetCluster)] = sh
	}
	return shares, stopping, nil
}

// setAside takes out of the division each share whose cluster the
// scheduler's cache does not hold and the manager's informer, synced
// before any pass, does not either (deleted; the scheduler's cache may
// not have taken in a new cluster yet): one that ran
// to its end is done work (done), its replicas not divided again; any
// other gives its replicas back, as one that must leave (gone). A drain lets a cluster go
// without moving what ran to its end there.
func (r *Reconciler) setAside(ctx context.Context, s *divideScope) error {
	for key, sh := range s.shares {
		if r.cache.Cluster(key) != nil {
			continue
		}
		err := r.client.Get(ctx, key, &v1alpha1.KubernetesCluster{})
		if !kerrors.IsNotFound(err) {
			if err != nil {
				return errors.Wrapf(err, "cannot read cluster %s, which holds share %s", key, sh.Name)
			}
			// Not in the cache yet: divisionInput waits for it.
			continue
		}
		if sh.Finished() && sh.Annotations[v1alpha1.AnnotationShareLeaving] == "" && !r.cache.IsShareLeaving(sh.UID) {
			s.done[key] = sh
			delete(s.shares, key)
			continue
		}
		// A share that had begun to leave (a drain) goes as it would
		// have: its replacement is under way, and its place under
		// --max-concurrent-moves ends with its deletion (or its end).
		s.gone[key] = "its cluster was deleted"
	}
	return nil
}

// policy is the division the Workload asks for, of what remains to
// divide: a spread constraint's minGroups counts each done share (in a
// cluster since deleted, whose domain is not known any more) as a group
// met, and asks no more groups than replicas remain.
func (s *divideScope) policy() scheduler.DivisionPolicy {
	p := PolicyOf(s.w)
	if len(s.done) == 0 {
		return p
	}
	for i := range p.Spread {
		if n := p.Spread[i].MinGroups; n > 0 {
			p.Spread[i].MinGroups = max(0, min(n-len(s.done), s.remaining()))
		}
	}
	return p
}

// all is every share, those set aside as done too.
func (s *divideScope) all() map[types.NamespacedName]*v1alpha1.Workload {
	if len(s.done) == 0 {
		return s.shares
	}
	out := maps.Clone(s.shares)
	maps.Copy(out, s.done)
	return out
}

// remaining is how many replicas the division divides: a Divided
// Workload's but those its done shares ran (each Duplicated share holds
// them all).
func (s *divideScope) remaining() int {
	n := s.w.ReplicaCount()
	if s.w.Spec.Placement.ReplicaScheduling.Type != v1alpha1.ReplicaSchedulingDivided {
		return n
	}
	for _, sh := range s.done {
		n -= sh.ReplicaCount()
	}
	return max(0, n)
}

// giveBack finds the shares whose replicas go back to the division: one
// its cluster rejected (the rejection, kept in the Workload's own status,
// keeps the cluster out until it expires, as for any Workload), and one
// that must leave its cluster (a NoExecute taint it does not tolerate, a
// drain, a deletion). A Divided share whose cluster reserved some of its
// candidates before it rejected the others gives back only the others:
// it keeps what its cluster proved it has room for.
func (r *Reconciler) giveBack(s *divideScope) {
	s.w.Status.RejectedClusters = slices.DeleteFunc(s.w.Status.RejectedClusters, func(rc v1alpha1.RejectedCluster) bool { return rc.Generation != s.w.Generation })
	divided := s.w.Spec.Placement.ReplicaScheduling.Type == v1alpha1.ReplicaSchedulingDivided
	for key, sh := range s.shares {
		if _, gone := s.gone[key]; gone {
			// Its cluster was deleted (setAside): what it reserved
			// there, or its rejection, says nothing now.
			continue
		}
		if rc := sh.Rejection(key); rc != nil && rc.Generation == sh.Generation {
			s.keepRejection(key, rc)
			if n := int(rc.Reserved); divided && n > 0 && n < sh.ReplicaCount() {
				s.kept[key] = keptShare{reserved: n, of: sh.ReplicaCount(), why: rc.Message}
				continue
			}
			s.gone[key] = "rejected the share: " + rc.Message
			continue
		}
		if why := sh.Annotations[v1alpha1.AnnotationShareLeaving]; why != "" || r.cache.IsShareLeaving(sh.UID) {
			// A move begun is finished, as a Workload's is: the mark
			// goes with the share (the cache may count it before this
			// copy shows it).
			s.gone[key] = "leaving its cluster (" + cmp.Or(why, "a drain") + ")"
			continue
		}
		ci := r.cache.Cluster(key)
		if ci == nil {
			continue
		}
		leave, after := scheduler.MustLeave(sh, ci, scheduler.ExecutionTolerations(sh, r.defaultTolerations), s.now)
		if after > 0 {
			// Tolerated for a while yet: looked at again when that ends.
			s.lookAgain(after)
		}
		if leave != nil {
			s.gone[key] = leave.Message
			if v1alpha1.IsDrain(leave.Reason) && sh.Annotations[v1alpha1.AnnotationShareLeaving] == "" {
				s.leaving[key] = leave.Reason
			}
		}
	}
}

// claimMoves takes a place under --max-concurrent-moves for each share
// that begins to leave its cluster for a drain, as a Workload's drain
// does; one for which none is free stays where it is (not gone), and the
// Workload waits in line: a move's end wakes it (wakeWaiters). Dividers
// claim one at a time, until they marked what they claimed (markLeaving)
// or gave up: the returned func lets the next one go.
func (r *Reconciler) claimMoves(s *divideScope) (unlock func()) {
	key := types.NamespacedName{Namespace: s.w.Namespace, Name: s.w.Name}
	if len(s.leaving) == 0 {
		r.shareWaiters.done(key)
		return func() {}
	}
	r.moveSlots.Lock()
	s.slotsHeld = true
	looked := r.cache.Draining()
	moving := looked
	for _, cl := range slices.SortedFunc(maps.Keys(s.leaving), v1alpha1.CompareKeys) {
		if r.maxMoves > 0 && moving >= r.maxMoves {
			s.waiting[cl] = fmt.Sprintf("must leave its cluster (%s), and waits: %d moves are under way, the most at once (--max-concurrent-moves)", s.gone[cl], moving)
			delete(s.gone, cl)
			delete(s.leaving, cl)
			continue
		}
		moving++
	}
	if len(s.waiting) > 0 {
		if r.beforeWait != nil {
			r.beforeWait()
		}
		r.shareWaiters.wait(key)
		r.wakeEndedSince(looked)
	} else {
		r.shareWaiters.done(key)
	}
	return sync.OnceFunc(r.moveSlots.Unlock)
}

// markLeaving marks the shares whose move was claimed (claimMoves), once
// the division placed their replicas elsewhere and before any share is
// written for it: from then on the move is under way, counted by the
// cache until the share goes or runs to its end, and it finishes as a
// Workload's does. No share grows for a move the API does not record.
func (r *Reconciler) markLeaving(ctx context.Context, s *divideScope) error {
	var errs []error
	for cl, reason := range s.leaving {
		sh := s.shares[cl]
		if sh == nil {
			continue
		}
		p := client.MergeFrom(sh.DeepCopy())
		meta.AddAnnotations(sh, map[string]string{v1alpha1.AnnotationShareLeaving: reason})
		if err := r.writes.Patch(ctx, sh, p); resource.IgnoreNotFound(err) != nil {
			errs = append(errs, errors.Wrapf(err, "cannot mark share %s leaving", sh.Name))
			continue
		}
		// Counted at once, before the informer brings the mark; not one
		// that ran to its end meanwhile (the patch's answer says), which
		// moves nothing and whose copy the informer may have brought
		// already.
		if !sh.Finished() {
			r.cache.ShareLeaving(sh.UID)
		}
	}
	return utilerrors.NewAggregate(errs)
}

// keepRejection records a share's rejection in the Workload's own status,
// where the cycle's HandshakeRejected predicate keeps the cluster out until
// it expires. A share is made anew after each rejection, so the Workload
// counts them: the backoff doubles from one share to the next.
func (s *divideScope) keepRejection(key types.NamespacedName, rc *v1alpha1.RejectedCluster) {
	prev := s.w.Rejection(key)
	if prev != nil && (rc.Time == nil || prev.Time != nil && !rc.Time.After(prev.Time.Time)) {
		return
	}
	own := *rc.DeepCopy()
	own.Generation = s.w.Generation
	if prev != nil {
		own.Attempts = max(own.Attempts, prev.Attempts+1)
		if own.Time != nil {
			own.RetryAfter = ptr.To(metav1.NewTime(own.Time.Add(v1alpha1.RejectionBackoff(own.Attempts))))
		}
	}
	s.w.Status.RejectedClusters = append(slices.DeleteFunc(s.w.Status.RejectedClusters, func(x v1alpha1.RejectedCluster) bool { return s.w.ClusterKey(&x.Cluster) == key }), own)
}

// divisionInput is what the division starts from: the shares that stay
// (not gone), a share that kept what its cluster reserved at that count.
func (r *Reconciler) divisionInput(s *divideScope, res *scheduler.Result) (in scheduler.DivisionInput, known bool) {
	current := map[types.NamespacedName]int{}
	for key, sh := range s.shares {
		if _, gone := s.gone[key]; !gone {
			current[key] = sh.ReplicaCount()
		}
		if k, ok := s.kept[key]; ok {
			current[key] = k.reserved
		}
	}
	total := 0
	for _, n := range current {
		total += n
	}
	if s.w.Spec.Placement.ReplicaScheduling.Type == v1alpha1.ReplicaSchedulingDivided && total > s.remaining() {
		// More than it asks for (a move back ended part way, a scale
		// down): a share short of Ready counts by its Ready replicas,
		// as a ReplicaSet removes its not-Ready pods first, so that no
		// Ready share shrinks for replicas that are not.
		// A batch replica that ran to its end counts as Ready. (Each
		// Duplicated share holds every replica: it is never more.)
		// A share whose cluster does not answer (its Ready Unknown,
		// within its toleration, or it would be leaving) is not known to
		// have lost any: it counts what it holds, as a placed Workload
		// stays.
		for key, n := range current {
			if sh := s.shares[key]; !sh.Finished() && !readyShare(sh, n) && !silentShare(sh) {
				current[key] = min(n, int(sh.Status.ReadyReplicas+sh.Status.Succeeded))
			}
		}
	}
	in, known = DivisionInput(s.w, res, current, slices.Collect(maps.Keys(s.kept)), r.cache.Cluster)
	in.Replicas = s.remaining()
	return in, known
}

// silentShare reports whether the share's cluster does not answer: the
// propagator says its Ready Unknown (ReadyUnknownOn) and its Ready
// replicas 0 then, not knowing how many run.
func silentShare(sh *v1alpha1.Workload) bool {
	c := sh.Status.GetCondition(xpv2.TypeReady)
	return c.Status == corev1.ConditionUnknown && c.Reason == v1alpha1.ReasonClusterUnreachable
}

// DivisionInput is what the division of a spread Workload starts from:
// the cycle's ranking, each ranked cluster's room for more of its
// replicas, and the replicas its shares hold now (current). A share stays
// where it is, as a placed Workload does, whatever the cycle says of its
// cluster now (full, a NoSchedule taint, a short outage): only a
// rejection or having to leave moves it. So a cluster holding a share is
// ranked, last, even when a filter fails it (found by cluster; known is
// false when one is not), and takes no more there, as a cluster in full
// (one whose handshake proved its room) does not either.
func DivisionInput(w *v1alpha1.Workload, res *scheduler.Result, current map[types.NamespacedName]int, full []types.NamespacedName,
	cluster func(types.NamespacedName) *scheduler.ClusterInfo) (in scheduler.DivisionInput, known bool) {
	known = true
	ranked := slices.Clone(res.Ranked)
	var held []types.NamespacedName
	for _, key := range slices.SortedFunc(maps.Keys(current), v1alpha1.CompareKeys) {
		if slices.ContainsFunc(ranked, func(c scheduler.ClusterScore) bool { return c.Cluster.Key == key }) {
			continue
		}
		ci := cluster(key)
		if ci == nil {
			known = false
			continue
		}
		ranked = append(ranked, scheduler.ClusterScore{Cluster: ci})
		held = append(held, key)
	}
	in = scheduler.DivisionInput{Replicas: w.ReplicaCount(), Ranked: ranked, Room: map[types.NamespacedName]int{}, Current: current}
	perReplica := scheduler.ReplicaRequests(w)
	for _, c := range res.Ranked {
		if room := scheduler.RoomFor(c.Cluster, perReplica); room >= 0 {
			in.Room[c.Cluster.Key] = room
		}
	}
	for _, key := range full {
		in.Room[key] = 0
	}
	for _, key := range held {
		// It keeps what it has, and takes no more; a Duplicated share
		// takes what scaling up adds to every share.
		in.Room[key] = 0
		if w.Spec.Placement.ReplicaScheduling.Type == v1alpha1.ReplicaSchedulingDuplicated {
			in.Room[key] = max(0, w.ReplicaCount()-current[key])
		}
	}
	return in, known
}

// PolicyOf is the division a spread Workload asks for.
func PolicyOf(w *v1alpha1.Workload) scheduler.DivisionPolicy {
	rs := w.Spec.Placement.ReplicaScheduling
	p := scheduler.DivisionPolicy{Mode: scheduler.Divided}
	if rs.Type == v1alpha1.ReplicaSchedulingDuplicated {
		p.Mode = scheduler.Duplicated
	}
	for _, sw := range rs.StaticWeights {
		sel := labels.SelectorFromSet(predicates.ResolveAliases(v1alpha1.Labels(sw.ClusterSelector)))
		p.StaticWeights = append(p.StaticWeights, scheduler.StaticWeight{Selector: sel, Weight: int64(sw.Weight)})
	}
	for _, sc := range rs.SpreadConstraints {
		p.Spread = append(p.Spread, scheduler.SpreadConstraint{TopologyKey: sc.TopologyKey, MinGroups: int(sc.MinGroups), MaxGroups: int(sc.MaxGroups)})
	}
	return p
}

// applyShares makes the shares the division says, and removes those it
// no longer has: at once when nothing of them is Ready, else once every
// share it has is Ready.
func (r *Reconciler) applyShares(ctx context.Context, s *divideScope, d scheduler.Division) error {
	want := map[types.NamespacedName]scheduler.Share{}
	allReady := true
	var errs []error
	for _, sh := range d.Shares {
		if k, ok := s.kept[sh.Cluster]; ok && s.shares[sh.Cluster].ReplicaCount() != sh.Replicas {
			sh.Why = fmt.Sprintf("%d of %d replicas: %s reserved %d of the %d candidates of its share, and rejected the others (%s); they were divided among the other clusters",
				sh.Replicas, s.w.ReplicaCount(), sh.Cluster.Name, k.reserved, k.of, k.why)
			r.writer.record.Event(s.w, event.Normal(reasonShareKept, fmt.Sprintf("share %s in %s keeps %d of its %d replicas, which %s reserved; the other %d are divided among the other clusters",
				s.shares[sh.Cluster].Name, sh.Cluster, sh.Replicas, k.of, sh.Cluster.Name, k.of-sh.Replicas)))
		}
		want[sh.Cluster] = sh
		cur, err := r.ensureShare(ctx, s.w, s.shares[sh.Cluster], sh, s.holding)
		if err != nil {
			// One share that cannot be written (its name taken by a
			// share still being deleted, or by another Workload) holds
			// neither the others nor the status.
			errs = append(errs, err)
			allReady = false
			continue
		}
		s.shares[sh.Cluster] = cur
		allReady = allReady && servesAll(cur, sh.Replicas)
	}
	for key, cur := range s.shares {
		if _, ok := want[key]; ok || cur.Status.ReadyReplicas > 0 && !allReady {
			continue
		}
		if err := r.writes.Delete(ctx, cur); resource.IgnoreNotFound(err) != nil {
			errs = append(errs, errors.Wrapf(err, "cannot delete share %s", cur.Name))
			continue
		}
		why := cmp.Or(s.gone[key], "the division gives it no share")
		r.writer.record.Event(s.w, event.Normal(reasonShareGone, fmt.Sprintf("removed share %s in %s: %s", cur.Name, key, why)))
		delete(s.shares, key)
	}
	if s.holding && len(errs) == 0 {
		errs = append(errs, r.commitTogether(ctx, s, d)...)
	}
	if !s.holding {
		// A hold left over (a release that failed half way, or the
		// policy changed to ShareByShare) goes.
		errs = append(errs, r.release(ctx, s, slices.Collect(maps.Keys(s.shares)))...)
	}
	s.unplaced = d.Unplaced
	r.statusOfShares(s, want)
	if len(errs) > 0 {
		err := utilerrors.NewAggregate(errs)
		r.writer.record.Event(s.w, event.Warning(reasonCannotShare, err))
		return err
	}
	return nil
}

// servesAll reports whether a share, as its spec is now, serves every
// replica of its part: each Ready, or run to its end (a batch replica
// that succeeded counts as Ready, as divisionInput counts it; a share
// that ran to its end has no Ready replica left, and must not hold the
// shares that leave). A share just changed (grown) serves nothing yet.
func servesAll(sh *v1alpha1.Workload, replicas int) bool {
	return sh.Generation == sh.Status.ObservedGeneration && (sh.Finished() || int(sh.Status.ReadyReplicas+sh.Status.Succeeded) >= replicas)
}

// ensureShare creates or updates the share of one cluster.
func (r *Reconciler) ensureShare(ctx context.Context, w *v1alpha1.Workload, cur *v1alpha1.Workload, sh scheduler.Share, hold bool) (*v1alpha1.Workload, error) {
	spec := shareSpec(w, sh)
	hash := specHash(spec, w.Labels)
	if cur != nil && cur.Annotations[annotationShareSpec] == hash {
		return cur, nil
	}
	if cur == nil {
		cur = &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: shareName(w, sh.Cluster)}}
		if hold {
			cur.Annotations = map[string]string{v1alpha1.AnnotationCommitHeld: "true"}
		}
	} else {
		cur = cur.DeepCopy()
	}
	cur.Labels = map[string]string{}
	for k, v := range w.Labels {
		cur.Labels[k] = v
	}
	cur.Labels[v1alpha1.LabelShareOf] = v1alpha1.LabelValueOf(w.Name)
	if cur.Annotations == nil {
		cur.Annotations = map[string]string{}
	}
	cur.Annotations[annotationShareSpec] = hash
	cur.Annotations[v1alpha1.AnnotationShareOf] = w.Name
	// Why it has its share, as said when the share was written: room
	// weights change with every pod anywhere, the share does not.
	cur.Annotations[annotationShareReason] = sh.Why
	cur.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Workload", Name: w.Name, UID: w.UID, Controller: ptr.To(true)}}
	cur.Spec = spec
	var err error
	if cur.ResourceVersion == "" {
		// Created with the propagator's finalizer, as its webhook would
		// add it (a share never spreads: shareSpec): the webhook's
		// matchConditions then spare the call.
		meta.AddFinalizer(cur, v1alpha1.FinalizerPropagator)
		err = r.writes.Create(ctx, cur)
		if kerrors.IsAlreadyExists(err) {
			// Its name taken by a Workload that is not one of this one's
			// shares (spread web on cluster x-y and web-x on y both
			// name theirs web-x-y; a user's web-east): the share takes
			// a name of its own. One of its own shares of that name (one
			// being deleted) is waited for, as before.
			err = r.createElsewhere(ctx, w, cur, sh.Cluster)
		}
	} else {
		err = r.writes.Update(ctx, cur)
	}
	return cur, errors.Wrapf(err, "cannot write share %s", cur.Name)
}

// holding reports whether the Workload's shares commit together and none
// has bound yet: none was let go of its hold (a share made before placer
// held shares has none, and counts as bound), and none has a pod bound.
func holding(w *v1alpha1.Workload, shares map[types.NamespacedName]*v1alpha1.Workload) bool {
	if w.CommitPolicyOf() == v1alpha1.CommitShareByShare {
		return false
	}
	for _, sh := range shares {
		if !sh.CommitHeld() || sh.Status.ScheduledReplicas > 0 || sh.Status.ReadyReplicas > 0 {
			return false
		}
	}
	return true
}

// provenShare reports whether a held share is proven: every replica of
// its present spec reserved in its cluster.
func provenShare(sh *v1alpha1.Workload) bool {
	c := sh.Status.GetCondition(xpv2.TypeReady)
	return c.Reason == v1alpha1.ReasonProven && c.ObservedGeneration == sh.Generation
}

// commitTogether lets every share go at once when each the division
// gives is proven: Together once every replica has a share, AllowPartial
// also when the replicas left over fit in no cluster.
func (r *Reconciler) commitTogether(ctx context.Context, s *divideScope, d scheduler.Division) []error {
	proven := 0
	for _, sh := range d.Shares {
		if cur := s.shares[sh.Cluster]; cur != nil && provenShare(cur) {
			proven++
		}
	}
	if proven < len(d.Shares) || d.Unplaced > 0 && s.w.CommitPolicyOf() != v1alpha1.CommitAllowPartial {
		return nil
	}
	keys := make([]types.NamespacedName, len(d.Shares))
	for i, sh := range d.Shares {
		keys[i] = sh.Cluster
	}
	errs := r.release(ctx, s, keys)
	if len(errs) == 0 {
		s.holding = false
		msg := fmt.Sprintf("every one of the %d shares is proven: they bind together", len(d.Shares))
		if d.Unplaced > 0 {
			msg = fmt.Sprintf("every one of the %d shares is proven, and %d replica(s) fit in no cluster: the proven shares bind (AllowPartial)", len(d.Shares), d.Unplaced)
		}
		r.writer.record.Event(s.w, event.Normal(reasonCommitted, msg))
	}
	return errs
}

// release takes the hold off the shares of those clusters that have one.
func (r *Reconciler) release(ctx context.Context, s *divideScope, clusters []types.NamespacedName) []error {
	var errs []error
	for _, key := range clusters {
		cur := s.shares[key]
		if cur == nil || cur.Annotations[v1alpha1.AnnotationCommitHeld] == "" {
			continue
		}
		p := client.MergeFrom(cur.DeepCopy())
		delete(cur.Annotations, v1alpha1.AnnotationCommitHeld)
		if err := r.writes.Patch(ctx, cur, p); resource.IgnoreNotFound(err) != nil {
			errs = append(errs, errors.Wrapf(err, "cannot let share %s commit", cur.Name))
		}
	}
	return errs
}

// shareSpec is the spec of a share: the Workload's, its replicas the
// share's, pinned to the share's cluster, spreading no further.
func shareSpec(w *v1alpha1.Workload, sh scheduler.Share) v1alpha1.WorkloadSpec {
	spec := *w.Spec.DeepCopy()
	spec.TargetCluster = &v1alpha1.ClusterReference{Name: sh.Cluster.Name, Namespace: sh.Cluster.Namespace}
	spec.TargetDeployment.Replicas = ptr.To(int32(sh.Replicas))
	spec.Placement.ReplicaScheduling = nil
	spec.Placement.FanOut = 1
	return spec
}

func specHash(spec v1alpha1.WorkloadSpec, labels map[string]string) string {
	b, _ := json.Marshal(struct {
		Spec   v1alpha1.WorkloadSpec
		Labels map[string]string
	}{spec, labels})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// shareName names a share after the Workload and its cluster: web-east;
// web-platform-east for a cluster of another namespace; the Workload's
// name cut short and a hash of the cluster where that would not be a valid
// name (a Service's, when the Workload has one).
func shareName(w *v1alpha1.Workload, cluster types.NamespacedName) string {
	name := w.Name + "-" + cluster.Name
	if cluster.Namespace != w.Namespace {
		name = w.Name + "-" + cluster.Namespace + "-" + cluster.Name
	}
	valid := len(validation.IsDNS1123Subdomain(name)) == 0
	if w.Spec.TargetService != nil {
		valid = len(validation.IsDNS1035Label(name)) == 0
	}
	if valid {
		return name
	}
	sum := sha256.Sum256([]byte(cluster.String()))
	return strings.TrimRight(w.Name[:min(len(w.Name), 54)], "-.") + "-" + hex.EncodeToString(sum[:4])
}

// createElsewhere creates the share cur, whose name is taken, under the
// name uniqueShareName gives it, unless the Workload of that name is a
// share of w's name in that cluster (w's own, or that of a Workload of
// w's name deleted and made again, being deleted: its successor waits, so
// that the two never run side by side in one cluster).
func (r *Reconciler) createElsewhere(ctx context.Context, w, cur *v1alpha1.Workload, cluster types.NamespacedName) error {
	taken := &v1alpha1.Workload{}
	if err := r.client.Get(ctx, client.ObjectKeyFromObject(cur), taken); err != nil {
		// Not in the cache yet (made a moment ago): the next pass sees it.
		return errors.Wrapf(err, "cannot write share %s: its name is taken, by a Workload not read yet", cur.Name)
	}
	if taken.Annotations[v1alpha1.AnnotationShareOf] == w.Name && taken.Spec.TargetCluster != nil && taken.ClusterKey(taken.Spec.TargetCluster) == cluster {
		// A share of this Workload's name in that cluster: its own, or
		// one of a Workload of that name deleted and made again, still
		// going.
		return errors.Errorf("cannot write share %s: the share of that name is still there, being deleted", cur.Name)
	}
	cur.Name = uniqueShareName(w, cluster)
	return r.writes.Create(ctx, cur)
}

// uniqueShareName is the name of a share whose own (shareName) is taken by
// a Workload that is not one of w's shares: w's name and a hash of w's
// name and the cluster's, which no other Workload's share takes.
func uniqueShareName(w *v1alpha1.Workload, cluster types.NamespacedName) string {
	sum := sha256.Sum256([]byte(w.Name + "/" + cluster.String()))
	return strings.TrimRight(w.Name[:min(len(w.Name), 50)], "-.") + "-" + hex.EncodeToString(sum[:6])
}

// finished reports whether every replica's share ran to its end.
func finished(shares map[types.NamespacedName]*v1alpha1.Workload, replicas int) bool {
	n := 0
	for _, sh := range shares {
		if !sh.Finished() {
			return false
		}
		n += sh.ReplicaCount()
	}
	return len(shares) > 0 && n >= replicas
}

// statusOfShares lists the shares in the Workload's status and adds up
// their replicas.
func (r *Reconciler) statusOfShares(s *divideScope, want map[types.NamespacedName]scheduler.Share) {
	st := &s.w.Status
	st.Placements, st.Replicas, st.ScheduledReplicas, st.ReadyReplicas, st.Succeeded, st.Failed = nil, 0, 0, 0, 0, 0
	for key, sh := range s.all() {
		p := v1alpha1.SharePlacement{Cluster: v1alpha1.ClusterReference{Name: key.Name, Namespace: key.Namespace}, Workload: sh.Name,
			Replicas: int32(sh.ReplicaCount()), ReadyReplicas: sh.Status.ReadyReplicas}
		switch _, ok := want[key]; {
		case s.done[key] != nil:
			p.Reason = fmt.Sprintf("%s in a cluster since deleted: its %d replica(s) count as done, and are not divided again",
				endReason(sh), sh.ReplicaCount())
		case s.waiting[key] != "":
			p.Reason = s.waiting[key]
		case ok:
			p.Reason = sh.Annotations[annotationShareReason]
		case sh.Finished():
			p.Reason = endReason(sh)
		case want == nil:
			p.Reason = "kept while no division meets the Workload's policy"
		default:
			p.Reason = "leaving once every other share is Ready: " + cmp.Or(s.gone[key], "the division gives it no share")
		}
		st.Placements = append(st.Placements, p)
		st.Replicas += sh.Status.Replicas
		st.ScheduledReplicas += sh.Status.ScheduledReplicas
		st.ReadyReplicas += sh.Status.ReadyReplicas
		st.Succeeded += sh.Status.Succeeded
		st.Failed += sh.Status.Failed
	}
	slices.SortFunc(st.Placements, func(a, b v1alpha1.SharePlacement) int { return strings.Compare(a.Workload, b.Workload) })
	st.Shares = sharesSummary(st.Placements)
	desired := int32(s.w.ReplicaCount())
	if s.w.Spec.Placement.ReplicaScheduling.Type == v1alpha1.ReplicaSchedulingDuplicated {
		desired *= int32(max(len(want), len(s.shares)))
	}
	st.ReadyOfDesired = fmt.Sprintf("%d/%d", st.ReadyReplicas, desired)
	st.ObservedGeneration = s.w.Generation
	if all := s.all(); want == nil && finished(all, s.w.ReplicaCount()) {
		t, reason, msg := xpv2.ConditionType(v1alpha1.TypeComplete), v1alpha1.ReasonCompleted, fmt.Sprintf("all %d replicas succeeded in %d share(s)", st.Succeeded, len(all))
		if st.Failed > 0 {
			t, reason, msg = v1alpha1.TypeFailed, v1alpha1.ReasonReplicasFailed, fmt.Sprintf("%d of %d replicas failed in %d share(s)", st.Failed, st.Succeeded+st.Failed, len(all))
		}
		fin, ready := v1alpha1.Finished(t, reason, msg, s.w.Generation)
		st.SetConditions(fin, ready)
		return
	}
	if s.holding && len(s.shares) > 0 {
		proven := 0
		for _, sh := range s.shares {
			if provenShare(sh) {
				proven++
			}
		}
		msg := fmt.Sprintf("%d of %d share(s) proven; the shares bind together once every one is (commit %s)", proven, len(s.shares), s.w.CommitPolicyOf())
		if s.unplaced > 0 {
			msg += fmt.Sprintf(", and once the %d replica(s) that find no room have a share", s.unplaced)
		}
		st.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonPending, msg, s.w.Generation))
		return
	}
	if st.ReadyReplicas >= desired && desired > 0 && len(s.shares) > 0 {
		st.SetConditions(v1alpha1.Available(fmt.Sprintf("%d of %d replicas Ready in %d share(s)", st.ReadyReplicas, desired, len(s.shares)), s.w.Generation))
	} else {
		st.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonPending, fmt.Sprintf("%d of %d replicas Ready in %d share(s)", st.ReadyReplicas, desired, len(st.Placements)), s.w.Generation))
	}
}

// endReason is how a share that ran to its end ended (its Complete or
// Failed condition's reason).
func endReason(sh *v1alpha1.Workload) string {
	return string(sh.Status.GetCondition(v1alpha1.TypeComplete).Reason + sh.Status.GetCondition(v1alpha1.TypeFailed).Reason)
}

// sharesSummary is status.shares: "east=6,west=6", by cluster name.
func sharesSummary(ps []v1alpha1.SharePlacement) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%s=%d", p.Cluster.Name, p.Replicas)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// writeSpread writes the spread Workload's status and returns res; after
// a conflict it looks again soon.
func (r *Reconciler) writeSpread(ctx context.Context, s *divideScope, res reconcile.Result) (reconcile.Result, error) {
	written, err := shared.PatchStatus(ctx, r.writes, r.client, s.w, s.orig)
	if s.claimedMoveBack {
		// The move back's place: kept from the written copy on, or given
		// back (to one waiting for it) when its record was not written.
		if written == shared.StatusWritten {
			r.cache.KeepMovingBack(s.w.UID, s.w.ResourceVersion)
		} else {
			r.cache.ForgetMovingBack(s.w.UID)
			r.wakeWaiters()
		}
	}
	switch {
	case err != nil:
		return reconcile.Result{}, err
	case written == shared.StatusWritten:
		r.spreadWritten.Remember(s.w)
	case written == shared.StatusConflict, written == shared.StatusSuperseded:
		return reconcile.Result{RequeueAfter: shared.ConflictRetry}, nil
	}
	return res, nil
}

// divisionMessage says how the replicas were divided, or where they move
// back to. It says nothing that changes while the division does not (how
// many clusters are feasible now, say): its time is when the division
// last changed, which a move back waits on.
func divisionMessage(s *divideScope, d scheduler.Division) string {
	if mb := s.w.Status.Rebalancing; mb != nil {
		return fmt.Sprintf("moving back to %s: %s; the shares that grow are made first, the others shrink once they are Ready", SharesText(targetOf(s.w, mb)), mb.Message)
	}
	byCluster := slices.Clone(d.Shares)
	slices.SortFunc(byCluster, func(a, b scheduler.Share) int { return v1alpha1.CompareKeys(a.Cluster, b.Cluster) })
	msg := fmt.Sprintf("divided %d replicas over %d cluster(s): %s", s.remaining(), len(d.Shares), SharesText(byCluster))
	if len(s.done) > 0 {
		var done []scheduler.Share
		for key, sh := range s.done {
			done = append(done, scheduler.Share{Cluster: key, Replicas: sh.ReplicaCount()})
		}
		slices.SortFunc(done, func(a, b scheduler.Share) int { return v1alpha1.CompareKeys(a.Cluster, b.Cluster) })
		msg += fmt.Sprintf("; shares that ran to their end in clusters since deleted: %s", SharesText(done))
	}
	if d.Unplaced > 0 {
		msg += fmt.Sprintf("; %d replica(s) found no room and wait for a cluster to open up", d.Unplaced)
	}
	return msg
}
