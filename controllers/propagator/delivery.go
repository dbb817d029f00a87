package propagator

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/propagator"
)

// deliver keeps a committed cluster in line with the spec: new replicas'
// candidates are allowed as they are reserved (scale up), a template
// change rolls out within the strategy, the Service is delivered; and the
// counts and the Ready condition follow what the chosen cluster says.
func (r *Reconciler) deliver(ctx context.Context, s *scope) (next, error) {
	p := s.chosen
	if p == nil || p.decision.Action == propagator.Hold {
		return proceed, nil
	}
	st, d := p.state, p.decision
	switch {
	case d.Action == propagator.Reject, len(st.Missing) > 0 && p.problem == nil, unjudged(s, p):
		// Rejected, or candidates were just created or not yet judged by
		// the member: nothing to count yet.
		return proceed, nil
	case d.Action == propagator.Deliver && p.problem == nil:
		// What the pods need is there (dependencies): new replicas bind.
		if err := r.allow(ctx, p.member, s.w, st.ToAllow); err != nil {
			return stop, err
		}
		// A NoReservation candidate its member fenced when its window
		// ended, before the commit allowed it, goes: its replica is made
		// anew, allowed (the cluster is committed).
		if err := deleteChaperons(ctx, p.member, s.w, st.Fenced); err != nil {
			return stop, err
		}
		if err := keepOneCopy(ctx, p.member, s.w, p.chaperons); err != nil {
			return stop, err
		}
		if err := r.rollout(ctx, s, p); err != nil {
			return stop, err
		}
	}
	problem := p.problem
	if problem != nil {
		// Only the member can end it, and placer does not watch there.
		s.requeueAfter(v1alpha1.RejectionBackoffBase)
	}
	// Looked for by every pass that writes the counts (setCounts: their
	// observed generation says it looked), committed or not.
	r.dropStaleService(ctx, s, p.member, p.delivered)
	if p.committed() {
		if n, err := r.recordService(ctx, s, p); n != proceed || err != nil {
			return n, err
		}
		err := r.ensureService(ctx, p.member, p.delivered)
		if !errors.As(err, &problem) && err != nil {
			return stop, err
		}
		if err == nil && p.delivered.Spec.TargetService != nil {
			s.w.SetPlaced(s.target, p.member.TargetNamespace(p.delivered), true)
		}
		if err := r.leavePlaced(ctx, s, p); err != nil {
			return stop, err
		}
	}
	ready := setCounts(s.w, []propagator.Share{{Unit: p.unit, State: st}})
	if f := s.w.Status.GetCondition(v1alpha1.TypeComplete); f.Status == corev1.ConditionTrue {
		s.statusEvent(event.Normal(v1alpha1.ReasonCompleted, f.Message))
	} else if f := s.w.Status.GetCondition(v1alpha1.TypeFailed); f.Status == corev1.ConditionTrue {
		s.statusEvent(event.Warning(v1alpha1.ReasonReplicasFailed, errors.New(f.Message)))
	}
	if d.Action == propagator.Wait && d.Message != "" {
		// Waiting for what the counts do not show.
		ready = v1alpha1.NotReady(cmp.Or(d.Reason, v1alpha1.ReasonPending), d.Message, s.w.Generation)
	}
	if problem != nil {
		// One condition per reconcile: its transition time moves only
		// when it changes.
		ready = v1alpha1.NotReady(problem.Reason, problem.Error(), s.w.Generation)
		if prev := s.orig.Status.GetCondition(xpv2.TypeReady); prev.Reason != ready.Reason || prev.Message != ready.Message {
			s.statusEvent(event.Warning(event.Reason(problem.Reason), problem))
		}
	}
	s.w.Status.SetConditions(ready)
	return proceed, nil
}

// unjudged: a Workload's first handshake, whose candidates the member has
// not judged yet (none bound, refused, unschedulable or fenced), with
// nothing to wait for that the counts would not show. Its counts would say
// "0 of N ready" and no more than Scheduled does: no status is written
// until the member answers (the first Ready write is then the answer's),
// so a single-replica Workload costs two status writes, the decision and
// Ready (three with a Service in a namespace the status does not name
// yet: recordService). Nothing here is needed to resume: the next pass reads the
// chaperons again.
func unjudged(s *scope, p *proof) bool {
	st, d := p.state, p.decision
	if p.problem != nil || p.committed() || d.Action != propagator.Wait || d.Message != "" {
		return false
	}
	if st.Scheduled+st.Ready+st.Succeeded+st.Failed+st.Unplaceable > 0 || st.Unschedulable != "" || st.Refused != "" || len(st.Fenced) > 0 {
		return false
	}
	if len(s.orig.Status.ClusterCounts) > 0 || len(s.orig.Status.LeftClusters) > 0 {
		return false
	}
	for _, c := range s.orig.Status.Conditions {
		if c.Type == xpv2.TypeReady {
			return false
		}
	}
	return true
}

