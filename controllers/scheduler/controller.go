package scheduler

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/apis/compute/validation"
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/predicates"
	"github.com/placer-dev/placer/scheduler"
)

const (
	errGetWorkload    = "cannot get Workload"
	errUpdateWorkload = "cannot update Workload status"
	errInformer       = "cannot get an informer"

	reasonFailedScheduling event.Reason = "FailedScheduling"
	reasonMoved            event.Reason = "Moved"
	reasonFailedMove       event.Reason = "FailedMove"

	// unschedulableRetry is the safety net for a pending Workload: events
	// (clusters and workloads changing) requeue it sooner.
	unschedulableRetry = 5 * time.Minute
)

// Options configure the scheduler controller.
type Options struct {
	// Profiles by the schedulerName they serve.
	Profiles map[string]*scheduler.Profile
	// QPS and Burst of the scheduler's own client, which writes its
	// decisions: a token bucket of its own, not the propagator's (50 and
	// 100 when zero).
	QPS   float32
	Burst int
	// Writers is how many decisions are written at once (8 when zero).
	Writers int
	// DefaultTolerations are added to every Workload's tolerations of the
	// condition taints (scheduler.DefaultTolerations).
	DefaultTolerations []corev1.Toleration
	// MaxConcurrentMoves bounds how many Workloads leave clusters that
	// answer (drains: a NoExecute taint, a deletion; moves back to a
	// preferred cluster) at once, fleet-wide; no bound when zero.
	MaxConcurrentMoves int
	// RebalanceAfter is how long a cluster a Workload prefers more must
	// have been Ready, and the Workload placed where it is, before it
	// moves back (spec.placement.rebalance WhenPreferred);
	// DefaultRebalanceAfter when zero. RebalanceMargin is by how many
	// percent that cluster must outscore the Workload's own
	// (DefaultRebalanceMargin when zero; negative: none).
	RebalanceAfter  time.Duration
	RebalanceMargin int
}

// Reconciler places Workloads whose schedulerName one of its
// profiles serves. As kube-scheduler does for pods, its decision loop never
// waits on the API server: it ranks clusters on a snapshot of the fleet,
// assumes the decision in its cache at once (so the next cycle sees it),
// and hands the status write to a pool of writers.
type Reconciler struct {
	client client.Reader
	// writes are the shares of spread Workloads and their status, with
	// the scheduler's own client.
	writes   client.Client
	cache    *scheduler.Cache
	profiles map[string]*scheduler.Profile
	served   map[string]bool
	log      logging.Logger
	trigger  *shared.Trigger
	// divisions queues the spread Workloads for the divider, which runs
	// beside the decision loop: its writes never hold a cycle.
	divisions *shared.Trigger
	// spreadWritten are the divider's last writes of spread Workloads.
	spreadWritten shared.WrittenWorkloads
	writer        *statusWriter
	verdicts      validation.Verdicts

	defaultTolerations []corev1.Toleration
	maxMoves           int
	rebalanceAfter     time.Duration
	rebalanceMargin    int
	// waiters wait for a place under maxMoves; shareWaiters are spread
	// Workloads whose shares wait for one (the divider's); moveSlots is
	// held by whoever looks for places and takes them (a divider, or the
	// decision loop for a drain's move) until they are counted.
	waiters, shareWaiters moveWaiters
	moveSlots             sync.Mutex
	// beforeWait, when set (tests), runs between a drained Workload's
	// look at the count of moves and its place in line.
	beforeWait func()
}

// +kubebuilder:rbac:groups=compute.placer.dev,resources=workloads,verbs=get;list;watch;create;update;delete
// The marks only the manager sets (a share's commit-held and leaving, a
// proxy pod's Workload's label): the admission policy placer-share-marks
// lets through whoever holds this verb, which no built-in role grants.
// +kubebuilder:rbac:groups=compute.placer.dev,resources=workloads,verbs=mark
// +kubebuilder:rbac:groups=compute.placer.dev,resources=workloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=compute.placer.dev,resources=clusterbindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=compute.placer.dev,resources=kubernetesclusters,verbs=get;list;watch

