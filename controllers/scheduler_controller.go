package controllers

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/apis/compute/validation"
	"github.com/placer-dev/placer/scheduler"
)

const (
	errGetWorkload    = "cannot get Workload"
	errUpdateWorkload = "cannot update Workload status"
	errInformer       = "cannot get an informer"

	reasonFailedScheduling event.Reason = "FailedScheduling"

	// unschedulableRetry is the safety net for a pending Workload: events
	// (clusters and workloads changing) requeue it sooner.
	unschedulableRetry = 5 * time.Minute
)

// SchedulerControllerOptions configure the scheduler controller.
type SchedulerControllerOptions struct {
	// Profiles by the schedulerName they serve.
	Profiles map[string]*scheduler.Profile
}

// SchedulerReconciler places Workloads whose schedulerName one of its
// profiles serves: it ranks clusters on a snapshot of the fleet and writes
// the decision to the Workload's status.
type SchedulerReconciler struct {
	client   client.Client
	cache    *scheduler.Cache
	profiles map[string]*scheduler.Profile
	served   map[string]bool
	record   event.Recorder
	log      logging.Logger
	trigger  *trigger
}

// +kubebuilder:rbac:groups=compute.placer.dev,resources=workloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=compute.placer.dev,resources=workloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// SetupSchedulerController adds the scheduler controller to the manager.
func SetupSchedulerController(mgr ctrl.Manager, o SchedulerControllerOptions) error {
	r := &SchedulerReconciler{
		client:   mgr.GetClient(),
		cache:    scheduler.NewCache(),
		profiles: o.Profiles,
		served:   map[string]bool{},
		record:   event.NewAPIRecorder(mgr.GetEventRecorderFor("placer-scheduler")), //nolint:staticcheck // crossplane-runtime's recorder takes the legacy interface.
		log:      logging.NewLogrLogger(mgr.GetLogger().WithName("scheduler")),
		trigger:  &trigger{},
	}
	for name := range o.Profiles {
		r.served[name] = true
	}
	if err := r.feedCache(context.Background(), mgr); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("scheduler").
		For(&v1alpha1.Workload{}).
		WatchesRawSource(r.trigger.Source()).
		Complete(r)
}