// rollout takes the next step of a pod template change in the committed
// cluster, within the strategy's maxSurge and maxUnavailable.
func (r *Reconciler) rollout(ctx context.Context, s *scope, p *proof) error {
	st := p.state
	w, m := p.delivered, p.member
	step := propagator.Rollout(w, p.unit, st)
	if len(step.Create)+len(step.Delete) == 0 {
		return nil
	}
	cl, err := m.Tenant(w.Namespace)
	if err != nil {
		return err
	}
	ns := m.TargetNamespace(w)
	for _, i := range step.Create {
		if err := cl.Create(ctx, propagator.NewChaperon(w, ns, i, propagator.NoHold)); resource.Ignore(kerrors.IsAlreadyExists, err) != nil {
			return errors.Wrap(err, errCreateChaperon)
		}
	}
	// A namespace the pods left (the target namespace changed) loses the
	// Service and the copies there with its last chaperons: first, while
	// those chaperons still bring the Workload back if this fails.
	for _, left := range emptied(p.chaperons, step.Delete, ns) {
		if err := leaveNamespace(ctx, cl, m, s.w, left); err != nil {
			return err
		}
		s.w.SetPlaced(s.target, left, false)
	}
	if err := deleteChaperons(ctx, m, w, step.Delete); err != nil {
		return err
	}
	s.log.Info("rolling update step", "started", len(step.Create), "removed", len(step.Delete))
	s.event(event.Normal(reasonReplacing, fmt.Sprintf("rolling update in %s: %d new pod(s) started, %d old pod(s) removed", s.target, len(step.Create), len(step.Delete))))
	return nil
}

// recordService records the target namespace among those placer put
// objects in, before the Workload's Service is made there, unless the
// status names it already (recordFirst's reason, for the Service: a
// write lost after it, then a change of the target namespace back, and
// the Workload's deletion, would leave it named nowhere). It costs a
// status write once per cluster and namespace, and none where the
// dependencies' record named the namespace first.
func (r *Reconciler) recordService(ctx context.Context, s *scope, p *proof) (next, error) {
	ns := p.member.TargetNamespace(p.delivered)
	if p.delivered.Spec.TargetService == nil || slices.Contains(s.orig.PlacedIn(s.target), ns) {
		return proceed, nil
	}
	return r.writeFirst(ctx, s, func(w *v1alpha1.Workload) { w.SetPlaced(s.target, ns, true) })
}

// setCounts writes the replica counts, summed over the units placed
// (propagator.Count), and returns the Ready condition they make. Once
// every replica's pod ended on its own it also sets Complete (all
// succeeded) or Failed (one or more failed).
func setCounts(w *v1alpha1.Workload, shares []propagator.Share) xpv2.Condition {
	c := propagator.Count(shares)
	w.Status.Replicas, w.Status.ScheduledReplicas, w.Status.ReadyReplicas = int32(c.Replicas), int32(c.Scheduled), int32(c.Ready)
	for _, sh := range shares {
		// The counts are the units' clusters' now (Workload.CountsChosen).
		w.SetCounted(sh.Unit.Cluster, int32(sh.Unit.Count), nil)
	}
	w.Status.Succeeded, w.Status.Failed = int32(c.Succeeded), int32(c.Failed)
	w.Status.ObservedGeneration = w.Generation
	if c.Ended {
		t, reason, msg := xpv2.ConditionType(v1alpha1.TypeComplete), v1alpha1.ReasonCompleted, fmt.Sprintf("all %d replicas succeeded in %s", c.Replicas, c.Clusters)
		if c.Failed > 0 {
			t, reason = v1alpha1.TypeFailed, v1alpha1.ReasonReplicasFailed
			msg = fmt.Sprintf("%d of %d replicas failed in %s (%s)", c.Failed, c.Replicas, c.Clusters, truncate(c.FailedMessage))
		}
		finished, ready := v1alpha1.Finished(t, reason, msg, w.Generation)
		w.Status.SetConditions(finished)
		return ready
	}
	msg := fmt.Sprintf("%d of %d replicas ready in %s", c.Ready, c.Replicas, c.Clusters)
	if c.Succeeded+c.Failed > 0 {
		msg += fmt.Sprintf(", %d succeeded, %d failed", c.Succeeded, c.Failed)
	}
	if c.Ready >= c.Replicas {
		return v1alpha1.Available(msg, w.Generation)
	}
	if c.Pending != "" {
		msg += "; a replica is pending: " + truncate(c.Pending)
	}
	return v1alpha1.NotReady(v1alpha1.ReasonPending, msg, w.Generation)
}

