package config_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/testenv"
)

// TestClusterBindingNeedsBind applies config/management as deployed and
// acts as a tenant who may write ClusterBindings in its own namespace: it
// binds its own namespace's clusters freely, is refused those of a
// namespace whose owner gave it nothing (naming the field and the verb),
// and binds them once the owner grants "bind" on its kubernetesclusters.
func TestClusterBindingNeedsBind(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := testenv.Start(t)
	if err := deploy.ApplyDir(ctx, env.Config, "management"); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"team-a", "platform"} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	grant := func(ns, name string, rule rbacv1.PolicyRule) {
		t.Helper()
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: []rbacv1.PolicyRule{rule}}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}
		for _, o := range []client.Object{role, rb} {
			if err := env.Client.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	grant("team-a", "bindings", rbacv1.PolicyRule{APIGroups: []string{v1alpha1.Group}, Resources: []string{"clusterbindings"}, Verbs: []string{"get", "create", "update", "delete"}})
	alice, err := client.New(env.UserConfig(t, "alice"), client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	binding := func(name, clusterNamespace string) *v1alpha1.ClusterBinding {
		return &v1alpha1.ClusterBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name}, Spec: v1alpha1.ClusterBindingSpec{ClusterNamespace: clusterNamespace}}
	}

	// The policy takes effect a moment after it is created: until the
	// refusal comes, what was let through is taken back and tried again.
	refused := untilRefused(t, func() error { return alice.Create(ctx, binding("platform", "platform")) }, func() {
		if err := env.Client.Delete(ctx, binding("platform", "platform")); err != nil {
			t.Fatal(err)
		}
	})
	if refused == nil {
		t.Fatal("a tenant bound another namespace's clusters without the bind verb there")
	}
	if !apierrors.IsForbidden(refused) && !apierrors.IsInvalid(refused) || !strings.Contains(refused.Error(), "spec.clusterNamespace") || !strings.Contains(refused.Error(), "bind verb") {
		t.Errorf("refused with %v; want a refusal naming spec.clusterNamespace and the bind verb", refused)
	}

	if err := alice.Create(ctx, binding("own", "team-a")); err != nil {
		t.Errorf("binding its own namespace's clusters: %v", err)
	}

	grant("platform", "offer-to-team-a", rbacv1.PolicyRule{APIGroups: []string{v1alpha1.Group}, Resources: []string{"kubernetesclusters"}, Verbs: []string{"bind"}})
	var err2 error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		// RBAC's cache takes the new Role a moment later.
		if err2 = alice.Create(ctx, binding("platform", "platform")); err2 == nil {
			break
		}
	}
	if err2 != nil {
		t.Errorf("binding the clusters of a namespace that granted bind: %v", err2)
	}
	// Nor can a binding be turned to a namespace not given.
	cb := &v1alpha1.ClusterBinding{}
	if err := alice.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "own"}, cb); err != nil {
		t.Fatal(err)
	}
	cb.Spec.ClusterNamespace = "elsewhere"
	if err := alice.Update(ctx, cb); err == nil || !strings.Contains(err.Error(), "bind verb") {
		t.Errorf("a binding changed to a namespace not given: %v", err)
	}
	// A binding whose namespace does not change is not judged again: its
	// labels, or the garbage collector's finalizers, after bind is taken back.
	pb := &v1alpha1.ClusterBinding{}
	if err := alice.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "platform"}, pb); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "offer-to-team-a"}}); err != nil {
		t.Fatal(err)
	}
	pb.Labels = map[string]string{"example.com/reviewed": "yes"}
	if err := alice.Update(ctx, pb); err != nil {
		t.Errorf("relabelling a binding whose namespace did not change: %v", err)
	}
}