// Setup adds the scheduler controller to the manager.
func Setup(mgr ctrl.Manager, o Options) error {
	cfg := rest.CopyConfig(mgr.GetConfig())
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	wc, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return errors.Wrap(err, "cannot create the scheduler's client")
	}
	r := &Reconciler{
		client:   mgr.GetClient(),
		writes:   wc,
		cache:    scheduler.NewCache(),
		profiles: o.Profiles,
		served:   map[string]bool{},
		log:      logging.NewLogrLogger(mgr.GetLogger().WithName("scheduler")),
		trigger:  &shared.Trigger{},

		divisions: &shared.Trigger{},

		defaultTolerations: o.DefaultTolerations,
		maxMoves:           o.MaxConcurrentMoves,
		rebalanceAfter:     cmp.Or(o.RebalanceAfter, DefaultRebalanceAfter),
		rebalanceMargin:    max(cmp.Or(o.RebalanceMargin, DefaultRebalanceMargin), 0),
	}
	r.writer = newStatusWriter(wc, mgr.GetClient(), r.cache, r.trigger, o.Writers,
		event.NewAPIRecorder(mgr.GetEventRecorderFor("placer-scheduler")), //nolint:staticcheck // crossplane-runtime's recorder takes the legacy interface.
		r.log)
	for name := range o.Profiles {
		r.served[name] = true
	}
	fed, err := r.feedCache(context.Background(), mgr)
	if err != nil {
		return err
	}
	if err := mgr.Add(r.writer); err != nil {
		return errors.Wrap(err, "cannot add the scheduler's writers")
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("divider").
		// Its own spec, labels and annotations (placer rebalance asks
		// there), not its status (the divider's own writes); its shares'
		// changes come through divisions.
		For(&v1alpha1.Workload{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			w, ok := o.(*v1alpha1.Workload)
			return ok && w.Spreads()
		}), predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WatchesRawSource(r.divisions.SourceAfter(fed...)).
		WithOptions(controller.Options{MaxConcurrentReconciles: dividers}).
		Complete(reconcile.Func(r.reconcileDivision))
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("scheduler").
		// A spread Workload's own changes go to the divider; a cluster's
		// change reaches it through here (requeuePending, the trigger).
		For(&v1alpha1.Workload{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			w, ok := o.(*v1alpha1.Workload)
			return !ok || !w.Spreads()
		}))).
		WatchesRawSource(r.trigger.SourceAfter(fed...)).
		Complete(r)
}

// dividers is how many spread Workloads are divided at once.
const dividers = 4

