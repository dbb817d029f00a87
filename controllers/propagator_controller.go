package controllers

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/apis/compute/validation"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/propagator"
	"github.com/placer-dev/placer/scheduler"
)

const (
	finalizer = "compute.placer.dev/propagator"

	errListChaperons  = "cannot list PodChaperons"
	errCreateChaperon = "cannot create PodChaperon"
	errAllowChaperon  = "cannot allow PodChaperon"
	errDeleteChaperon = "cannot delete PodChaperon"
	errFinalizer      = "cannot patch the Workload's finalizers"
	errGetService     = "cannot get the delivered Service"
	errApplyService   = "cannot deliver the Service"
	errDeleteService  = "cannot delete the delivered Service"
	errGetNamespace   = "cannot get the Workload's namespace"

	reasonCommitted  = "Committed"
	reasonRejected   = "Rejected"
	reasonCandidates = "CreatedCandidates"
	reasonCleanup    = "CleanupPending"
	reasonReplacing  = "Replacing"
	reasonForbidden  = "Forbidden"
	// reasonNameConflict: an object placer would deliver exists in the
	// member and is not placer's for this Workload.
	reasonNameConflict = "NameConflict"
	// reasonServiceRefused: the member's API server refused the Service.
	reasonServiceRefused = "ServiceRefused"

	// cleanupRetry is how soon a deleted Workload waiting for its
	// candidates to go (or for a member to answer) is looked at again.
	cleanupRetry = 5 * time.Second

	// syncRetry is how soon a handshake waiting for a member's chaperon
	// cache (or connection) is looked at again; it never blocks a worker.
	syncRetry = 500 * time.Millisecond
)

// +kubebuilder:rbac:groups=compute.placer.dev,resources=workloads,verbs=get;list;watch;patch

// PropagatorControllerOptions configure the propagator.
type PropagatorControllerOptions struct {
	// Registry of member connections, kept by the cluster controller.
	Registry *cluster.Registry
	// HandshakeTimeout bounds how long a cluster may take to reserve every
	// candidate before it is recorded as rejected.
	HandshakeTimeout time.Duration
	// Workers is how many Workloads are reconciled at once (8 when zero);
	// one Workload is never reconciled by two workers at a time.
	Workers int
}

// PropagatorReconciler runs the management side of the handshake for
// scheduled Workloads in Reserve mode: candidates in status.clusterRef,
// commit once every replica is reserved there, rejection when the target
// scheduler cannot place them or does not answer in time; and cleanup.
type PropagatorReconciler struct {
	client   client.Client
	registry *cluster.Registry
	remotes  *remotes
	timeout  time.Duration
	record   event.Recorder
	log      logging.Logger
	trigger  *trigger
}

// SetupPropagatorController adds the propagator to the manager.
func SetupPropagatorController(mgr ctrl.Manager, o PropagatorControllerOptions) error {
	if o.HandshakeTimeout == 0 {
		o.HandshakeTimeout = time.Minute
	}
	if o.Workers == 0 {
		o.Workers = 8
	}
	t := &trigger{}
	r := &PropagatorReconciler{
		client:   mgr.GetClient(),
		registry: o.Registry,
		remotes:  &remotes{scheme: mgr.GetScheme(), enqueue: t.Enqueue, m: map[types.NamespacedName]*remote{}},
		timeout:  o.HandshakeTimeout,
		record:   event.NewAPIRecorder(mgr.GetEventRecorderFor("placer-propagator")), //nolint:staticcheck // crossplane-runtime's recorder takes the legacy interface.
		log:      logging.NewLogrLogger(mgr.GetLogger().WithName("propagator")),
		trigger:  t,
	}
	if err := mgr.Add(closer(r.remotes.close)); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("propagator").
		For(&v1alpha1.Workload{}).
		WatchesRawSource(t.Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: o.Workers}).
		Complete(r)
}

