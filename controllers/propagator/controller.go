package propagator

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/apis/compute/validation"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/controllers/dependencies"
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/propagator"
)

// Reasons of the propagator's Events (the reasons of conditions and
// rejections are the API's, in apis/compute/v1alpha1).
const (
	reasonCommitted  event.Reason = "Committed"
	reasonFenced     event.Reason = "Fenced"
	reasonRejected   event.Reason = "Rejected"
	reasonCandidates event.Reason = "CreatedCandidates"
	reasonCleanup    event.Reason = "CleanupPending"
	reasonAbandoned  event.Reason = "Abandoned"
	reasonReplacing  event.Reason = "Replacing"
)

const (
	finalizer = v1alpha1.FinalizerPropagator

	errListChaperons  = "cannot list PodChaperons"
	errCreateChaperon = "cannot create PodChaperon"
	errAllowChaperon  = "cannot allow PodChaperon"
	errGiveUp         = "cannot ask the member to fence PodChaperon"
	errKeepOneCopy    = "cannot take the replace-lost mark off PodChaperon"
	errListBindings   = "cannot list ClusterBindings"
	errDeleteChaperon = "cannot delete PodChaperon"
	errFinalizer      = "cannot patch the Workload's finalizers"
	errGetService     = "cannot get the delivered Service"
	errApplyService   = "cannot deliver the Service"
	errDeleteService  = "cannot delete the delivered Service"
	errGetNamespace   = "cannot get the Workload's namespace"
	errGetWorkload    = "cannot get Workload"
	errGetCluster     = "cannot get KubernetesCluster"

	// cleanupRetry is how soon a deleted Workload waiting for its
	// candidates to go (or for a member to answer) is looked at again.
	cleanupRetry = 5 * time.Second
	// busyRecheck is when a Workload that waited for a member's request
	// slot is looked at again in any case (the wake does not cancel it):
	// a net should a slot never free.
	busyRecheck = time.Minute
)

// +kubebuilder:rbac:groups=compute.placer.dev,resources=workloads,verbs=get;list;watch;patch

// Options configure the propagator.
type Options struct {
	// Registry of member connections, kept by the cluster controller.
	Registry *cluster.Registry
	// HandshakeTimeout bounds how long a cluster may take to reserve every
	// candidate before it is recorded as rejected.
	HandshakeTimeout time.Duration
	// Workers is how many Workloads are reconciled at once (16 when zero);
	// one Workload is never reconciled by two workers at a time.
	Workers int
	// MaxRunnerUps bounds the runner-up candidates waiting in one member
	// (fan-out): beyond it, a Workload makes none there (none when zero).
	MaxRunnerUps int
}

// Reconciler runs the management side of the handshake for
// scheduled Workloads: candidates in status.clusterRef (and, with fan-out,
// the other nominated clusters), commit once every replica is reserved
// there, rejection when the target scheduler cannot place them, the
// member refuses them or does not answer in time; delivery (scale, rolling
// updates, the Service); and cleanup.
type Reconciler struct {
	client  client.Client
	members cluster.Members
	timeout time.Duration
	record  event.Recorder
	log     logging.Logger
	written shared.WrittenWorkloads
	// verdicts on the Workloads' templates, once per generation.
	verdicts validation.Verdicts
	// deps read, copy and let go of the objects that go with the pods.
	deps *dependencies.Component
	// maxRunnerUps bounds the runner-up candidates waiting in one member
	// (none when zero).
	maxRunnerUps int
	// started: when this process made a handshake's first candidates in
	// a chosen cluster, by Workload UID and cluster (handshakeAge).
	started handshakeStarts
	// wake brings a Workload back to the queue (Setup: the trigger's
	// Enqueue); a pass stopped by a member with no request slot free
	// comes back through it once one is (none: it returns the error).
	wake func(types.NamespacedName)
}

// NewReconciler returns a propagator over the given members.
func NewReconciler(c client.Client, members cluster.Members, handshakeTimeout time.Duration, record event.Recorder, log logging.Logger) *Reconciler {
	if handshakeTimeout == 0 {
		handshakeTimeout = time.Minute
	}
	return &Reconciler{client: c, members: members, timeout: handshakeTimeout, record: record, log: log}
}

