package config_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/config"
	"github.com/placer-dev/placer/internal/testenv"
	"github.com/placer-dev/placer/member/agent"
)

// TestMemberRoleIsLeastPrivilege acts as the manager's identity in a real
// member cluster: it manages PodChaperons and Services, and is refused
// Pods, Secrets and Nodes, and writes outside the namespaces opened to it;
// a tenant writes Secrets, ConfigMaps and ServiceAccounts by name only
// where the member opts in to its dependencies.
func agentClient(t *testing.T, member *local.Cluster) client.Client {
	t.Helper()
	c, err := client.New(member.RESTConfig(), client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMemberRoleIsLeastPrivilege(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	member, err := local.Start(ctx, local.Options{Name: "member", NoKwok: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = member.Close() })
	if err := agent.EnsureCRDs(member.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	admin := kubernetes.NewForConfigOrDie(member.RESTConfig())
	for _, ns := range []string{"apps", "closed", "nodeps"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := config.GrantManager(ctx, admin, "placer-manager"); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"apps", "nodeps"} {
		if err := config.OpenNamespace(ctx, admin, "placer-manager", "team-a", ns); err != nil {
			t.Fatal(err)
		}
	}
	// Only apps opts in to the tenant's dependencies, and to its pods'
	// streams.
	if err := config.OpenDependencies(ctx, admin, "team-a", "apps"); err != nil {
		t.Fatal(err)
	}
	if err := config.OpenStreams(ctx, admin, "team-a", "apps"); err != nil {
		t.Fatal(err)
	}
	// The agent's summary, as the agent would write it.
	if err := agentClient(t, member).Create(ctx, &mcv1alpha1.ClusterSummary{ObjectMeta: metav1.ObjectMeta{Name: mcv1alpha1.ClusterSummaryName}, Status: mcv1alpha1.ClusterSummaryStatus{NodeCount: 1}}); err != nil {
		t.Fatal(err)
	}

	kc, err := member.KubeconfigFor("placer-manager")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	// The manager's own identity reads; it writes only as a tenant.
	self, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	as := func(tenant string) client.Client {
		t.Helper()
		tc := rest.CopyConfig(cfg)
		tc.Impersonate = rest.ImpersonationConfig{UserName: mcv1alpha1.TenantUser(tenant)}
		c, err := client.New(tc, client.Options{Scheme: testenv.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := as("team-a")

	ch := &mcv1alpha1.PodChaperon{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "apps"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "pause"}}}}
	if err := c.Create(ctx, ch); err != nil {
		t.Fatalf("the manager's identity cannot create a PodChaperon: %v", err)
	}
	if err := self.List(ctx, &mcv1alpha1.PodChaperonList{}); err != nil {
		t.Errorf("cannot list PodChaperons in every namespace: %v", err)
	}
	sum := &mcv1alpha1.ClusterSummary{}
	if err := self.Get(ctx, client.ObjectKey{Name: mcv1alpha1.ClusterSummaryName}, sum); err != nil || sum.Status.NodeCount != 1 {
		t.Errorf("cannot read the ClusterSummary: %v", err)
	}
	ch.Annotations = map[string]string{mcv1alpha1.AnnotationIsAllowed: "true"}
	if err := c.Update(ctx, ch); err != nil {
		t.Errorf("cannot update a PodChaperon: %v", err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "apps"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	if err := c.Create(ctx, svc); err != nil {
		t.Errorf("cannot create a Service: %v", err)
	}
	if err := c.Delete(ctx, ch); err != nil {
		t.Errorf("cannot delete a PodChaperon: %v", err)
	}
	// Where the namespace opts in, the tenant copies what its pods need,
	// by name.
	for _, o := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "apps"}, StringData: map[string]string{"k": "v"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "apps"}, Data: map[string]string{"k": "v"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "apps"}},
	} {
		kind := fmt.Sprintf("%T", o)
		if err := c.Create(ctx, o); err != nil {
			t.Errorf("cannot create a %s where dependencies are opted in: %v", kind, err)
			continue
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Errorf("cannot get a %s: %v", kind, err)
		}
		o.SetAnnotations(map[string]string{"x": "y"})
		if err := c.Update(ctx, o); err != nil {
			t.Errorf("cannot update a %s: %v", kind, err)
		}
		if err := c.Delete(ctx, o); err != nil {
			t.Errorf("cannot delete a %s: %v", kind, err)
		}
	}

	closed := &mcv1alpha1.PodChaperon{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "closed"}, Spec: ch.Spec}
	refused := map[string]func() error{
		"create a PodChaperon in a namespace not opened": func() error { return c.Create(ctx, closed) },
		"create a Service in a namespace not opened": func() error {
			return c.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "closed"}, Spec: svc.Spec})
		},
		"write the ClusterSummary": func() error { sum.Status.NodeCount = 9; return c.Update(ctx, sum) },
		"create a PodChaperon as the manager itself, even where a tenant may": func() error {
			return self.Create(ctx, &mcv1alpha1.PodChaperon{ObjectMeta: metav1.ObjectMeta{Name: "self", Namespace: "apps"}, Spec: ch.Spec})
		},
		"create a PodChaperon as a tenant the member did not open the namespace to": func() error {
			return as("team-b").Create(ctx, &mcv1alpha1.PodChaperon{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "apps"}, Spec: ch.Spec})
		},
		"impersonate a cluster admin": func() error {
			tc := rest.CopyConfig(cfg)
			tc.Impersonate = rest.ImpersonationConfig{UserName: "admin", Groups: []string{"system:masters"}}
			_, err := kubernetes.NewForConfigOrDie(tc).CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
			return err
		},
		"create a Secret where the namespace is open but not to dependencies": func() error {
			return c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "nodeps"}})
		},
		"create a ConfigMap in a namespace not opened": func() error {
			return c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "closed"}})
		},
		"list a tenant's Secrets, even where its dependencies go": func() error { return c.List(ctx, &corev1.SecretList{}, client.InNamespace("apps")) },
		"create a Secret as a tenant the namespace's dependencies are not opened to": func() error {
			return as("team-b").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "apps"}})
		},
		"get pods":     func() error { _, err := cs.CoreV1().Pods("default").Get(ctx, "x", metav1.GetOptions{}); return err },
		"list pods":    func() error { _, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); return err },
		"get secrets":  func() error { _, err := cs.CoreV1().Secrets("default").Get(ctx, "x", metav1.GetOptions{}); return err },
		"list secrets": func() error { _, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); return err },
		"get nodes":    func() error { _, err := cs.CoreV1().Nodes().Get(ctx, "x", metav1.GetOptions{}); return err },
		"list nodes":   func() error { _, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); return err },
	}
	for what, call := range refused {
		if err := call(); err == nil || !apierrors.IsForbidden(err) {
			t.Errorf("%s: want Forbidden, got %v", what, err)
		}
	}
	streamsRoleIsLeastPrivilege(ctx, t, admin)
}

