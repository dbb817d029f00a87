package proxypod

import (
	"cmp"
	"context"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/controllers/shared"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods/binding,verbs=create
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get
// +kubebuilder:rbac:groups=compute.placer.dev,resources=workloads,verbs=get;list;watch;create;delete

// Reasons of the proxy pods' Events.
const (
	reasonFailedScheduling  = "FailedScheduling"
	reasonScheduled         = "Scheduled"
	reasonNameTaken         = "WorkloadNameTaken"
	reasonMoved             = "Moved"
	reasonInvalidSourcePod  = "InvalidSourcePod"
	reasonStatusRefused     = "StatusRefused"
	reasonWorkloadForbidden = "WorkloadForbidden"
	reasonUnsignedSourcePod = "UnsignedSourcePod"
	// reasonNamespaceClosed: a proxy pod whose namespace is no longer
	// opened to placer (multicluster-scheduler=enabled).
	reasonNamespaceClosed  = "NamespaceNotEnabled"
	reasonDelegateNotBound = "DelegateNotBound"
)

// Chaperons finds a Workload's chaperons in a member, and the member's
// connection (cluster.Registry).
type Chaperons interface {
	cluster.Members
	// Serving is the member's connection while it serves (Member).
	Serving(key types.NamespacedName) *cluster.Connection
}

// Proxies follows each proxy pod: it places the pod as the gang of one of
// a Workload the pod owns (named as the pod), binds the pod to its
// cluster's virtual node once the delegate is bound there, keeps the
// pod's status that of the delegate, and, when the pod is deleted,
// deletes the Workload (whose finalizer removes the delegate) before it
// lets the pod go.
type Proxies struct {
	Client client.Client
	// Live reads a namespace the cache does not show opened yet
	// (namespaceLabels), and a proxy pod's Job (replacedOnceFailed: the
	// manager watches no Jobs); the cache alone when nil (tests).
	Live    client.Reader
	Members cluster.Members
	Record  event.Recorder
	// Verifier checks that the webhook wrote a pod's source manifest
	// (Certs); every manifest is taken when nil.
	Verifier interface {
		Verify(manifest []byte, sig string) bool
	}
	// wrote holds, per proxy pod, the copy of it (UID, resourceVersion)
	// from which a pass last changed it: a pass that finds the cache still
	// holding that copy comes before the change's own event, which brings
	// a pass of its own. It waits for that one rather than write again
	// what the change wrote (a binding the API server refuses, a status
	// update that meets a conflict). Only a hint: an empty map (a new
	// leader) costs those writes, nothing else.
	wrote sync.Map
}

// copyOf names one copy of a pod.
type copyOf struct {
	uid types.UID
	rv  string
}

// changedFrom records that a pass changed the pod from its copy was: a
// write that changed nothing (the same resourceVersion back) brings no
// event, and is not recorded.
func (p *Proxies) changedFrom(pod *corev1.Pod, was string) {
	p.wrote.Store(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, copyOf{uid: pod.UID, rv: was})
}

// behind reports whether the cache's copy of the pod is one a pass
// changed since: the change's event is still to come.
func (p *Proxies) behind(pod *corev1.Pod) bool {
	v, ok := p.wrote.Load(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	return ok && v.(copyOf) == copyOf{uid: pod.UID, rv: pod.ResourceVersion}
}

// Options configure the proxy pods' controller.
type Options struct {
	// Workers is how many proxy pods it handles at once (16 when zero).
	Workers int
	// QPS and Burst limit its own client, which binds proxy pods, writes
	// their statuses and creates their Workloads (100 and 200 when
	// zero): a proxy pod takes at least two Pod writes, as kube-scheduler
	// binds a pod and a kubelet writes its status, each on a client of
	// its own.
	QPS   float32
	Burst int
}

// Setup adds the proxy pod controller (and the virtual nodes') to the
// manager; reg tells it of chaperon changes.
func Setup(mgr ctrl.Manager, reg *cluster.Registry, o Options, certs *Certs, kubelet KubeletEndpoint) error {
	if err := SetupNodes(mgr, kubelet); err != nil {
		return err
	}
	cfg := rest.CopyConfig(mgr.GetConfig())
	cfg.QPS, cfg.Burst = cmp.Or(o.QPS, 100), cmp.Or(o.Burst, 200)
	// Reads from the manager's cache; writes on a token bucket of its own.
	c, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), Cache: &client.CacheOptions{Reader: mgr.GetCache()}})
	if err != nil {
		return errors.Wrap(err, "cannot create the proxy pods' client")
	}
	t := &shared.Trigger{}
	// Only a proxy pod's delegate mirrors its pod's whole status: the
	// other Workloads' chaperons bring no pass.
	reg.AlsoOnChaperon(t.Enqueue, func(ch *mcv1alpha1.PodChaperon) bool {
		return ch.Annotations[mcv1alpha1.AnnotationMirrorStatus] == mcv1alpha1.MirrorStatusFull
	})
	// A member's watch that has listed its chaperons (after a restart, a
	// reconnection) brings back every proxy pod placed there: what their
	// delegates did meanwhile was not seen.
	reg.AlsoOnSynced(func(ctx context.Context, cluster types.NamespacedName) {
		ws := &v1alpha1.WorkloadList{}
		if err := c.List(ctx, ws, client.HasLabels{v1alpha1.LabelProxyPod}); err != nil {
			return
		}
		for i := range ws.Items {
			if ref := ws.Items[i].Status.ClusterRef; ref != nil && ws.Items[i].ClusterKey(ref) == cluster {
				t.Enqueue(types.NamespacedName{Namespace: ws.Items[i].Namespace, Name: ws.Items[i].Name})
			}
		}
	})
	p := &Proxies{
		Client: c, Live: mgr.GetAPIReader(), Members: reg,
		Record: event.NewAPIRecorder(mgr.GetEventRecorderFor("placer-proxy")), //nolint:staticcheck // crossplane-runtime's recorder takes the legacy interface.
	}
	if certs != nil {
		p.Verifier = certs
	}
	proxies := predicate.NewPredicateFuncs(func(o client.Object) bool {
		pod, ok := o.(*corev1.Pod)
		return ok && pod.Spec.SchedulerName == v1alpha1.ProxySchedulerName
	})
	// A Workload is a proxy pod's, or holds a pod's name (WorkloadNameTaken
	// ends with it): either way its pod is the one of its name.
	ofName := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("proxypod").
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(max(o.Workers, 0), 16)}).
		For(&corev1.Pod{}, builder.WithPredicates(proxies)).
		Watches(&v1alpha1.Workload{}, ofName, builder.WithPredicates(proxyWorkloadEvents)).
		WatchesRawSource(t.Source()).
		Complete(p)
}