// Setup adds the propagator to the manager.
func Setup(mgr ctrl.Manager, o Options) error {
	if o.Workers == 0 {
		o.Workers = 16
	}
	t := &shared.Trigger{}
	o.Registry.OnChaperon(t.Enqueue)
	r := NewReconciler(mgr.GetClient(), o.Registry, o.HandshakeTimeout,
		event.NewAPIRecorder(mgr.GetEventRecorderFor("placer-propagator")), //nolint:staticcheck // crossplane-runtime's recorder takes the legacy interface.
		logging.NewLogrLogger(mgr.GetLogger().WithName("propagator")))
	r.wake = t.Enqueue
	dyn, err := dynamic.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return errors.Wrap(err, "cannot create a dynamic client")
	}
	sources := shared.NewObjectWatches(dyn, mgr.GetRESTMapper(), t.Enqueue)
	r.deps, r.maxRunnerUps = dependencies.New(sources), o.MaxRunnerUps
	// A fresh watch of a member (its first, or after a Reconnect) saw no
	// event of what changed there between two connections, a chaperon
	// deleted say: every Workload that names the cluster, or has copies
	// there, looks again. The hook runs on a goroutine of its own.
	o.Registry.OnSynced(func(ctx context.Context, key types.NamespacedName) {
		for _, req := range r.workloadsIn(ctx, key) {
			t.Enqueue(req.NamespacedName)
		}
	})
	if err := mgr.Add(shared.Closer(sources.Close)); err != nil {
		return errors.Wrap(err, "cannot stop the dependency watches with the manager")
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("propagator").
		For(&v1alpha1.Workload{}).
		// A cluster that answers again (or stops answering, or goes) is
		// looked at by the Workloads its status names: what was left
		// there goes, and Ready tells the truth about it.
		Watches(&v1alpha1.KubernetesCluster{}, handler.EnqueueRequestsFromMapFunc(r.workloadsOf), builder.WithPredicates(readyChanged())).
		WatchesRawSource(t.Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: o.Workers}).
		Complete(r)
}

// scope is one reconcile of one Workload: what the phases learned and
// decided. Rejections, counts and conditions go into w.Status; Reconcile
// writes the status once, at the end, with the Events.
type scope struct {
	w      *v1alpha1.Workload
	orig   *v1alpha1.Workload
	target types.NamespacedName
	log    logging.Logger

	// units are what the status places (v1alpha1.Workload.PlacementUnits),
	// the chosen cluster's first.
	units []v1alpha1.PlacementUnit
	// chosen is the chosen unit's proof in this reconcile: nil until its
	// member answers, and when the cluster rejects it.
	chosen *proof
	// runnerUps are the proofs of the runner-up units whose members
	// answer, while the chosen one is not committed.
	runnerUps []*proof
	// fenced are the fenced candidates of a cluster rejected in this
	// reconcile, in member, deleted once the status holds the rejection.
	fenced       []*mcv1alpha1.PodChaperon
	fencedMember cluster.Member
	// keep are the clusters whose candidates stay.
	keep map[types.NamespacedName]bool
	// clusters are the KubernetesClusters read in this reconcile (nil:
	// not found), each read once.
	clusters map[types.NamespacedName]*v1alpha1.KubernetesCluster
	// verdict on the template and the namespace's labels, for admission.
	verdict         *validation.Verdict
	namespaceLabels map[string]string
	// bound: the cluster namespaces the Workload's namespace binds.
	bound sets.Set[string]
	// deps is this reconcile's reading of what the pods need.
	deps *dependencies.Reading

	result reconcile.Result
	// events report what was done in members; statusEvents what the
	// status says, recorded only once it is written.
	events, statusEvents []event.Event
}

// proof is one unit's handshake in this reconcile: its member, the
// Workload as delivered there (its overrides applied), what its
// candidates say and what comes next.
type proof struct {
	unit      v1alpha1.PlacementUnit
	member    cluster.Member
	delivered *v1alpha1.Workload
	chaperons []*mcv1alpha1.PodChaperon
	state     propagator.State
	decision  propagator.Decision
	// openElsewhere are the clusters other than this one, that answer,
	// where a candidate of the Workload may still bind without placer's
	// word: this unit's candidates wait for them (settleLeftWindows).
	openElsewhere []types.NamespacedName
	// needs is what its pods need there and cannot have yet
	// (dependencies): while it holds, no candidate is made.
	needs dependencies.Observation
	// problem: the committed cluster cannot take more of the unit (a
	// dependency it refuses): Ready says why, nothing new is allowed.
	problem *deliveryProblem
}

