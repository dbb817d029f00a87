package inventory

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	inventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/internal/eventtest"
)

func TestLabelsOf(t *testing.T) {
	cp := &inventoryv1alpha1.ClusterProfile{}
	cp.Labels = map[string]string{inventoryv1alpha1.LabelClusterSetKey: "prod", "topology.kubernetes.io/region": "eu", "compute.placer.dev/cloud-provider": "gcp", "team": "a"}
	cp.Status.Properties = []inventoryv1alpha1.Property{
		{Name: "cpu-class", Value: "small"},
		{Name: "region.example.com", Value: "eu-west-1"},
		{Name: "not a label", Value: "x"},
		{Name: "notes", Value: "does not fit a label value"},
		// Keys placer or Kubernetes own: left out.
		{Name: "zone", Value: "a"},
	}
	got := labelsOf(cp)
	want := map[string]any{
		inventoryv1alpha1.LabelClusterSetKey:       "prod",
		"team":                                     "a",
		LabelPropertyPrefix + "zone":               "a",
		LabelPropertyPrefix + "cpu-class":          "small",
		LabelPropertyPrefix + "region.example.com": "eu-west-1",
	}
	if len(got) != len(want) {
		t.Errorf("labels %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("label %s = %v, want %v", k, got[k], v)
		}
	}
}

// TestImportLeavesANewClusterAlone: an admin's KubernetesCluster of the
// ClusterProfile's name, made a moment before and not in the cache yet,
// is read live and left as it is: the forced apply would have taken it
// over (a controller reference to the ClusterProfile, whose deletion would
// then delete the admin's cluster).
func TestImportLeavesANewClusterAlone(t *testing.T) {
	cp := &inventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "east", UID: "cp"}}
	theirs := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "east"},
		Spec: v1alpha1.KubernetesClusterSpec{ClusterProfileRef: &v1alpha1.ClusterProfileReference{Name: "east"}}}
	live := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(cp, theirs).Build()
	applied := false
	cached := interceptor.NewClient(live, interceptor.Funcs{
		// The cache has not seen it yet.
		Get: notCached(&v1alpha1.KubernetesCluster{}),
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			applied = true
			return nil
		},
	})
	rec := &eventtest.Recorder{}
	i := &importer{client: cached, live: live, record: rec}
	if _, err := i.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "fleet", Name: "east"}}); err != nil {
		t.Fatal(err)
	}
	if applied {
		t.Error("the ClusterProfile's KubernetesCluster was applied over the admin's own")
	}
	if got := rec.Reasons(); len(got) != 1 || got[0] != "KubernetesClusterExists" {
		t.Errorf("Events %v, want KubernetesClusterExists", got)
	}
}

// TestImportNeverTakesOverAClusterMadeBeforeItsWrite: an admin's
// KubernetesCluster of the ClusterProfile's name made after every read
// the importer makes, just before its write, is left as it is, with an
// Event. Before, the importer's write was a forced apply, which took it
// over (a controller reference to the ClusterProfile, whose deletion
// would then delete the admin's cluster); now it is a create, which fails.
func TestImportNeverTakesOverAClusterMadeBeforeItsWrite(t *testing.T) {
	ctx := context.Background()
	cp := &inventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "east", UID: "cp"}}
	live := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(cp).Build()
	made := false
	theirs := func(ctx context.Context, c client.WithWatch, o client.Object) {
		// Typed (a create) or unstructured (an apply).
		_, typed := o.(*v1alpha1.KubernetesCluster)
		if made || !typed && o.GetObjectKind().GroupVersionKind().Kind != "KubernetesCluster" {
			return
		}
		made = true
		kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "east"},
			Spec: v1alpha1.KubernetesClusterSpec{ClusterProfileRef: &v1alpha1.ClusterProfileReference{Name: "east"}}}
		if err := c.Create(ctx, kc); err != nil {
			t.Fatal(err)
		}
	}
	cached := interceptor.NewClient(live, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			theirs(ctx, c, o)
			return c.Create(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			theirs(ctx, c, o)
			return c.Patch(ctx, o, p, opts...)
		},
	})
	rec := &eventtest.Recorder{}
	i := &importer{client: cached, live: live, record: rec}
	if _, err := i.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cp)}); err != nil {
		t.Fatal(err)
	}
	kc := &v1alpha1.KubernetesCluster{}
	if err := live.Get(ctx, client.ObjectKeyFromObject(cp), kc); err != nil {
		t.Fatal(err)
	}
	if !made || len(kc.OwnerReferences) != 0 {
		t.Errorf("the admin's KubernetesCluster (made: %t) was taken over: owners %v", made, kc.OwnerReferences)
	}
	if got := rec.Reasons(); len(got) != 1 || got[0] != "KubernetesClusterExists" {
		t.Errorf("Events %v, want KubernetesClusterExists", got)
	}
}

