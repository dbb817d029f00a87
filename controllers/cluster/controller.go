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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	inventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
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
	errPatchCluster = "cannot publish the cluster's built-in labels and condition taints"
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
	// Profiles is how the manager reaches the clusters of ClusterProfiles.
	Profiles cluster.Profiles
	// TokenRenewal is the fraction of a renewable member token's lifetime
	// (cluster.AnnotationRenewToken) after which the manager renews it
	// (0.8 when zero).
	TokenRenewal float64
}

// Reconciler keeps one connection per KubernetesCluster, probes it
// and publishes its status, built-in labels and capacity summary.
type Reconciler struct {
	client client.Client
	// secrets reads a connection Secret directly while its own watch (the
	// one cache of it) has not synced; the manager caches no other Secret.
	secrets client.Reader
	// watches are the connection Secrets' single-object watches.
	watches shared.Sources
	// conns are the member connections (the registry; a fake in tests).
	conns    connections
	record   event.Recorder
	log      logging.Logger
	health   cluster.HealthOptions
	ready    readiness
	drains   drains
	profiles cluster.Profiles
	// renewal is Options.TokenRenewal; renewed when each token was.
	renewal float64
	renewed renewals
}

// connections are the member connections the controller keeps, and the
// judges of their health: the cluster.Registry, or a fake in unit tests.
type connections interface {
	cluster.Members
	Connect(key types.NamespacedName, kubeconfig []byte, targetNamespaces map[string]v1alpha1.NamespaceName, opts ...cluster.EnsureOption) error
	Check(ctx context.Context, key types.NamespacedName, kubeconfig []byte, last cluster.Last, o cluster.HealthOptions, opts ...cluster.EnsureOption) (cluster.Health, error)
	Remove(key types.NamespacedName)
	// Connected reports whether the cluster has a connection, serving or
	// not.
	Connected(key types.NamespacedName) bool
	// RequestToken asks the member for a token of one of its
	// ServiceAccounts, as the connection's identity.
	RequestToken(ctx context.Context, key types.NamespacedName, sa types.NamespacedName, ttl time.Duration) (string, error)
}

// +kubebuilder:rbac:groups=compute.placer.dev,resources=kubernetesclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=compute.placer.dev,resources=kubernetesclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;update
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
	if o.TokenRenewal <= 0 || o.TokenRenewal >= 1 {
		o.TokenRenewal = 0.8
	}
	t := &shared.Trigger{}
	reg := cluster.NewRegistry(o.Registry, t.Enqueue)
	dyn, err := dynamic.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, errors.Wrap(err, "cannot create a client of the management cluster")
	}
	watches := shared.NewObjectWatches(dyn, mgr.GetRESTMapper(), t.Enqueue)
	r := &Reconciler{
		client:   mgr.GetClient(),
		secrets:  mgr.GetAPIReader(),
		watches:  watches,
		conns:    reg,
		record:   event.NewAPIRecorder(mgr.GetEventRecorderFor("placer-cluster-controller")), //nolint:staticcheck // crossplane-runtime's recorder takes the legacy interface.
		log:      logging.NewLogrLogger(mgr.GetLogger().WithName("cluster")),
		health:   cluster.HealthOptions{Interval: o.ProbeInterval, Grace: o.HeartbeatGrace},
		renewal:  o.TokenRenewal,
		profiles: o.Profiles,
	}
	if err := mgr.Add(shared.Closer(func() { watches.Close(); reg.Close() })); err != nil {
		return nil, err
	}
	return reg, r.register(mgr, t)
}

// workers is how many clusters the controller looks at at once: a member
// that accepts connections and never answers holds one for its probe's
// timeout (and its watch's, its heartbeat's), never every other
// cluster's condition, as one worker would (design §4.9: at most its share
// of the workers).
const workers = 8

// register adds the controller, this Reconciler its reconciler, to the
// manager; t's events bring a cluster back (the registry's, the Secret
// watches').
func (r *Reconciler) register(mgr ctrl.Manager, t *shared.Trigger) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("cluster").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&v1alpha1.KubernetesCluster{}).
		Watches(&v1alpha1.Workload{}, handler.EnqueueRequestsFromMapFunc(r.deletingClustersOf)).
		// Labelling a namespace for private clusters (or not) changes what
		// its clusters may reach.
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.clustersIn), builder.WithPredicates(privateLabelChanged())).
		WatchesRawSource(t.Source()).
		Complete(r)
}

