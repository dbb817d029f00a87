package proxypod

import (
	"context"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
// +kubebuilder:rbac:groups=compute.placer.dev,resources=workloads,verbs=get;list;watch;create;delete

// Reasons of the proxy pods' Events.
const (
	reasonFailedScheduling = "FailedScheduling"
	reasonScheduled        = "Scheduled"
	reasonNameTaken        = "WorkloadNameTaken"
	reasonMoved            = "Moved"
)

// Chaperons finds a Workload's chaperons in a member (cluster.Registry).
type Chaperons interface {
	Get(key types.NamespacedName) *cluster.Connection
}

// Proxies follows each proxy pod: it places the pod as the gang of one of
// a Workload the pod owns (named as the pod), binds the pod to its
// cluster's virtual node once the delegate is bound there, keeps the
// pod's status that of the delegate, and, when the pod is deleted,
// deletes the Workload (whose finalizer removes the delegate) before it
// lets the pod go.
type Proxies struct {
	Client  client.Client
	Members Chaperons
	Record  event.Recorder
}

// Setup adds the proxy pod controller (and the virtual nodes') to the
// manager; reg tells it of chaperon changes.
func Setup(mgr ctrl.Manager, reg *cluster.Registry) error {
	if err := SetupNodes(mgr); err != nil {
		return err
	}
	t := &shared.Trigger{}
	reg.AlsoOnChaperon(t.Enqueue)
	p := &Proxies{
		Client: mgr.GetClient(), Members: reg,
		Record: event.NewAPIRecorder(mgr.GetEventRecorderFor("placer-proxy")), //nolint:staticcheck // crossplane-runtime's recorder takes the legacy interface.
	}
	proxies := predicate.NewPredicateFuncs(func(o client.Object) bool {
		pod, ok := o.(*corev1.Pod)
		return ok && pod.Spec.SchedulerName == v1alpha1.ProxySchedulerName
	})
	ownedByPod := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if _, ok := o.GetLabels()[v1alpha1.LabelProxyPod]; ok {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("proxypod").
		For(&corev1.Pod{}, builder.WithPredicates(proxies)).
		Watches(&v1alpha1.Workload{}, ownedByPod).
		WatchesRawSource(t.Source()).
		Complete(p)
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
		return reconcile.Result{}, p.deleteWorkload(ctx, w, "")
	}
	if !IsProxy(pod) {
		return reconcile.Result{}, nil
	}
	if w != nil && controllerUID(w) != pod.UID {
		return p.otherWorkload(ctx, pod, w)
	}
	if pod.DeletionTimestamp != nil {
		return reconcile.Result{}, p.letGo(ctx, pod, w)
	}
	if w == nil {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, p.createWorkload(ctx, pod)
	}
	return reconcile.Result{}, p.follow(ctx, pod, w)
}

// controllerUID is the UID of the Workload's controlling pod ("" when a
// pod does not control it).
func controllerUID(w *v1alpha1.Workload) types.UID {
	if ref := metav1.GetControllerOf(w); ref != nil && ref.Kind == "Pod" && ref.APIVersion == "v1" {
		return ref.UID
	}
	return ""
}

// otherWorkload handles a Workload of the pod's name that the pod does
// not control: that of an earlier pod of the same name (a StatefulSet's)
// goes first; any other is the user's, and the pod says so.
func (p *Proxies) otherWorkload(ctx context.Context, pod *corev1.Pod, w *v1alpha1.Workload) (reconcile.Result, error) {
	if controllerUID(w) != "" {
		return reconcile.Result{}, p.deleteWorkload(ctx, w, "")
	}
	msg := "a Workload named " + w.Name + " exists and is not this pod's: placer places each proxy pod through a Workload of its own name"
	p.Record.Event(pod, event.Warning(reasonNameTaken, errors.New(msg)))
	return reconcile.Result{}, p.setPodScheduled(ctx, pod, corev1.ConditionFalse, reasonNameTaken, msg)
}

// deleteWorkload deletes a Workload a pod controlled (uid, when set,
// must be that pod's).
func (p *Proxies) deleteWorkload(ctx context.Context, w *v1alpha1.Workload, uid types.UID) error {
	if w == nil || controllerUID(w) == "" || (uid != "" && controllerUID(w) != uid) || w.DeletionTimestamp != nil {
		return nil
	}
	return client.IgnoreNotFound(p.Client.Delete(ctx, w, client.Preconditions{UID: &w.UID}))
}

// letGo deletes the Workload of a pod being deleted (the propagator's
// finalizer removes its delegate) and, once it is gone, the pod itself:
// a virtual node has no kubelet to confirm it.
func (p *Proxies) letGo(ctx context.Context, pod *corev1.Pod, w *v1alpha1.Workload) error {
	if w != nil {
		return p.deleteWorkload(ctx, w, pod.UID)
	}
	err := p.Client.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
	return client.IgnoreNotFound(err)
}

func (p *Proxies) createWorkload(ctx context.Context, pod *corev1.Pod) error {
	source, err := SourceOf(pod)
	if err != nil {
		return p.setPodScheduled(ctx, pod, corev1.ConditionFalse, "InvalidSourcePod", "cannot read the source pod's manifest: "+err.Error())
	}
	source.Namespace = pod.Namespace
	w, ferr := WorkloadFor(source, OwnerOf(pod))
	if ferr != nil {
		return p.setPodScheduled(ctx, pod, corev1.ConditionFalse, "InvalidSourcePod", ferr.Error())
	}
	return client.IgnoreAlreadyExists(p.Client.Create(ctx, w))
}

// follow binds the pod once its delegate is bound, and keeps its status
// the delegate's; before that, its PodScheduled condition (and a
// FailedScheduling Event) says why the Workload is not placed.
func (p *Proxies) follow(ctx context.Context, pod *corev1.Pod, w *v1alpha1.Workload) error {
	delegate, err := p.delegate(ctx, w)
	if err != nil {
		return err
	}
	if delegate == nil {
		if pod.Spec.NodeName != "" {
			// Bound, its delegate gone or moving: the status stays
			// until the next delegate answers.
			return nil
		}
		c := w.Status.GetCondition(v1alpha1.TypeScheduled)
		if c.Status == corev1.ConditionFalse && c.ObservedGeneration == w.Generation {
			return p.unschedulable(ctx, pod, string(c.Reason), c.Message)
		}
		return nil
	}
	if moved, err := p.labelCluster(ctx, pod, w.ClusterKey(w.Status.ClusterRef)); err != nil || moved {
		return err
	}
	if pod.Spec.NodeName == "" {
		node := v1alpha1.VirtualNodeName(w.ClusterKey(w.Status.ClusterRef))
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
		if err := p.Client.SubResource("binding").Create(ctx, pod, b); err != nil {
			return errors.Wrap(err, "cannot bind the proxy pod to its virtual node")
		}
		p.Record.Event(pod, event.Normal(reasonScheduled, "Successfully assigned "+pod.Namespace+"/"+pod.Name+" to "+node))
		return nil
	}
	status := *delegate.Status.DeepCopy()
	status.QOSClass = pod.Status.QOSClass
	status.NominatedNodeName = ""
	if equality.Semantic.DeepEqual(status, pod.Status) {
		return nil
	}
	pod.Status = status
	return errors.Wrap(p.Client.Status().Update(ctx, pod), "cannot update the proxy pod's status")
}

// labelCluster labels the pod with the cluster its delegate runs in
// (kubectl get pods -L compute.placer.dev/cluster-name), and says, with an
// Event, when that changed: the Workload moved (its cluster was lost or
// drained, by the move policy), while the pod stays bound to the virtual
// node of the cluster it first ran in. It reports whether it wrote.
func (p *Proxies) labelCluster(ctx context.Context, pod *corev1.Pod, key types.NamespacedName) (bool, error) {
	name, ns := pod.Labels[v1alpha1.LabelClusterName], pod.Labels[v1alpha1.LabelClusterNamespace]
	if name == key.Name && ns == key.Namespace {
		return false, nil
	}
	orig := pod.DeepCopy()
	metav1.SetMetaDataLabel(&pod.ObjectMeta, v1alpha1.LabelClusterName, key.Name)
	metav1.SetMetaDataLabel(&pod.ObjectMeta, v1alpha1.LabelClusterNamespace, key.Namespace)
	if err := p.Client.Patch(ctx, pod, client.MergeFrom(orig)); err != nil {
		return false, errors.Wrap(client.IgnoreNotFound(err), "cannot label the proxy pod with its cluster")
	}
	if name != "" {
		p.Record.Event(pod, event.Normal(reasonMoved, "runs in "+key.String()+" now (it ran in "+ns+"/"+name+"); the pod stays bound to node "+pod.Spec.NodeName))
	}
	return true, nil
}

// delegate is the Workload's chaperon bound in its cluster (the delegate
// pod's), or nil.
func (p *Proxies) delegate(ctx context.Context, w *v1alpha1.Workload) (*mcv1alpha1.PodChaperon, error) {
	if w.Status.ClusterRef == nil {
		return nil, nil
	}
	conn := p.Members.Get(w.ClusterKey(w.Status.ClusterRef))
	if conn == nil || !conn.Synced() {
		return nil, nil
	}
	chs, err := conn.Chaperons(ctx, w.UID)
	if err != nil {
		return nil, nil //nolint:nilerr // the member's watch brings the pod back when it syncs.
	}
	var best *mcv1alpha1.PodChaperon
	for _, ch := range chs {
		if ch.DeletionTimestamp != nil || !scheduled(&ch.Status) {
			continue
		}
		if best == nil || best.CreationTimestamp.Before(&ch.CreationTimestamp) {
			best = ch
		}
	}
	return best, nil
}

func scheduled(s *corev1.PodStatus) bool {
	for _, c := range s.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// unschedulable says on the pod why its Workload is not placed, as
// kube-scheduler says it of a pod (PodScheduled False, reason
// Unschedulable, and a FailedScheduling Event when the message changes).
func (p *Proxies) unschedulable(ctx context.Context, pod *corev1.Pod, reason, msg string) error {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Message == msg {
			return nil
		}
	}
	p.Record.Event(pod, event.Warning(reasonFailedScheduling, errors.New(msg)))
	if reason == v1alpha1.ReasonUnschedulable {
		reason = corev1.PodReasonUnschedulable
	}
	return p.setPodScheduled(ctx, pod, corev1.ConditionFalse, reason, msg)
}

func (p *Proxies) setPodScheduled(ctx context.Context, pod *corev1.Pod, status corev1.ConditionStatus, reason, msg string) error {
	cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(time.Now())}
	out := pod.Status.Conditions[:0:0]
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodScheduled {
			out = append(out, c)
		}
	}
	pod.Status.Conditions = append(out, cond)
	return client.IgnoreNotFound(p.Client.Status().Update(ctx, pod))
}
