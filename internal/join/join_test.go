package join_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/config"
	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/join"
	"github.com/placer-dev/placer/internal/testenv"
)

// managerConfig is the member configuration the manager makes of the
// Secret join wrote, through its kubeconfig policy.
func managerConfig(t *testing.T, c client.Client, key types.NamespacedName) (*rest.Config, string) {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(context.Background(), key, s); err != nil {
		t.Fatal(err)
	}
	if got := s.Annotations[cluster.AnnotationRenewToken]; got != deploy.Namespace+"/"+join.ServiceAccount {
		t.Errorf("Secret %s: annotation %s is %q", key, cluster.AnnotationRenewToken, got)
	}
	cfg, err := cluster.KubeconfigPolicy{AllowLoopback: true}.RESTConfig(s.Data["kubeconfig"])
	if err != nil {
		t.Fatalf("the manager refuses the kubeconfig join wrote: %v", err)
	}
	return cfg, cluster.KubeconfigToken(s.Data["kubeconfig"])
}

// TestJoinUnjoin joins a member (two real API servers: the management
// cluster and the member) and checks what the manager's identity may do
// there, joins it again, and unjoins it.
func TestJoinUnjoin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mgmt, member := testenv.Start(t), testenv.Start(t)
	o := join.Options{Name: "east", Namespace: "default", Member: member.Config, Management: mgmt.Client, Install: true, Image: "registry.example.com/placer:v9",
		Open: []join.Opening{{Namespace: "apps", Tenant: "team-a"}, {Namespace: "web", Tenant: "team-c"}}, Dependencies: true, TokenTTL: time.Hour, Provider: "kwok", Labels: map[string]string{"tier": "production"}}

	// A Secret of the same name that join did not write is never replaced.
	taken := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "east-kubeconfig"}, Data: map[string][]byte{"kubeconfig": []byte("the admin's own")}}
	if err := mgmt.Client.Create(ctx, taken); err != nil {
		t.Fatal(err)
	}
	if _, err := join.Join(ctx, o); err == nil || !strings.Contains(err.Error(), "was not written by placer join") {
		t.Fatalf("join over a Secret it did not write: %v", err)
	}
	if err := mgmt.Client.Delete(ctx, taken); err != nil {
		t.Fatal(err)
	}

	res, err := join.Join(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if life := time.Until(res.Expires); life < 55*time.Minute || life > 61*time.Minute {
		t.Errorf("the token expires in %s; asked for an hour", life)
	}
	kc := &v1alpha1.KubernetesCluster{}
	if err := mgmt.Client.Get(ctx, res.Cluster, kc); err != nil {
		t.Fatal(err)
	}
	if kc.Spec.ConnectionSecretRef.Name != "east-kubeconfig" || kc.Spec.Provider != "kwok" || kc.Labels["tier"] != "production" {
		t.Errorf("KubernetesCluster: secret %q, provider %q, labels %v", kc.Spec.ConnectionSecretRef.Name, kc.Spec.Provider, kc.Labels)
	}
	agent := &appsv1.Deployment{}
	if err := member.Client.Get(ctx, types.NamespacedName{Namespace: deploy.Namespace, Name: "placer-agent"}, agent); err != nil {
		t.Fatalf("the member side is not installed: %v", err)
	}
	if img := agent.Spec.Template.Spec.Containers[0].Image; img != o.Image {
		t.Errorf("agent image %q, want %q", img, o.Image)
	}
	cfg, token := managerConfig(t, mgmt.Client, res.Secret)
	checkRights(ctx, t, member, cfg)

	// Joined again, the member has a new token and the same rights.
	again, err := join.Join(ctx, o)
	if err != nil {
		t.Fatalf("join again: %v", err)
	}
	cfg2, token2 := managerConfig(t, mgmt.Client, again.Secret)
	if token2 == token {
		t.Error("joining again kept the old token")
	}
	checkRights(ctx, t, member, cfg2)

	// A binding an admin shared between the manager and someone else.
	shared := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "shared-view"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: deploy.Namespace, Name: join.ServiceAccount}, {Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}
	if err := member.Client.Create(ctx, shared); err != nil {
		t.Fatal(err)
	}
	// And, for team-c, an impersonation role and a namespace binding an
	// admin shared with alice.
	alice := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}
	sharedImp := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "shared-impersonate"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: config.ImpersonateRolePrefix + "team-c"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: deploy.Namespace, Name: join.ServiceAccount}, alice}}
	if err := member.Client.Create(ctx, sharedImp); err != nil {
		t.Fatal(err)
	}
	webBinding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: config.ManagerNamespaceRole + "-team-c"}}
	if err := member.Client.Get(ctx, client.ObjectKeyFromObject(webBinding), webBinding); err != nil {
		t.Fatal(err)
	}
	webBinding.Subjects = append(webBinding.Subjects, alice)
	if err := member.Client.Update(ctx, webBinding); err != nil {
		t.Fatal(err)
	}

	// Unjoined, the cluster and its Secret are gone, the token no longer
	// opens the member, and the member side is uninstalled.
	if err := join.Unjoin(ctx, join.UnjoinOptions{Name: "east", Namespace: "default", Management: testenv.Watcher(t, mgmt.Config), Member: member.Config, Uninstall: true, Wait: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{&v1alpha1.KubernetesCluster{}, &corev1.Secret{}} {
		key := res.Cluster
		if _, ok := o.(*corev1.Secret); ok {
			key = res.Secret
		}
		if err := mgmt.Client.Get(ctx, key, o); !kerrors.IsNotFound(err) {
			t.Errorf("%T %s after unjoin: %v", o, key, err)
		}
	}
	// The API server looks the ServiceAccount up in its informer's cache:
	// the deletion reaches it a moment later.
	cs := kubernetes.NewForConfigOrDie(cfg2)
	var after error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, after = cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); kerrors.IsUnauthorized(after) {
			break
		}
	}
	if !kerrors.IsUnauthorized(after) {
		t.Errorf("the manager's token after unjoin: %v; want Unauthorized", after)
	}
	if err := member.Client.Get(ctx, types.NamespacedName{Namespace: deploy.Namespace, Name: "placer-agent"}, agent); !kerrors.IsNotFound(err) {
		t.Errorf("the agent's Deployment after unjoin --uninstall: %v", err)
	}
	// The opened namespace is closed again: the tenant's bindings and the
	// role that let the manager act for it are gone, the namespace stays.
	for _, o := range []client.Object{
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: config.ManagerNamespaceRole + "-team-a"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: config.DependenciesRole + "-team-a"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: config.ImpersonateRolePrefix + "team-a"}},
	} {
		if err := member.Client.Get(ctx, client.ObjectKeyFromObject(o), o); !kerrors.IsNotFound(err) {
			t.Errorf("%T %s after unjoin: %v; want it gone", o, client.ObjectKeyFromObject(o), err)
		}
	}
	if err := member.Client.Get(ctx, types.NamespacedName{Name: "apps"}, &corev1.Namespace{}); err != nil {
		t.Errorf("the opened namespace after unjoin: %v; want it kept", err)
	}
	// What the admin shared with alice keeps her, and its role.
	if err := member.Client.Get(ctx, client.ObjectKeyFromObject(webBinding), webBinding); err != nil || len(webBinding.Subjects) != 1 || webBinding.Subjects[0].Name != "alice" {
		t.Errorf("a namespace binding shared with a tenant after unjoin: %v, subjects %v; want alice alone", err, webBinding.Subjects)
	}
	if err := member.Client.Get(ctx, types.NamespacedName{Name: config.ImpersonateRolePrefix + "team-c"}, &rbacv1.ClusterRole{}); err != nil {
		t.Errorf("an impersonation role a binding of alice's still names, after unjoin: %v; want it kept", err)
	}
	if err := member.Client.Get(ctx, client.ObjectKeyFromObject(shared), shared); err != nil || len(shared.Subjects) != 1 || shared.Subjects[0].Name != "alice" {
		t.Errorf("a binding shared with the manager after unjoin: %v, subjects %v; want alice alone", err, shared.Subjects)
	}
}