// Reconcile moves one Workload's handshake a step forward.
func (r *PropagatorReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	w := &v1alpha1.Workload{}
	if err := r.client.Get(ctx, req.NamespacedName, w); err != nil {
		return reconcile.Result{}, errors.Wrap(resource.IgnoreNotFound(err), errGetWorkload)
	}
	if w.DeletionTimestamp != nil {
		return r.cleanup(ctx, w)
	}
	if w.Status.ClusterRef == nil {
		// No cluster chosen: no candidate may remain anywhere.
		return reconcile.Result{}, r.removeElsewhere(ctx, w, nil)
	}
	// The finalizer goes on before the first candidate, once the scheduler
	// has written its decision: added at creation it raced the scheduler's
	// status write, and every lost race cost a conflict and a retry (the
	// end-to-end benchmark showed it).
	if !meta.FinalizerExists(w, finalizer) {
		if err := r.patchFinalizers(ctx, w, meta.AddFinalizer); err != nil {
			if forbidden(err) {
				// Not only a log line: the Workload says why nothing happens.
				r.record.Event(w, event.Warning(reasonForbidden, err))
			}
			return ignoreConflict(err)
		}
	}
	if c := w.Status.GetCondition(v1alpha1.TypeScheduled); c.Reason == v1alpha1.ReasonInvalidTemplate && c.ObservedGeneration == w.Generation {
		// The scheduler refused this generation's template: nothing of it
		// reaches a member; what runs keeps running.
		return reconcile.Result{}, nil
	}
	target := scheduler.ClusterKey(w.Namespace, w.Status.ClusterRef)
	if rejected(w, target) {
		// Already rejected; the scheduler's next choice brings us back.
		return reconcile.Result{}, nil
	}
	keep := map[types.NamespacedName]bool{target: true}
	res, committed, err := r.handshake(ctx, w, target)
	if err != nil {
		return res, err
	}
	if !committed {
		// Fan-out: the next ranked clusters prove themselves meanwhile, so
		// that if the chosen one rejects, the next choice commits at once.
		for _, n := range w.Status.NominatedClusters {
			k := scheduler.ClusterKey(w.Namespace, &n)
			if k == target || rejected(w, k) {
				continue
			}
			keep[k] = true
			if err := r.prepare(ctx, w, k); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	return res, r.removeElsewhere(ctx, w, keep)
}

// member returns the synced chaperon cache of a member, or nil when it is
// not connected or not synced yet.
func (r *PropagatorReconciler) member(ctx context.Context, key types.NamespacedName) (*remote, error) {
	conn := r.registry.Get(key)
	if conn == nil {
		return nil, nil
	}
	rm, err := r.remotes.get(conn)
	if err != nil || !rm.ready() {
		return nil, err
	}
	return rm, nil
}

// ensureCandidates makes the member's candidates match the replica count
// and returns what they say.
func (r *PropagatorReconciler) ensureCandidates(ctx context.Context, rm *remote, w *v1alpha1.Workload) (propagator.State, []*mcv1alpha1.PodChaperon, error) {
	chaperons, err := r.chaperons(ctx, rm, w)
	if err != nil {
		return propagator.State{}, nil, err
	}
	st := propagator.Observe(w, chaperons)
	cl, err := rm.tenant(w.Namespace)
	if err != nil {
		return st, nil, err
	}
	for _, ch := range st.Extra {
		if err := cl.Delete(ctx, ch); resource.IgnoreNotFound(err) != nil {
			return st, nil, errors.Wrap(err, errDeleteChaperon)
		}
	}
	for _, i := range st.Missing {
		if err := cl.Create(ctx, propagator.NewChaperon(w, rm.conn.TargetNamespace(w), i)); err != nil && !kerrors.IsAlreadyExists(err) {
			return st, nil, errors.Wrap(err, errCreateChaperon)
		}
	}
	if len(st.Missing) > 0 {
		r.record.Event(w, event.Normal(reasonCandidates, fmt.Sprintf("created %d candidate(s) in %s", len(st.Missing), rm.conn.Key)))
	}
	return st, chaperons, nil
}

// prepare keeps candidates in a nominated cluster that is not (yet) the
// chosen one, and records it rejected if its scheduler cannot place them.
func (r *PropagatorReconciler) prepare(ctx context.Context, w *v1alpha1.Workload, key types.NamespacedName) error {
	rm, err := r.member(ctx, key)
	if rm == nil || err != nil {
		return err
	}
	if reason, msg, err := r.admit(ctx, w, key); err != nil || reason != "" {
		if err != nil {
			return err
		}
		_, err = r.reject(ctx, w, rm, key, reason, msg)
		return err
	}
	st, _, err := r.ensureCandidates(ctx, rm, w)
	if forbidden(err) {
		_, err = r.reject(ctx, w, rm, key, reasonForbidden, err.Error())
		return err
	}
	if err != nil {
		return err
	}
	if d := propagator.Decide(w, st, false, 0, r.timeout); d.Action == propagator.Reject {
		_, err = r.reject(ctx, w, rm, key, d.Reason, d.Message)
	}
	return err
}

// handshake runs the chosen cluster's side: candidates, commit when every
// replica is reserved, rejection when they cannot be placed or the cluster
// does not answer in time, and the status counts. committed reports that
// the candidates there were allowed.
func (r *PropagatorReconciler) handshake(ctx context.Context, w *v1alpha1.Workload, target types.NamespacedName) (reconcile.Result, bool, error) {
	rm, err := r.member(ctx, target)
	if err != nil {
		return reconcile.Result{}, false, err
	}
	if rm == nil {
		// Not connected, or its chaperon cache is still syncing.
		return reconcile.Result{RequeueAfter: syncRetry}, false, nil
	}
	if reason, msg, err := r.admit(ctx, w, target); err != nil || reason != "" {
		if err != nil {
			return reconcile.Result{}, false, err
		}
		chs, err := r.chaperons(ctx, rm, w)
		if err != nil {
			return reconcile.Result{}, false, err
		}
		if propagator.Observe(w, chs).Allowed > 0 {
			// Committed: what runs there keeps running, and nothing of
			// this template goes there.
			return reconcile.Result{}, true, r.refuseChange(ctx, w, reason, msg)
		}
		res, err := r.reject(ctx, w, rm, target, reason, msg)
		return res, false, err
	}
	st, chaperons, err := r.ensureCandidates(ctx, rm, w)
	if forbidden(err) && st.Allowed == 0 {
		// The member does not open targetNamespace to placer.
		res, err := r.reject(ctx, w, rm, target, reasonForbidden, err.Error())
		return res, false, err
	}
	if err != nil {
		return reconcile.Result{}, false, err
	}
	d := propagator.Decide(w, st, true, time.Since(oldest(chaperons)), r.timeout)
	log := r.log.WithValues("workload", w.Namespace+"/"+w.Name, "cluster", target.String(), "generation", w.Generation)
	switch d.Action {
	case propagator.Commit:
		log.Info("every replica is reserved; committing", "replicas", propagator.Replicas(w), "handshake", time.Since(oldest(chaperons)))
	case propagator.Reject:
		log.Info("cluster rejected the candidates", "reason", d.Reason, "message", d.Message)
	case propagator.Wait:
		log.Debug("waiting for the candidates", "missing", len(st.Missing), "reserved", st.Reserved)
	}
	orig := w.DeepCopy()
	replicas := propagator.Replicas(w)
	switch d.Action {
	case propagator.Wait:
		if len(st.Missing) > 0 {
			return reconcile.Result{RequeueAfter: d.After}, false, nil
		}
	case propagator.Reject:
		handshakeDuration.WithLabelValues("rejected").Observe(time.Since(oldest(chaperons)).Seconds())
		res, err := r.reject(ctx, w, rm, target, d.Reason, d.Message)
		return res, false, err
	case propagator.Commit:
		handshakeDuration.WithLabelValues("committed").Observe(time.Since(oldest(chaperons)).Seconds())
		if err := r.allow(ctx, rm, w, st.ToAllow); err != nil {
			return reconcile.Result{}, false, err
		}
		r.record.Event(w, event.Normal(reasonCommitted, fmt.Sprintf("every replica is reserved in %s; committed", target)))
	case propagator.Deliver:
		if len(st.Missing) > 0 {
			return reconcile.Result{}, true, nil
		}
		if err := r.allow(ctx, rm, w, st.ToAllow); err != nil {
			return reconcile.Result{}, true, err
		}
		if err := r.rollout(ctx, rm, w, target, st); err != nil {
			return reconcile.Result{}, true, err
		}
	}
	requeue := d.After
	committed := d.Action == propagator.Commit || d.Action == propagator.Deliver
	var problem *deliveryProblem
	if committed {
		err := r.ensureService(ctx, rm, w)
		if !errors.As(err, &problem) && err != nil {
			return reconcile.Result{}, false, err
		}
	}
	setCounts(w, replicas, st)
	if problem != nil {
		ready := w.Status.GetCondition(xpv2.TypeReady)
		ready.Status, ready.Reason, ready.Message = corev1.ConditionFalse, xpv2.ConditionReason(problem.reason), problem.Error()
		w.Status.SetConditions(ready)
		if prev := orig.Status.GetCondition(xpv2.TypeReady); prev.Reason != ready.Reason || prev.Message != ready.Message {
			r.record.Event(w, event.Warning(event.Reason(problem.reason), problem))
		}
	}
	if equality.Semantic.DeepEqual(orig.Status, w.Status) {
		return reconcile.Result{RequeueAfter: requeue}, committed, nil
	}
	err = r.client.Status().Patch(ctx, w, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if kerrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: conflictRetry}, committed, nil
	}
	return reconcile.Result{RequeueAfter: requeue}, committed, errors.Wrap(resource.IgnoreNotFound(err), errUpdateWorkload)
}

// admit asks whether the cluster may receive the Workload's pods
// (validation.Admit: tenancy, a valid template, Pod Security), with the
// cluster and the namespace from the manager's cache. The scheduler's
// predicates decided the same when it placed the Workload; this holds for
// a later template and for an external scheduler's choice too.
func (r *PropagatorReconciler) admit(ctx context.Context, w *v1alpha1.Workload, key types.NamespacedName) (reason, msg string, err error) {
	kc := &v1alpha1.KubernetesCluster{}
	if err := r.client.Get(ctx, key, kc); err != nil {
		// A cluster that is gone has no connection either: nothing is sent.
		return "", "", errors.Wrap(resource.IgnoreNotFound(err), errGetCluster)
	}
	ns := &corev1.Namespace{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: w.Namespace}, ns); resource.IgnoreNotFound(err) != nil {
		return "", "", errors.Wrap(err, errGetNamespace)
	}
	reason, msg = validation.Admit(w, kc, ns.Labels)
	return reason, msg, nil
}