// proxyWorkloadEvents are the Workload events a proxy pod's pass needs:
// every event of a proxy pod's Workload, and the deletion of any other
// (one that held a pod's name: WorkloadNameTaken ends with it). Another
// Workload's creates and status changes would each be a pass that finds
// no pod of its name.
var proxyWorkloadEvents = predicate.Funcs{
	CreateFunc:  func(e ctrlevent.TypedCreateEvent[client.Object]) bool { return isProxyWorkload(e.Object) },
	UpdateFunc:  func(e ctrlevent.TypedUpdateEvent[client.Object]) bool { return isProxyWorkload(e.ObjectNew) },
	DeleteFunc:  func(ctrlevent.TypedDeleteEvent[client.Object]) bool { return true },
	GenericFunc: func(e ctrlevent.TypedGenericEvent[client.Object]) bool { return isProxyWorkload(e.Object) },
}

// isProxyWorkload reports whether a Workload is a proxy pod's: labelled
// so, or controlled by a pod.
func isProxyWorkload(o client.Object) bool {
	if _, ok := o.GetLabels()[v1alpha1.LabelProxyPod]; ok {
		return true
	}
	return podControllerOf(o) != nil
}

// podControllerOf is the object's controller when it is a pod, else nil.
func podControllerOf(o metav1.Object) *metav1.OwnerReference {
	if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "Pod" && ref.APIVersion == "v1" {
		return ref
	}
	return nil
}

