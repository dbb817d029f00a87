package propagator

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/propagator"
	"github.com/placer-dev/placer/scheduler"
)

// member returns the member of a cluster when its chaperons are watched
// and listed, or nil: a member that is not connected or not synced yet
// never blocks a worker.
func (r *Reconciler) member(key types.NamespacedName) cluster.Member {
	m := r.members.Member(key)
	if m == nil || !m.Synced() {
		return nil
	}
	return m
}

// gate keeps the chosen cluster's candidates and stops a chosen unit that
// may go no further (propagator.StageOf): a batch Workload that ran to its
// end, whose cluster, once deleted, is let go (what it left there goes,
// and the cluster's drain waits for that); a Workload moving
// StopBeforeStart, which never has two copies: nothing goes to the new
// cluster until every cluster left has confirmed that the pods there are
// gone.
func (r *Reconciler) gate(ctx context.Context, s *scope) (next, error) {
	w := s.w
	s.keep[s.target] = true
	switch propagator.StageOf(w) {
	case propagator.Finished:
		kc, err := r.cluster(ctx, s, s.target)
		if err != nil {
			return stop, err
		}
		if kc == nil || kc.DeletionTimestamp != nil {
			delete(s.keep, s.target)
		}
		return settle, nil
	case propagator.HeldForMove:
		var left []string
		for i := range w.Status.LeftClusters {
			if lc := &w.Status.LeftClusters[i]; w.LeftBehind(lc) {
				left = append(left, w.ClusterKey(&lc.Cluster).String())
			}
		}
		w.Status.Replicas, w.Status.ScheduledReplicas, w.Status.ReadyReplicas = 0, 0, 0
		w.Status.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonPending, fmt.Sprintf("move: StopBeforeStart: nothing is started in %s until %v confirm(s) that the pods there are gone", s.target, left), w.Generation))
		return settle, nil
	}
	return proceed, nil
}

// connectChosen finds the chosen cluster's member, connected and with its
// chaperons listed. Until then nothing is known of the chosen cluster, so
// nothing is started anywhere (no runner-up either) until its watch lists
// them, which brings the Workload back (OnSynced). One that never lists
// them (no agent, a watch its RBAC refuses, a cluster gone) times out like
// any handshake, counted from the placement there (Scheduled moves to
// True, or to another cluster); one the Workload was delivered to (the
// counts are the chosen cluster's: a rejection of it sets them to zero) is
// waited for: whether it is left is its Ready condition's and the
// Workload's tolerations' business.
func (r *Reconciler) connectChosen(ctx context.Context, s *scope) (next, error) {
	w := s.w
	if m := r.member(s.target); m != nil {
		s.chosen = &proof{unit: s.units[0], member: m}
		return proceed, nil
	}
	for _, u := range s.units[1:] {
		// Runner-ups already proving themselves stay.
		s.keep[u.Cluster] = true
	}
	if deliveredThere(w) {
		// Not connected, or withheld (its member has not shown it is
		// the cluster placer placed in): as for a chosen cluster that
		// does not answer (leave), Ready is Unknown while the cluster
		// is not Ready (or gone).
		kc, err := r.cluster(ctx, s, s.target)
		if err != nil {
			return stop, err
		}
		if kc == nil || kc.Status.GetCondition(xpv2.TypeReady).Status != corev1.ConditionTrue {
			w.Status.ReadyReplicas = 0
			w.Status.SetConditions(v1alpha1.ReadyUnknownOn(s.target.String(), w.Generation))
		}
	}
	if deliveredThere(w) || propagator.MayBindUnheld(w, s.units[0]) {
		// Delivered there, or a gang of one whose candidate there may
		// bind within its member's window: never given up on this
		// clock (design §4.9). The watch's first list brings it back;
		// a look at the handshake timeout is the safety net, not a poll.
		s.requeueAfter(r.timeout)
		return settle, nil
	}
	sc := w.Status.GetCondition(v1alpha1.TypeScheduled)
	if sc.Status != corev1.ConditionTrue || sc.LastTransitionTime.IsZero() {
		s.requeueAfter(r.timeout)
		return settle, nil
	}
	if age := r.started.age(w, s.target, nil); age < r.timeout {
		s.requeueAfter(r.timeout - age)
		return settle, nil
	}
	s.reject(s.target, v1alpha1.ReasonUnreachable, fmt.Sprintf("placer could not watch its PodChaperons in %s within %s: is placer's agent installed there, and may placer's identity list them?", s.target, r.timeout))
	return settle, nil
}

