package agent

import (
	"context"
	"time"

	nodeutil "k8s.io/component-helpers/node/util"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

const (
	errListNodes      = "cannot list Nodes"
	errListPods       = "cannot list Pods"
	errWriteSummary   = "cannot write the ClusterSummary"
	errGetSummary     = "cannot get the ClusterSummary"
	defaultSummaryGap = time.Second
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
}

// +kubebuilder:rbac:groups=multicluster.placer.dev,resources=clustersummaries,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// SetupSummaryController adds the summary controller to a target cluster's
// manager; gap is the least time between two writes (1 s when zero).
func SetupSummaryController(mgr ctrl.Manager, gap time.Duration) error {
	if gap == 0 {
		gap = defaultSummaryGap
	}
	r := &SummaryReconciler{client: mgr.GetClient(), gap: gap}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: mcv1alpha1.ClusterSummaryName}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("summary").
		For(&mcv1alpha1.ClusterSummary{}).
		Watches(&corev1.Node{}, one, builder.WithPredicates(nodeSummaryChanged)).
		Watches(&corev1.Pod{}, one, builder.WithPredicates(podHoldsResourcesChanged)).
		Complete(r)
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
	want := Summarize(nodes, pods)

	s := &mcv1alpha1.ClusterSummary{}
	err := r.client.Get(ctx, types.NamespacedName{Name: mcv1alpha1.ClusterSummaryName}, s)
	switch {
	case kerrors.IsNotFound(err):
		s = &mcv1alpha1.ClusterSummary{ObjectMeta: metav1.ObjectMeta{Name: mcv1alpha1.ClusterSummaryName}, Status: want}
		err = r.client.Create(ctx, s)
	case err != nil:
		return reconcile.Result{}, errors.Wrap(err, errGetSummary)
	case equality.Semantic.DeepEqual(s.Status, want):
		return reconcile.Result{}, nil
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
	r.lastWrite = time.Now()
	return reconcile.Result{}, nil
}