// proofs are the units proven in this reconcile, the chosen one first,
// without those whose cluster rejected them in it.
func (s *scope) proofs() []*proof {
	var out []*proof
	if s.chosen != nil {
		out = append(out, s.chosen)
	}
	for _, p := range s.runnerUps {
		if !s.w.RejectedBy(p.unit.Cluster) {
			out = append(out, p)
		}
	}
	return out
}

// bindsUnheld reports whether the unit's new candidates bind as soon as
// they are reserved: in the chosen cluster, a replica added to a
// committed unit, or a gang of one while no other cluster may still bind
// its candidate (settleLeftWindows).
func (p *proof) bindsUnheld() bool {
	return !p.unit.RunnerUp && (p.state.Allowed > 0 || propagator.BindsUnheld(p.delivered, p.unit) && len(p.openElsewhere) == 0)
}

// delivery says whether the unit's dependencies go to its cluster in this
// reconcile, and whether all of them or only the ServiceAccount: all
// where the chosen unit commits now or is committed, or where its missing candidates
// bind unheld or go to the member's own scheduler (NoReservation); the
// ServiceAccount where candidates that wait are made; none otherwise.
func (p *proof) delivery() (deliver, all bool) {
	switch {
	case !p.unit.RunnerUp && (p.decision.Action == propagator.Commit || p.decision.Action == propagator.Deliver):
		// A runner-up holding allowed candidates (the cluster committed
		// before a move) is not delivered to: it never gets a Secret or
		// a ConfigMap.
		return true, true
	case len(p.state.Missing) > 0:
		noReservation := !p.unit.RunnerUp && p.delivered.Spec.Placement.Mode == v1alpha1.PlacementModeNoReservation
		return true, p.bindsUnheld() || noReservation
	}
	return false, false
}

// committed reports whether the unit's cluster holds allowed candidates,
// or allows them now: runner-ups are not proven any more.
func (p *proof) committed() bool {
	return p != nil && (p.state.Allowed > 0 || p.decision.Action == propagator.Commit || p.decision.Action == propagator.Hold)
}

func newScope(w *v1alpha1.Workload, log logging.Logger) *scope {
	s := &scope{w: w, orig: w.DeepCopy(), keep: map[types.NamespacedName]bool{}, clusters: map[types.NamespacedName]*v1alpha1.KubernetesCluster{}, log: log}
	s.place()
	if w.Status.ClusterRef != nil {
		s.log = log.WithValues("cluster", s.target.String())
	}
	return s
}

// place reads what the status places: the units, and the chosen cluster.
func (s *scope) place() {
	s.units, s.target = s.w.PlacementUnits(), types.NamespacedName{}
	if s.w.Status.ClusterRef != nil {
		s.target = s.w.ClusterKey(s.w.Status.ClusterRef)
	}
}

// cluster reads a KubernetesCluster from the cache, once per reconcile;
// nil when it does not exist.
func (r *Reconciler) cluster(ctx context.Context, s *scope, key types.NamespacedName) (*v1alpha1.KubernetesCluster, error) {
	if kc, ok := s.clusters[key]; ok {
		return kc, nil
	}
	kc := &v1alpha1.KubernetesCluster{}
	if err := r.client.Get(ctx, key, kc); err != nil {
		if !kerrors.IsNotFound(err) {
			return nil, errors.Wrap(err, errGetCluster)
		}
		kc = nil
	}
	s.clusters[key] = kc
	return kc, nil
}

// requeueAfter asks to look again after d at the latest.
func (s *scope) requeueAfter(d time.Duration) {
	if d > 0 && (s.result.RequeueAfter == 0 || d < s.result.RequeueAfter) {
		s.result.RequeueAfter = d
	}
}

// event records an Event of what was done in a member, emitted at the end
// of the reconcile whatever happens to the status.
func (s *scope) event(e event.Event) { s.events = append(s.events, e) }

// statusEvent records an Event of what the status says, emitted only if
// the status is written.
func (s *scope) statusEvent(e event.Event) { s.statusEvents = append(s.statusEvents, e) }

// reject records the cluster in status.rejectedClusters for this
// generation (replacing an earlier entry of it), so the scheduler chooses
// again; its candidates are not kept, and go with removeElsewhere.
func (s *scope) reject(key types.NamespacedName, reason, msg string) {
	s.rejectReserved(key, reason, msg, 0)
}