// Reconcile connects to a member cluster, judges its health and
// publishes it, in phases: the finalizer first; then what the cluster's
// connection says, set on the object; one patch of its labels and taints
// and one write of its status; and, once it is being deleted, its drain.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	kc := &v1alpha1.KubernetesCluster{}
	if err := r.client.Get(ctx, req.NamespacedName, kc); err != nil {
		if kerrors.IsNotFound(err) {
			r.watches.Forget(req.NamespacedName)
			r.conns.Remove(req.NamespacedName)
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
	res, err := r.connect(ctx, kc)
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

// connect keeps the cluster's connection, has it judge the member's
// health and publishes it, also while the cluster is being deleted
// (drained). Until a new watch has seen enough to judge, the cluster
// keeps its condition.
func (r *Reconciler) connect(ctx context.Context, kc *v1alpha1.KubernetesCluster) (reconcile.Result, error) {
	key := client.ObjectKeyFromObject(kc)
	var (
		kubeconfig []byte
		secret     *corev1.Secret
		profile    *inventoryv1alpha1.ClusterProfile
		notReady   *xpv2.Condition
		err        error
	)
	if kc.Spec.ClusterProfileRef != nil {
		kubeconfig, profile, notReady, err = r.profileKubeconfig(ctx, kc)
	} else {
		kubeconfig, secret, notReady, err = r.kubeconfig(ctx, kc)
	}
	if err != nil {
		// No answer about the Secret or the ClusterProfile (a timeout):
		// the cluster keeps its condition, taints and connection.
		return reconcile.Result{}, err
	}
	// Its ClusterProfile or Secret went first (a namespace deleted
	// whole, say): it is drained through the connection it had, probed
	// through it. One a ClusterProfile made goes with it: until then its
	// connection is kept too, and it says why it is not Ready.
	profileGone := ownedByProfile(metav1.GetControllerOf(kc)) && notReady != nil && notReady.Reason == v1alpha1.ReasonClusterProfileNotFound
	secretGone, closeIn := secretJustGone(kc, notReady)
	// A connection there is, serving or not (withheld a moment after a
	// restart, until its summary shows who it reaches).
	sourceGone := (kc.DeletionTimestamp != nil || profileGone || secretGone) && r.conns.Connected(key) &&
		(kc.Spec.ClusterProfileRef != nil && profile == nil || kc.Spec.ClusterProfileRef == nil && secret == nil)
	switch {
	case notReady != nil && !sourceGone:
		// Nothing to retry: the Secret's (or ClusterProfile's) watch
		// brings the cluster back when it changes.
		r.conns.Remove(key)
		return shared.IgnoreConflict(r.publish(ctx, kc, *notReady, nil))
	case notReady != nil && kc.DeletionTimestamp == nil:
		res, err := shared.IgnoreConflict(r.publish(ctx, kc, *notReady, nil))
		if secretGone && err == nil && res.IsZero() {
			// Closed once the Secret has been gone secretGrace.
			res.RequeueAfter = closeIn
		}
		return res, err
	}
	// With its source gone there is no kubeconfig to connect with: the
	// connection stays as it is, and is only probed.
	var access []cluster.EnsureOption
	if !sourceGone {
		if access, err = r.access(ctx, kc); err != nil {
			return reconcile.Result{}, err
		}
		if profile != nil {
			access = append(access, cluster.AllowExec)
		}
		if err := r.conns.Connect(key, kubeconfig, kc.Spec.TargetNamespaces, access...); err != nil {
			reason := v1alpha1.ReasonBadKubeconfig
			if cluster.IsKubeconfigRefused(err) {
				reason = v1alpha1.ReasonKubeconfigRefused
			}
			return shared.IgnoreConflict(r.publish(ctx, kc, notReadyCondition(reason, fmt.Sprintf("%s: %v", connectionOf(kc), err)), nil))
		}
	}
	h, err := r.conns.Check(ctx, key, kubeconfig, lastOf(kc), r.health, access...)
	if err != nil {
		return reconcile.Result{}, err
	}
	if h.Unsettled {
		return reconcile.Result{RequeueAfter: h.Next}, nil
	}
	return r.publishHealth(ctx, kc, h, profile, secret, kubeconfig)
}

// publishHealth publishes the member's health (h) as the cluster's Ready,
// and renews the token its Secret holds when that is due.
func (r *Reconciler) publishHealth(ctx context.Context, kc *v1alpha1.KubernetesCluster, h cluster.Health, profile *inventoryv1alpha1.ClusterProfile, secret *corev1.Secret, kubeconfig []byte) (reconcile.Result, error) {
	key := client.ObjectKeyFromObject(kc)
	profileHealth(profile, &h)
	if h.Reason != "" {
		r.log.Debug("not ready", "cluster", key.String(), "reason", h.Reason, "message", h.Message)
	}
	if err := r.publish(ctx, kc, readyCondition(h), &h); err != nil {
		return shared.IgnoreConflict(err)
	}
	if h.Reason == v1alpha1.ReasonClusterIdentityChanged {
		// Another cluster: nothing is asked of it, a token neither. (One
		// not shown yet to be the recorded cluster, its agent rolled
		// back, say, is renewed: the token is for the credentials the
		// Secret already holds there, and letting it expire would need
		// placer join again.)
		return reconcile.Result{RequeueAfter: h.Next}, nil
	}
	next, err := r.renew(ctx, kc, secret, kubeconfig)
	if err != nil {
		return reconcile.Result{}, err
	}
	if next == 0 || h.Next > 0 && h.Next < next {
		next = h.Next
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

// secretGrace is how long a cluster's connection outlives its Secret
// while the cluster is not being deleted: a manifest or a namespace
// deleted whole deletes the Secret first, maybe before the cluster's own
// deletion shows here, and its drain needs the connection to remove what
// placer left in the member (without it, the member is taken for one that
// does not answer: let go, the Workloads' old copies abandoned there).
const secretGrace = time.Minute

// secretJustGone reports whether the cluster's Secret went less than
// secretGrace ago (by its Ready condition's transition to
// SecretNotFound, in the API: a restart keeps the count), and in how long
// that ends.
func secretJustGone(kc *v1alpha1.KubernetesCluster, notReady *xpv2.Condition) (bool, time.Duration) {
	if kc.Spec.ClusterProfileRef != nil || notReady == nil || notReady.Reason != v1alpha1.ReasonSecretNotFound {
		return false, 0
	}
	since := time.Duration(0)
	if c := kc.Status.GetCondition(xpv2.TypeReady); c.Reason == v1alpha1.ReasonSecretNotFound {
		since = time.Since(c.LastTransitionTime.Time)
	}
	if since >= secretGrace {
		return false, 0
	}
	return true, secretGrace - since
}

// lastOf is what the cluster's status says of its last check.
func lastOf(kc *v1alpha1.KubernetesCluster) cluster.Last {
	ready := kc.Status.GetCondition(xpv2.TypeReady)
	last := cluster.Last{ProbeTime: kc.Status.LastProbeTime, Version: kc.Status.Version, Ready: ready.Status == corev1.ConditionTrue, ClusterID: kc.Status.ClusterID}
	if ready.Reason == v1alpha1.ReasonUnreachable {
		last.Unreachable = ready.LastTransitionTime.Time
	}
	return last
}

// kubeconfig reads the cluster's kubeconfig, or returns why it cannot: a
// condition when the API server answers that the Secret is not there or
// not readable (or holds no kubeconfig), an error when it gives no such
// answer (a read that timed out, or failed on a busy server), which says
// nothing of the Secret.
func (r *Reconciler) kubeconfig(ctx context.Context, kc *v1alpha1.KubernetesCluster) ([]byte, *corev1.Secret, *xpv2.Condition, error) {
	ref := kc.Spec.ConnectionSecretRef
	key := types.NamespacedName{Namespace: kc.Namespace, Name: ref.Name}
	// The watch of this one Secret is its cache (objectWatches: the
	// manager never lists or caches a Secret no cluster references); until
	// it has synced, the Secret is read directly.
	s := &corev1.Secret{}
	if err := r.getWatched(ctx, kc, shared.CoreKey("Secret", key.Namespace, key.Name), corev1.Resource("secrets"), s); err != nil {
		if !answered(err) {
			return nil, nil, nil, errors.Wrapf(err, "%s: Secret %s", errGetSecret, secretRef(kc))
		}
		c := notReadyCondition(v1alpha1.ReasonSecretNotFound, fmt.Sprintf("Secret %s: %v", secretRef(kc), errors.Wrap(err, errGetSecret)))
		if kerrors.IsNotFound(err) {
			c.Message = fmt.Sprintf("Secret %s not found", secretRef(kc))
		}
		return nil, nil, &c, nil
	}
	dataKey := dataKeyOf(kc)
	b, ok := s.Data[dataKey]
	if !ok || len(b) == 0 {
		c := notReadyCondition(v1alpha1.ReasonBadKubeconfig, fmt.Sprintf("Secret %s has no key %q", secretRef(kc), dataKey))
		return nil, s, &c, nil
	}
	return b, s, nil, nil
}

// answered reports whether a read's error is the API server's answer
// about the object (it is not there, not readable by the manager, or the
// request is wrong), rather than no answer (a timeout, a busy server).
func answered(err error) bool {
	return kerrors.IsNotFound(err) || kerrors.IsForbidden(err) || kerrors.IsUnauthorized(err) || kerrors.IsBadRequest(err) || kerrors.IsInvalid(err)
}

// getWatched reads the one object the cluster's connection comes from
// (its Secret, or its ClusterProfile) from that object's own watch, which
// it starts, or directly while the watch has not synced; a NotFound error
// of resource when it does not exist.
func (r *Reconciler) getWatched(ctx context.Context, kc *v1alpha1.KubernetesCluster, wk shared.ObjectKey, resource schema.GroupResource, into client.Object) error {
	r.watches.Use(client.ObjectKeyFromObject(kc), []shared.ObjectKey{wk})
	found, synced, err := shared.GetTyped(r.watches, wk, into)
	switch {
	case !synced:
		return r.secrets.Get(ctx, types.NamespacedName{Namespace: wk.Namespace, Name: wk.Name}, into)
	case err == nil && !found:
		return kerrors.NewNotFound(resource, wk.Name)
	}
	return err
}

func secretRef(kc *v1alpha1.KubernetesCluster) string {
	return kc.Namespace + "/" + kc.Spec.ConnectionSecretRef.Name
}

// connectionOf names what the cluster is reached through.
func connectionOf(kc *v1alpha1.KubernetesCluster) string {
	if kc.Spec.ClusterProfileRef != nil {
		return "ClusterProfile " + kc.Namespace + "/" + kc.Spec.ClusterProfileRef.Name
	}
	return "Secret " + secretRef(kc)
}

func notReadyCondition(reason, msg string) xpv2.Condition {
	return xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: xpv2.ConditionReason(reason), Message: msg, LastTransitionTime: metav1.Now()}
}

// readyCondition is the Ready condition a member's health calls for.
func readyCondition(h cluster.Health) xpv2.Condition {
	if h.Reason != "" {
		return notReadyCondition(h.Reason, h.Message)
	}
	return xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonReady, LastTransitionTime: metav1.Now(), Message: h.Message}
}

// publish writes what is known of the cluster: its built-in labels and
// condition taints in one patch (carrying the resourceVersion, so a taint
// or label a user adds meanwhile is never dropped: the conflict retries),
// then its status, with an Event when the Ready reason changes. h is the
// member's health, nil when it could not be judged (no kubeconfig).
func (r *Reconciler) publish(ctx context.Context, kc *v1alpha1.KubernetesCluster, ready xpv2.Condition, h *cluster.Health) error {
	status := kc.Status.DeepCopy()
	var topology map[string]string
	if h != nil {
		status.Version = h.Version
		if h.ProbeTime != nil {
			status.LastProbeTime = h.ProbeTime
		}
		if status.ClusterID == "" {
			// The first identity its agent publishes: the cluster placer
			// places in from now on (Registry.Member withholds another).
			status.ClusterID = h.ClusterID
		}
		if sum := h.Summary; sum != nil {
			status.NodeCount, status.ReadyNodeCount = sum.NodeCount, sum.ReadyNodeCount
			status.Allocatable, status.Requested, status.LargestFreeNode = sum.Allocatable, sum.Requested, sum.LargestFreeNode
			topology = sum.Labels
		}
	}
	labels, taints := desiredLabels(kc, status.Version, topology), desiredTaints(kc.Spec.Taints, ready, metav1.Now())
	if !equality.Semantic.DeepEqual(labels, kc.Labels) || !equality.Semantic.DeepEqual(taints, kc.Spec.Taints) {
		err := shared.PatchLocked(ctx, r.client, kc, func(kc *v1alpha1.KubernetesCluster) { kc.Labels, kc.Spec.Taints = labels, taints })
		if err != nil {
			return errors.Wrap(resource.IgnoreNotFound(err), errPatchCluster)
		}
	}
	prev := kc.Status.GetCondition(xpv2.TypeReady)
	if prev.Status == ready.Status && prev.Reason == ready.Reason && ready.Reason != v1alpha1.ReasonUnreachable && !prev.LastTransitionTime.IsZero() {
		// The same state in other words (a Secret not found, then
		// forbidden; a Ready member's new node count): it has been so
		// since it turned so, which the Secret's grace and a move back's
		// wait for a Ready cluster count from. But Unreachable: its time
		// is its last failure's, with which watches started before are
		// stale (lastOf, cluster's stale).
		ready.LastTransitionTime = prev.LastTransitionTime
	}
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

// desiredLabels are the cluster's labels with the built-in ones added;
// topology (region and zone) is set when every node agrees and left alone
// otherwise.
func desiredLabels(kc *v1alpha1.KubernetesCluster, version string, topology map[string]string) map[string]string {
	want := map[string]string{
		v1alpha1.LabelClusterName:      v1alpha1.LabelValueOf(kc.Name),
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
	out := make(map[string]string, len(kc.Labels)+len(want))
	for k, v := range kc.Labels {
		out[k] = v
	}
	for k, v := range want {
		out[k] = v
	}
	return out
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
