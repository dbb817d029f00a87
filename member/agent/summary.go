package agent

import (
	"context"
	"fmt"
	"time"

	nodeutil "k8s.io/component-helpers/node/util"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

const (
	errListNodes      = "cannot list Nodes"
	errListPods       = "cannot list Pods"
	errWriteSummary   = "cannot write the ClusterSummary"
	errGetSummary     = "cannot get the ClusterSummary"
	errLeaseCache     = "cannot watch the candidate scheduler's Lease"
	defaultSummaryGap = time.Second
	defaultHeartbeat  = 10 * time.Second
)

// SummaryReconciler runs in a target cluster (placer agent) and keeps the
// ClusterSummary: node counts, allocatable and requested sums, the largest
// free node and the common topology labels. This is all the management
// side learns of the cluster's nodes (design §5).
type SummaryReconciler struct {
	client client.Client
	// gap is the least time between two writes: a burst of pod events
	// becomes one write.
	gap       time.Duration
	lastWrite time.Time
	// heartbeat is the most time between two writes: the management side
	// takes a summary that stops changing for a sign that the agent is down.
	heartbeat time.Duration
	// lease is the candidate scheduler's leader election Lease, read from
	// leases, a watch of that one object; no check when its name is empty.
	lease  types.NamespacedName
	leases client.Reader
	// ids reads the kube-system namespace, once (no watch of namespaces);
	// id is its UID, the cluster's identity.
	ids client.Reader
	id  string
}

// +kubebuilder:rbac:groups=multicluster.placer.dev,resources=clustersummaries,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,resourceNames=kube-system,verbs=get

// SetupSummaryController adds the summary controller to a target cluster's
// manager.
func SetupSummaryController(mgr ctrl.Manager, o Options) error {
	r := &SummaryReconciler{client: mgr.GetClient(), ids: mgr.GetAPIReader(), gap: o.SummaryInterval, heartbeat: o.HeartbeatInterval, lease: o.CandidateSchedulerLease}
	if r.gap == 0 {
		r.gap = defaultSummaryGap
	}
	if r.heartbeat == 0 {
		r.heartbeat = defaultHeartbeat
	}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: mcv1alpha1.ClusterSummaryName}}}
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("summary").
		For(&mcv1alpha1.ClusterSummary{}).
		Watches(&corev1.Node{}, one, builder.WithPredicates(nodeSummaryChanged)).
		Watches(&corev1.Pod{}, one, builder.WithPredicates(podHoldsResourcesChanged))
	if r.lease.Name != "" {
		// A cache of its own watches the one Lease: the manager's would
		// watch every Lease of the cluster, a node's among them every 10 s.
		leases, err := cache.New(mgr.GetConfig(), cache.Options{
			HTTPClient: mgr.GetHTTPClient(),
			Scheme:     mgr.GetScheme(),
			Mapper:     mgr.GetRESTMapper(),
			ByObject: map[client.Object]cache.ByObject{&coordinationv1.Lease{}: {
				Namespaces: map[string]cache.Config{r.lease.Namespace: {}},
				Field:      fields.OneTermEqualSelector("metadata.name", r.lease.Name),
			}},
		})
		if err != nil {
			return errors.Wrap(err, errLeaseCache)
		}
		if err := mgr.Add(leases); err != nil {
			return errors.Wrap(err, errLeaseCache)
		}
		r.leases = leases
		b = b.WatchesRawSource(source.Kind(leases, &coordinationv1.Lease{},
			handler.TypedEnqueueRequestsFromMapFunc(func(context.Context, *coordinationv1.Lease) []reconcile.Request {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: mcv1alpha1.ClusterSummaryName}}}
			}), leaseHolderChanged))
	}
	return b.Complete(r)
}

// leaseHolderChanged drops the renewals of the Lease (every 2 s): when it
// is due to expire, the reconciler is requeued for that moment and reads
// the latest renewal from the cache.
var leaseHolderChanged = predicate.TypedFuncs[*coordinationv1.Lease]{
	UpdateFunc: func(e event.TypedUpdateEvent[*coordinationv1.Lease]) bool {
		return ptr.Deref(e.ObjectOld.Spec.HolderIdentity, "") != ptr.Deref(e.ObjectNew.Spec.HolderIdentity, "")
	},
}

// candidateScheduler tells from its Lease whether the candidate scheduler
// runs, and until when the answer holds (zero: until the Lease changes).
// The Lease is renewed by the scheduler's clock and judged by the agent's:
// both run in the same cluster.
func (r *SummaryReconciler) candidateScheduler(ctx context.Context, now time.Time) (*mcv1alpha1.ComponentStatus, time.Time) {
	if r.lease.Name == "" {
		return nil, time.Time{}
	}
	l := &coordinationv1.Lease{}
	if err := r.leases.Get(ctx, r.lease, l); err != nil {
		msg := fmt.Sprintf("cannot read its Lease %s: %v", r.lease, err)
		if kerrors.IsNotFound(err) {
			msg = fmt.Sprintf("its Lease %s does not exist: the candidate scheduler never ran, or runs without --leader-elect", r.lease)
		}
		return &mcv1alpha1.ComponentStatus{Message: msg}, time.Time{}
	}
	holder := ptr.Deref(l.Spec.HolderIdentity, "")
	if holder == "" || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return &mcv1alpha1.ComponentStatus{Message: fmt.Sprintf("no one holds its Lease %s", r.lease)}, time.Time{}
	}
	renewed := l.Spec.RenewTime.Time
	until := renewed.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
	if !now.Before(until) {
		return &mcv1alpha1.ComponentStatus{Message: fmt.Sprintf("its Lease %s, held by %s, was last renewed at %s and expired at %s",
			r.lease, holder, renewed.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))}, time.Time{}
	}
	return &mcv1alpha1.ComponentStatus{Running: true, Message: fmt.Sprintf("%s holds its Lease %s", holder, r.lease)}, until
}