// rejectReserved records key's rejection, which came after it reserved
// that many of the unit's candidates.
func (s *scope) rejectReserved(key types.NamespacedName, reason, msg string, reserved int) {
	msg = truncate(msg)
	// Never before the choice it rejects: a later choice is the
	// scheduler's word that the cluster opened up (Workload.ChosenSince).
	now := s.w.RejectionTime(time.Now())
	attempts := int32(1)
	if prev := s.w.Rejection(key); prev != nil {
		attempts = prev.Attempts + 1
	}
	retry := metav1.NewTime(now.Add(v1alpha1.RejectionBackoff(attempts)))
	kept := s.w.Status.RejectedClusters[:0]
	for _, rc := range s.w.Status.RejectedClusters {
		if rc.Generation == s.w.Generation && s.w.ClusterKey(&rc.Cluster) != key {
			kept = append(kept, rc)
		}
	}
	s.w.Status.RejectedClusters = append(kept, v1alpha1.RejectedCluster{
		Cluster: v1alpha1.ClusterReference{Name: key.Name, Namespace: key.Namespace}, Reason: reason, Message: msg, Generation: s.w.Generation, Time: &now,
		RetryAfter: &retry, Attempts: attempts, Reserved: int32(reserved),
	})
	delete(s.keep, key)
	if key == s.target {
		// Its counts describe a cluster the Workload leaves.
		s.w.Status.Replicas, s.w.Status.ScheduledReplicas, s.w.Status.ReadyReplicas = 0, 0, 0
		s.w.ForgetCounted(key)
	}
	what := "the candidates"
	if reserved > 0 {
		what = fmt.Sprintf("the candidates (it reserved %d)", reserved)
	}
	s.statusEvent(event.Warning(reasonRejected, errors.Errorf("%s rejected %s: %s", key, what, msg)))
	s.log.Info("cluster rejected the candidates", "rejected", key.String(), "reason", reason, "message", msg, "reserved", reserved)
}

// next is where a reconcile goes after a phase.
type next int

const (
	// proceed: on to the next phase.
	proceed next = iota
	// runnerUps: the chosen unit goes no further in this reconcile (its
	// cluster rejected it); runner-ups still prove themselves.
	runnerUps
	// settle: no unit is proven or delivered in this reconcile (the
	// chosen one is held, finished or refuses the template): on to what
	// follows the clusters left.
	settle
	// stop: the reconcile ends here (an error, a write that lost a race,
	// or nothing to do).
	stop
)

// phase is one step of a reconcile.
type phase func(ctx context.Context, s *scope) (next, error)

// stages are the normal reconcile's phases, in the order they run: the
// chosen unit's guards and observation (entered at the start); then every
// unit's: the runner-ups observed, what the pods need delivered (the one
// phase that does), candidates made, decisions carried out, the commit and
// delivery (entered by runnerUps); then the clusters left (entered by
// settle).
func (r *Reconciler) stages() [3][]phase {
	return [3][]phase{
		{r.ensureFinalizer, r.gate, r.connectChosen, r.admitChosen, r.observeChosen},
		{r.observeRunnerUps, r.dependencies, r.candidates, r.judge, r.commit, r.deliver},
		{r.leave},
	}
}

// run runs the stages' phases in order, a phase's next skipping ahead; it
// reports whether every phase that was to run ran (no stop, no error).
func run(ctx context.Context, s *scope, stages [3][]phase) (bool, error) {
	for i := 0; i < len(stages); {
		to := i + 1
		for _, p := range stages[i] {
			n, err := p(ctx, s)
			if err != nil {
				return false, err
			}
			if n == stop {
				return false, nil
			}
			if n == runnerUps && i < 1 {
				to = 1
				break
			}
			if n == settle && i < 2 {
				to = 2
				break
			}
		}
		i = to
	}
	return true, nil
}

// Reconcile runs one pass (reconcile). A pass that a member stopped
// because it had no request slot free (the request was not sent:
// cluster.BusyError) is not an error: the Workload comes back as soon as
// that member has a slot, not after an error's backoff, which under a
// burst grows with every other Workload's (the queue's limiter is shared)
// and left the last Workloads of a burst waiting seconds for a member
// that was answering.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := r.reconcile(ctx, req)
	if err != nil && r.wake != nil && cluster.WhenFree(err, req.NamespacedName, func() { r.wake(req.NamespacedName) }) {
		r.log.Debug("a member has no request slot free; the Workload comes back when it has", "workload", req.String())
		memberBusy.Inc()
		// The wake comes when a request to that member ends and the
		// Workload is first in line, or none is in flight; this look, a
		// minute later whatever happened, guards against a slot never
		// freed.
		return reconcile.Result{RequeueAfter: busyRecheck}, nil
	}
	return res, err
}

