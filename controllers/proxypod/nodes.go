package proxypod

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=get;update;patch

// LeaseDuration is how long a virtual node's Lease holds; it is renewed
// every LeaseDuration/4, as a kubelet renews its own.
const LeaseDuration = 40 * time.Second

// Nodes keeps one virtual Node per KubernetesCluster in the management
// cluster: labelled as the cluster is (its built-in labels included),
// with its capacity, Ready as it is, cordoned when it is, and tainted so
// that only proxy pods go there. Which namespaces may use a cluster is
// still decided by tenancy, never by which nodes exist.
type Nodes struct {
	Client client.Client
	// Kubelet is where the virtual nodes' kubelet API is served (their
	// address and port); none when Address is empty.
	Kubelet KubeletEndpoint
}

// annotationOwnLabels, on a virtual node, lists the label keys placer set
// there (the cluster's), so that one the cluster drops goes too.
const annotationOwnLabels = v1alpha1.Group + "/own-labels"

// indexNodeName indexes proxy pods by the node they are bound to.
const indexNodeName = "spec.nodeName"

// SetupNodes adds the virtual node controller and the Leases' heartbeat.
func SetupNodes(mgr ctrl.Manager, kubelet KubeletEndpoint) error {
	n := &Nodes{Client: mgr.GetClient(), Kubelet: kubelet}
	// Leases are read straight from the API server: the cache would hold
	// every node's.
	if err := mgr.Add(&heartbeat{client: mgr.GetClient(), reader: mgr.GetAPIReader(), every: LeaseDuration / 4}); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, indexNodeName, func(o client.Object) []string {
		if name := o.(*corev1.Pod).Spec.NodeName; name != "" {
			return []string{name}
		}
		return nil
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("virtualnode").
		For(&v1alpha1.KubernetesCluster{}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if key, ok := v1alpha1.ClusterOfVirtualNode(o.GetName()); ok {
				return []reconcile.Request{{NamespacedName: key}}
			}
			return nil
		})).
		// A pod gone from a deleted cluster's node may let the node go.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if key, ok := v1alpha1.ClusterOfVirtualNode(o.(*corev1.Pod).Spec.NodeName); ok {
				return []reconcile.Request{{NamespacedName: key}}
			}
			return nil
		}), builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false }, UpdateFunc: func(event.UpdateEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Complete(n)
}

// Reconcile makes the cluster's virtual node what the cluster is, or
// removes it with the cluster.
func (n *Nodes) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	kc := &v1alpha1.KubernetesCluster{}
	name := v1alpha1.VirtualNodeName(req.NamespacedName)
	if err := n.Client.Get(ctx, req.NamespacedName, kc); err != nil {
		if !kerrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, n.removed(ctx, name)
	}
	want := VirtualNode(kc, n.Kubelet)
	node := &corev1.Node{}
	if err := n.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if !kerrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		if err := n.Client.Create(ctx, want); err != nil {
			return reconcile.Result{}, errors.Wrap(err, "cannot create the virtual node")
		}
		node = want.DeepCopy()
		if err := n.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return reconcile.Result{}, err
		}
	}
	if merged, changed := mergeNode(node, want); changed {
		if err := n.Client.Update(ctx, merged); err != nil {
			return reconcile.Result{}, errors.Wrap(err, "cannot update the virtual node")
		}
		node = merged
	}
	status := want.Status
	status.Conditions = readyCondition(node.Status.Conditions, kc.Status.GetCondition(xpv2.TypeReady))
	if !equality.Semantic.DeepEqual(node.Status, status) {
		node.Status = status
		if err := n.Client.Status().Update(ctx, node); err != nil {
			return reconcile.Result{}, errors.Wrap(err, "cannot update the virtual node's status")
		}
	}
	return reconcile.Result{}, nil
}