// Reconcile brings one proxy pod (or the Workload of one gone) in line.
func (p *Proxies) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	w := &v1alpha1.Workload{}
	if err := p.Client.Get(ctx, req.NamespacedName, w); err != nil {
		if !kerrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		w = nil
	}
	if err := p.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		if !kerrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		// The pod is gone: so goes the Workload it owned (the garbage
		// collector would too; this does not wait for it).
		p.wrote.Delete(req.NamespacedName)
		return reconcile.Result{}, p.deleteWorkload(ctx, w, "")
	}
	if pod.Spec.SchedulerName != v1alpha1.ProxySchedulerName || p.behind(pod) {
		return reconcile.Result{}, nil
	}
	if pod.DeletionTimestamp != nil {
		if w != nil && controllerUID(w) != pod.UID {
			w = nil // another pod's, or a user's: not this pod's to wait for
		}
		if !IsProxy(pod) && w == nil && !meta.FinalizerExists(pod, v1alpha1.FinalizerProxyPod) {
			// Never a proxy pod (let through untouched, and may be on a
			// real node), or one of before placer's finalizer with
			// nothing of placer's left.
			return reconcile.Result{}, nil
		}
		// A proxy pod goes with its Workload, even when its manifest
		// annotation was taken off after admission (its schedulerName
		// cannot change, and its Workload or placer's finalizer names
		// it): no kubelet ever confirms its end otherwise.
		return reconcile.Result{}, p.letGo(ctx, pod, w)
	}
	if !IsProxy(pod) {
		return reconcile.Result{}, nil
	}
	if w != nil && controllerUID(w) != pod.UID {
		return p.otherWorkload(ctx, pod, w)
	}
	if podutil.IsPodPhaseTerminal(pod.Status.Phase) {
		// It ended: nothing is placed for it again, and its status is
		// final (its Workload ended too, or is gone).
		return reconcile.Result{}, nil
	}
	if w == nil {
		if len(pod.Spec.SchedulingGates) > 0 {
			// Gated (a queue such as Kueue holds it): placed once the last
			// gate goes, an update of the pod that brings it back.
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, p.createWorkload(ctx, pod)
	}
	return reconcile.Result{}, p.follow(ctx, pod, w)
}

// controllerUID is the UID of the Workload's controlling pod: its
// controller reference, or, when it has no controller at all, its
// proxy-pod label, which the garbage collector leaves on a Workload it
// orphans (kubectl delete pod --cascade=orphan): a proxy pod's Workload
// holds what runs for it, as its containers, which stop with it whatever
// the cascade. Only the manager may set that label (the admission policy
// placer-share-marks). "" when no pod controls it.
func controllerUID(w *v1alpha1.Workload) types.UID {
	if ref := podControllerOf(w); ref != nil {
		return ref.UID
	}
	if metav1.GetControllerOf(w) != nil {
		// A share of a Divided Workload, say, with its parent's labels.
		return ""
	}
	return types.UID(w.Labels[v1alpha1.LabelProxyPod])
}

// otherWorkload handles a Workload of the pod's name that the pod does
// not control: that of an earlier pod of the same name (a StatefulSet's)
// goes first; any other is the user's, and the pod says so.
func (p *Proxies) otherWorkload(ctx context.Context, pod *corev1.Pod, w *v1alpha1.Workload) (reconcile.Result, error) {
	if controllerUID(w) != "" {
		return reconcile.Result{}, p.deleteWorkload(ctx, w, "")
	}
	msg := "a Workload named " + w.Name + " exists and is not this pod's: placer places each proxy pod through a Workload of its own name"
	return reconcile.Result{}, p.unschedulable(ctx, pod, reasonNameTaken, msg)
}

// deleteWorkload deletes a Workload a pod controlled (uid, when set,
// must be that pod's). With no uid the pod is gone already: a proxy pod
// being deleted stays until its Workload has gone (letGo), so one gone
// before was force-deleted, and its Workload says so
// (AnnotationProxyPodGone): nothing waits for its delegate to stop.
func (p *Proxies) deleteWorkload(ctx context.Context, w *v1alpha1.Workload, uid types.UID) error {
	return p.deleteWorkloadOf(ctx, w, uid, uid == "")
}

// deleteWorkloadOf deletes a Workload a pod controlled (uid, when set,
// must be that pod's), marked AnnotationProxyPodGone first when gone says
// nothing waits for its delegate to stop.
// A Workload being deleted already is marked all the same: a pod deleted,
// then force-deleted while its delegate does not stop (its member's node
// lost), lets the propagator stop waiting for it.
func (p *Proxies) deleteWorkloadOf(ctx context.Context, w *v1alpha1.Workload, uid types.UID, gone bool) error {
	if w == nil || controllerUID(w) == "" || (uid != "" && controllerUID(w) != uid) {
		return nil
	}
	if gone && w.Annotations[v1alpha1.AnnotationProxyPodGone] != "true" {
		// On the copy the decision was made from: one the scheduler or
		// the propagator changed since (a cluster chosen) is decided
		// again.
		err := shared.PatchLocked(ctx, p.Client, w, func(w *v1alpha1.Workload) {
			meta.AddAnnotations(w, map[string]string{v1alpha1.AnnotationProxyPodGone: "true"})
		})
		if err != nil {
			return errors.Wrap(client.IgnoreNotFound(err), "cannot mark the Workload of a pod gone")
		}
	}
	if w.DeletionTimestamp != nil {
		return nil
	}
	return client.IgnoreNotFound(p.Client.Delete(ctx, w, client.Preconditions{UID: &w.UID}))
}