// clusterID is the cluster's identity, its kube-system namespace's UID,
// read once; empty while it cannot be read (the summary goes on without
// it, and the manager withholds a cluster that recorded one).
func (r *SummaryReconciler) clusterID(ctx context.Context) string {
	if r.id == "" && r.ids != nil {
		ns := &corev1.Namespace{}
		if err := r.ids.Get(ctx, types.NamespacedName{Name: metav1.NamespaceSystem}, ns); err == nil {
			r.id = string(ns.UID)
		}
	}
	return r.id
}

// nodeSummaryChanged drops the node updates that cannot change the sums:
// kubelet (or kwok) heartbeats rewrite condition timestamps every few
// seconds on every node.
var nodeSummaryChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
		return o.Spec.Unschedulable != n.Spec.Unschedulable ||
			!equality.Semantic.DeepEqual(o.Status.Allocatable, n.Status.Allocatable) ||
			!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
			nodeReady(o) != nodeReady(n)
	},
}

func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	if _, c := nodeutil.GetNodeCondition(&n.Status, corev1.NodeReady); c != nil {
		return c.Status
	}
	return corev1.ConditionUnknown
}

// podHoldsResourcesChanged passes the pod events that can change the sums:
// binding, finishing, deletion.
var podHoldsResourcesChanged = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return e.Object.(*corev1.Pod).Spec.NodeName != "" },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)
		return o.Spec.NodeName != n.Spec.NodeName || o.Status.Phase != n.Status.Phase
	},
	DeleteFunc: func(e event.DeleteEvent) bool { return true },
}

// Reconcile recomputes the summary from the informer caches and writes it
// when it changed, at most once per gap.
func (r *SummaryReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if wait := r.gap - time.Since(r.lastWrite); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	nl := &corev1.NodeList{}
	if err := r.client.List(ctx, nl); err != nil {
		return reconcile.Result{}, errors.Wrap(err, errListNodes)
	}
	pl := &corev1.PodList{}
	if err := r.client.List(ctx, pl); err != nil {
		return reconcile.Result{}, errors.Wrap(err, errListPods)
	}
	nodes := make([]*corev1.Node, len(nl.Items))
	for i := range nl.Items {
		nodes[i] = &nl.Items[i]
	}
	pods := make([]*corev1.Pod, len(pl.Items))
	for i := range pl.Items {
		pods[i] = &pl.Items[i]
	}
	now := time.Now()
	want := Summarize(nodes, pods)
	var expires time.Time
	want.CandidateScheduler, expires = r.candidateScheduler(ctx, now)
	want.ClusterID = r.clusterID(ctx)
	// The next look: the next heartbeat, or sooner when the scheduler's
	// Lease expires unrenewed.
	next := func(beat time.Time) reconcile.Result {
		wait := beat.Add(r.heartbeat).Sub(now)
		if !expires.IsZero() {
			wait = min(wait, expires.Sub(now)+time.Second)
		}
		return reconcile.Result{RequeueAfter: max(wait, r.gap)}
	}

	s := &mcv1alpha1.ClusterSummary{}
	err := r.client.Get(ctx, types.NamespacedName{Name: mcv1alpha1.ClusterSummaryName}, s)
	if want.ClusterID == "" && err == nil {
		// kube-system not read (yet): the identity published stays; an
		// empty one would say this cluster cannot show who it is.
		want.ClusterID = s.Status.ClusterID
	}
	// A heartbeat from the future (another leader's clock, a clock
	// stepped back) is renewed at once, not waited for.
	if err == nil && s.Status.HeartbeatTime != nil {
		if age := now.Sub(s.Status.HeartbeatTime.Time); age >= 0 && age < r.heartbeat {
			want.HeartbeatTime = s.Status.HeartbeatTime
			if equality.Semantic.DeepEqual(s.Status, want) {
				return next(s.Status.HeartbeatTime.Time), nil
			}
		}
	}
	want.HeartbeatTime = &metav1.Time{Time: now}
	switch {
	case kerrors.IsNotFound(err):
		s = &mcv1alpha1.ClusterSummary{ObjectMeta: metav1.ObjectMeta{Name: mcv1alpha1.ClusterSummaryName}, Status: want}
		err = r.client.Create(ctx, s)
	case err != nil:
		return reconcile.Result{}, errors.Wrap(err, errGetSummary)
	default:
		s.Status = want
		err = r.client.Update(ctx, s)
	}
	if kerrors.IsConflict(err) || kerrors.IsAlreadyExists(err) {
		// The cache was behind; the write that won brings an event.
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	if err != nil {
		return reconcile.Result{}, errors.Wrap(err, errWriteSummary)
	}
	r.lastWrite = now
	return next(now), nil
}