// removed deletes the virtual node of a cluster that is gone, once no
// proxy pod is bound to it: a pod whose Workload moved away before the
// cluster went stays bound to it (a node name never changes), and the pod
// garbage collector deletes the pods of a node that does not exist. Until
// then the node stays, cordoned and not Ready.
func (n *Nodes) removed(ctx context.Context, name string) error {
	pods := &corev1.PodList{}
	if err := n.Client.List(ctx, pods, client.MatchingFields{indexNodeName: name}); err != nil {
		return err
	}
	node := &corev1.Node{}
	if err := n.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return client.IgnoreNotFound(err)
	}
	if len(pods.Items) == 0 {
		return client.IgnoreNotFound(n.Client.Delete(ctx, node, client.Preconditions{UID: &node.UID}))
	}
	if !node.Spec.Unschedulable {
		orig := node.DeepCopy()
		node.Spec.Unschedulable = true
		if err := n.Client.Patch(ctx, node, client.MergeFrom(orig)); err != nil {
			return err
		}
	}
	conds := readyCondition(node.Status.Conditions, xpv2.Condition{Status: corev1.ConditionFalse, Reason: "ClusterDeleted",
		Message: fmt.Sprintf("the KubernetesCluster is gone; %d proxy pod(s) that ran there are still bound to this node", len(pods.Items))})
	if equality.Semantic.DeepEqual(conds, node.Status.Conditions) {
		return nil
	}
	node.Status.Conditions = conds
	return n.Client.Status().Update(ctx, node)
}

// ProviderIDPrefix begins a virtual node's spec.providerID, followed by
// its KubernetesCluster's namespace/name.
const ProviderIDPrefix = "placer://"

// VirtualNode is the Node that stands for a cluster.
func VirtualNode(kc *v1alpha1.KubernetesCluster, kubelet KubeletEndpoint) *corev1.Node {
	key := types.NamespacedName{Namespace: kc.Namespace, Name: kc.Name}
	name := v1alpha1.VirtualNodeName(key)
	labels := maps.Clone(kc.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, map[string]string{
		v1alpha1.LabelVirtualKubeletProvider: v1alpha1.VirtualKubeletProvider,
		v1alpha1.LabelClusterTargetName:      v1alpha1.LabelValueOf(kc.Name),
		v1alpha1.LabelClusterName:            v1alpha1.LabelValueOf(kc.Name),
		v1alpha1.LabelClusterNamespace:       kc.Namespace,
		"type":                               "virtual-kubelet",
		"kubernetes.io/role":                 "cluster",
		// The node's name, unless it is longer than a label value.
		corev1.LabelHostname: v1alpha1.LabelValueOf(name),
		corev1.LabelOSStable: "linux",
	})
	alloc := kc.Status.Allocatable.DeepCopy()
	if alloc == nil {
		alloc = corev1.ResourceList{}
	}
	if _, ok := alloc[corev1.ResourcePods]; !ok {
		alloc[corev1.ResourcePods] = *resource.NewQuantity(int64(110*max(kc.Status.NodeCount, 1)), resource.DecimalSI)
	}
	addresses := []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}}
	var endpoints corev1.NodeDaemonEndpoints
	if kubelet.Address != "" {
		// The API server reaches logs, exec and attach of the node's
		// pods there (Kubelet). The only address: its default
		// --kubelet-preferred-address-types tries a Hostname first, and
		// the node's name resolves nowhere.
		addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: kubelet.Address}}
		endpoints.KubeletEndpoint.Port = kubelet.Port
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{
			v1alpha1.AnnotationVirtualNodeCluster: key.String(),
			annotationOwnLabels:                   strings.Join(slices.Sorted(maps.Keys(labels)), ","),
		}},
		Spec: corev1.NodeSpec{
			// A provider ID of placer's own: a cloud's node lifecycle
			// controller (EKS, AKS, GKE management clusters) deletes a
			// NotReady node it cannot find in its cloud, and the pod
			// garbage collector then force-deletes the proxy pods bound
			// to it (virtual-kubelet#321).
			ProviderID:    ProviderIDPrefix + key.String(),
			Unschedulable: kc.Spec.Unschedulable,
			Taints: []corev1.Taint{{
				Key: v1alpha1.LabelVirtualKubeletProvider, Value: v1alpha1.VirtualKubeletProvider, Effect: corev1.TaintEffectNoSchedule,
			}},
		},
		Status: corev1.NodeStatus{
			Capacity: alloc, Allocatable: alloc,
			Addresses: addresses, DaemonEndpoints: endpoints,
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion: kc.Status.Version, OperatingSystem: "linux",
				OSImage: "placer virtual node of KubernetesCluster " + key.String(),
			},
		},
	}
}

