// Package inventory joins placer to the standard cluster inventory
// (sigs.k8s.io/cluster-inventory-api, KEP-4322 and KEP-5313): each
// ClusterProfile of the namespaces the manager reads becomes a
// KubernetesCluster reached with the admin's access providers, and each
// placement on such a cluster is published as a PlacementDecision, which
// Argo CD, MultiKueue and other consumers follow.
package inventory

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	inventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster"
)

// FieldOwner is the field manager of what the inventory controllers write.
const FieldOwner = "placer-inventory"

// LabelPropertyPrefix prefixes the labels a ClusterProfile's properties
// become on its KubernetesCluster: property cpu=64 is the label
// clusterprofile.placer.dev/cpu=64, which cluster selectors and affinity
// select as any label.
const LabelPropertyPrefix = "clusterprofile.placer.dev/"

// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=clusterprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=placementdecisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=compute.placer.dev,resources=kubernetesclusters,verbs=create

// Setup adds the inventory controllers when the manager reads
// ClusterProfiles (p.Access set); nothing otherwise.
func Setup(mgr ctrl.Manager, p cluster.Profiles) error {
	if p.Access == nil {
		return nil
	}
	for _, kind := range []string{"ClusterProfile", "PlacementDecision"} {
		gk := inventoryv1alpha1.GroupVersion.WithKind(kind).GroupKind()
		if _, err := mgr.GetRESTMapper().RESTMapping(gk, inventoryv1alpha1.GroupVersion.Version); err != nil {
			return errors.Wrapf(err, "the cluster inventory's %s (%s) is not served by the management cluster, which --clusterprofile-provider-file needs: kubectl apply --server-side -k config/crd/inventory", kind, inventoryv1alpha1.GroupVersion)
		}
	}
	i := &importer{client: mgr.GetClient(), live: mgr.GetAPIReader(), record: event.NewAPIRecorder(mgr.GetEventRecorderFor("placer-inventory"))} //nolint:staticcheck // crossplane-runtime's recorder takes the legacy interface.
	inNamespaces := predicate.NewPredicateFuncs(func(o client.Object) bool { return slices.Contains(p.Namespaces, o.GetNamespace()) })
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("clusterprofile").
		For(&inventoryv1alpha1.ClusterProfile{}, builder.WithPredicates(inNamespaces)).
		// Every KubernetesCluster of its name, not only its own: an
		// admin's that goes frees the name for it. Not its status, which
		// changes at every probe.
		Watches(&v1alpha1.KubernetesCluster{}, handler.EnqueueRequestsFromMapFunc(sameName),
			builder.WithPredicates(inNamespaces, predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Complete(i); err != nil {
		return err
	}
	d := &decisions{client: mgr.GetClient(), live: mgr.GetAPIReader(), record: i.record}
	return ctrl.NewControllerManagedBy(mgr).
		Named("placementdecision").
		For(&v1alpha1.Workload{}).
		// Its own, and one of a Workload's name that is not: a Workload
		// it held out (PlacementDecisionExists) publishes once it goes.
		Watches(&inventoryv1alpha1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(ownerAndSameName)).
		Complete(d)
}

// ownerAndSameName are the Workloads a PlacementDecision concerns: the one
// that controls it, and the one of its name (whose first slice it is, or
// would be).
func ownerAndSameName(_ context.Context, o client.Object) []reconcile.Request {
	out := []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
	if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "Workload" && ref.Name != o.GetName() {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}})
	}
	return out
}

// sameName is the ClusterProfile a KubernetesCluster's name stands for
// (the importer names its cluster after it).
func sameName(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
}

// importer keeps one KubernetesCluster per ClusterProfile, of the same
// name, owned by it: reached through it (spec.clusterProfileRef), labelled
// with its labels and properties. The rest of the KubernetesCluster
// (taints, namespaceSelector, podSecurity, targetNamespaces) is the
// admin's, never overwritten: the importer applies only its own fields.
type importer struct {
	client client.Client
	// live reads what the cache does not show yet.
	live   client.Reader
	record event.Recorder
}

