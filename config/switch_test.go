package config_test

import (
	"context"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/internal/testenv"
)

// TestClientSideThenServerSide: a team that installed config/management
// with plain 'kubectl apply -k' (client-side: every field it sets is owned
// by kubectl-client-side-apply) and later follows the README's
// --server-side meets no conflict, although the cluster's aggregation
// controller has since written the rules of the manager's aggregated
// ClusterRole. Apply as kubectl does it: field manager "kubectl", without
// --force-conflicts.
func TestClientSideThenServerSide(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, cl := freshCluster(ctx, t, "switch")
	objs := render(t, "management")
	for _, o := range objs {
		if err := cl.Create(ctx, o.DeepCopy(), client.FieldOwner("kubectl-client-side-apply")); err != nil {
			t.Fatalf("client-side apply of %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	// A grant folded into placer-manager-resources by aggregation.
	grant := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "placer-manager-read-configs", Labels: map[string]string{"rbac.placer.dev/aggregate-to-manager-resources": "true"}},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
	}
	if err := cl.Create(ctx, grant); err != nil {
		t.Fatal(err)
	}
	wc := testenv.Watcher(t, c.RESTConfig())
	testenv.WaitFor(t, wc, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "placer-manager-resources"}}, &rbacv1.ClusterRoleList{}, time.Minute, func(cr *rbacv1.ClusterRole) bool {
		return slices.ContainsFunc(cr.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "configmaps") })
	})
	for _, o := range objs {
		// kubectl apply --server-side first hands what client-side apply
		// owned to its own manager (csaupgrade), as kubectl does since 1.26.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			live := o.DeepCopy()
			if err := cl.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
				return err
			}
			patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, sets.New("kubectl-client-side-apply"), "kubectl")
			if err != nil || patch == nil {
				return err
			}
			return cl.Patch(ctx, live, client.RawPatch(types.JSONPatchType, patch))
		})
		if err != nil {
			t.Fatalf("%s %s: cannot hand client-side apply's fields to kubectl: %v", o.GetKind(), o.GetName(), err)
		}
		if err := cl.Patch(ctx, o.DeepCopy(), client.Apply, client.FieldOwner("kubectl")); err != nil { //nolint:staticcheck // unstructured objects have no apply configuration.
			t.Errorf("server-side apply of %s %s after a client-side one: %v", o.GetKind(), o.GetName(), err)
		}
	}
	// And the aggregated rules stay.
	cr := &rbacv1.ClusterRole{}
	if err := cl.Get(ctx, client.ObjectKey{Name: "placer-manager-resources"}, cr); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(cr.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "configmaps") }) {
		t.Errorf("placer-manager-resources lost its aggregated rules: %v", cr.Rules)
	}
}