// admitChosen asks whether the chosen cluster admits the Workload (admit),
// and keeps the Workload as it is delivered there. A cluster committed
// already keeps what runs and takes nothing of the refused template
// (Hold); one not committed is rejected.
func (r *Reconciler) admitChosen(ctx context.Context, s *scope) (next, error) {
	p := s.chosen
	delivered, reason, msg, err := r.admit(ctx, s, s.target)
	if err != nil {
		return stop, err
	}
	// Being deleted (or gone, or its Secret gone: its connection kept a
	// moment for a drain): a choice made before the scheduler saw it
	// starts nothing there, where a gang of one's candidate would bind
	// while the drain finds nothing to wait for, then be abandoned with
	// the cluster. What is committed there goes on until the Workload
	// moves.
	closing := false
	if reason == "" {
		kc, err := r.cluster(ctx, s, s.target)
		if err != nil {
			return stop, err
		}
		reason, msg = closingMsg(kc, s.target)
		closing = reason != ""
	}
	if reason == "" {
		p.delivered = delivered
		return proceed, nil
	}
	committed, err := committedIn(ctx, p.member, s.w)
	switch {
	case err != nil:
		return stop, err
	case committed && closing:
		p.delivered = delivered
		return proceed, nil
	case committed:
		// Committed: what runs there keeps running, and nothing of
		// this template goes there.
		p.decision = propagator.Decision{Action: propagator.Hold, Reason: reason, Message: msg}
		refuseChange(s, reason, msg)
		return settle, nil
	}
	return r.rejectChosen(s, reason, msg)
}

// closingMsg says why nothing new goes to a cluster that is going: gone,
// being deleted, or its Secret gone (its connection is kept a moment, for
// a drain that may follow, not for new candidates); "" for none.
func closingMsg(kc *v1alpha1.KubernetesCluster, key types.NamespacedName) (reason, msg string) {
	switch {
	case kc == nil:
		return v1alpha1.ReasonClusterDeleted, fmt.Sprintf("cluster %s is gone", key)
	case kc.DeletionTimestamp != nil:
		return v1alpha1.ReasonClusterDeleted, fmt.Sprintf("cluster %s is being deleted", key)
	case kc.Status.GetCondition(xpv2.TypeReady).Reason == v1alpha1.ReasonSecretNotFound:
		return v1alpha1.ReasonSecretNotFound, fmt.Sprintf("the Secret of cluster %s is gone", key)
	}
	return "", ""
}

// rejectChosen rejects the chosen cluster in this reconcile: it has no
// proof, and runner-ups go on proving themselves.
func (r *Reconciler) rejectChosen(s *scope, reason, msg string) (next, error) {
	s.chosen = nil
	s.reject(s.target, reason, msg)
	return runnerUps, nil
}

// observeChosen reads what the chosen unit's candidates say (observe) and
// what the handshake does with them next (propagator.Decide): judge
// carries it out once what the pods need is there (dependencies) and the
// missing candidates are made (candidates). Proven, a unit whose
// candidate elsewhere may still bind waits for that cluster's word
// (settleLeftWindows, design §4.9).
func (r *Reconciler) observeChosen(ctx context.Context, s *scope) (next, error) {
	p := s.chosen
	p.openElsewhere = r.settleLeftWindows(ctx, s, p.member)
	if err := r.observe(ctx, p); err != nil {
		return r.refused(s, p, err)
	}
	d := propagator.Decide(p.unit, p.state, r.started.age(s.w, s.target, p.chaperons), r.timeout)
	if d.Action == propagator.Commit && len(p.openElsewhere) > 0 {
		// Proven, but a candidate elsewhere may still bind: the pods here
		// wait for that cluster's word (design §4.9).
		d = propagator.Decision{Action: propagator.Wait, Message: fmt.Sprintf(
			"every replica is reserved in %s; they bind once %v confirm(s) that the candidate there, which may bind without placer's word within its window, did not", s.target, p.openElsewhere)}
	}
	if d.Action == propagator.Commit && s.w.CommitHeld() {
		// A share of a Workload whose shares commit together: proven,
		// it waits for the others (the Workload lifts the hold).
		d = propagator.Decision{Action: propagator.Wait, Reason: v1alpha1.ReasonProven, Message: fmt.Sprintf(
			"every replica is reserved in %s; held until every share of %s is proven, then they bind together", s.target, s.w.Annotations[v1alpha1.AnnotationShareOf])}
	}
	p.decision = d
	return proceed, nil
}

// observeRunnerUps reads the candidates of the other nominated clusters
// while the chosen one is not committed (fan-out): they prove themselves
// meanwhile, so that if the chosen one rejects, the next choice commits at
// once. One that refuses the Workload (admission) is rejected; one that
// holds no candidate yet while its member holds as many waiting runner-up
// candidates as allowed gets none in this pass (runnerUpsFull).
func (r *Reconciler) observeRunnerUps(ctx context.Context, s *scope) (next, error) {
	if s.chosen.committed() {
		return proceed, nil
	}
	for _, u := range s.units[1:] {
		s.keep[u.Cluster] = true
		m := r.member(u.Cluster)
		if m == nil {
			continue
		}
		delivered, reason, msg, err := r.admit(ctx, s, u.Cluster)
		if err != nil {
			return stop, err
		}
		if reason != "" {
			s.reject(u.Cluster, reason, msg)
			continue
		}
		p := &proof{unit: u, member: m, delivered: delivered}
		if err := r.observe(ctx, p); err != nil {
			if n, err := r.refused(s, p, err); n == stop {
				return n, err
			}
			continue
		}
		if len(p.chaperons) == 0 && len(p.state.Missing) > 0 {
			// Fan-out is a head start, not a need: under a burst the
			// chosen cluster proves itself alone; a later pass of the
			// Workload (any change of its candidates) tries again.
			if full, err := r.runnerUpsFull(ctx, m); full || err != nil {
				if err != nil {
					return stop, err
				}
				continue
			}
		}
		p.decision = propagator.Decide(u, p.state, 0, r.timeout)
		s.runnerUps = append(s.runnerUps, p)
	}
	return proceed, nil
}