// letGo deletes the Workload of a pod being deleted (the propagator's
// finalizer removes its delegate, and goes once the delegate's pod has
// stopped: stopsFirst) and, once it is gone, the pod itself, as a kubelet
// confirms a pod's containers have stopped.
//
// A pod that waits for nothing (waitsForNothing: kubectl delete --force)
// has its Workload marked gone, which then goes without waiting for the
// delegate to stop, and its finalizer goes at once. An unbound pod, which
// the API server deletes with no grace period whatever was asked, is held
// by its finalizer as a bound one is while its Workload has a chosen
// cluster: its delegate may have bound meanwhile.
func (p *Proxies) letGo(ctx context.Context, pod *corev1.Pod, w *v1alpha1.Workload) error {
	if w != nil {
		gone := p.waitsForNothing(ctx, pod, w)
		if kept, err := p.keepEnd(ctx, pod, w); err != nil || !kept {
			// Its end not written yet (the cache behind the pod): the
			// newer copy's event brings the next pass, and the Workload
			// (whose delegate says that end) stays until then.
			return err
		}
		if err := p.passGrace(ctx, pod, w); err != nil {
			return err
		}
		if err := p.deleteWorkloadOf(ctx, w, pod.UID, gone); err != nil || !gone {
			if kerrors.IsConflict(errors.Cause(err)) {
				return nil // the Workload's newer copy brings the next pass
			}
			return err
		}
		_, err := p.release(ctx, pod)
		return err
	}
	if !podutil.IsPodPhaseTerminal(pod.Status.Phase) {
		// As a kubelet ends a deleted pod's containers: Failed, so that
		// its controller (a Job tracking it by a finalizer) counts it.
		pod.Status.Phase = corev1.PodFailed
		pod.Status.Reason, pod.Status.Message = "Deleted", "the pod was deleted; its delegate is gone"
		if err := p.Client.Status().Update(ctx, pod); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	if free, err := p.release(ctx, pod); err != nil || !free {
		return err
	}
	if g := pod.DeletionGracePeriodSeconds; g != nil && *g == 0 {
		return nil // gone with its finalizer, or held by another's
	}
	err := p.Client.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
	return client.IgnoreNotFound(err)
}

// waitsForNothing reports whether a pod being deleted goes without waiting
// for its delegate to stop: bound and deleted with no grace period
// (kubectl delete --force, or a pod that ended, which the API server
// deletes with none), or unbound while nothing of its Workload can run: no
// cluster named in its status (chosen, nominated, or left with an old
// copy that may still serve) and no chaperon of it in any member's watch,
// every one listed. An unbound pod is otherwise held: its delegate may
// have been committed a moment before, the binding still to come, or may
// run on in a cluster the Workload left.
func (p *Proxies) waitsForNothing(ctx context.Context, pod *corev1.Pod, w *v1alpha1.Workload) bool {
	if pod.Spec.NodeName != "" {
		return pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0
	}
	if len(w.NamedClusters()) > 0 {
		return false
	}
	for _, m := range p.Members.Members() {
		if !m.Synced() {
			return false
		}
		if chs, err := m.Chaperons(ctx, w.UID); err != nil || len(chs) > 0 {
			return false
		}
	}
	return true
}

// release takes FinalizerProxyPod off a pod being deleted: the pod goes
// then, unless its grace period still runs or another finalizer holds it.
// free is false, with no error, on a conflict: the pod's newer copy
// brings the next pass.
func (p *Proxies) release(ctx context.Context, pod *corev1.Pod) (free bool, err error) {
	if !meta.FinalizerExists(pod, v1alpha1.FinalizerProxyPod) {
		return true, nil
	}
	err = shared.PatchLocked(ctx, p.Client, pod, func(pod *corev1.Pod) { meta.RemoveFinalizer(pod, v1alpha1.FinalizerProxyPod) })
	if kerrors.IsConflict(err) {
		return false, nil
	}
	return err == nil || kerrors.IsNotFound(err), errors.Wrap(client.IgnoreNotFound(err), "cannot take the proxy pod's finalizer off")
}

// keepEnd shows on a pod being deleted how its delegate ended, when it
// ended on its own before the deletion (its chaperon says a terminal
// phase only then): a Job's pod that succeeded, its status not on the
// pod yet, ends Succeeded, as a kubelet ends a deleted pod as its
// containers did, not Failed "Deleted", which its Job would count as a
// failure. kept is false while that end is still to be written.
func (p *Proxies) keepEnd(ctx context.Context, pod *corev1.Pod, w *v1alpha1.Workload) (kept bool, err error) {
	if podutil.IsPodPhaseTerminal(pod.Status.Phase) {
		return true, nil
	}
	d, err := delegate(ctx, p.Members, w)
	if err != nil || d == nil || !podutil.IsPodPhaseTerminal(d.Status.Phase) {
		return err == nil, err
	}
	// Refused (a transition the API server forbids of this pod), it ends
	// as a deleted pod does; gone, the next pass lets its Workload go.
	behind, err := p.putStatus(ctx, pod, statusOf(d, pod, w), nil)
	return !behind && err == nil, client.IgnoreNotFound(err)
}

// passGrace annotates the Workload of a pod being deleted with the pod's
// deletion grace period, when it is not the one the delegate would take
// from its own spec (kubectl delete --grace-period): the propagator and
// the agent pass it on to the delegate's deletion. Not an unbound pod's:
// the API server deletes one with 0 whatever was asked, and its delegate
// may have bound meanwhile.
func (p *Proxies) passGrace(ctx context.Context, pod *corev1.Pod, w *v1alpha1.Workload) error {
	g := pod.DeletionGracePeriodSeconds
	if g == nil || pod.Spec.NodeName == "" || w.DeletionTimestamp != nil || controllerUID(w) != pod.UID ||
		(pod.Spec.TerminationGracePeriodSeconds != nil && *g == *pod.Spec.TerminationGracePeriodSeconds) {
		return nil
	}
	orig := w.DeepCopy()
	if !mcv1alpha1.SetDeletionGrace(w, *g) {
		return nil
	}
	return errors.Wrap(client.IgnoreNotFound(p.Client.Patch(ctx, w, client.MergeFrom(orig))), "cannot pass the pod's deletion grace period to its Workload")
}

func (p *Proxies) createWorkload(ctx context.Context, pod *corev1.Pod) error {
	labels, err := namespaceLabels(ctx, p.Client, p.Live, pod)
	if err != nil {
		return err
	}
	if !IsSource(pod, labels) {
		// Only a source pod of an opened namespace is placed, whatever
		// marks another pod carries (the webhook made every source pod
		// a proxy pod when it was created): one whose namespace was
		// closed since is told so, not left Pending with no word.
		if _, elect := pod.Annotations[v1alpha1.AnnotationElect]; !elect {
			return nil
		}
		return p.unschedulable(ctx, pod, reasonNamespaceClosed, "namespace "+pod.Namespace+" is not labelled "+v1alpha1.LabelSourceNamespace+"="+v1alpha1.SourceNamespaceEnabled+
			" (any more): placer places the pods of opened namespaces only; once it is labelled again, delete the pod (its controller makes another)")
	}
	if p.Verifier != nil && !p.Verifier.Verify([]byte(pod.Annotations[v1alpha1.AnnotationSourcePodManifest]), pod.Annotations[v1alpha1.AnnotationSourceSignature]) {
		return p.unschedulable(ctx, pod, reasonUnsignedSourcePod, "the pod's source manifest was not written by placer's webhook: a pod becomes a source pod when it is created annotated "+
			v1alpha1.AnnotationElect+" in a namespace labelled "+v1alpha1.LabelSourceNamespace+"="+v1alpha1.SourceNamespaceEnabled+", never later")
	}
	source, err := SourceOf(pod)
	if err != nil {
		return p.unschedulable(ctx, pod, reasonInvalidSourcePod, "cannot read the source pod's manifest: "+err.Error())
	}
	source.Namespace = pod.Namespace
	w, ferr := WorkloadFor(source, OwnerOf(pod))
	if ferr != nil {
		return p.unschedulable(ctx, pod, reasonInvalidSourcePod, ferr.Error())
	}
	once, err := p.replacedOnceFailed(ctx, source)
	if err != nil {
		return err
	}
	if once {
		w.Spec.Placement.Move = v1alpha1.MoveStopBeforeStart
	}
	// Created with the propagator's finalizer, as its webhook would add
	// it: the webhook's matchConditions then spare the call.
	meta.AddFinalizer(w, v1alpha1.FinalizerPropagator)
	err = p.Client.Create(ctx, w)
	switch {
	case kerrors.IsInvalid(err):
		// The API server refuses the Workload (its schema or CEL rules):
		// no retry makes it valid; the pod says why.
		return p.unschedulable(ctx, pod, reasonInvalidSourcePod, "the API server refuses the pod's Workload: "+err.Error())
	case kerrors.IsForbidden(err):
		// A quota, or a policy, that may allow it later: the pod says
		// why, and it is tried again with backoff.
		if uerr := p.unschedulable(ctx, pod, reasonWorkloadForbidden, "the API server forbids the pod's Workload: "+err.Error()); uerr != nil {
			return uerr
		}
		return err
	}
	return client.IgnoreAlreadyExists(err)
}

// replacedOnceFailed reports whether the source pod's Job makes a pod's
// replacement only once the pod has failed (podReplacementPolicy Failed,
// which a podFailurePolicy implies): such a Job never has two pods of one
// index running, and its proxy pod moves StopBeforeStart, as a
// StatefulSet's does (moveOf), never make-before-break. The Job is read
// live, once per pod: the manager watches no Jobs.
func (p *Proxies) replacedOnceFailed(ctx context.Context, source *corev1.Pod) (bool, error) {
	ref := metav1.GetControllerOfNoCopy(source)
	if ref == nil || ref.Kind != "Job" || !strings.HasPrefix(ref.APIVersion, "batch/") {
		return false, nil
	}
	r := client.Reader(p.Client)
	if p.Live != nil {
		r = p.Live
	}
	job := &batchv1.Job{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: source.Namespace, Name: ref.Name}, job); err != nil {
		if kerrors.IsForbidden(err) {
			// A manager's role of before this read: the pod is placed
			// all the same, moving as every Job's pod did then.
			return false, nil
		}
		return false, errors.Wrap(client.IgnoreNotFound(err), "cannot read the pod's Job")
	}
	if job.UID != ref.UID {
		return false, nil
	}
	if job.Spec.PodReplacementPolicy != nil {
		return *job.Spec.PodReplacementPolicy == batchv1.Failed, nil
	}
	return job.Spec.PodFailurePolicy != nil, nil
}

