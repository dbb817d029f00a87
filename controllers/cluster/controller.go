package cluster

import (
	"context"
	"fmt"
	"strings"
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
	"k8s.io/client-go/dynamic"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/controllers/shared"
)

const (
	errGetCluster   = "cannot get KubernetesCluster"
	errGetSecret    = "cannot get connection Secret"
	errUpdateStatus = "cannot update KubernetesCluster status"
	errPatchLabels  = "cannot publish built-in labels"
	errReconnect    = "cannot reconnect to the cluster"
	errGetNamespace = "cannot get the cluster's namespace"

	errClusterFinalizer = "cannot patch the cluster's finalizers"

	clusterFinalizer = v1alpha1.FinalizerDrain
)

// Options tune the cluster controller.
type Options struct {
	// ProbeInterval is how often each member's /version is probed.
	ProbeInterval time.Duration
	// HeartbeatGrace is how long a member's ClusterSummary may go without
	// a new heartbeat before the member stops being Ready (40 s when zero).
	HeartbeatGrace time.Duration
	// Registry options for the member connections.
	Registry cluster.Options
}

// Reconciler keeps one connection per KubernetesCluster, probes it
// and publishes its status, built-in labels and capacity summary.
type Reconciler struct {
	client client.Client
	// secrets reads a connection Secret directly while its own watch (the
	// one cache of it) has not synced; the manager caches no other Secret.
	secrets  client.Reader
	watches  *shared.ObjectWatches
	registry *cluster.Registry
	// members is the registry as the drain reads it (a fake in tests).
	members  cluster.Members
	record   event.Recorder
	log      logging.Logger
	interval time.Duration
	grace    time.Duration
	ready    readiness
	drains   drains
}

// +kubebuilder:rbac:groups=compute.placer.dev,resources=kubernetesclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=compute.placer.dev,resources=kubernetesclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// Setup adds the cluster controller to the manager and
// returns the registry of member connections it maintains.
func Setup(mgr ctrl.Manager, o Options) (*cluster.Registry, error) {
	if o.ProbeInterval == 0 {
		o.ProbeInterval = 30 * time.Second
	}
	if o.HeartbeatGrace == 0 {
		o.HeartbeatGrace = 40 * time.Second
	}
	t := &shared.Trigger{}
	reg := cluster.NewRegistry(o.Registry, t.Enqueue)
	dyn, err := dynamic.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, errors.Wrap(err, "cannot create a client of the management cluster")
	}
	r := &Reconciler{
		client:   mgr.GetClient(),
		secrets:  mgr.GetAPIReader(),
		watches:  shared.NewObjectWatches(dyn, mgr.GetRESTMapper(), t.Enqueue),
		registry: reg,
		members:  reg,
		record:   event.NewAPIRecorder(mgr.GetEventRecorderFor("placer-cluster-controller")), //nolint:staticcheck // crossplane-runtime's recorder takes the legacy interface.
		log:      logging.NewLogrLogger(mgr.GetLogger().WithName("cluster")),
		interval: o.ProbeInterval,
		grace:    o.HeartbeatGrace,
	}
	if err := mgr.Add(shared.Closer(func() { r.watches.Close(); reg.Close() })); err != nil {
		return nil, err
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("cluster").
		For(&v1alpha1.KubernetesCluster{}).
		Watches(&v1alpha1.Workload{}, handler.EnqueueRequestsFromMapFunc(r.deletingClustersOf)).
		// Labelling a namespace for private clusters (or not) changes what
		// its clusters may reach.
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.clustersIn), builder.WithPredicates(privateLabelChanged())).
		WatchesRawSource(t.Source()).
		Complete(r)
	return reg, err
}