// observe reads the unit's candidates in its member (from its watch),
// deletes those fenced before a rejection the status holds already and
// those outside the unit, and records in p what the others say.
func (r *Reconciler) observe(ctx context.Context, p *proof) error {
	w, m := p.delivered, p.member
	chs, err := chaperonsOf(ctx, m, w)
	if err != nil {
		return err
	}
	if chs, err = r.replaceFencedBefore(ctx, m, w, chs); err != nil {
		return err
	}
	p.state, p.chaperons = propagator.ObserveUnit(w, p.unit, chs, m.TargetNamespace(w)), chs
	return deleteChaperons(ctx, m, w, p.state.Extra)
}

// refused turns a member's answer for a unit into its fate: a member that
// refuses it (a namespace not opened to the tenant, a dependency of that
// name that is not placer's) rejects the unit's cluster, unless the unit
// is committed there; any other error stops the reconcile. The chosen
// unit rejected, runner-ups still prove themselves.
func (r *Reconciler) refused(s *scope, p *proof, err error) (next, error) {
	reason, msg := "", ""
	var dp *deliveryProblem
	switch {
	case forbidden(err) && (p.unit.RunnerUp || p.state.Allowed == 0):
		// The member does not open the target namespace to this tenant.
		reason, msg = v1alpha1.ReasonForbidden, err.Error()
	case errors.As(err, &dp):
		reason, msg = dp.Reason, dp.Message
	default:
		return stop, err
	}
	if p.unit.RunnerUp {
		s.reject(p.unit.Cluster, reason, msg)
		return runnerUps, nil
	}
	return r.rejectChosen(s, reason, msg)
}

// candidates makes each unit's missing candidates in its member, as the
// Workload's tenant, once what their pods need is there (dependencies).
// In the chosen cluster a gang of one (a unit of one replica) and a
// replica added to a committed cluster need no hold (proof.bindsUnheld):
// their candidates bind as soon as they are reserved, saving the round
// trip of is-reserved and is-allowed; runner-ups of a fan-out always hold.
// A member that refuses them rejects the unit's cluster (refused).
func (r *Reconciler) candidates(ctx context.Context, s *scope) (next, error) {
	for _, p := range s.proofs() {
		if len(p.state.Missing) == 0 || p.problem != nil || p.needs.Holds() {
			continue
		}
		if p.delivered.Spec.Placement.Mode == v1alpha1.PlacementModeNoReservation && len(p.openElsewhere) > 0 && p.state.Allowed == 0 {
			// Nothing holds a NoReservation candidate: none is made while
			// a cluster left may still bind one (settleLeftWindows, whose
			// fence mark or look brings the Workload back).
			continue
		}
		if err := r.createCandidates(ctx, s, p); err != nil {
			if n, err := r.refused(s, p, err); n == stop {
				return n, err
			}
		}
	}
	return proceed, nil
}

// judge carries out what each unit's candidates decided (observeChosen,
// observeRunnerUps): the chosen cluster is waited for, asked to fence
// candidates that may still bind before it is rejected, rejected (an
// unschedulable candidate, a refusal or no answer within the timeout), or
// its earlier rejection is over (it took the candidates); a runner-up
// whose scheduler cannot place them, or that refuses them, is rejected (a
// runner-up never commits and never times out).
func (r *Reconciler) judge(ctx context.Context, s *scope) (next, error) {
	if p := s.chosen; p != nil {
		if err := r.judgeChosen(ctx, s, p); err != nil {
			return stop, err
		}
	}
	for _, p := range s.runnerUps {
		if d := p.decision; d.Action == propagator.Reject && !s.w.RejectedBy(p.unit.Cluster) {
			s.reject(p.unit.Cluster, d.Reason, d.Message)
		}
	}
	return proceed, nil
}