// follow binds the pod once its delegate is bound, and keeps its status
// the delegate's; before that, its PodScheduled condition (and a
// FailedScheduling Event) says why the Workload is not placed.
func (p *Proxies) follow(ctx context.Context, pod *corev1.Pod, w *v1alpha1.Workload) error {
	delegate, err := delegate(ctx, p.Members, w)
	if err != nil {
		return err
	}
	if delegate == nil {
		if pod.Spec.NodeName != "" {
			// Bound, its delegate gone or moving: the status stays
			// until the next delegate answers, but not Ready (a
			// Deployment, a PodDisruptionBudget, a Service's endpoints
			// would count a replica that does not run).
			status := *pod.Status.DeepCopy()
			switch {
			case clusterSilent(w):
				notReady(&status, pod.Status, v1alpha1.ReasonClusterUnreachable, w.Status.GetCondition(xpv2.TypeReady).Message)
			case watched(p.Members, w):
				notReady(&status, pod.Status, reasonDelegateNotBound, "no delegate of the pod is bound in its cluster now (one replaced, or moving)")
			}
			// Otherwise its cluster's chaperons are not listed yet (the
			// manager started): nothing is known, the status stays.
			return p.writeStatus(ctx, pod, status, nil)
		}
		c := w.Status.GetCondition(v1alpha1.TypeScheduled)
		if c.Status == corev1.ConditionFalse && c.ObservedGeneration == w.Generation {
			return p.unschedulable(ctx, pod, string(c.Reason), c.Message)
		}
		return nil
	}
	key := w.ClusterKey(w.Status.ClusterRef)
	if pod.Spec.NodeName == "" {
		node := v1alpha1.VirtualNodeName(key)
		if bound, err := bind(ctx, p.Client, pod, key); err != nil || !bound {
			return err
		}
		p.changedFrom(pod, pod.ResourceVersion)
		p.Record.Event(pod, event.Normal(reasonScheduled, "Successfully assigned "+pod.Namespace+"/"+pod.Name+" to "+node))
		// The delegate's status in the same pass, not the next one (its
		// start usually comes with its binding): a merge patch, as the
		// binding changed the pod's resourceVersion. It sets the whole
		// status the delegate has (its conditions replace the binding's
		// PodScheduled), as every later pass does.
		return p.writeStatus(ctx, pod, statusOf(delegate, pod, w), client.MergeFrom(pod.DeepCopy()))
	}
	if moved, err := p.movedTo(ctx, pod, key); err != nil || moved {
		return err
	}
	return p.writeStatus(ctx, pod, statusOf(delegate, pod, w), nil)
}