// streamsRoleIsLeastPrivilege asks the member's authorizer what the
// streams role (config.OpenStreams, team-a in apps) lets a tenant do:
// kubectl logs, exec and attach of pods there, and nothing else.
func streamsRoleIsLeastPrivilege(ctx context.Context, t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	may := func(tenant, ns, verb, resource, sub string) bool {
		t.Helper()
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               mcv1alpha1.TenantUser(tenant),
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: resource, Subresource: sub, Name: "p"},
		}}
		got, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Status.Allowed
	}
	for _, c := range []struct {
		tenant, ns, verb, resource, sub string
		want                            bool
	}{
		{"team-a", "apps", "get", "pods", "log", true},
		{"team-a", "apps", "create", "pods", "exec", true},
		{"team-a", "apps", "get", "pods", "exec", true},
		{"team-a", "apps", "create", "pods", "attach", true},
		{"team-a", "apps", "get", "pods", "", false},
		{"team-a", "apps", "list", "pods", "", false},
		{"team-a", "apps", "delete", "pods", "", false},
		{"team-a", "apps", "create", "pods", "portforward", false},
		{"team-a", "apps", "create", "pods", "eviction", false},
		{"team-a", "apps", "patch", "pods", "status", false},
		{"team-a", "apps", "get", "nodes", "proxy", false},
		{"team-a", "nodeps", "get", "pods", "log", false},
		{"team-a", "closed", "create", "pods", "exec", false},
		{"team-b", "apps", "get", "pods", "log", false},
	} {
		if got := may(c.tenant, c.ns, c.verb, c.resource, c.sub); got != c.want {
			t.Errorf("may tenant %s %s %s/%s in %s: %v, want %v", c.tenant, c.verb, c.resource, c.sub, c.ns, got, c.want)
		}
	}
}