// Reconcile connects to a member cluster, probes it and publishes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := r.log.WithValues("cluster", req.String())
	kc := &v1alpha1.KubernetesCluster{}
	if err := r.client.Get(ctx, req.NamespacedName, kc); err != nil {
		if kerrors.IsNotFound(err) {
			r.watches.Forget(req.NamespacedName)
			r.registry.Remove(req.NamespacedName)
			r.drains.forget(req.NamespacedName)
			r.ready.set(req.NamespacedName, false)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, errors.Wrap(err, errGetCluster)
	}
	if kc.DeletionTimestamp == nil && !meta.FinalizerExists(kc, clusterFinalizer) {
		// Deleting a cluster first moves its Workloads away and cleans up
		// what placer sent there (drain).
		err := shared.PatchLocked(ctx, r.client, kc, func(kc *v1alpha1.KubernetesCluster) { meta.AddFinalizer(kc, clusterFinalizer) })
		if err != nil {
			return shared.IgnoreConflict(errors.Wrap(resource.IgnoreNotFound(err), errClusterFinalizer))
		}
	}
	res, err := r.connect(ctx, log, kc)
	if kc.DeletionTimestamp == nil || err != nil {
		return res, err
	}
	return r.drain(ctx, kc, res)
}

// clustersIn maps a namespace to its KubernetesClusters.
func (r *Reconciler) clustersIn(ctx context.Context, o client.Object) []reconcile.Request {
	kcs := &v1alpha1.KubernetesClusterList{}
	if err := r.client.List(ctx, kcs, client.InNamespace(o.GetName())); err != nil {
		r.log.Info("cannot list the KubernetesClusters of a namespace", "namespace", o.GetName(), "error", err)
		return nil
	}
	return shared.RequestsFor(kcs.Items)
}

// privateLabelChanged passes a namespace whose v1alpha1.LabelPrivateClusters changed.
func privateLabelChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(ctrlevent.CreateEvent) bool { return false },
		DeleteFunc:  func(ctrlevent.DeleteEvent) bool { return false },
		GenericFunc: func(ctrlevent.GenericEvent) bool { return false },
		UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
			return e.ObjectOld.GetLabels()[v1alpha1.LabelPrivateClusters] != e.ObjectNew.GetLabels()[v1alpha1.LabelPrivateClusters]
		},
	}
}

// access says what the cluster's kubeconfig may reach beyond the
// manager's policy: private addresses, when the cluster's namespace is
// labelled v1alpha1.LabelPrivateClusters=true (read at every probe). A
// tenant, who cannot label its namespace, cannot make the manager dial
// the management network.
func (r *Reconciler) access(ctx context.Context, kc *v1alpha1.KubernetesCluster) ([]cluster.EnsureOption, error) {
	ns := &corev1.Namespace{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: kc.Namespace}, ns); err != nil {
		return nil, errors.Wrap(resource.IgnoreNotFound(err), errGetNamespace)
	}
	if ns.Labels[v1alpha1.LabelPrivateClusters] == "true" {
		return []cluster.EnsureOption{cluster.AllowPrivate}, nil
	}
	return nil, nil
}