// statusOf is the status the proxy pod shows of its delegate: the
// delegate's, but not Ready while its cluster does not answer (the
// Workload's Ready is Unknown), as the node lifecycle controller marks a
// lost node's pods: the member's last word, in placer's watch, may be
// long out of date.
func statusOf(delegate *mcv1alpha1.PodChaperon, pod *corev1.Pod, w *v1alpha1.Workload) corev1.PodStatus {
	status := followed(delegate.Status, pod.Status)
	if clusterSilent(w) {
		notReady(&status, pod.Status, v1alpha1.ReasonClusterUnreachable, w.Status.GetCondition(xpv2.TypeReady).Message)
	}
	return status
}

// clusterSilent reports whether the Workload's cluster does not answer:
// its Ready is Unknown, as the propagator says it then.
func clusterSilent(w *v1alpha1.Workload) bool {
	c := w.Status.GetCondition(xpv2.TypeReady)
	return c.Status == corev1.ConditionUnknown && c.Reason == v1alpha1.ReasonClusterUnreachable
}

// watched reports whether the chaperons of the Workload's cluster are
// listed: a delegate not found there is not bound there.
func watched(members cluster.Members, w *v1alpha1.Workload) bool {
	if w.Status.ClusterRef == nil {
		return false
	}
	m := members.Member(w.ClusterKey(w.Status.ClusterRef))
	return m != nil && m.Synced()
}