// judgeChosen carries out the chosen unit's decision.
func (r *Reconciler) judgeChosen(ctx context.Context, s *scope, p *proof) error {
	w, st, d := s.w, p.state, p.decision
	switch d.Action {
	case propagator.Wait:
		s.log.Debug("waiting for the candidates", "missing", len(st.Missing), "reserved", st.Reserved)
		s.requeueAfter(d.After)
		if d.Reason == v1alpha1.ReasonProven {
			// Proven, held to commit with the other shares: the cluster
			// took the candidates, as a commit says.
			s.tookCandidates()
		}
	case propagator.Fence:
		// Rejected once the member confirms that none of them can bind.
		s.log.Debug("fencing the candidates before rejecting the cluster", "reason", d.Reason, "windowed", len(st.Windowed))
		return r.giveUp(ctx, p.member, w, st.Windowed)
	case propagator.Reject:
		age := r.started.age(w, s.target, p.chaperons)
		r.started.forget(w, s.target)
		handshakeDuration.WithLabelValues("rejected").Observe(age.Seconds())
		s.rejectReserved(s.target, d.Reason, d.Message, st.Reserved)
		if len(st.Fenced) > 0 {
			// What was fenced goes once the status holds the rejection:
			// chosen again later, the cluster gets new candidates.
			s.fenced, s.fencedMember = st.Fenced, p.member
			s.event(event.Normal(reasonFenced, fmt.Sprintf("%s fenced %d candidate(s) (%s): they cannot bind there", s.target, len(st.Fenced), st.FencedWhy)))
		}
	case propagator.Commit, propagator.Deliver:
		s.tookCandidates()
	}
	return nil
}

// tookCandidates ends the chosen cluster's earlier rejection (expired, or
// it would not have been chosen): it took the candidates.
func (s *scope) tookCandidates() {
	s.w.Status.RejectedClusters = slices.DeleteFunc(s.w.Status.RejectedClusters, func(rc v1alpha1.RejectedCluster) bool {
		return s.w.ClusterKey(&rc.Cluster) == s.target
	})
}

// commit allows every reserved candidate of the chosen cluster once all
// are reserved: their pods bind.
func (r *Reconciler) commit(ctx context.Context, s *scope) (next, error) {
	p := s.chosen
	if p == nil || p.decision.Action != propagator.Commit {
		return proceed, nil
	}
	age := r.started.age(s.w, s.target, p.chaperons)
	r.started.forget(s.w, s.target)
	s.log.Info("every replica is reserved; committing", "replicas", p.unit.Count, "handshake", age)
	handshakeDuration.WithLabelValues("committed").Observe(age.Seconds())
	if n, err := r.recordCommit(ctx, s); n != proceed || err != nil {
		return n, err
	}
	if err := r.allow(ctx, p.member, s.w, p.state.ToAllow); err != nil {
		return stop, err
	}
	s.event(event.Normal(reasonCommitted, fmt.Sprintf("every replica is reserved in %s; committed", s.target)))
	return proceed, nil
}

// deliveredThere reports whether the status says the Workload was
// delivered to the chosen cluster: its counts are that cluster's, and
// some replica was counted there. Such a cluster is never given up on
// the handshake's clock (connectChosen).
func deliveredThere(w *v1alpha1.Workload) bool {
	return w.CountsChosen() && (w.Status.Replicas > 0 || w.Status.ScheduledReplicas > 0)
}

// recordCommit writes, before the commit's marks, that the chosen
// cluster is delivered to (its count, and the replicas), unless the
// status says so already: a commit whose own status write is lost (a
// manager killed after the marks, a write beaten by another writer) must
// still read as delivered, or a chosen cluster that stops answering
// before the next pass would be rejected on the handshake's clock
// (connectChosen) while its pods run, and the Workload placed again
// elsewhere. A gang of one's first commit (and a NoReservation
// unit's) is not recorded first: its candidates may bind unheld within
// their window, which connectChosen waits for (MayBindUnheld) and the
// member fences after. The pass's own
// write carries the same numbers, and more.
func (r *Reconciler) recordCommit(ctx context.Context, s *scope) (next, error) {
	w := s.orig
	if deliveredThere(w) || propagator.MayBindUnheld(w, s.chosen.unit) || s.chosen.unit.Count == 0 {
		// Said already, or nothing it could say: no replica to run.
		return proceed, nil
	}
	n, p := int32(s.chosen.unit.Count), s.chosen
	return r.writeFirst(ctx, s, func(w *v1alpha1.Workload) {
		w.Status.Replicas = max(w.Status.Replicas, n)
		w.SetCounted(s.target, n, nil)
		if p.delivered != nil && p.delivered.Spec.TargetService != nil {
			// The Service's namespace too, in the same write
			// (recordService).
			w.SetPlaced(s.target, p.member.TargetNamespace(p.delivered), true)
		}
	})
}