func (i *importer) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cp := &inventoryv1alpha1.ClusterProfile{}
	if err := i.client.Get(ctx, req.NamespacedName, cp); err != nil {
		// A ClusterProfile deleted takes its KubernetesCluster with it
		// (owner reference), drained first (its finalizer).
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if cp.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	kc, err := i.claim(ctx, cp)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !metav1.IsControlledBy(kc, cp) {
		i.record.Event(cp, event.Warning("KubernetesClusterExists", errors.Errorf("KubernetesCluster %s exists and is not this ClusterProfile's: it is left as it is, and this ClusterProfile is not imported while it is there", req)))
		return reconcile.Result{}, nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "KubernetesCluster",
		"metadata": map[string]any{
			// Its uid: the apply fails (a uid is immutable) on a cluster
			// of the name deleted and made again, someone's, since it was
			// read, where it would take that one over.
			"name": cp.Name, "namespace": cp.Namespace, "uid": string(kc.UID), "labels": labelsOf(cp),
			"ownerReferences": []any{map[string]any{
				"apiVersion": inventoryv1alpha1.GroupVersion.String(), "kind": "ClusterProfile",
				"name": cp.Name, "uid": string(cp.UID), "controller": true,
			}},
		},
		"spec": map[string]any{"clusterProfileRef": map[string]any{"name": cp.Name}},
	}}
	//nolint:staticcheck // client.Apply with an unstructured object: the fields this controller owns, and nothing else.
	return reconcile.Result{}, errors.Wrap(i.client.Patch(ctx, u, client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership), "cannot apply the ClusterProfile's KubernetesCluster")
}

// claim returns the KubernetesCluster of the ClusterProfile's name,
// creating it (its constant parts: the apply sets the rest) when the name
// is free.
func (i *importer) claim(ctx context.Context, cp *inventoryv1alpha1.ClusterProfile) (*v1alpha1.KubernetesCluster, error) {
	kc, err := claim(ctx, i.client, i.live, &v1alpha1.KubernetesCluster{
		// The owner reference as the apply writes it (no
		// blockOwnerDeletion, which would need the ClusterProfile's
		// finalizers where that admission plugin runs).
		ObjectMeta: metav1.ObjectMeta{Namespace: cp.Namespace, Name: cp.Name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: inventoryv1alpha1.GroupVersion.String(), Kind: "ClusterProfile", Name: cp.Name, UID: cp.UID, Controller: ptr.To(true),
		}}},
		Spec: v1alpha1.KubernetesClusterSpec{ClusterProfileRef: &v1alpha1.ClusterProfileReference{Name: cp.Name}},
	}, &v1alpha1.KubernetesCluster{})
	return kc, errors.Wrap(err, "cannot claim the ClusterProfile's KubernetesCluster")
}

// claim returns the object of fresh's name as the cache has it or, when
// the cache has none, creates fresh: a create, not the forced apply that
// follows, so that someone's object of the name made a moment ago (not in
// the cache yet) is never taken over; the create fails on it, and the
// API server's copy (someone's, or one of the caller's the cache does not
// show yet) is returned, read live. fresh holds only what never changes
// (name, owner, a required field): what the apply sets after stays the
// apply's, which may take it off again. got is where a read goes.
func claim[T client.Object](ctx context.Context, c client.Client, live client.Reader, fresh, got T) (T, error) {
	key := client.ObjectKeyFromObject(fresh)
	err := c.Get(ctx, key, got)
	if !kerrors.IsNotFound(err) {
		return got, err
	}
	if err := c.Create(ctx, fresh, client.FieldOwner(FieldOwner)); !kerrors.IsAlreadyExists(err) {
		return fresh, err
	}
	return got, live.Get(ctx, key, got)
}

// labelsOf are the labels a ClusterProfile gives its KubernetesCluster:
// its own, and each property valid as a label (LabelPropertyPrefix). Keys
// placer or Kubernetes own (*.placer.dev, kubernetes.io and its
// subdomains: the built-in labels the cluster controller publishes) are
// left out: a ClusterProfile cannot set them.
func labelsOf(cp *inventoryv1alpha1.ClusterProfile) map[string]any {
	out := map[string]any{}
	for k, v := range cp.Labels {
		if !reserved(k) {
			out[k] = v
		}
	}
	for _, p := range cp.Status.Properties {
		k := LabelPropertyPrefix + p.Name
		if len(validation.IsQualifiedName(k)) == 0 && len(validation.IsValidLabelValue(p.Value)) == 0 {
			out[k] = p.Value
		}
	}
	return out
}

// reserved reports whether a label key is one placer or Kubernetes owns.
func reserved(key string) bool {
	domain, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	return domain == "placer.dev" || strings.HasSuffix(domain, ".placer.dev") || domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io")
}