// mergeNode sets what placer owns on a node (its labels, annotations,
// taint and cordon) and keeps everything else: the node lifecycle
// controller's taints, others' labels.
func mergeNode(node, want *corev1.Node) (*corev1.Node, bool) {
	out := node.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	// The labels placer set before and the cluster no longer has go;
	// others' labels stay.
	for _, k := range strings.Split(node.Annotations[annotationOwnLabels], ",") {
		if _, keep := want.Labels[k]; !keep {
			delete(out.Labels, k)
		}
	}
	maps.Copy(out.Labels, want.Labels)
	maps.Copy(out.Annotations, want.Annotations)
	out.Spec.Unschedulable = want.Spec.Unschedulable
	if out.Spec.ProviderID == "" {
		// Set once (the API server lets it change only from empty): a
		// node made before it had none.
		out.Spec.ProviderID = want.Spec.ProviderID
	}
	own := want.Spec.Taints[0]
	found := false
	for _, t := range out.Spec.Taints {
		found = found || t.MatchTaint(&own)
	}
	if !found {
		out.Spec.Taints = append(out.Spec.Taints, own)
	}
	return out, !equality.Semantic.DeepEqual(out.ObjectMeta, node.ObjectMeta) || !equality.Semantic.DeepEqual(out.Spec, node.Spec)
}

// readyCondition is the node's Ready as c, the cluster's Ready, its times
// kept while it does not change.
func readyCondition(old []corev1.NodeCondition, c xpv2.Condition) []corev1.NodeCondition {
	status := corev1.ConditionStatus(c.Status)
	if status == "" {
		status = corev1.ConditionUnknown
	}
	reason, msg := string(c.Reason), c.Message
	if reason == "" {
		reason = "ClusterNotProbed"
	}
	now := metav1.Now()
	cond := corev1.NodeCondition{Type: corev1.NodeReady, Status: status, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	for _, o := range old {
		if o.Type == corev1.NodeReady && o.Status == status && o.Reason == reason && o.Message == msg {
			return old
		}
		if o.Type == corev1.NodeReady && o.Status == status {
			cond.LastTransitionTime = o.LastTransitionTime
		}
	}
	return []corev1.NodeCondition{cond}
}

// heartbeat renews every virtual node's Lease in kube-node-lease, as a
// kubelet does, so that the node lifecycle controller sees it alive while
// the manager runs. It is a timer by nature: a Lease is renewed on time.
type heartbeat struct {
	client client.Client
	reader client.Reader
	every  time.Duration
}

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

func (h *heartbeat) Start(ctx context.Context) error {
	wait.UntilWithContext(ctx, h.renewAll, h.every)
	return nil
}

func (h *heartbeat) renewAll(ctx context.Context) {
	nodes := &corev1.NodeList{}
	if err := h.client.List(ctx, nodes, client.MatchingLabels{v1alpha1.LabelVirtualKubeletProvider: v1alpha1.VirtualKubeletProvider}); err != nil {
		return
	}
	for i := range nodes.Items {
		_ = renewLease(ctx, h.client, h.reader, &nodes.Items[i])
	}
}

// renewLease renews (or creates) a node's Lease, owned by the node.
func renewLease(ctx context.Context, c client.Client, r client.Reader, node *corev1.Node) error {
	now := metav1.NewMicroTime(time.Now())
	l := &coordinationv1.Lease{}
	err := r.Get(ctx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: node.Name}, l)
	if kerrors.IsNotFound(err) {
		l = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: node.Name, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
			}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node.Name), LeaseDurationSeconds: ptr.To(int32(LeaseDuration.Seconds())), RenewTime: &now},
		}
		return c.Create(ctx, l)
	}
	if err != nil {
		return err
	}
	l.Spec.RenewTime = &now
	return c.Update(ctx, l)
}

// NeedLeaderElection is true: only the leader writes heartbeats.
func (h *heartbeat) NeedLeaderElection() bool { return true }