// leavePlaced cleans, in the committed cluster, the namespaces where the
// status says placer put something and where the pods no longer are (the
// target namespace changed, and the cleanup when the last of them left
// failed, or they went some other way), and forgets them.
func (r *Reconciler) leavePlaced(ctx context.Context, s *scope, p *proof) error {
	target := p.member.TargetNamespace(p.delivered)
	for _, ns := range s.w.PlacedIn(s.target) {
		if ns == target || slices.ContainsFunc(p.chaperons, func(ch *mcv1alpha1.PodChaperon) bool { return ch.Namespace == ns }) {
			continue
		}
		cl, err := p.member.Tenant(s.w.Namespace)
		if err != nil {
			return err
		}
		if err := leaveNamespace(ctx, cl, p.member, s.w, ns); err != nil {
			return err
		}
		s.w.SetPlaced(s.target, ns, false)
	}
	return nil
}

// dropStaleService deletes, without a spec.targetService, the Service
// placer made for an earlier spec: looked for once per spec change (the
// counts' observed generation says the pass that wrote them looked),
// never for a Workload whose spec never changed. A deletion that fails is
// said (an Event) and not tried again: it holds neither the counts nor
// Ready.
func (r *Reconciler) dropStaleService(ctx context.Context, s *scope, m cluster.Member, w *v1alpha1.Workload) {
	if w.Spec.TargetService != nil || w.Generation <= 1 || w.Status.ObservedGeneration == w.Generation {
		return
	}
	cl, err := m.Tenant(w.Namespace)
	if err == nil {
		err = dropService(ctx, cl, w, m.TargetNamespace(w))
	}
	if err != nil {
		s.statusEvent(event.Warning(reasonServiceLeft, errors.Wrapf(err, "spec.targetService was removed, but the Service made for it in %s stays", m.ClusterKey())))
	}
}

// reasonServiceLeft: a Service made for an earlier spec could not be
// deleted.
const reasonServiceLeft event.Reason = "ServiceLeft"

// ensureService delivers spec.targetService to the committed cluster as a
// Service named after the Workload, selecting its pods unless it says otherwise.
func (r *Reconciler) ensureService(ctx context.Context, m cluster.Member, w *v1alpha1.Workload) error {
	if w.Spec.TargetService == nil {
		return nil
	}
	cl, err := m.Tenant(w.Namespace)
	if err != nil {
		return err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: m.TargetNamespace(w), Name: w.ServiceName()}}
	_, err = controllerutil.CreateOrUpdate(ctx, cl, svc, func() error {
		if uid := svc.Labels[mcv1alpha1.LabelWorkloadUID]; !svc.CreationTimestamp.IsZero() && uid != string(w.UID) {
			// Not placer's, or another Workload's: never taken over.
			return &deliveryProblem{Reason: v1alpha1.ReasonNameConflict,
				Message: fmt.Sprintf("Service %s/%s exists in the cluster and was not created by placer for this Workload; it is left untouched", svc.Namespace, svc.Name)}
		}
		meta.AddLabels(svc, map[string]string{mcv1alpha1.LabelWorkloadUID: string(w.UID)})
		meta.AddAnnotations(svc, map[string]string{mcv1alpha1.AnnotationWorkload: w.Namespace + "/" + w.Name})
		want := w.Spec.TargetService.DeepCopy()
		if len(want.Selector) == 0 {
			want.Selector = w.Spec.TargetDeployment.Template.Labels
		}
		// Allocated by the member's API server, and immutable there.
		want.ClusterIP, want.ClusterIPs = svc.Spec.ClusterIP, svc.Spec.ClusterIPs
		if len(svc.Spec.IPFamilies) > 0 {
			want.IPFamilies, want.IPFamilyPolicy = svc.Spec.IPFamilies, svc.Spec.IPFamilyPolicy
		}
		svc.Spec = *want
		return nil
	})
	var problem *deliveryProblem
	if errors.As(err, &problem) {
		return problem
	}
	var status kerrors.APIStatus
	if (kerrors.IsInvalid(err) || kerrors.IsForbidden(err)) && errors.As(err, &status) {
		return &deliveryProblem{Reason: v1alpha1.ReasonServiceRefused, Message: "the cluster's API server refused the Service: " + truncate(status.Status().Message)}
	}
	return errors.Wrap(err, errApplyService)
}

// deliveryProblem is what keeps an object from being delivered to a member
// that no retry changes (shared.Problem).
type deliveryProblem = shared.Problem

// truncate cuts a member's message (shared.Truncate).
var truncate = shared.Truncate