// createCandidates creates the unit's missing candidates as the
// Workload's tenant, holding unless they bind unheld.
func (r *Reconciler) createCandidates(ctx context.Context, s *scope, p *proof) error {
	w, m, st, chs, noHold := p.delivered, p.member, p.state, p.chaperons, p.bindsUnheld()
	cl, err := m.Tenant(w.Namespace)
	if err != nil {
		return err
	}
	ns := m.TargetNamespace(w)
	role := propagator.Held
	switch {
	case noHold:
		role = propagator.NoHold
	case p.unit.RunnerUp:
		role = propagator.RunnerUp
	}
	for n, i := range st.Missing {
		if !p.unit.RunnerUp && len(chs) == 0 && n == 0 {
			// The handshake starts now, on this clock.
			r.started.start(w, m.ClusterKey())
		}
		ch := propagator.NewChaperon(w, ns, i, role)
		if st.Allowed == 0 && propagator.MayBindUnheld(w, p.unit) {
			// Not committed yet: it may bind without is-allowed only
			// within the window its member enforces (design §4.9).
			propagator.SetBindWindow(ch, w, m.ClusterKey(), r.timeout)
		}
		if err := cl.Create(ctx, ch); resource.Ignore(kerrors.IsAlreadyExists, err) != nil {
			if len(chs) == 0 && n == 0 {
				// Nothing of it is there to bring it back: what was
				// copied for it goes now, once a live list confirms it
				// (a create that failed may have landed, and one made
				// a pass ago may not be in the watch yet: its pod
				// binds unheld, and needs what was copied).
				there, lerr := cluster.ConfirmedChaperons(ctx, m, w.UID, true)
				if lerr == nil && len(there) == 0 {
					lerr = releaseLeft(ctx, s, m)
				}
				if lerr != nil {
					return errors.Join(errors.Wrap(err, errCreateChaperon), lerr)
				}
			}
			return errors.Wrap(err, errCreateChaperon)
		}
	}
	// The first candidates in the chosen cluster get no Event, a write
	// less per Workload: Scheduled said where they go, and what follows
	// is told by Committed or Rejected (a held gang), or by the Ready
	// condition (a gang of one, NoReservation, which binds unheld). The
	// Event is for runner-ups, and for candidates added beside others (a
	// replacement, more replicas).
	if len(st.Missing) > 0 && (p.unit.RunnerUp || len(chs) > 0) {
		s.event(event.Normal(reasonCandidates, fmt.Sprintf("created %d candidate(s) in %s", len(st.Missing), m.ClusterKey())))
	}
	return nil
}

// runnerUpsFull reports whether the member holds as many runner-up
// candidates as --max-runner-up-candidates allows. The count comes from
// the watch, so workers creating at once may pass the bound by a few.
func (r *Reconciler) runnerUpsFull(ctx context.Context, m cluster.Member) (bool, error) {
	if r.maxRunnerUps <= 0 {
		return false, nil
	}
	n, err := m.HeldRunnerUps(ctx)
	if err != nil {
		return false, errors.Wrap(err, errListChaperons)
	}
	if n < r.maxRunnerUps {
		return false, nil
	}
	runnerUpsDeferred.Inc()
	return true, nil
}

// admit asks whether the cluster may receive the Workload's pods
// (validation.Admit: tenancy, a valid template, Pod Security), with the
// cluster and the namespace from the manager's cache. The scheduler's
// predicates decided the same when it placed the Workload; this holds for
// a later template and for an external scheduler's choice too.
// The template is judged once per generation, the namespace read once per
// reconcile.
//
// It also returns the Workload as it is delivered there: with the
// spec.overrides rules that select the cluster applied. A rule that
// cannot be applied there (an image that is no reference) refuses it,
// naming the rule.
func (r *Reconciler) admit(ctx context.Context, s *scope, key types.NamespacedName) (delivered *v1alpha1.Workload, reason, msg string, err error) {
	kc, err := r.cluster(ctx, s, key)
	if err != nil || kc == nil {
		// A cluster that is gone has no member either: nothing is sent.
		return s.w, "", "", err
	}
	delivered, applied, err := propagator.Overridden(s.w, scheduler.NewClusterInfo(kc))
	if err != nil {
		return nil, v1alpha1.ReasonInvalidOverride, err.Error(), nil
	}
	if len(applied) > 0 {
		s.log.Debug("overrides apply", "cluster", key.String(), "rules", applied)
	}
	if s.verdict == nil {
		ns := &corev1.Namespace{}
		if err := r.client.Get(ctx, types.NamespacedName{Name: s.w.Namespace}, ns); resource.IgnoreNotFound(err) != nil {
			return nil, "", "", errors.Wrap(err, errGetNamespace)
		}
		bound, err := r.boundBy(ctx, s.w.Namespace)
		if err != nil {
			return nil, "", "", err
		}
		s.verdict, s.namespaceLabels, s.bound = r.verdicts.For(s.w), ns.Labels, bound
	}
	verdict := s.verdict
	if delivered != s.w {
		// The pods there are the overridden ones: judged as such (an
		// override's annotations or resources may fail what the
		// template passes), once per generation and set of rules.
		verdict = r.verdicts.ForOverridden(delivered, applied)
	}
	reason, msg = verdict.Admit(kc, s.namespaceLabels, s.bound)
	return delivered, reason, msg, nil
}

