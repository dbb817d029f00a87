package inventory

import (
	"context"
	"testing"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if _, ok := o.(*v1alpha1.KubernetesCluster); ok {
				// The cache has not seen it yet.
				return kerrors.NewNotFound(v1alpha1.GroupVersion.WithResource("kubernetesclusters").GroupResource(), key.Name)
			}
			return c.Get(ctx, key, o, opts...)
		},
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