// connect keeps the cluster's connection, probes it and publishes its
// status, also while it is being deleted (drained).
func (r *Reconciler) connect(ctx context.Context, log logging.Logger, kc *v1alpha1.KubernetesCluster) (reconcile.Result, error) {
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(kc)}
	status := kc.Status.DeepCopy()
	kubeconfig, notReady := r.kubeconfig(ctx, kc)
	if notReady != nil {
		// Nothing to retry: the Secret watch brings the cluster back when it changes.
		r.registry.Remove(req.NamespacedName)
		return shared.IgnoreConflict(r.writeStatus(ctx, kc, status, *notReady, nil))
	}
	access, err := r.access(ctx, kc)
	if err != nil {
		return reconcile.Result{}, err
	}
	conn, err := r.registry.Ensure(req.NamespacedName, kubeconfig, access...)
	if err != nil {
		reason := v1alpha1.ReasonBadKubeconfig
		if cluster.IsKubeconfigRefused(err) {
			reason = v1alpha1.ReasonKubeconfigRefused
		}
		return shared.IgnoreConflict(r.writeStatus(ctx, kc, status, notReadyCondition(reason, fmt.Sprintf("Secret %s: %v", secretRef(kc), err)), nil))
	}
	conn.SetTargetNamespaces(kc.Spec.TargetNamespaces)

	// A member's summary changes up to once a second under churn: between
	// probes it is copied into the status, and the member is not asked
	// for its version again.
	now := metav1.Now()
	next := r.interval
	if since, fresh := r.probedRecently(kc, conn); fresh {
		next = r.interval - since
	} else {
		info, err := conn.Probe(ctx)
		if err != nil {
			log.Debug("probe failed", "error", cluster.DescribeError(err))
			return r.requeueAfter(r.writeStatus(ctx, kc, status, probeFailure(err), nil))
		}
		status.LastProbeTime = &now
		status.Version = info.GitVersion
		if prev := kc.Status.GetCondition(xpv2.TypeReady); prev.Reason == v1alpha1.ReasonUnreachable && stale(conn.WatchStarted(), prev.LastTransitionTime.Time) {
			// It answers again: fresh watches list it now, rather than
			// after their reflectors' backoff (up to a minute), and until
			// they have, nothing is read from the stale ones.
			if conn, err = r.registry.Reconnect(req.NamespacedName, kubeconfig, access...); err != nil {
				// Ensure accepted this kubeconfig a moment ago.
				return reconcile.Result{}, errors.Wrap(err, errReconnect)
			}
		}
	}
	msg := fmt.Sprintf("%s answers", status.Version)
	var topology map[string]string
	var down *xpv2.Condition
	if watchErr := conn.Watch(ctx); watchErr != nil {
		log.Debug("cannot watch the cluster summary", "error", cluster.DescribeError(watchErr))
		c := notReadyCondition(v1alpha1.ReasonAgentNotRunning, msg+"; placer's agent is not installed or does not run: "+cluster.DescribeError(watchErr))
		down = &c
	} else {
		sum := conn.Summary(ctx)
		if sum.Found && sum.Silent >= r.grace {
			// Silent past the grace: a stopped agent, or a watch waiting
			// out its reflector's backoff after a blip. The member says.
			if live, err := conn.LiveHeartbeat(ctx); err == nil && !live.Equal(&sum.Beat) {
				log.Debug("the summary's watch is behind; reconnecting")
				if _, err := r.registry.Reconnect(req.NamespacedName, kubeconfig, access...); err != nil {
					return reconcile.Result{}, errors.Wrap(err, errReconnect)
				}
				return reconcile.Result{RequeueAfter: time.Second}, nil
			}
		}
		if sum.Found {
			status.NodeCount, status.ReadyNodeCount = sum.Status.NodeCount, sum.Status.ReadyNodeCount
			status.Allocatable, status.Requested, status.LargestFreeNode = sum.Status.Allocatable, sum.Status.Requested, sum.Status.LargestFreeNode
			topology = sum.Status.Labels
			msg += fmt.Sprintf("; %d of %d nodes ready", status.ReadyNodeCount, status.NodeCount)
		}
		var wait time.Duration
		var settled bool
		down, wait, settled = r.components(sum, msg)
		if !settled {
			// The watch has just started (a new connection, a restarted
			// manager): the cluster keeps its condition for a moment
			// rather than flap.
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		if wait > 0 {
			next = min(next, wait)
		}
	}
	cond := xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonReady, LastTransitionTime: now, Message: msg}
	if down != nil {
		cond = *down
	}
	if err := r.writeStatus(ctx, kc, status, cond, topology); err != nil {
		return shared.IgnoreConflict(err)
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

// components judges placer's components in an answering member from its
// summary: the agent heartbeats in it, and it says whether the candidate
// scheduler renews its Lease. It returns why the member is not Ready (nil
// when it is), how soon to look again (zero: at the next probe), and false
// while the watch has not listed the summary yet and nothing can be said.
func (r *Reconciler) components(sum cluster.Summary, msg string) (*xpv2.Condition, time.Duration, bool) {
	var c xpv2.Condition
	left := r.grace - sum.Silent
	switch {
	case !sum.Synced && left > 0:
		// The summary's arrival brings the next reconcile; without one,
		// look again now and then (each look probes), not in a hot loop.
		return nil, min(left, 2*time.Second), false
	case !sum.Synced:
		c = notReadyCondition(v1alpha1.ReasonAgentNotRunning, fmt.Sprintf("%s; the watch of placer's ClusterSummary has not synced in %s", msg, sum.Silent.Round(time.Second)))
	case !sum.Found:
		c = notReadyCondition(v1alpha1.ReasonAgentNotRunning, msg+"; placer's agent has not published a capacity summary: it does not run, or cannot write")
	case sum.Status.HeartbeatTime == nil:
		c = notReadyCondition(v1alpha1.ReasonAgentNotRunning, msg+"; placer's agent publishes no heartbeat: it is older than the manager, upgrade it")
	case left <= 0:
		c = notReadyCondition(v1alpha1.ReasonAgentNotRunning, fmt.Sprintf("%s; placer's agent has not renewed its capacity summary for %s (grace %s): it does not run, or cannot reach its API server",
			msg, sum.Silent.Round(time.Second), r.grace))
	case !sum.Changed && time.Since(sum.Status.HeartbeatTime.Time) >= r.grace:
		// A new watch has seen one summary, written long ago by the
		// agent's clock: alive only once its heartbeat changes; until
		// then, or the grace, the cluster keeps its condition.
		return nil, left, false
	case sum.Status.CandidateScheduler != nil && !sum.Status.CandidateScheduler.Running:
		c = notReadyCondition(v1alpha1.ReasonCandidateSchedulerNotRunning, msg+"; placer's candidate scheduler does not run: "+sum.Status.CandidateScheduler.Message)
		return &c, left, true
	default:
		return nil, left, true
	}
	return &c, 0, true
}

// stale reports whether watches started before the cluster stopped
// answering (at down): they have missed what happened since.
func stale(started, down time.Time) bool {
	// down is whole seconds: a watch started in that second may be stale.
	return !started.IsZero() && started.Before(down.Add(time.Second))
}

// probedRecently reports whether the cluster was probed Ready less than
// an interval ago, through a connection that watches it: then a reconcile
// (a summary changed) needs no probe, and since is how long ago it was.
func (r *Reconciler) probedRecently(kc *v1alpha1.KubernetesCluster, conn cluster.Member) (since time.Duration, fresh bool) {
	last := kc.Status.LastProbeTime
	if last == nil || kc.Status.Version == "" || kc.Status.GetCondition(xpv2.TypeReady).Status != corev1.ConditionTrue || !conn.Synced() {
		return 0, false
	}
	since = time.Since(last.Time)
	return since, since >= 0 && since < r.interval
}

// requeueAfter schedules the next probe, or returns err for a backoff retry.
// A conflict only means the cache was behind: retry soon, quietly.
func (r *Reconciler) requeueAfter(err error) (reconcile.Result, error) {
	if err != nil {
		return shared.IgnoreConflict(err)
	}
	return reconcile.Result{RequeueAfter: r.interval}, nil
}

// kubeconfig reads the cluster's kubeconfig, or returns why it cannot.
func (r *Reconciler) kubeconfig(ctx context.Context, kc *v1alpha1.KubernetesCluster) ([]byte, *xpv2.Condition) {
	ref := kc.Spec.ConnectionSecretRef
	key := types.NamespacedName{Namespace: kc.Namespace, Name: ref.Name}
	// The watch of this one Secret is its cache (objectWatches: the
	// manager never lists or caches a Secret no cluster references); until
	// it has synced, the Secret is read directly.
	wk := shared.CoreKey("Secret", key.Namespace, key.Name)
	r.watches.Use(client.ObjectKeyFromObject(kc), []shared.ObjectKey{wk})
	s := &corev1.Secret{}
	found, synced, err := shared.GetTyped(r.watches, wk, s)
	switch {
	case !synced:
		err = r.secrets.Get(ctx, key, s)
	case err == nil && !found:
		err = kerrors.NewNotFound(corev1.Resource("secrets"), ref.Name)
	}
	if err != nil {
		c := notReadyCondition(v1alpha1.ReasonSecretNotFound, fmt.Sprintf("Secret %s: %v", secretRef(kc), errors.Wrap(err, errGetSecret)))
		if kerrors.IsNotFound(err) {
			c.Message = fmt.Sprintf("Secret %s not found", secretRef(kc))
		}
		return nil, &c
	}
	dataKey := ref.Key
	if dataKey == "" {
		dataKey = "kubeconfig"
	}
	b, ok := s.Data[dataKey]
	if !ok || len(b) == 0 {
		c := notReadyCondition(v1alpha1.ReasonBadKubeconfig, fmt.Sprintf("Secret %s has no key %q", secretRef(kc), dataKey))
		return nil, &c
	}
	return b, nil
}

func secretRef(kc *v1alpha1.KubernetesCluster) string {
	return kc.Namespace + "/" + kc.Spec.ConnectionSecretRef.Name
}

func notReadyCondition(reason, msg string) xpv2.Condition {
	return xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: xpv2.ConditionReason(reason), Message: msg, LastTransitionTime: metav1.Now()}
}