// boundBy returns the cluster namespaces a management namespace's
// ClusterBindings bind, from the manager's cache.
func (r *Reconciler) boundBy(ctx context.Context, namespace string) (sets.Set[string], error) {
	cbs := &v1alpha1.ClusterBindingList{}
	if err := r.client.List(ctx, cbs, client.InNamespace(namespace)); err != nil {
		return nil, errors.Wrap(err, errListBindings)
	}
	return v1alpha1.BoundNamespaces(cbs.Items), nil
}

// refuseChange records that the committed cluster refuses the Workload's
// current pod template: Ready is False with the reason, and an Event.
func refuseChange(s *scope, reason, msg string) {
	msg = "the pod template of generation " + strconv.FormatInt(s.w.Generation, 10) + " is not rolled out: " + msg
	prev := s.w.Status.GetCondition(xpv2.TypeReady)
	s.w.Status.SetConditions(v1alpha1.NotReady(reason, msg, s.w.Generation))
	if prev.Message != msg {
		s.statusEvent(event.Warning(event.Reason(reason), errors.New(msg)))
	}
}

// allow marks reserved candidates is-allowed=true: their pods bind.
func (r *Reconciler) allow(ctx context.Context, m cluster.Member, w *v1alpha1.Workload, chs []*mcv1alpha1.PodChaperon) error {
	return patchChaperons(ctx, m, w, chs, mcv1alpha1.AnnotationIsAllowed, "true", errAllowChaperon)
}

// giveUp asks the member to fence candidates that may bind without
// is-allowed: its agent deletes their pods unless bound, and marks them
// fenced.
func (r *Reconciler) giveUp(ctx context.Context, m cluster.Member, w *v1alpha1.Workload, chs []*mcv1alpha1.PodChaperon) error {
	asked := slices.DeleteFunc(slices.Clone(chs), func(ch *mcv1alpha1.PodChaperon) bool { return ch.Annotations[mcv1alpha1.AnnotationGiveUp] == "true" })
	// A give-up asks the member to fence a candidate (design §4.9).
	return patchChaperons(ctx, m, w, asked, mcv1alpha1.AnnotationGiveUp, "true", errGiveUp)
}

// keepOneCopy takes the replace-lost mark off the chaperons of a Workload
// that moves StopBeforeStart (its move policy changed since they were
// made): their agent then never replaces a pod stuck on a lost node,
// which may still run. The mark is never added to chaperons made before
// it existed (the safe side), so nothing is written for them.
func keepOneCopy(ctx context.Context, m cluster.Member, w *v1alpha1.Workload, chs []*mcv1alpha1.PodChaperon) error {
	if w.Spec.Placement.Move != v1alpha1.MoveStopBeforeStart {
		return nil
	}
	marked := slices.DeleteFunc(slices.Clone(chs), func(ch *mcv1alpha1.PodChaperon) bool {
		return ch.Annotations[mcv1alpha1.AnnotationReplaceLost] != "true" || ch.DeletionTimestamp != nil
	})
	return patchChaperons(ctx, m, w, marked, mcv1alpha1.AnnotationReplaceLost, "", errKeepOneCopy)
}

// patchChaperons sets a mark (an annotation; "" removes it) on chaperons
// in a member, as the Workload's tenant, each by its UID
// (mcv1alpha1.MarkPatch): one gone meanwhile, or made again under its
// name, is no error, and is not marked.
func patchChaperons(ctx context.Context, m cluster.Member, w *v1alpha1.Workload, chs []*mcv1alpha1.PodChaperon, annotation, value, errPatch string) error {
	return asTenant(m, w, chs, func(cl client.Client, ch *mcv1alpha1.PodChaperon) error {
		err := cl.Patch(ctx, ch, client.RawPatch(types.MergePatchType, mcv1alpha1.MarkPatch(ch.UID, annotation, value)))
		if mcv1alpha1.MarkRefused(err) {
			return nil
		}
		return errors.Wrap(err, errPatch)
	})
}

// asTenant runs f on each chaperon with the client that acts in m as the
// Workload's tenant, stopping at the first error; none: nothing is asked.
func asTenant(m cluster.Member, w *v1alpha1.Workload, chs []*mcv1alpha1.PodChaperon, f func(client.Client, *mcv1alpha1.PodChaperon) error) error {
	if len(chs) == 0 {
		return nil
	}
	cl, err := m.Tenant(w.Namespace)
	if err != nil {
		return err
	}
	for _, ch := range chs {
		if err := f(cl, ch); err != nil {
			return err
		}
	}
	return nil
}