// refuseChange records that a committed cluster refuses the Workload's
// current pod template: Ready is False with the reason, once as an Event.
func (r *PropagatorReconciler) refuseChange(ctx context.Context, w *v1alpha1.Workload, reason, msg string) error {
	orig := w.DeepCopy()
	msg = "the pod template of generation " + strconv.FormatInt(w.Generation, 10) + " is not rolled out: " + msg
	w.Status.SetConditions(xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: xpv2.ConditionReason(reason),
		Message: msg, ObservedGeneration: w.Generation, LastTransitionTime: metav1.Now()})
	if equality.Semantic.DeepEqual(orig.Status, w.Status) {
		return nil
	}
	r.record.Event(w, event.Warning(event.Reason(reason), errors.New(msg)))
	err := r.client.Status().Patch(ctx, w, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	return errors.Wrap(resource.IgnoreNotFound(resource.Ignore(kerrors.IsConflict, err)), errUpdateWorkload)
}

// allow marks reserved candidates is-allowed=true: their pods bind.
func (r *PropagatorReconciler) allow(ctx context.Context, rm *remote, w *v1alpha1.Workload, chs []*mcv1alpha1.PodChaperon) error {
	cl, err := rm.tenant(w.Namespace)
	if err != nil {
		return err
	}
	for _, ch := range chs {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+mcv1alpha1.AnnotationIsAllowed+`":"true"}}}`))
		if err := cl.Patch(ctx, ch, patch); err != nil {
			return errors.Wrap(resource.IgnoreNotFound(err), errAllowChaperon)
		}
	}
	return nil
}