// decisions publishes a Workload's placement on clusters of the
// inventory as a PlacementDecision of the same name in its namespace,
// owned by it: one ClusterDecision per cluster (each share's, for a
// Divided or Duplicated Workload), with why. A share publishes nothing of
// its own: its Workload's decision lists it.
type decisions struct {
	client client.Client
	// live reads a PlacementDecision the cache does not show (yet).
	live   client.Reader
	record event.Recorder
}

func (d *decisions) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	w := &v1alpha1.Workload{}
	if err := d.client.Get(ctx, req.NamespacedName, w); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if w.Annotations[v1alpha1.AnnotationShareOf] != "" {
		return reconcile.Result{}, nil
	}
	have := &inventoryv1alpha1.PlacementDecisionList{}
	if err := d.client.List(ctx, have, client.InNamespace(w.Namespace), client.MatchingLabels{inventoryv1alpha1.PlacementKeyLabel: placementKey(w)}); err != nil {
		return reconcile.Result{}, errors.Wrap(err, "cannot list the PlacementDecisions")
	}
	var mine []inventoryv1alpha1.PlacementDecision
	for _, pd := range have.Items {
		if metav1.IsControlledBy(&pd, w) {
			mine = append(mine, pd)
		}
	}
	chosen, err := d.chosen(ctx, w)
	if err != nil {
		return reconcile.Result{}, err
	}
	// A Workload not placed (yet, or for a moment) publishes an empty
	// decision once it has published one, so that consumers do not prune
	// on a blip; its decisions go with it.
	n := (len(chosen) + maxDecisions - 1) / maxDecisions
	if w.DeletionTimestamp != nil || (len(chosen) == 0 && len(mine) == 0) {
		n = 0
	} else if n == 0 {
		n = 1
	}
	published := make([]bool, n)
	for i := range n {
		part := chosen[min(i*maxDecisions, len(chosen)):min((i+1)*maxDecisions, len(chosen))]
		if published[i], err = d.apply(ctx, w, i, n, part); err != nil {
			return reconcile.Result{}, err
		}
	}
	// The slices beyond those, and every one once the Workload goes.
	for i := range mine {
		idx := 0
		if v, ok := mine[i].Labels[inventoryv1alpha1.DecisionIndexLabel]; ok {
			if idx, err = strconv.Atoi(v); err != nil {
				idx = n
			}
		}
		// A slice under another name (one of before: NAME-i) goes once
		// its own is published, not before.
		if idx < n && (mine[i].Name == sliceName(w, idx) || !published[idx]) {
			continue
		}
		if err := d.client.Delete(ctx, &mine[i]); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, errors.Wrap(err, "cannot delete a PlacementDecision")
		}
	}
	return reconcile.Result{}, nil
}

// maxDecisions is the most ClusterDecisions one PlacementDecision holds
// (the type's limit); more are published in slices, as EndpointSlices.
const maxDecisions = 100

// placementKey is the Workload's value of the placement-key and
// decision-key labels: its name, or a hash of its UID when the name does
// not fit a label value.
func placementKey(w *v1alpha1.Workload) string {
	if len(validation.IsValidLabelValue(w.Name)) == 0 {
		return w.Name
	}
	return fmt.Sprintf("%x", sha256.Sum256([]byte(w.UID)))[:40]
}

// apply publishes slice i of n of the Workload's decision (sliceName),
// all labelled with its placement key,
// and with the decision's key and their index when there are several.
func (d *decisions) apply(ctx context.Context, w *v1alpha1.Workload, i, n int, part []inventoryv1alpha1.ClusterDecision) (published bool, err error) {
	list := make([]any, 0, len(part))
	for _, c := range part {
		list = append(list, map[string]any{"clusterProfileRef": map[string]any{"name": c.ClusterProfileRef.Name, "namespace": c.ClusterProfileRef.Namespace}, "reason": c.Reason})
	}
	name := sliceName(w, i)
	pd, err := claim(ctx, d.client, d.live, &inventoryv1alpha1.PlacementDecision{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "Workload", Name: w.Name, UID: w.UID, Controller: ptr.To(true),
		}}},
		Decisions: []inventoryv1alpha1.ClusterDecision{},
	}, &inventoryv1alpha1.PlacementDecision{})
	if err != nil {
		return false, errors.Wrap(err, "cannot claim the PlacementDecision")
	}
	if !metav1.IsControlledBy(pd, w) {
		d.record.Event(w, event.Warning("PlacementDecisionExists", errors.Errorf("PlacementDecision %s/%s exists and is not this Workload's: it is left as it is, and this slice of the Workload's decision is not published while it is there", w.Namespace, name)))
		return false, nil
	}
	labels := map[string]any{inventoryv1alpha1.PlacementKeyLabel: placementKey(w)}
	if n > 1 {
		labels[inventoryv1alpha1.DecisionKeyLabel] = placementKey(w)
		labels[inventoryv1alpha1.DecisionIndexLabel] = strconv.Itoa(i)
	}
	if upToDate(pd, labels, part) {
		// As it would be applied: no write (a pass runs at every event
		// of the Workload).
		return true, nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": inventoryv1alpha1.GroupVersion.String(),
		"kind":       "PlacementDecision",
		"metadata": map[string]any{
			// Its uid: the apply fails on one of the name made again
			// since it was read.
			"name": name, "namespace": w.Namespace, "uid": string(pd.UID), "labels": labels,
			"ownerReferences": []any{map[string]any{
				"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Workload",
				"name": w.Name, "uid": string(w.UID), "controller": true,
			}},
		},
		"decisions":     list,
		"schedulerName": "placer",
	}}
	//nolint:staticcheck // client.Apply with an unstructured object: the fields this controller owns.
	if err := d.client.Patch(ctx, u, client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return false, errors.Wrap(err, "cannot apply the PlacementDecision")
	}
	return true, nil
}