// settleLeftWindows looks, for a gang of one not yet committed in the
// chosen cluster, at the clusters its status says it left or was
// rejected by, where a candidate of it may still bind without placer's word
// (inside its bind window), and returns those: the chosen cluster's
// candidates wait for them. A cluster that answers is read live (a
// candidate made a moment ago may not be in its watch yet), asked to fence
// such candidates (give-up), and rid of those fenced. One that does not
// answer cannot say: StopBeforeStart waits for every cluster left anyway
// (gate), and with StartBeforeStop a candidate there that binds
// inside its window is a copy behind the partition, as a running one is
// (design §4.7), which goes once the cluster answers. A cluster that
// fails to answer here is waited for, and looked at again.
func (r *Reconciler) settleLeftWindows(ctx context.Context, s *scope, chosen cluster.Member) []types.NamespacedName {
	w := s.w
	if !propagator.MayBindUnheld(w, s.units[0]) {
		return nil
	}
	// A chosen cluster that stops being chosen is left or rejected
	// (runner-ups never bind unheld); only lately: a candidate made there
	// before that has had its whole window since (twice the handshake
	// timeout, on this clock, which wrote both times), and the member has
	// fenced it on its own.
	var others []types.NamespacedName
	lately := func(key types.NamespacedName, at *metav1.Time) {
		if (at == nil || time.Since(at.Time) < 2*r.timeout) && !slices.Contains(others, key) {
			others = append(others, key)
		}
	}
	for i := range w.Status.LeftClusters {
		lc := &w.Status.LeftClusters[i]
		lately(w.ClusterKey(&lc.Cluster), lc.Time)
	}
	for i := range w.Status.RejectedClusters {
		rc := &w.Status.RejectedClusters[i]
		lately(w.ClusterKey(&rc.Cluster), rc.Time)
	}
	if len(others) == 0 {
		return nil
	}
	if committed, err := committedIn(ctx, chosen, w); err != nil || committed {
		// Committed there (or not known: observe says why).
		return nil
	}
	var open []types.NamespacedName
	for _, key := range others {
		if key == s.target {
			continue
		}
		reach, m, err := r.reachOf(ctx, s, key)
		if err != nil || reach != answering {
			continue
		}
		may, err := r.settleIn(ctx, s, m)
		if err != nil {
			s.log.Info("cannot settle a bind window", "cluster", key.String(), "error", err)
		}
		if may {
			// Its fence mark (or its answer, once it answers again)
			// brings the Workload back; a look later is the net under a
			// broken watch.
			open = append(open, key)
			s.requeueAfter(cleanupRetry)
		}
	}
	return open
}

// settleIn reads the Workload's candidates in a member that answers, asks
// it to fence those that may still bind without placer's word, and
// deletes those it fenced; it reports whether some may still bind, and
// keeps the member (s.keep) meanwhile, so that nothing deletes them from
// under the fence.
func (r *Reconciler) settleIn(ctx context.Context, s *scope, m cluster.Member) (bool, error) {
	w := s.w
	chs, err := m.ChaperonsLive(ctx, w.UID)
	if err != nil {
		// Not known: held.
		return true, errors.Wrap(err, errListChaperons)
	}
	st := propagator.Observe(w, chs)
	if len(st.Windowed) > 0 {
		s.keep[m.ClusterKey()] = true
		return true, r.giveUp(ctx, m, w, st.Windowed)
	}
	// What is fenced cannot bind: whether it goes now or later (a
	// member that refuses the deletion) holds nothing.
	if len(st.Fenced) == 0 {
		return false, nil
	}
	if err := deleteChaperons(ctx, m, w, st.Fenced); err != nil {
		return false, err
	}
	s.event(event.Normal(reasonFenced, fmt.Sprintf("%s fenced %d candidate(s) (%s): they cannot bind there", m.ClusterKey(), len(st.Fenced), st.FencedWhy)))
	return false, nil
}

// replaceFencedBefore deletes the candidates fenced before a rejection
// the status holds already (propagator.FencedBefore), and returns the
// others: the replicas they stood for are made anew, with a whole window.
func (r *Reconciler) replaceFencedBefore(ctx context.Context, m cluster.Member, w *v1alpha1.Workload, chs []*mcv1alpha1.PodChaperon) ([]*mcv1alpha1.PodChaperon, error) {
	before := slices.DeleteFunc(slices.Clone(chs), func(ch *mcv1alpha1.PodChaperon) bool { return !propagator.FencedBefore(ch, w, m.ClusterKey()) })
	if len(before) == 0 {
		return chs, nil
	}
	if err := deleteChaperons(ctx, m, w, before); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(chs, func(ch *mcv1alpha1.PodChaperon) bool { return slices.Contains(before, ch) }), nil
}

// deleteFenced deletes the fenced candidates of a cluster this reconcile
// rejected, as the Workload's tenant.
func (r *Reconciler) deleteFenced(ctx context.Context, s *scope) error {
	return deleteChaperons(ctx, s.fencedMember, s.w, s.fenced)
}

// chaperonsOf lists the Workload's chaperons in m, from its watch.
func chaperonsOf(ctx context.Context, m cluster.Member, w *v1alpha1.Workload) ([]*mcv1alpha1.PodChaperon, error) {
	chs, err := m.Chaperons(ctx, w.UID)
	return chs, errors.Wrap(err, errListChaperons)
}