// TestImportCreatesItsCluster: a ClusterProfile whose name is free gets
// its KubernetesCluster, controlled by it, labelled from it; a second
// pass, its cluster not in the cache yet, finds it its own (a live read)
// and applies again, with no Event.
func TestImportCreatesItsCluster(t *testing.T) {
	ctx := context.Background()
	cp := &inventoryv1alpha1.ClusterProfile{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "east", UID: "cp", Labels: map[string]string{"team": "a"}}}
	live := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(cp).Build()
	behind := interceptor.NewClient(live, interceptor.Funcs{
		Get: notCached(&v1alpha1.KubernetesCluster{}),
	})
	rec := &eventtest.Recorder{}
	for _, c := range []client.Client{live, behind} {
		i := &importer{client: c, live: live, record: rec}
		if _, err := i.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cp)}); err != nil {
			t.Fatal(err)
		}
	}
	kc := &v1alpha1.KubernetesCluster{}
	if err := live.Get(ctx, client.ObjectKeyFromObject(cp), kc); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(kc, cp) || kc.Labels["team"] != "a" || kc.Spec.ClusterProfileRef == nil {
		t.Errorf("the ClusterProfile's KubernetesCluster: owners %v, labels %v, spec %+v", kc.OwnerReferences, kc.Labels, kc.Spec)
	}
	if got := rec.Reasons(); len(got) != 0 {
		t.Errorf("Events %v, want none", got)
	}
}

// spread is a Duplicated Workload placed on n clusters of the inventory,
// c0..c(n-1), which objs gets.
func spread(name string, n int, objs *[]client.Object) *v1alpha1.Workload {
	w := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name, UID: types.UID("uid-" + name)}}
	w.Spec.Placement.ReplicaScheduling = &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDuplicated}
	for k := range n {
		c := fmt.Sprintf("c%d", k)
		*objs = append(*objs, &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: c}, Spec: v1alpha1.KubernetesClusterSpec{ClusterProfileRef: &v1alpha1.ClusterProfileReference{Name: c}}})
		w.Status.Placements = append(w.Status.Placements, v1alpha1.SharePlacement{Cluster: v1alpha1.ClusterReference{Name: c}, Workload: name + "-" + c, Replicas: 1})
	}
	return w
}