// reconcile moves one Workload's handshake a step forward, in phases
// (stages); then the status is written, once, and only once it holds this
// reconcile's rejections do the candidates outside the kept clusters go
// (a rejection lost to a conflict must not cost the candidates it would
// have explained). A deleted Workload is cleaned up.
func (r *Reconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cached := &v1alpha1.Workload{}
	if err := r.client.Get(ctx, req.NamespacedName, cached); err != nil {
		if kerrors.IsNotFound(err) {
			r.written.Forget(req.NamespacedName)
			r.started.forgetWorkload(req.NamespacedName)
			r.verdicts.Forget(req.NamespacedName)
			r.deps.Forget(req.NamespacedName)
		}
		return reconcile.Result{}, errors.Wrap(resource.IgnoreNotFound(err), errGetWorkload)
	}
	w := r.written.Latest(req.NamespacedName, cached)
	if w.Spreads() && !meta.FinalizerExists(w, finalizer) {
		// Divided or Duplicated: its shares, each a Workload of its own,
		// are what the propagator proves and delivers.
		return reconcile.Result{}, nil
	}
	if w.DeletionTimestamp != nil {
		return r.cleanup(ctx, w)
	}
	s := newScope(w, r.log.WithValues("workload", req.String(), "generation", w.Generation))
	s.deps = r.deps.Read(w)
	done, perr := run(ctx, s, r.stages())
	if !done {
		// leave did not run: the counts still say what they must.
		r.countsAfterMove(ctx, s)
	}
	if err := r.recordSilent(ctx, s); err != nil && perr == nil {
		perr = err
	}
	written, err := r.writeStatus(ctx, s)
	if err == nil && written && s.fenced != nil {
		// The rejection they explain is written: the fenced candidates
		// go now, through the member's API server even while the cluster
		// is not Ready (its scheduler stopped, say), so that the cluster,
		// chosen again, gets new ones.
		if err := r.deleteFenced(ctx, s); err != nil {
			return reconcile.Result{}, err
		}
	}
	switch {
	case perr != nil:
		return reconcile.Result{}, perr
	case err != nil:
		return reconcile.Result{}, err
	case done && written:
		if err := r.removeElsewhereOf(ctx, s, s.keep); err != nil {
			return reconcile.Result{}, err
		}
	}
	return s.result, nil
}

// recordSilent records in status.placedNamespaces (with the pass's own
// write) the namespaces of a cluster whose watch shows the Workload's
// candidates while it does not answer, unless the chosen cluster or one
// left names it: a runner-up, which only nominatedClusters names, and
// which the scheduler may drop from there while it stays silent. After a
// restart (its watch not listed yet) nothing would then say it holds
// candidates, and a deletion would leave them there. A write only when a
// member holding candidates goes silent; none in the common fan-out, whose
// runner-ups answer (recording each before its candidates cost two writes
// per fan-out Workload: the record and its release). The record goes once
// they are confirmed gone (pruneDependencies).
func (r *Reconciler) recordSilent(ctx context.Context, s *scope) error {
	w := s.w
	for _, m := range r.members.Members() {
		key := m.ClusterKey()
		if key == s.target || w.Left(key) != nil || !m.Synced() || r.sameHost(key, s.target) {
			// The chosen cluster, under any of its names, and the
			// clusters left are named already.
			continue
		}
		chs, err := chaperonsOf(ctx, m, w)
		if err != nil {
			return err
		}
		var todo []string
		for _, ch := range chs {
			if !slices.Contains(w.PlacedIn(key), ch.Namespace) && !slices.Contains(todo, ch.Namespace) {
				todo = append(todo, ch.Namespace)
			}
		}
		if len(todo) == 0 {
			continue
		}
		if st, _, err := r.reachOf(ctx, s, key); err != nil || st != silent {
			if err != nil {
				return err
			}
			continue
		}
		for _, ns := range todo {
			w.SetPlaced(key, ns, true)
		}
	}
	return nil
}

// nowhere follows a Workload with no cluster: its candidates go from every
// member but those still serving it, and what was copied for them goes
// too, where nothing of it remains (pruneDependencies; the status says so
// in this pass's write). Otherwise its copies stayed for as long as it
// found no cluster, and for good once their cluster was deleted.
func (r *Reconciler) nowhere(ctx context.Context, s *scope) error {
	keep := stillServing(s.w)
	if err := r.removeElsewhereOf(ctx, s, keep); err != nil {
		return err
	}
	maps.Copy(s.keep, keep)
	return r.pruneDependencies(ctx, s)
}