// rollout takes the next step of a pod template change in the committed
// cluster, within the strategy's maxSurge and maxUnavailable.
func (r *PropagatorReconciler) rollout(ctx context.Context, rm *remote, w *v1alpha1.Workload, target types.NamespacedName, st propagator.State) error {
	step := propagator.Rollout(w, st)
	cl, err := rm.tenant(w.Namespace)
	if err != nil {
		return err
	}
	for _, i := range step.Create {
		if err := cl.Create(ctx, propagator.NewChaperon(w, rm.conn.TargetNamespace(w), i)); err != nil && !kerrors.IsAlreadyExists(err) {
			return errors.Wrap(err, errCreateChaperon)
		}
	}
	for _, ch := range step.Delete {
		if err := cl.Delete(ctx, ch); resource.IgnoreNotFound(err) != nil {
			return errors.Wrap(err, errDeleteChaperon)
		}
	}
	if len(step.Create)+len(step.Delete) > 0 {
		r.log.Info("rolling update step", "workload", w.Namespace+"/"+w.Name, "cluster", target.String(), "started", len(step.Create), "removed", len(step.Delete))
		r.record.Event(w, event.Normal(reasonReplacing, fmt.Sprintf("rolling update in %s: %d new pod(s) started, %d old pod(s) removed", target, len(step.Create), len(step.Delete))))
	}
	return nil
}