// checkRights: as the manager, the member's chaperons and summaries can be
// read cluster-wide and nothing else; acting for tenant team-a it may
// manage chaperons in the opened namespace only; it may renew its own
// token and no other ServiceAccount's.
func checkRights(ctx context.Context, t *testing.T, member *testenv.Env, cfg *rest.Config) {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &mcv1alpha1.PodChaperonList{}); err != nil {
		t.Errorf("the manager listing chaperons: %v", err)
	}
	for what, list := range map[string]client.ObjectList{"pods": &corev1.PodList{}, "secrets": &corev1.SecretList{}} {
		if err := c.List(ctx, list); !kerrors.IsForbidden(err) {
			t.Errorf("the manager listing %s: %v; want Forbidden", what, err)
		}
	}
	tenantCfg := rest.CopyConfig(cfg)
	tenantCfg.Impersonate = rest.ImpersonationConfig{UserName: mcv1alpha1.TenantUser("team-a")}
	tenant, err := client.New(tenantCfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := tenant.List(ctx, &mcv1alpha1.PodChaperonList{}, client.InNamespace("apps")); err != nil {
		t.Errorf("tenant team-a in the opened namespace apps: %v", err)
	}
	if err := tenant.Get(ctx, types.NamespacedName{Namespace: "apps", Name: "absent"}, &corev1.ConfigMap{}); !kerrors.IsNotFound(err) {
		t.Errorf("tenant team-a's dependencies in apps: %v", err)
	}
	if err := tenant.List(ctx, &mcv1alpha1.PodChaperonList{}, client.InNamespace("default")); !kerrors.IsForbidden(err) {
		t.Errorf("tenant team-a in namespace default, not opened: %v; want Forbidden", err)
	}
	otherCfg := rest.CopyConfig(cfg)
	otherCfg.Impersonate = rest.ImpersonationConfig{UserName: mcv1alpha1.TenantUser("team-b")}
	other, err := client.New(otherCfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.List(ctx, &mcv1alpha1.PodChaperonList{}, client.InNamespace("apps")); !kerrors.IsForbidden(err) {
		t.Errorf("acting for tenant team-b, never opened anything: %v; want Forbidden", err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	own := types.NamespacedName{Namespace: deploy.Namespace, Name: join.ServiceAccount}
	if _, err := cluster.RequestToken(ctx, cs, own, 10*time.Minute); err != nil {
		t.Errorf("the manager renewing its own token: %v", err)
	}
	agentSA := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: deploy.Namespace, Name: "placer-agent"}}
	if err := member.Client.Create(ctx, agentSA); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := cluster.RequestToken(ctx, cs, client.ObjectKeyFromObject(agentSA), 10*time.Minute); !kerrors.IsForbidden(err) {
		t.Errorf("the manager asking a token of another ServiceAccount: %v; want Forbidden", err)
	}
}