// Reconcile places one Workload, or records why it cannot be placed.
func (r *SchedulerReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	w := &v1alpha1.Workload{}
	if err := r.client.Get(ctx, req.NamespacedName, w); err != nil {
		return reconcile.Result{}, errors.Wrap(resource.IgnoreNotFound(err), errGetWorkload)
	}
	profile, ok := r.profiles[w.Spec.SchedulerName]
	if !ok || w.DeletionTimestamp != nil {
		// Another scheduler's Workload: never touched.
		return reconcile.Result{}, nil
	}
	if errs := validation.ValidateTemplate(w); len(errs) > 0 {
		// Refused before any member sees it; a spec change brings it back.
		return reconcile.Result{}, r.invalid(ctx, w, errs)
	}
	if w.Status.ClusterRef != nil && !w.RejectedBy(w.ClusterKey(w.Status.ClusterRef)) {
		// Placed: it stays, whatever scores say now; only a handshake
		// rejection moves it. A new generation is still acknowledged, so
		// that 'kubectl wait --for=condition=Scheduled' sees it.
		return reconcile.Result{}, r.acknowledge(ctx, w)
	}
	log := r.log.WithValues("workload", req.String())
	start := time.Now()
	res := profile.Schedule(ctx, w, r.cache.Snapshot(), scheduler.Options{})
	schedulingDuration.Observe(time.Since(start).Seconds())
	log.Debug("scheduling cycle", "duration", time.Since(start), "feasible", len(res.Ranked), "clusters", res.Total)
	defer func() { pendingWorkloads.Set(float64(r.cache.PendingCount(r.served))) }()

	orig := w.DeepCopy()
	var cond xpv2.Condition
	var ev event.Event
	if len(res.Ranked) == 0 {
		w.Status.ClusterRef, w.Status.NominatedClusters = nil, nil
		cond = v1alpha1.NotScheduled(v1alpha1.ReasonUnschedulable, res.Message(), w.Generation)
		ev = event.Warning(reasonFailedScheduling, errors.New(cond.Message))
		schedulingAttempts.WithLabelValues("unschedulable").Inc()
	} else {
		schedulingAttempts.WithLabelValues("scheduled").Inc()
		best := res.Ranked[0].Cluster.Key
		w.Status.ClusterRef = &v1alpha1.ClusterReference{Name: best.Name, Namespace: best.Namespace}
		w.Status.NominatedClusters = nominated(res, w.Spec.Placement.FanOut)
		cond = v1alpha1.Scheduled(placedMessage(res), w.Generation)
		ev = event.Normal(v1alpha1.ReasonScheduled, cond.Message)
	}
	changed := w.Status.GetCondition(v1alpha1.TypeScheduled).Message != cond.Message
	w.Status.SetConditions(cond)
	written, err := patchStatus(ctx, r.client, w, orig)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !written {
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	if changed {
		r.record.Event(w, ev)
		log.Info(cond.Message, "scheduled", cond.Status == corev1.ConditionTrue)
	}
	return r.retryUnschedulable(res), nil
}

// invalid records that the Workload's pod template is invalid: Scheduled
// is False with the field errors, and a placed Workload keeps its cluster
// (the propagator rolls out no invalid generation).
func (r *SchedulerReconciler) invalid(ctx context.Context, w *v1alpha1.Workload, errs field.ErrorList) error {
	orig := w.DeepCopy()
	msg := "invalid pod template: " + errs.ToAggregate().Error()
	prev := w.Status.GetCondition(v1alpha1.TypeScheduled)
	w.Status.SetConditions(v1alpha1.NotScheduled(v1alpha1.ReasonInvalidTemplate, msg, w.Generation))
	schedulingAttempts.WithLabelValues("invalid").Inc()
	// A conflict brings a newer object, and this reconcile again.
	if written, err := patchStatus(ctx, r.client, w, orig); err != nil || !written {
		return err
	}
	if prev.Message != msg {
		r.record.Event(w, event.Warning(v1alpha1.ReasonInvalidTemplate, errors.New(msg)))
	}
	return nil
}

// acknowledge moves a placed Workload's Scheduled condition to its current
// generation, unchanged otherwise.
func (r *SchedulerReconciler) acknowledge(ctx context.Context, w *v1alpha1.Workload) error {
	cond := w.Status.GetCondition(v1alpha1.TypeScheduled)
	switch {
	case cond.Reason == v1alpha1.ReasonInvalidTemplate:
		// The template is valid again: the Workload stays where it is.
		cond = v1alpha1.Scheduled(fmt.Sprintf("placed on %s", w.ClusterKey(w.Status.ClusterRef)), w.Generation)
	case cond.Status != corev1.ConditionTrue || cond.ObservedGeneration == w.Generation:
		return nil
	}
	orig := w.DeepCopy()
	cond.ObservedGeneration = w.Generation
	w.Status.SetConditions(cond)
	_, err := patchStatus(ctx, r.client, w, orig)
	return err
}

func (r *SchedulerReconciler) retryUnschedulable(res *scheduler.Result) reconcile.Result {
	if len(res.Ranked) == 0 {
		return reconcile.Result{RequeueAfter: unschedulableRetry}
	}
	return reconcile.Result{}
}

func nominated(res *scheduler.Result, fanOut int32) []v1alpha1.ClusterReference {
	n := min(max(int(fanOut), 1), len(res.Ranked))
	out := make([]v1alpha1.ClusterReference, n)
	for i := range n {
		k := res.Ranked[i].Cluster.Key
		out[i] = v1alpha1.ClusterReference{Name: k.Name, Namespace: k.Namespace}
	}
	return out
}

// placedMessage says where the Workload goes and the scores that decided:
// "placed on default/east with score 34, best of 4 feasible of 5 clusters
// (ClusterAffinity 10, ResourceAllocation 7)", naming only the plugins that
// told clusters apart (a score above the minimum); or "placed on
// default/east, the only feasible cluster of 5".
func placedMessage(res *scheduler.Result) string {
	best := res.Ranked[0]
	if len(res.Ranked) == 1 {
		return fmt.Sprintf("placed on %s, the only feasible cluster of %d", best.Cluster.Key, res.Total)
	}
	names := make([]string, 0, len(best.Scores))
	for n, v := range best.Scores {
		if v > scheduler.MinScore {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if best.Scores[names[i]] != best.Scores[names[j]] {
			return best.Scores[names[i]] > best.Scores[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, best.Scores[n])
	}
	decided := "a tie, broken by a hash of the Workload's UID"
	if len(parts) > 0 {
		decided = strings.Join(parts, ", ")
	}
	return fmt.Sprintf("placed on %s with score %d, best of %d feasible of %d clusters (%s)",
		best.Cluster.Key, best.Total, len(res.Ranked), res.Total, decided)
}