// reconcileDecisions runs the decisions' pass for each Workload in turn.
func reconcileDecisions(t *testing.T, d *decisions, ws ...*v1alpha1.Workload) {
	t.Helper()
	for _, w := range ws {
		if _, err := d.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDecisionSlicesDoNotCollide: Workload a's second slice and Workload
// a-1's decision are two PlacementDecisions, each its Workload's. Before,
// both were named a-1, and the two Workloads took it from each other.
func TestDecisionSlicesDoNotCollide(t *testing.T) {
	ctx := context.Background()
	var objs []client.Object
	a := spread("a", maxDecisions+1, &objs)
	a1 := spread("a-1", 1, &[]client.Object{})
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(append(objs, a, a1)...).Build()
	reconcileDecisions(t, &decisions{client: c, live: c, record: &eventtest.Recorder{}}, a, a1, a)
	for w, want := range map[*v1alpha1.Workload][]int{a: {maxDecisions, 1}, a1: {1}} {
		l := &inventoryv1alpha1.PlacementDecisionList{}
		if err := c.List(ctx, l, client.MatchingLabels{inventoryv1alpha1.PlacementKeyLabel: w.Name}); err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, pd := range l.Items {
			if !metav1.IsControlledBy(&pd, w) {
				t.Errorf("PlacementDecision %s of %s: owners %v", pd.Name, w.Name, pd.OwnerReferences)
			}
			got = append(got, len(pd.Decisions))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: slices of %v decisions, want %v", w.Name, got, want)
		}
	}
}

// TestDecisionLeavesAnothersPlacementDecision: a PlacementDecision of the
// slice's name, not the Workload's, is left as it is, with an Event.
func TestDecisionLeavesAnothersPlacementDecision(t *testing.T) {
	var objs []client.Object
	w := spread("b", 1, &objs)
	theirs := &inventoryv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "b", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Workload", Name: "other", UID: "other", Controller: ptr.To(true)}}}}
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(append(objs, w, theirs)...).Build()
	rec := &eventtest.Recorder{}
	reconcileDecisions(t, &decisions{client: c, live: c, record: rec}, w)
	leftAlone(t, c, theirs, rec)
}

// TestDecisionRenamesOldSlices: a slice under the name of before (NAME-i),
// the Workload's, goes once its new one is published: one slice per index.
func TestDecisionRenamesOldSlices(t *testing.T) {
	ctx := context.Background()
	var objs []client.Object
	a := spread("a", maxDecisions+1, &objs)
	old := oldSlice(a)
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(append(objs, a, old)...).Build()
	reconcileDecisions(t, &decisions{client: c, live: c, record: &eventtest.Recorder{}}, a)
	l := &inventoryv1alpha1.PlacementDecisionList{}
	if err := c.List(ctx, l, client.MatchingLabels{inventoryv1alpha1.DecisionKeyLabel: "a"}); err != nil {
		t.Fatal(err)
	}
	idx := map[string]int{}
	for _, pd := range l.Items {
		idx[pd.Labels[inventoryv1alpha1.DecisionIndexLabel]]++
		if pd.Name == "a-1" {
			t.Error("the slice under its old name a-1 is left")
		}
	}
	if idx["0"] != 1 || idx["1"] != 1 || len(idx) != 2 {
		t.Errorf("slices by index %v, want one of each of 0 and 1", idx)
	}
}

// TestDecisionLeavesOneTheCacheDoesNotShow: a PlacementDecision of the
// slice's name, someone's, made a moment ago (not in the cache yet), is
// read live and left as it is: the forced apply would take it over.
func TestDecisionLeavesOneTheCacheDoesNotShow(t *testing.T) {
	var objs []client.Object
	w := spread("b", 1, &objs)
	theirs := &inventoryv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "b"}}
	live := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(append(objs, w, theirs)...).Build()
	behind := interceptor.NewClient(live, interceptor.Funcs{
		Get: notCached(&inventoryv1alpha1.PlacementDecision{}),
	})
	rec := &eventtest.Recorder{}
	reconcileDecisions(t, &decisions{client: behind, live: live, record: rec}, w)
	leftAlone(t, live, theirs, rec)
}

// TestDecisionKeepsAnOldSliceUntilItsNewOne: a slice under its old name
// stays while the new name is held by someone else's PlacementDecision:
// consumers never lose those decisions.
func TestDecisionKeepsAnOldSliceUntilItsNewOne(t *testing.T) {
	ctx := context.Background()
	var objs []client.Object
	a := spread("a", maxDecisions+1, &objs)
	old := oldSlice(a)
	blocking := &inventoryv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: sliceName(a, 1)}}
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(append(objs, a, old, blocking)...).Build()
	reconcileDecisions(t, &decisions{client: c, live: c, record: &eventtest.Recorder{}}, a)
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), old); err != nil {
		t.Errorf("the old slice went before its new one was published: %v", err)
	}
}

// TestDecisionWatchMapsBoth: a PlacementDecision's event wakes its
// controller and the Workload of its name (held out while it was there).
func TestDecisionWatchMapsBoth(t *testing.T) {
	pd := &inventoryv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "a-1",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Workload", Name: "a", UID: "a", Controller: ptr.To(true)}}}}
	var got []string
	for _, r := range ownerAndSameName(context.Background(), pd) {
		got = append(got, r.String())
	}
	slices.Sort(got)
	if want := []string{"fleet/a", "fleet/a-1"}; !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

// notCached is a Get that finds no object of sample's kind, as a cache
// that has not seen it yet does, and every other as the client has it.
func notCached(sample client.Object) func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
	return func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
		if reflect.TypeOf(o) == reflect.TypeOf(sample) {
			return kerrors.NewNotFound(schema.GroupResource{Resource: reflect.TypeOf(sample).Elem().Name()}, key.Name)
		}
		return c.Get(ctx, key, o, opts...)
	}
}