func (r *PropagatorReconciler) chaperons(ctx context.Context, rm *remote, w *v1alpha1.Workload) ([]*mcv1alpha1.PodChaperon, error) {
	l := &mcv1alpha1.PodChaperonList{}
	// In every namespace: a changed spec.targetNamespaces leaves nothing behind.
	if err := rm.client.List(ctx, l, client.MatchingLabels{propagator.LabelWorkloadUID: string(w.UID)}); err != nil {
		return nil, errors.Wrap(err, errListChaperons)
	}
	out := make([]*mcv1alpha1.PodChaperon, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

// forbidden reports a write the member refused to the manager's identity.
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

// setCounts writes the replica counts and the Ready condition.
func setCounts(w *v1alpha1.Workload, replicas int, st propagator.State) {
	w.Status.Replicas, w.Status.ScheduledReplicas, w.Status.ReadyReplicas = int32(replicas), int32(st.Scheduled), int32(st.Ready)
	w.Status.ObservedGeneration = w.Generation
	ready := xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: "Pending", ObservedGeneration: w.Generation, LastTransitionTime: metav1.Now(),
		Message: fmt.Sprintf("%d of %d replicas ready in %s", st.Ready, replicas, w.Status.ClusterRef.Name)}
	if st.Unschedulable != "" {
		ready.Message += "; a replica is pending: " + truncate(st.Unschedulable)
	} else if st.Refused != "" {
		ready.Message += "; a replica is pending: " + truncate(st.Refused)
	}
	if st.Ready >= replicas {
		ready.Status, ready.Reason = corev1.ConditionTrue, "Available"
	}
	w.Status.SetConditions(ready)
}

// reject records the cluster in status.rejectedClusters for this
// generation, so the scheduler chooses again, and removes its candidates.
func (r *PropagatorReconciler) reject(ctx context.Context, w *v1alpha1.Workload, rm *remote, target types.NamespacedName, reason, msg string) (reconcile.Result, error) {
	msg = truncate(msg)
	orig := w.DeepCopy()
	now := metav1.Now()
	kept := w.Status.RejectedClusters[:0]
	for _, rc := range w.Status.RejectedClusters {
		if rc.Generation == w.Generation && scheduler.ClusterKey(w.Namespace, &rc.Cluster) != target {
			kept = append(kept, rc)
		}
	}
	w.Status.RejectedClusters = append(kept, v1alpha1.RejectedCluster{
		Cluster: v1alpha1.ClusterReference{Name: target.Name, Namespace: target.Namespace}, Reason: reason, Message: msg, Generation: w.Generation, Time: &now,
	})
	if err := r.client.Status().Patch(ctx, w, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		if kerrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: conflictRetry}, nil
		}
		return reconcile.Result{}, errors.Wrap(err, errUpdateWorkload)
	}
	r.record.Event(w, event.Warning(reasonRejected, errors.Errorf("%s rejected the candidates: %s", target, msg)))
	return reconcile.Result{}, r.deleteIn(ctx, rm, w)
}