// notReady sets a pod status's Ready and ContainersReady False. A
// condition the pod's status (was) says False already is kept as it is
// there, its transition time too, so that passes that find the same
// write nothing.
func notReady(s *corev1.PodStatus, was corev1.PodStatus, reason, msg string) {
	for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
		if _, old := podutil.GetPodCondition(&was, t); old != nil && old.Status == corev1.ConditionFalse {
			c = *old.DeepCopy()
		}
		if i, _ := podutil.GetPodCondition(s, t); i >= 0 {
			s.Conditions[i] = c
		} else {
			s.Conditions = append(s.Conditions, c)
		}
	}
}

// bind binds the pod to the cluster's virtual node; the binding also
// annotates the pod with its cluster: one write. bound is false, with no
// error, when the API server finds the pod bound already, going, or not
// the one the cache holds (its UID): the cache is behind the pod, whose
// newer copy's event brings the next pass,
// rather than an error's backoff, which would hold its status back.
func bind(ctx context.Context, c client.Client, pod *corev1.Pod, key types.NamespacedName) (bound bool, err error) {
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID,
		Annotations: map[string]string{v1alpha1.AnnotationRunsIn: key.String()}},
		Target: corev1.ObjectReference{Kind: "Node", Name: v1alpha1.VirtualNodeName(key)}}
	err = c.SubResource("binding").Create(ctx, pod, b)
	if kerrors.IsConflict(err) {
		return false, nil
	}
	return err == nil, errors.Wrap(err, "cannot bind the proxy pod to its virtual node")
}

// writeStatus makes the proxy pod's status the one given (its delegate's,
// statusOf), when it is not already: by patch when one is given, else by
// an update.
func (p *Proxies) writeStatus(ctx context.Context, pod *corev1.Pod, status corev1.PodStatus, patch client.Patch) error {
	_, err := p.putStatus(ctx, pod, status, patch)
	return err
}