// stillServing are the clusters whose copy stays while the Workload has
// no cluster: those it is leaving StartBeforeStop (a move whose new
// cluster rejected it, with nothing else free yet), so that a drain
// never stops the old copy before a new one runs.
func stillServing(w *v1alpha1.Workload) map[types.NamespacedName]bool {
	if w.Spec.Placement.Move == v1alpha1.MoveStopBeforeStart || len(w.Status.LeftClusters) == 0 {
		return nil
	}
	keep := map[types.NamespacedName]bool{}
	for i := range w.Status.LeftClusters {
		keep[w.ClusterKey(&w.Status.LeftClusters[i].Cluster)] = true
	}
	return keep
}

// derived set the status fields that follow from the others, in every
// status write (shared.PatchStatus).
var derived = []func(*v1alpha1.Workload){uncounted, setReadyOfDesired, forgetCounts}

// setReadyOfDesired sets the ready/desired column (readyOfDesired) from
// the counts, as kubectl shows a Deployment's READY.
func setReadyOfDesired(w *v1alpha1.Workload) {
	w.Status.ReadyOfDesired = fmt.Sprintf("%d/%d", w.Status.ReadyReplicas, w.ReplicaCount())
}

// writeStatus records the Events of what was done in members (done,
// whatever happens to the status), patches the status if a phase changed
// it, and then records the Events of what it says. written is false when
// the patch lost a race: the next reconcile, soon, decides again from what
// the members say.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) (written bool, err error) {
	for _, e := range s.events {
		r.record.Event(s.w, e)
	}
	res, err := shared.PatchStatus(ctx, r.client, r.client, s.w, s.orig, derived...)
	if res != shared.StatusUnchanged {
		propagatorWrites.WithLabelValues(string(res)).Inc()
	}
	if res != shared.StatusWritten && res != shared.StatusUnchanged {
		// Lost, or foreseen lost, to another writer (the scheduler): the
		// next pass, soon, decides again from the newer copy.
		s.requeueAfter(shared.ConflictRetry)
		return false, err
	}
	if s.w.ResourceVersion != s.orig.ResourceVersion {
		r.written.Remember(s.w)
	}
	for _, e := range s.statusEvents {
		r.record.Event(s.w, e)
	}
	return true, nil
}

// ensureFinalizer adds the finalizer before the first candidate, once the
// scheduler has written its decision, to a Workload that came without it:
// the manager's webhook adds it in the create (Finalizer), so this patch
// is for one created while no manager answered. Patched right after the
// creation, it raced the scheduler's status write. A Workload with no cluster chosen has no
// candidate anywhere; one whose template the scheduler refused sends
// nothing of it to any member, and what runs keeps running.
func (r *Reconciler) ensureFinalizer(ctx context.Context, s *scope) (next, error) {
	w := s.w
	if w.Status.ClusterRef == nil {
		if !meta.FinalizerExists(w, finalizer) {
			// Candidates come only after the finalizer: there are none.
			return stop, nil
		}
		return stop, r.nowhere(ctx, s)
	}
	if !meta.FinalizerExists(w, finalizer) {
		if err := r.patchFinalizers(ctx, w, meta.AddFinalizer); err != nil {
			if forbidden(err) {
				// Not only a log line: the Workload says why nothing happens.
				s.event(event.Warning(v1alpha1.ReasonForbidden, err))
			}
			if kerrors.IsConflict(errors.Cause(err)) {
				s.requeueAfter(shared.ConflictRetry)
				return stop, nil
			}
			return stop, err
		}
		// The patch returned the object as it is now: start again from it
		// (its clusterRef may have moved meanwhile).
		s.orig = w.DeepCopy()
		r.written.Remember(w)
		if w.Status.ClusterRef == nil {
			return stop, r.nowhere(ctx, s)
		}
		s.place()
	}
	if c := w.Status.GetCondition(v1alpha1.TypeScheduled); c.Reason == v1alpha1.ReasonInvalidTemplate && c.ObservedGeneration == w.Generation {
		return stop, nil
	}
	if w.RejectedBy(s.target) {
		// Already rejected; the scheduler's next choice brings us back.
		return stop, nil
	}
	return proceed, nil
}