// oldSlice is Workload a's second slice under the name slices had before
// (NAME-i), holding the 101st cluster's decision.
func oldSlice(a *v1alpha1.Workload) *inventoryv1alpha1.PlacementDecision {
	return &inventoryv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "a-1",
		Labels:          map[string]string{inventoryv1alpha1.PlacementKeyLabel: "a", inventoryv1alpha1.DecisionKeyLabel: "a", inventoryv1alpha1.DecisionIndexLabel: "1"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Workload", Name: "a", UID: a.UID, Controller: ptr.To(true)}}},
		Decisions: []inventoryv1alpha1.ClusterDecision{{ClusterProfileRef: inventoryv1alpha1.ClusterProfileReference{Name: "c100"}}}}
}

// leftAlone: someone else's PlacementDecision, as c has it now, is not the
// Workload's (no owner of it, no decision written into it), and the
// Workload was told (PlacementDecisionExists).
func leftAlone(t *testing.T, c client.Reader, theirs *inventoryv1alpha1.PlacementDecision, rec *eventtest.Recorder) {
	t.Helper()
	want := theirs.OwnerReferences
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(theirs), theirs); err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(theirs.OwnerReferences, want, func(a, b metav1.OwnerReference) bool { return a.UID == b.UID }) || len(theirs.Decisions) != 0 {
		t.Errorf("someone's PlacementDecision was taken over: owners %v, decisions %v", theirs.OwnerReferences, theirs.Decisions)
	}
	if got := rec.Reasons(); len(got) != 1 || got[0] != "PlacementDecisionExists" {
		t.Errorf("Events %v, want PlacementDecisionExists", got)
	}
}

// TestDecisionNeverTakesOverOneMadeBeforeItsWrite: someone's
// PlacementDecision of the slice's name made after every read, just
// before the Workload's first write, is left as it is: that write is a
// create, which fails. Before, it was the forced apply, which took it over.
func TestDecisionNeverTakesOverOneMadeBeforeItsWrite(t *testing.T) {
	var objs []client.Object
	w := spread("b", 1, &objs)
	live := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(append(objs, w)...).Build()
	theirs := &inventoryv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "b"}}
	made := false
	first := func(ctx context.Context, c client.WithWatch, o client.Object) {
		_, typed := o.(*inventoryv1alpha1.PlacementDecision)
		if made || !typed && o.GetObjectKind().GroupVersionKind().Kind != "PlacementDecision" {
			return
		}
		made = true
		if err := c.Create(ctx, theirs.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	cached := interceptor.NewClient(live, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			first(ctx, c, o)
			return c.Create(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			first(ctx, c, o)
			return c.Patch(ctx, o, p, opts...)
		},
	})
	rec := &eventtest.Recorder{}
	reconcileDecisions(t, &decisions{client: cached, live: live, record: rec}, w)
	if !made {
		t.Fatal("no write of the PlacementDecision: the case proves nothing")
	}
	leftAlone(t, live, theirs, rec)
}

// TestDecisionUnchangedIsNotApplied: a pass that would publish what the
// PlacementDecision says already writes nothing (a pass runs at every
// event of the Workload); one whose decision changed applies it. Before,
// every pass applied it.
func TestDecisionUnchangedIsNotApplied(t *testing.T) {
	var objs []client.Object
	w := spread("b", 2, &objs)
	writes := 0
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(append(objs, w)...).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			writes++
			return c.Patch(ctx, o, p, opts...)
		},
	}).Build()
	d := &decisions{client: c, live: c, record: &eventtest.Recorder{}}
	reconcileDecisions(t, d, w)
	if writes != 1 {
		t.Fatalf("%d applies to publish the decision, want 1", writes)
	}
	reconcileDecisions(t, d, w)
	if writes != 1 {
		t.Errorf("%d applies after a pass with nothing new, want still 1", writes)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	w.Status.Placements = w.Status.Placements[:1]
	if err := c.Update(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	reconcileDecisions(t, d, w)
	if writes != 2 {
		t.Errorf("%d applies after the decision changed, want 2", writes)
	}
}