// Reconcile decides about one Workload and hands the decision to the
// writers; it never waits for a write.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	defer func() {
		if r.waiters.looked(req.NamespacedName) {
			// Woken for a place, it never got to its move (an invalid
			// template, say): the place goes to the next waiter.
			r.waiters.done(req.NamespacedName)
			r.wakeWaiters()
		}
	}()
	w := &v1alpha1.Workload{}
	if err := r.client.Get(ctx, req.NamespacedName, w); err != nil {
		return reconcile.Result{}, errors.Wrap(resource.IgnoreNotFound(err), errGetWorkload)
	}
	if _, ok := r.profiles[w.Spec.SchedulerName]; !ok || w.DeletionTimestamp != nil {
		// Another scheduler's Workload: never touched.
		return reconcile.Result{}, nil
	}
	if w.Spreads() {
		// Divided or Duplicated: placed through its shares, by the
		// divider (a cluster's change requeues it here).
		r.divisions.Enqueue(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	if r.cache.Assumed(w.UID) {
		// A decision about it is being written, or written and not yet
		// seen by the informer: the informer's copy of the write (or the
		// writer, if the write fails) brings it back.
		return reconcile.Result{}, nil
	}
	d, res := r.decide(ctx, w)
	if d == nil {
		return res, nil
	}
	// Every decision is assumed until the informer has its write, so that
	// the loop never decides twice from a copy older than its own write.
	// (A drain's move was assumed already, under moveSlots: assuming
	// again, before anything is written, changes nothing.)
	r.assume(d)
	r.writer.Submit(d)
	return res, nil
}

// decide returns what the Workload's scheduling status should be, or nil
// when it is what it should be.
func (r *Reconciler) decide(ctx context.Context, w *v1alpha1.Workload) (*decision, reconcile.Result) {
	if errs := r.verdicts.For(w).Errors(); len(errs) > 0 {
		// Refused before any member sees it; a spec change brings it
		// back. A placed Workload keeps its cluster (the propagator rolls
		// out no invalid generation).
		msg := "invalid pod template: " + errs.ToAggregate().Error()
		schedulingAttempts.WithLabelValues("invalid").Inc()
		d := keepDecision(w, v1alpha1.NotScheduled(v1alpha1.ReasonInvalidTemplate, msg, w.Generation))
		d.event = event.Warning(v1alpha1.ReasonInvalidTemplate, errors.New(msg))
		return d.orNil(), reconcile.Result{}
	}
	if w.Status.ClusterRef != nil && !w.RejectedBy(w.ClusterKey(w.Status.ClusterRef)) {
		// Placed: it stays, whatever scores say now, until a handshake
		// rejection or a NoExecute taint moves it.
		return r.placed(ctx, w)
	}
	start := time.Now()
	res := r.profiles[w.Spec.SchedulerName].Schedule(ctx, w, r.cache.Snapshot(), scheduler.Options{State: r.cycleState(w)})
	schedulingDuration.Observe(time.Since(start).Seconds())
	r.log.Debug("scheduling cycle", "workload", client.ObjectKeyFromObject(w).String(), "duration", time.Since(start), "feasible", len(res.Ranked), "clusters", res.Total)
	defer func() { pendingWorkloads.Set(float64(r.cache.PendingCount(r.served))) }()
	if len(res.Ranked) == 0 {
		schedulingAttempts.WithLabelValues("unschedulable").Inc()
		d := newDecision(w, nil, v1alpha1.NotScheduled(v1alpha1.ReasonUnschedulable, res.Message(), w.Generation))
		d.event = event.Warning(reasonFailedScheduling, errors.New(d.cond.Message))
		// Events (clusters and workloads changing) requeue it sooner, and
		// so does the end of a rejection's backoff.
		return d.orNil(), reconcile.Result{RequeueAfter: nextRetry(w, time.Now())}
	}
	schedulingAttempts.WithLabelValues("scheduled").Inc()
	d := r.placeOn(w, res, v1alpha1.Scheduled(placedMessage(res), w.Generation))
	d.event = event.Normal(v1alpha1.ReasonScheduled, d.cond.Message)
	return d.orNil(), reconcile.Result{}
}

// placeOn makes the decision to place the Workload on the best ranked
// cluster. A rejection there whose backoff is not over (the cluster
// opened up since) is over once Scheduled turns True there after it
// (Workload.ChosenSince): the decision is a transition, so the propagator
// proves the cluster again. The rejection itself is the propagator's.
func (r *Reconciler) placeOn(w *v1alpha1.Workload, res *scheduler.Result, cond xpv2.Condition) *decision {
	best := res.Ranked[0].Cluster.Key
	d := newDecision(w, unitsOf(w, res), cond)
	now := time.Now()
	if rc := w.Rejection(best); rc != nil && !rc.Expired(now) && !w.ChosenSince(rc) {
		// Each rejection's own message: never Equal to the last, so the
		// transition time is not kept from it (shared.PatchStatus).
		d.cond.Message += fmt.Sprintf("; chosen again: it changed since its rejection %d of the candidates (%s)", rc.Attempts, rc.Reason)
		d.cond.LastTransitionTime = v1alpha1.ChoiceAfter(rc, now)
		d.chosenAgain = true
	}
	return d
}

// cycleState is what the scheduler keeps per Workload for its cycles: the
// verdict on its template for this generation.
func (r *Reconciler) cycleState(w *v1alpha1.Workload) map[string]any {
	return map[string]any{predicates.VerdictKey: r.verdicts.For(w)}
}

// nextRetry is how long until the first of this generation's rejections
// ends its backoff; unschedulableRetry when none will.
func nextRetry(w *v1alpha1.Workload, now time.Time) time.Duration {
	next := unschedulableRetry
	for _, rc := range w.Status.RejectedClusters {
		if rc.Generation == w.Generation && rc.RetryAfter != nil && rc.RetryAfter.After(now) {
			next = min(next, rc.RetryAfter.Sub(now))
		}
	}
	return next
}

// placed decides about a placed Workload: it stays, or it must leave its
// cluster (scheduler.MustLeave) and moves to the best other one. A move
// that finds no other cluster, or that would exceed the fleet's bound on
// drains at once, waits (Scheduled stays True, reason MovePending); a
// cluster changing, or a move ending, looks again.
func (r *Reconciler) placed(ctx context.Context, w *v1alpha1.Workload) (*decision, reconcile.Result) {
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	// waits: it waits for a place under --max-concurrent-moves; moves:
	// it takes one (the cache counts it once the decision is written).
	waits, moves := false, false
	defer func() {
		if waits {
			return
		}
		r.waiters.done(key)
		if !moves {
			// A place it was woken for, or one a drain left, goes to
			// the next waiter.
			r.wakeWaiters()
		}
	}()
	current := w.ClusterKey(w.Status.ClusterRef)
	ci := r.cache.Cluster(current)
	if ci == nil {
		// Not in the cache (yet): a cluster deleted for good drains first
		// (its finalizer), so a missing one is no reason to move.
		return r.acknowledge(w), reconcile.Result{}
	}
	now := time.Now()
	leave, after := scheduler.MustLeave(w, ci, scheduler.ExecutionTolerations(w, r.defaultTolerations), now)
	if w.IsShare() {
		return r.sharePlaced(w, leave, after)
	}
	var target types.NamespacedName
	if leave == nil {
		var again time.Duration
		if leave, target, again = r.rebalance(ctx, w, current, now); leave == nil {
			return r.acknowledge(w), reconcile.Result{RequeueAfter: minPositive(after, again)}
		}
	}
	drain := v1alpha1.IsDrain(leave.Reason)
	if drain && r.maxMoves > 0 {
		// A place is looked for and taken under moveSlots, as a divider
		// takes its shares' (claimMoves), and counted (assumed) before
		// the next may look.
		r.moveSlots.Lock()
		defer r.moveSlots.Unlock()
	}
	if moving := r.cache.Draining(); drain && r.maxMoves > 0 && moving >= r.maxMoves {
		if leave.Reason == v1alpha1.ReasonRebalanced {
			// It need not move: it looks again later, saying nothing,
			// never in the line of the drains that must move.
			return r.acknowledge(w), reconcile.Result{RequeueAfter: rebalanceRetry}
		}
		// Woken only when a place is free (wakeWaiters), in turn.
		waits = true
		if r.beforeWait != nil {
			r.beforeWait()
		}
		r.waiters.wait(key)
		r.wakeEndedSince(moving)
		return r.movePending(w, leave, fmt.Sprintf("%d Workloads are moving already, the most at once (--max-concurrent-moves)", moving)), reconcile.Result{}
	}
	start := time.Now()
	res := r.profiles[w.Spec.SchedulerName].Schedule(ctx, w, r.cache.Snapshot(), scheduler.Options{
		Exclude: map[types.NamespacedName]string{current: "cluster(s) the Workload must leave"},
		State:   r.cycleState(w),
	})
	schedulingDuration.Observe(time.Since(start).Seconds())
	if target != (types.NamespacedName{}) && !first(res, target) {
		// The cluster it prefers cannot take it after all: it stays.
		return r.acknowledge(w), reconcile.Result{}
	}
	if len(res.Ranked) == 0 {
		schedulingAttempts.WithLabelValues("unschedulable").Inc()
		return r.movePending(w, leave, "no other cluster can take it: "+res.Message()), reconcile.Result{}
	}
	schedulingAttempts.WithLabelValues("moved").Inc()
	moves = drain
	d := r.move(w, res, leave, now)
	if d != nil && moves && r.maxMoves > 0 {
		r.assume(d)
	}
	return d, reconcile.Result{}
}

// move places a Workload that must leave its cluster on the best of res,
// naming the cluster left.
func (r *Reconciler) move(w *v1alpha1.Workload, res *scheduler.Result, leave *scheduler.Leave, now time.Time) *decision {
	current := w.ClusterKey(w.Status.ClusterRef)
	d := r.placeOn(w, res, v1alpha1.Scheduled(fmt.Sprintf("moved from %s: %s; %s", current, leave.Message, placedMessage(res)), w.Generation))
	// The cluster left stays named until the propagator counts nothing
	// of the Workload there (status.clusterCounts answers the entry): at
	// the API's precision, later than a count there answering an
	// earlier move, which must not answer this one.
	t := metav1.NewTime(now.Truncate(time.Second))
	if c := w.Counted(current); c != nil && c.LeftAt != nil && !t.After(c.LeftAt.Time) {
		t = metav1.NewTime(c.LeftAt.Add(time.Second))
	}
	d.left = append(slices.DeleteFunc(d.leftAfter(), func(lc v1alpha1.LeftCluster) bool { return w.ClusterKey(&lc.Cluster) == current }),
		v1alpha1.LeftCluster{Cluster: *w.Status.ClusterRef, Reason: leave.Reason, Message: leave.Message, Time: &t})
	d.event = event.Normal(reasonMoved, d.cond.Message)
	return d.orNil()
}

// assume applies a decision in the cache until its write is confirmed.
func (r *Reconciler) assume(d *decision) {
	ref, _ := d.placement()
	r.cache.Assume(d.assumed(), ref)
}

// minPositive is the smaller of two durations, a zero one aside.
func minPositive(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// sharePlaced decides about a placed share: its moves are its Workload's
// (the divider's, under the same bound), so, pinned, it says it must leave
// (placer drain --wait reads that) and waits in no line here, or, while it
// tolerates its cluster's taint, looks again when that ends.
func (r *Reconciler) sharePlaced(w *v1alpha1.Workload, leave *scheduler.Leave, after time.Duration) (*decision, reconcile.Result) {
	if leave != nil {
		return r.movePending(w, leave, "its Workload "+w.Annotations[v1alpha1.AnnotationShareOf]+" moves its replicas, where its division finds room"), reconcile.Result{}
	}
	return r.acknowledge(w), reconcile.Result{RequeueAfter: after}
}

// movePending keeps a Workload that must leave its cluster where it is
// for now, and says why.
func (r *Reconciler) movePending(w *v1alpha1.Workload, leave *scheduler.Leave, why string) *decision {
	cond := v1alpha1.Scheduled(leave.Message+"; it stays until it can move: "+why, w.Generation)
	cond.Reason = v1alpha1.ReasonMovePending
	d := keepDecision(w, cond)
	d.event = event.Warning(reasonFailedMove, errors.New(cond.Message))
	return d.orNil()
}

// acknowledge moves a placed Workload's Scheduled condition to its current
// generation, unchanged otherwise; nil when there is nothing to do.
func (r *Reconciler) acknowledge(w *v1alpha1.Workload) *decision {
	cond := w.Status.GetCondition(v1alpha1.TypeScheduled)
	switch {
	case cond.Reason == v1alpha1.ReasonInvalidTemplate, cond.Reason == v1alpha1.ReasonMovePending:
		// The template is valid again: the Workload stays where it is.
		cond = v1alpha1.Scheduled(fmt.Sprintf("placed on %s", w.ClusterKey(w.Status.ClusterRef)), w.Generation)
	case cond.Status == corev1.ConditionTrue:
		cond.ObservedGeneration = w.Generation
	default:
		// Scheduled stays as it is; what the propagator's counts
		// settled may still be written (orNil).
		cond = xpv2.Condition{}
	}
	return keepDecision(w, cond).orNil()
}

// unitsOf are the units a cycle's ranking places: every replica in the
// best cluster, and a runner-up unit of them in each next one, up to
// spec.placement.fanOut clusters.
func unitsOf(w *v1alpha1.Workload, res *scheduler.Result) []v1alpha1.PlacementUnit {
	n := min(max(int(w.Spec.Placement.FanOut), 1), len(res.Ranked))
	out := make([]v1alpha1.PlacementUnit, n)
	for i := range n {
		out[i] = v1alpha1.PlacementUnit{Cluster: res.Ranked[i].Cluster.Key, Count: w.ReplicaCount(), RunnerUp: i > 0}
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
	scores := best.Scores()
	names := make([]string, 0, len(scores))
	for n, v := range scores {
		if v > scheduler.MinScore {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if scores[names[i]] != scores[names[j]] {
			return scores[names[i]] > scores[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %d", n, scores[n])
	}
	decided := "a tie, broken by a hash of the Workload's UID"
	if len(parts) > 0 {
		decided = strings.Join(parts, ", ")
	}
	return fmt.Sprintf("placed on %s with score %d, best of %d feasible of %d clusters (%s)",
		best.Cluster.Key, best.Total, len(res.Ranked), res.Total, decided)
}