// upToDate reports whether the PlacementDecision says what its apply
// would: the labels it owns (placement key, decision key and index; none
// of them there that it would not set), the decisions, placer as its
// scheduler.
func upToDate(pd *inventoryv1alpha1.PlacementDecision, labels map[string]any, part []inventoryv1alpha1.ClusterDecision) bool {
	for _, k := range []string{inventoryv1alpha1.PlacementKeyLabel, inventoryv1alpha1.DecisionKeyLabel, inventoryv1alpha1.DecisionIndexLabel} {
		v, has := pd.Labels[k]
		if want, ok := labels[k]; has != ok || ok && v != want {
			return false
		}
	}
	return pd.SchedulerName == "placer" && slices.EqualFunc(pd.Decisions, part, func(a, b inventoryv1alpha1.ClusterDecision) bool {
		return a.ClusterProfileRef == b.ClusterProfileRef && a.Reason == b.Reason
	})
}

// sliceName is the name of slice i of the Workload's decision: the first
// is named as the Workload, the others NAME-HASH-i, HASH from its UID, so
// that no slice of one Workload is named as another Workload (`a`'s
// second slice was `a-1`, Workload a-1's first); a Workload given such a
// name on purpose finds PlacementDecisionExists.
func sliceName(w *v1alpha1.Workload, i int) string {
	if i == 0 {
		return w.Name
	}
	sum := sha256.Sum256([]byte(w.UID))
	suffix := fmt.Sprintf("-%x-%d", sum[:4], i)
	return strings.TrimRight(w.Name[:min(len(w.Name), validation.DNS1123SubdomainMaxLength-len(suffix))], ".-") + suffix
}

// chosen are the inventory's clusters the Workload is placed on, with why.
func (d *decisions) chosen(ctx context.Context, w *v1alpha1.Workload) ([]inventoryv1alpha1.ClusterDecision, error) {
	type placed struct {
		ref    v1alpha1.ClusterReference
		reason string
	}
	var where []placed
	if w.Spreads() {
		for _, p := range w.Status.Placements {
			where = append(where, placed{p.Cluster, fmt.Sprintf("share %s: %d replicas; %s", p.Workload, p.Replicas, p.Reason)})
		}
	} else if w.Status.ClusterRef != nil {
		where = append(where, placed{*w.Status.ClusterRef, w.Status.GetCondition(v1alpha1.TypeScheduled).Message})
	}
	var out []inventoryv1alpha1.ClusterDecision
	for _, p := range where {
		ns := p.ref.Namespace
		if ns == "" {
			ns = w.Namespace
		}
		kc := &v1alpha1.KubernetesCluster{}
		if err := d.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: p.ref.Name}, kc); err != nil {
			if client.IgnoreNotFound(err) == nil {
				continue
			}
			return nil, errors.Wrap(err, "cannot get the KubernetesCluster")
		}
		if kc.Spec.ClusterProfileRef == nil {
			continue
		}
		out = append(out, inventoryv1alpha1.ClusterDecision{
			ClusterProfileRef: inventoryv1alpha1.ClusterProfileReference{Name: kc.Spec.ClusterProfileRef.Name, Namespace: ns},
			Reason:            strings.TrimSpace(p.reason),
		})
	}
	return out, nil
}