// deleteIn deletes the Workload's chaperons and Service in one member.
// What the member's API server forbids placer to read there, placer
// cannot have made.
func (r *PropagatorReconciler) deleteIn(ctx context.Context, rm *remote, w *v1alpha1.Workload) error {
	chs, err := r.chaperons(ctx, rm, w)
	if err != nil {
		return err
	}
	cl, err := rm.tenant(w.Namespace)
	if err != nil {
		return err
	}
	namespaces := map[string]bool{}
	for _, ch := range chs {
		namespaces[ch.Namespace] = true
	}
	for ns := range namespaces {
		err := cl.DeleteAllOf(ctx, &mcv1alpha1.PodChaperon{}, client.InNamespace(ns), client.MatchingLabels{propagator.LabelWorkloadUID: string(w.UID)})
		if err := resource.IgnoreNotFound(err); err != nil {
			return errors.Wrap(err, errDeleteChaperon)
		}
	}
	svc := &corev1.Service{}
	err = cl.Get(ctx, types.NamespacedName{Namespace: rm.conn.TargetNamespace(w), Name: w.Name}, svc)
	if kerrors.IsForbidden(err) || err == nil && svc.Labels[propagator.LabelWorkloadUID] != string(w.UID) {
		return nil
	}
	if err != nil {
		return errors.Wrap(resource.IgnoreNotFound(err), errGetService)
	}
	return errors.Wrap(resource.IgnoreNotFound(cl.Delete(ctx, svc)), errDeleteService)
}

// ensureService delivers spec.targetService to the committed cluster as a
// Service named after the Workload, selecting its pods unless it says otherwise.
func (r *PropagatorReconciler) ensureService(ctx context.Context, rm *remote, w *v1alpha1.Workload) error {
	if w.Spec.TargetService == nil {
		return nil
	}
	cl, err := rm.tenant(w.Namespace)
	if err != nil {
		return err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: rm.conn.TargetNamespace(w), Name: w.Name}}
	_, err = controllerutil.CreateOrUpdate(ctx, cl, svc, func() error {
		if uid := svc.Labels[propagator.LabelWorkloadUID]; !svc.CreationTimestamp.IsZero() && uid != string(w.UID) {
			// Not placer's, or another Workload's: never taken over.
			return &deliveryProblem{reason: reasonNameConflict,
				msg: fmt.Sprintf("Service %s/%s exists in the cluster and was not created by placer for this Workload; it is left untouched", svc.Namespace, svc.Name)}
		}
		meta.AddLabels(svc, map[string]string{propagator.LabelWorkloadUID: string(w.UID)})
		meta.AddAnnotations(svc, map[string]string{propagator.AnnotationWorkload: w.Namespace + "/" + w.Name})
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
		return &deliveryProblem{reason: reasonServiceRefused, msg: "the cluster's API server refused the Service: " + truncate(status.Status().Message)}
	}
	return errors.Wrap(err, errApplyService)
}

// deliveryProblem is what keeps an object from being delivered to a member
// that no retry changes: its name is taken by an object placer did not
// create there (or another Workload's), or the member's API server refuses
// it. It is reported, in an Event and the Ready condition, and never
// retried in a loop: the next change to the Workload or its chaperons
// looks again.
type deliveryProblem struct{ reason, msg string }

func (p *deliveryProblem) Error() string { return p.msg }

// maxMessage bounds what a member's API server says that placer copies
// into a Workload's status and Events.
const maxMessage = 1024

// truncate cuts a member's message to maxMessage bytes.
func truncate(msg string) string {
	if len(msg) <= maxMessage {
		return msg
	}
	return msg[:maxMessage] + "…"
}

// removeElsewhere deletes the Workload's candidates in every connected
// cluster not in keep (after a rejection, a move, or a commit).
// A member registered more than once (say, in two namespaces) is one
// cluster: its candidates are kept if any of its registrations is.
func (r *PropagatorReconciler) removeElsewhere(ctx context.Context, w *v1alpha1.Workload, keep map[types.NamespacedName]bool) error {
	conns := r.connectionsFor(ctx, w)
	keepHosts := map[string]bool{}
	for _, conn := range conns {
		if keep[conn.Key] {
			keepHosts[conn.Config.Host] = true
		}
	}
	for _, conn := range conns {
		if keep[conn.Key] || keepHosts[conn.Config.Host] {
			continue
		}
		rm, err := r.remotes.get(conn)
		if err != nil || !rm.ready() {
			continue // an unreachable member is cleaned up when it answers again
		}
		chs, err := r.chaperons(ctx, rm, w)
		if err != nil || len(chs) == 0 {
			continue
		}
		if err := r.deleteIn(ctx, rm, w); err != nil {
			return err
		}
	}
	return nil
}