// putStatus is writeStatus, and reports behind: the write met a conflict
// (the cache is behind the pod: its binding, its last status), nothing
// was written, and the newer copy's event brings the next pass.
func (p *Proxies) putStatus(ctx context.Context, pod *corev1.Pod, status corev1.PodStatus, patch client.Patch) (behind bool, err error) {
	if equality.Semantic.DeepEqual(status, pod.Status) {
		return false, nil
	}
	pod.Status = status
	was := pod.ResourceVersion
	if patch != nil {
		err = p.Client.Status().Patch(ctx, pod, patch)
	} else {
		err = p.Client.Status().Update(ctx, pod)
	}
	if err == nil && pod.ResourceVersion != was {
		p.changedFrom(pod, was)
	}
	switch {
	case kerrors.IsInvalid(err):
		// A transition the API server forbids of a pod (a container
		// that terminated, under restartPolicy Never, running again in
		// a replaced delegate): no retry makes it valid.
		p.Record.Event(pod, event.Warning(reasonStatusRefused, errors.Wrap(err, "the delegate's status cannot be the pod's")))
		return false, nil
	case kerrors.IsConflict(err):
		return true, nil
	}
	return false, errors.Wrap(err, "cannot write the proxy pod's status")
}

// followed is the delegate's status as its proxy pod shows it: the
// pod's own QoS class, no node-level address (it stays in the member),
// no generation of the member's.
func followed(delegate, own corev1.PodStatus) corev1.PodStatus {
	s := *delegate.DeepCopy()
	s.QOSClass = own.QOSClass
	s.NominatedNodeName = ""
	s.HostIP, s.HostIPs = "", nil
	s.ObservedGeneration = 0
	for i := range s.Conditions {
		s.Conditions[i].ObservedGeneration = 0
	}
	return s
}

// movedTo annotates a bound pod with the cluster its delegate runs in
// now, when that is not the one it was bound for (its binding annotated
// it so), and says so with an Event: the Workload moved (its cluster was
// lost or drained, by the move policy), while the pod stays bound to the
// virtual node of the cluster it first ran in. It reports whether it
// wrote.
func (p *Proxies) movedTo(ctx context.Context, pod *corev1.Pod, key types.NamespacedName) (bool, error) {
	was := pod.Annotations[v1alpha1.AnnotationRunsIn]
	if pod.Spec.NodeName == "" || was == key.String() {
		return false, nil
	}
	orig := pod.DeepCopy()
	metav1.SetMetaDataAnnotation(&pod.ObjectMeta, v1alpha1.AnnotationRunsIn, key.String())
	if err := p.Client.Patch(ctx, pod, client.MergeFrom(orig)); err != nil {
		return false, errors.Wrap(client.IgnoreNotFound(err), "cannot annotate the proxy pod with its cluster")
	}
	if pod.ResourceVersion != orig.ResourceVersion {
		p.changedFrom(pod, orig.ResourceVersion)
	}
	p.Record.Event(pod, event.Normal(reasonMoved, "runs in "+key.String()+" now (it ran in "+was+"); the pod stays bound to node "+pod.Spec.NodeName))
	return true, nil
}

// delegate is the Workload's chaperon bound in its cluster (the delegate
// pod's), or nil.
func delegate(ctx context.Context, members cluster.Members, w *v1alpha1.Workload) (*mcv1alpha1.PodChaperon, error) {
	if !watched(members, w) {
		return nil, nil
	}
	chs, err := members.Member(w.ClusterKey(w.Status.ClusterRef)).Chaperons(ctx, w.UID)
	if err != nil {
		return nil, nil //nolint:nilerr // the member's watch brings the pod back when it syncs.
	}
	var best *mcv1alpha1.PodChaperon
	for _, ch := range chs {
		if _, c := podutil.GetPodConditionFromList(ch.Status.Conditions, corev1.PodScheduled); ch.DeletionTimestamp != nil || c == nil || c.Status != corev1.ConditionTrue {
			continue
		}
		if best == nil || best.CreationTimestamp.Before(&ch.CreationTimestamp) {
			best = ch
		}
	}
	return best, nil
}

// unschedulable says on the pod why its Workload is not placed, as
// kube-scheduler says it of a pod (PodScheduled False, reason
// Unschedulable, and a FailedScheduling Event when the message changes).
func (p *Proxies) unschedulable(ctx context.Context, pod *corev1.Pod, reason, msg string) error {
	if reason == v1alpha1.ReasonUnschedulable {
		reason = corev1.PodReasonUnschedulable
	}
	cond := &corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(time.Now())}
	if !podutil.UpdatePodCondition(&pod.Status, cond) {
		return nil
	}
	p.Record.Event(pod, event.Warning(reasonFailedScheduling, errors.New(msg)))
	was := pod.ResourceVersion
	if err := p.Client.Status().Update(ctx, pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	if pod.ResourceVersion != was {
		p.changedFrom(pod, was)
	}
	return nil
}