// probeFailure tells refused credentials apart from a cluster that does not answer.
func probeFailure(err error) xpv2.Condition {
	if kerrors.IsUnauthorized(err) || kerrors.IsForbidden(err) {
		return notReadyCondition(v1alpha1.ReasonUnauthorized, "the cluster refused the kubeconfig's credentials: "+cluster.DescribeError(err))
	}
	return notReadyCondition(v1alpha1.ReasonUnreachable, "the cluster does not answer: "+cluster.DescribeError(err))
}

// writeStatus publishes the built-in labels, sets the Ready condition,
// writes the status if it changed and records an Event when the Ready
// reason changes.
func (r *Reconciler) writeStatus(ctx context.Context, kc *v1alpha1.KubernetesCluster, status *v1alpha1.KubernetesClusterStatus, ready xpv2.Condition, topology map[string]string) error {
	if err := r.publishLabels(ctx, kc, status.Version, topology); err != nil {
		return err
	}
	if err := r.syncTaints(ctx, kc, ready); err != nil {
		return err
	}
	prev := kc.Status.GetCondition(xpv2.TypeReady)
	ready.ObservedGeneration = kc.Generation
	status.ObservedGeneration = kc.Generation
	if ready.Status != corev1.ConditionTrue {
		status.LastProbeTime = kc.Status.LastProbeTime
	}
	status.SetConditions(ready)
	r.ready.set(types.NamespacedName{Namespace: kc.Namespace, Name: kc.Name}, ready.Status == corev1.ConditionTrue)
	if prev.Reason != ready.Reason {
		if ready.Status == corev1.ConditionTrue {
			r.record.Event(kc, event.Normal(event.Reason(ready.Reason), ready.Message))
		} else {
			r.record.Event(kc, event.Warning(event.Reason(ready.Reason), errors.New(ready.Message)))
		}
	}
	if equality.Semantic.DeepEqual(&kc.Status, status) {
		return nil
	}
	kc.Status = *status
	return errors.Wrap(resource.IgnoreNotFound(r.client.Status().Update(ctx, kc)), errUpdateStatus)
}