// connectionsFor returns the connections of the clusters that may hold the
// Workload's objects: those that serve its namespace, and those it was
// placed, nominated or rejected on. Another tenant's clusters are never
// visited: a dead one registered in another namespace holds nothing of this
// Workload, and must not hold its deletion.
func (r *PropagatorReconciler) connectionsFor(ctx context.Context, w *v1alpha1.Workload) []*cluster.Connection {
	touched := map[types.NamespacedName]bool{}
	if w.Status.ClusterRef != nil {
		touched[scheduler.ClusterKey(w.Namespace, w.Status.ClusterRef)] = true
	}
	for i := range w.Status.NominatedClusters {
		touched[scheduler.ClusterKey(w.Namespace, &w.Status.NominatedClusters[i])] = true
	}
	for i := range w.Status.RejectedClusters {
		touched[scheduler.ClusterKey(w.Namespace, &w.Status.RejectedClusters[i].Cluster)] = true
	}
	ns := &corev1.Namespace{}
	_ = r.client.Get(ctx, types.NamespacedName{Name: w.Namespace}, ns) // no labels: only the Workload's own namespace's clusters serve it
	var out []*cluster.Connection
	for _, conn := range r.registry.Connections() {
		if touched[conn.Key] {
			out = append(out, conn)
			continue
		}
		kc := &v1alpha1.KubernetesCluster{}
		if err := r.client.Get(ctx, conn.Key, kc); err == nil && validation.Serves(kc, w.Namespace, ns.Labels) {
			out = append(out, conn)
		}
	}
	return out
}

// cleanup deletes the Workload's candidates everywhere before letting it
// go. A registered member that cannot be reached keeps the finalizer (the
// Workload stays Terminating, with an Event) until it answers or its
// KubernetesCluster is deleted: pods are never left behind silently.
func (r *PropagatorReconciler) cleanup(ctx context.Context, w *v1alpha1.Workload) (reconcile.Result, error) {
	if !meta.FinalizerExists(w, finalizer) {
		return reconcile.Result{}, nil
	}
	pending := []string{}
	for _, conn := range r.connectionsFor(ctx, w) {
		rm, err := r.remotes.get(conn)
		if err != nil || !rm.ready() {
			pending = append(pending, conn.Key.String()+" (unreachable)")
			continue
		}
		chs, err := r.chaperons(ctx, rm, w)
		if err != nil {
			pending = append(pending, conn.Key.String())
			continue
		}
		if err := r.deleteIn(ctx, rm, w); err != nil {
			pending = append(pending, conn.Key.String()+" ("+cluster.DescribeError(err)+")")
			continue
		}
		if len(chs) > 0 {
			pending = append(pending, conn.Key.String())
		}
	}
	if len(pending) > 0 {
		r.record.Event(w, event.Normal(reasonCleanup, fmt.Sprintf("waiting for candidates to be deleted in %v", pending)))
		return reconcile.Result{RequeueAfter: cleanupRetry}, nil
	}
	return ignoreConflict(resource.IgnoreNotFound(r.patchFinalizers(ctx, w, meta.RemoveFinalizer)))
}

// patchFinalizers adds or removes the propagator's finalizer with a patch of
// metadata.finalizers alone: a full Update would write the defaults of the
// client's copy into the spec (strategy: {}, empty template metadata) and
// bump metadata.generation behind the conditions' observedGeneration. The
// resourceVersion in the patch keeps another controller's finalizer, added
// meanwhile, from being dropped.
func (r *PropagatorReconciler) patchFinalizers(ctx context.Context, w *v1alpha1.Workload, change func(metav1.Object, string)) error {
	orig := w.DeepCopy()
	change(w, finalizer)
	return errors.Wrap(r.client.Patch(ctx, w, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})), errFinalizer)
}
