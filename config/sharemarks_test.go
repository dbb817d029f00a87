package config_test

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/testenv"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// TestShareMarksPolicy applies config/management as deployed: anyone but
// the manager (who holds the verb mark on workloads, through its
// ClusterRole) is refused, naming the field, a Workload created with a
// share's marks or updated to carry or change them; the manager sets and
// takes them; other annotations are anyone's. The same for the proxy-pod
// label of the Workloads the manager makes for proxy pods. Anyone here is
// a tenant who may write Workloads in its namespace, and a ServiceAccount
// of that tenant's named placer-manager: before, the policy let through
// any ServiceAccount of that name, in any namespace.
func TestShareMarksPolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := testenv.Start(t)
	if err := deploy.ApplyDir(ctx, env.Config, "management"); err != nil {
		t.Fatal(err)
	}
	// The tenants may write Workloads in default.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "workloads"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{v1alpha1.Group}, Resources: []string{"workloads"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "workloads"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "workloads"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "tenant"}, {Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "placer-manager"}}}
	for _, o := range []client.Object{role, rb} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	tenant, err := client.New(env.UserConfig(t, "tenant"), client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// A tenant's own ServiceAccount, named as the manager's.
	namesake, err := client.New(env.UserConfig(t, "system:serviceaccount:default:placer-manager", "system:serviceaccounts"), client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	marked := func(name, key string) *v1alpha1.Workload {
		w := st.Workload(name, func(w *v1alpha1.Workload) { w.Annotations = map[string]string{key: v1alpha1.ReasonTainted} })
		w.UID, w.Generation = "", 0
		return w
	}
	// refusedMark reports whether err is the policy's refusal, naming the
	// field.
	refusedMark := func(err error) bool {
		return kerrors.IsForbidden(err) && err != nil &&
			strings.Contains(err.Error(), "metadata.annotations: compute.placer.dev/commit-held and compute.placer.dev/leaving are placer-manager's marks")
	}
	// The policy takes effect a moment after it is created: until the
	// refusal comes, what was let through is taken back and tried again.
	forged := marked("forged", v1alpha1.AnnotationShareLeaving)
	refused := untilRefused(t, func() error { return tenant.Create(ctx, forged.DeepCopy()) }, func() {
		if err := env.Client.Delete(ctx, forged.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	})
	if !refusedMark(refused) {
		t.Fatalf("a Workload created with compute.placer.dev/leaving: %v, want a refusal naming the field", refused)
	}
	if err := tenant.Create(ctx, marked("held", v1alpha1.AnnotationCommitHeld)); !refusedMark(err) {
		t.Errorf("a Workload created with compute.placer.dev/commit-held: %v, want the policy's refusal", err)
	}
	if err := namesake.Create(ctx, marked("namesake", v1alpha1.AnnotationShareLeaving)); !refusedMark(err) {
		t.Errorf("a Workload created with compute.placer.dev/leaving by a tenant's ServiceAccount named placer-manager: %v, want the policy's refusal", err)
	}
	// Another annotation is anyone's.
	plain := marked("plain", "example.com/owner")
	if err := tenant.Create(ctx, plain); err != nil {
		t.Fatalf("a Workload with an annotation of the user's own: %v", err)
	}
	manager, err := client.New(env.UserConfig(t, "system:serviceaccount:"+deploy.Namespace+":placer-manager"), client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	annotate := func(c client.Client, key, value string) error {
		w := &v1alpha1.Workload{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(plain), w); err != nil {
			t.Fatal(err)
		}
		if value == "" {
			delete(w.Annotations, key)
		} else {
			w.Annotations[key] = value
		}
		return c.Update(ctx, w)
	}
	if err := annotate(tenant, v1alpha1.AnnotationCommitHeld, "true"); !refusedMark(err) {
		t.Errorf("an update adding compute.placer.dev/commit-held: %v, want the policy's refusal", err)
	}
	if err := annotate(manager, v1alpha1.AnnotationCommitHeld, "true"); err != nil {
		t.Fatalf("the manager holding a share: %v", err)
	}
	if err := annotate(tenant, v1alpha1.AnnotationCommitHeld, ""); !refusedMark(err) {
		t.Errorf("an update taking compute.placer.dev/commit-held away: %v, want the policy's refusal", err)
	}
	if err := annotate(tenant, "example.com/owner", "someone else"); err != nil {
		t.Errorf("a user changing its own annotation beside the manager's mark: %v", err)
	}
	if err := annotate(manager, v1alpha1.AnnotationCommitHeld, ""); err != nil {
		t.Errorf("the manager letting a share go: %v", err)
	}

	// The proxy-pod label: a tenant's Workload carrying it would be taken
	// for an orphaned proxy pod's, and go with no pod.
	labelled := func(name string) *v1alpha1.Workload {
		w := st.Workload(name, st.WLabels(v1alpha1.LabelProxyPod, "uid-1"))
		w.UID, w.Generation = "", 0
		return w
	}
	refusedLabel := func(err error) bool {
		return kerrors.IsForbidden(err) && strings.Contains(err.Error(), "metadata.labels: compute.placer.dev/proxy-pod is placer-manager's mark")
	}
	if err := tenant.Create(ctx, labelled("tenants")); !refusedLabel(err) {
		t.Errorf("a Workload created with compute.placer.dev/proxy-pod: %v, want the policy's refusal naming the field", err)
	}
	proxys := labelled("proxys")
	if err := manager.Create(ctx, proxys); err != nil {
		t.Fatalf("the manager making a proxy pod's Workload: %v", err)
	}
	relabel := func(c client.Client, value string) error {
		w := &v1alpha1.Workload{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(proxys), w); err != nil {
			t.Fatal(err)
		}
		w.Labels[v1alpha1.LabelProxyPod] = value
		return c.Update(ctx, w)
	}
	if err := relabel(tenant, "uid-2"); !refusedLabel(err) {
		t.Errorf("an update changing compute.placer.dev/proxy-pod: %v, want the policy's refusal", err)
	}
	// Another change of a proxy pod's Workload is anyone's who may (the
	// garbage collector taking the pod's reference off, say).
	if err := relabel(tenant, "uid-1"); err != nil {
		t.Errorf("an update keeping compute.placer.dev/proxy-pod: %v", err)
	}
}