// publishLabels adds the built-in labels to the cluster object; topology
// (region and zone) is set when every node agrees and left alone otherwise.
func (r *Reconciler) publishLabels(ctx context.Context, kc *v1alpha1.KubernetesCluster, version string, topology map[string]string) error {
	want := map[string]string{
		v1alpha1.LabelClusterName:      kc.Name,
		v1alpha1.LabelClusterNamespace: kc.Namespace,
	}
	if kc.Spec.Provider != "" {
		want[v1alpha1.LabelCloudProvider] = kc.Spec.Provider
	}
	if version != "" {
		want[v1alpha1.LabelClusterVersion] = labelValue(version)
	}
	for k, v := range topology {
		want[k] = v
	}
	changed := false
	for k, v := range want {
		if kc.Labels[k] != v {
			changed = true
		}
	}
	if !changed {
		return nil
	}
	patch := client.MergeFrom(kc.DeepCopy())
	if kc.Labels == nil {
		kc.Labels = map[string]string{}
	}
	for k, v := range want {
		kc.Labels[k] = v
	}
	return errors.Wrap(resource.IgnoreNotFound(r.client.Patch(ctx, kc, patch)), errPatchLabels)
}

// labelValue makes a version such as v1.35.4+k3s1 a valid label value.
func labelValue(v string) string {
	v = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, v)
	if len(v) > 63 {
		v = v[:63]
	}
	return strings.Trim(v, "-_.")
}