// committedIn reports whether the Workload holds allowed candidates in m
// (its watch says): what runs there keeps running.
func committedIn(ctx context.Context, m cluster.Member, w *v1alpha1.Workload) (bool, error) {
	chs, err := chaperonsOf(ctx, m, w)
	return err == nil && propagator.Observe(w, chs).Allowed > 0, err
}

// deleteChaperons deletes chaperons in m as the Workload's tenant, each
// only if it is still the one read (a chaperon of the same name made since
// is another candidate); one gone already is no error.
func deleteChaperons(ctx context.Context, m cluster.Member, w *v1alpha1.Workload, chs []*mcv1alpha1.PodChaperon) error {
	return asTenant(m, w, chs, func(cl client.Client, ch *mcv1alpha1.PodChaperon) error {
		if err := passGrace(ctx, cl, w, ch); err != nil {
			return err
		}
		err := cl.Delete(ctx, ch, client.Preconditions{UID: &ch.UID})
		return errors.Wrap(resource.Ignore(kerrors.IsConflict, resource.IgnoreNotFound(err)), errDeleteChaperon)
	})
}

// passGrace annotates a chaperon of a Workload being deleted with a
// deletion grace period (a proxy pod's,
// mcv1alpha1.AnnotationDeletionGracePeriod) before it is deleted: the
// agent deletes its Pod with it.
func passGrace(ctx context.Context, cl client.Client, w *v1alpha1.Workload, ch *mcv1alpha1.PodChaperon) error {
	grace, ok := mcv1alpha1.DeletionGrace(w)
	if !ok || w.DeletionTimestamp == nil {
		return nil
	}
	// Only a number, written by this process: never the annotation's text.
	graced := ch.DeepCopy()
	if !mcv1alpha1.SetDeletionGrace(graced, grace) {
		return nil
	}
	return errors.Wrap(resource.IgnoreNotFound(cl.Patch(ctx, graced, client.MergeFrom(ch))), errDeleteChaperon)
}

// handshakeStarts keeps when this process began each Workload's
// handshake in its chosen cluster (made its first candidates there), so
// that a handshake is timed on this process's clock alone, and a cluster
// chosen again gets its whole timeout. One entry per Workload: a new
// handshake replaces the last.
type handshakeStarts struct {
	mu sync.Mutex
	at map[types.NamespacedName]handshakeStart
}

type handshakeStart struct {
	uid     types.UID
	cluster types.NamespacedName
	at      time.Time
}

func workloadKey(w *v1alpha1.Workload) types.NamespacedName {
	return types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
}

func (h *handshakeStarts) start(w *v1alpha1.Workload, cluster types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at == nil {
		h.at = map[types.NamespacedName]handshakeStart{}
	}
	h.at[workloadKey(w)] = handshakeStart{uid: w.UID, cluster: cluster, at: time.Now()}
}

// started returns when the Workload's handshake in the cluster began, if
// this process began it.
func (h *handshakeStarts) started(w *v1alpha1.Workload, cluster types.NamespacedName) (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.at[workloadKey(w)]
	if !ok || e.uid != w.UID || e.cluster != cluster {
		return time.Time{}, false
	}
	return e.at, true
}

func (h *handshakeStarts) forget(w *v1alpha1.Workload, cluster types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.at[workloadKey(w)]; ok && e.cluster == cluster {
		delete(h.at, workloadKey(w))
	}
}

// forgetWorkload forgets the handshake of a Workload that is gone.
func (h *handshakeStarts) forgetWorkload(key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.at, key)
}

// age is how long the chosen cluster has been proving itself, on this
// process's clock: since it made the first candidates there; for a
// handshake begun before this process started, since the Workload was
// placed there (Scheduled's lastTransitionTime, which moves with
// status.clusterRef), so a runner-up promoted late gets its whole
// timeout. Only a Workload placed without a Scheduled condition (an
// external scheduler's) falls back to its candidates' age.
func (h *handshakeStarts) age(w *v1alpha1.Workload, cluster types.NamespacedName, chs []*mcv1alpha1.PodChaperon) time.Duration {
	at, ok := h.started(w, cluster)
	sc := w.Status.GetCondition(v1alpha1.TypeScheduled)
	placed := sc.Status == corev1.ConditionTrue && !sc.LastTransitionTime.IsZero()
	switch {
	case ok && placed:
		// A placement after the candidates were made (the cluster chosen
		// again) starts it anew too.
		return min(time.Since(at), time.Since(sc.LastTransitionTime.Time))
	case ok:
		return time.Since(at)
	case placed:
		return time.Since(sc.LastTransitionTime.Time)
	}
	return time.Since(oldest(chs))
}

// forbidden reports a write the member refused to the tenant's identity.
func forbidden(err error) bool { return err != nil && kerrors.IsForbidden(errors.Cause(err)) }

func oldest(chs []*mcv1alpha1.PodChaperon) time.Time {
	t := time.Now()
	for _, ch := range chs {
		if ch.CreationTimestamp.Time.Before(t) {
			t = ch.CreationTimestamp.Time
		}
	}
	return t
}
