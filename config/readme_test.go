package config_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/testenv"
)

// installLine is an install command of the README: kubectl [--context X]
// apply [--server-side] -k config/DIR.
var installLine = regexp.MustCompile(`^kubectl (?:--context \S+ )?apply (--server-side )?-k (config/\S+)`)

// lastAppliedLimit is the size limit of all annotations of an object, which
// client-side 'kubectl apply' fills with the whole object.
const lastAppliedLimit = 262144

// TestREADMEInstall runs the README's install commands against a fresh
// cluster, with the machine's kubectl when there is one and the same
// server-side apply through client-go otherwise, and checks every object
// of both kustomizations is there afterwards. Each object would also fit
// client-side apply's annotation.
func TestREADMEInstall(t *testing.T) {
	root := testenv.RepoRoot(t)
	f, err := os.Open(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type install struct{ line, dir string }
	var installs []install
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := installLine.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil {
			if m[1] == "" {
				t.Errorf("README: %q is a client-side apply; say --server-side", sc.Text())
			}
			installs = append(installs, install{line: sc.Text(), dir: m[2]})
		}
	}
	if len(installs) < 2 {
		t.Fatalf("README has %d install commands (kubectl apply -k config/…), want the management and the member one", len(installs))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, cl := freshCluster(ctx, t, "fresh")
	kubectl, _ := exec.LookPath("kubectl")
	for _, in := range installs {
		objs, err := deploy.Render(strings.TrimPrefix(in.dir, "config/"))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if b, _ := json.Marshal(o.Object); len(b) >= lastAppliedLimit {
				t.Errorf("%s %s is %d bytes: too large for client-side apply's annotation (%d)", o.GetKind(), o.GetName(), len(b), lastAppliedLimit)
			}
		}
		if kubectl != "" {
			cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", c.KubeconfigPath(), "apply", "--server-side", "-k", filepath.Join(root, in.dir))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", in.line, err, out)
			}
			t.Logf("%s (with %s):\n%s", in.line, kubectl, out)
		} else if err := deploy.ApplyAll(ctx, c.RESTConfig(), objs); err != nil {
			t.Fatalf("%s (server-side apply through client-go; no kubectl here): %v", in.line, err)
		}
		for _, o := range objs {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(o.GroupVersionKind())
			if err := cl.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
				t.Errorf("%s: %s %s is not there: %v", in.line, o.GetKind(), o.GetName(), err)
			}
		}
	}
	t.Run("tenant roles", func(t *testing.T) { tenantRoles(ctx, t, c.RESTConfig()) })
}

// tenantRoles: installed, placer's kinds are in the built-in namespace
// roles (ClusterRole aggregation, by the cluster's own
// kube-controller-manager), as the API server's authorizer answers for a
// user bound to each in one namespace (SubjectAccessReview, what kubectl
// auth can-i asks).
func tenantRoles(ctx context.Context, t *testing.T, cfg *rest.Config) {
	cs := kubernetes.NewForConfigOrDie(cfg)
	wc := testenv.Watcher(t, cfg)
	for _, role := range []string{"view", "edit", "admin"} {
		// Folded in by the aggregation controller, soon after install.
		testenv.WaitFor(t, wc, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}}, &rbacv1.ClusterRoleList{}, time.Minute, func(cr *rbacv1.ClusterRole) bool {
			return slices.ContainsFunc(cr.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.APIGroups, "compute.placer.dev") })
		})
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "team-" + role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: role + "-user"}}}
		if _, err := cs.RbacV1().RoleBindings("default").Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		user, verb, resource, namespace string
		want                            bool
	}{
		{"view-user", "list", "workloads", "default", true},
		{"view-user", "get", "kubernetesclusters", "default", true},
		{"view-user", "create", "workloads", "default", false},
		{"edit-user", "create", "workloads", "default", true},
		{"edit-user", "delete", "workloads", "default", true},
		{"edit-user", "create", "workloads", "kube-system", false},
		{"edit-user", "update", "workloads/status", "default", false},
		{"edit-user", "create", "clusterbindings", "default", false},
		{"admin-user", "create", "clusterbindings", "default", true},
		{"admin-user", "create", "kubernetesclusters", "default", true},
		{"admin-user", "bind", "kubernetesclusters", "default", false},
		{"admin-user", "update", "workloads/status", "default", false},
	}
	for _, tc := range cases {
		resource, sub, _ := strings.Cut(tc.resource, "/")
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: tc.user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: tc.namespace, Verb: tc.verb, Group: "compute.placer.dev", Resource: resource, Subresource: sub}}}
		got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != tc.want {
			t.Errorf("%s may %s %s in %s: %v, want %v", tc.user, tc.verb, tc.resource, tc.namespace, got.Status.Allowed, tc.want)
		}
	}
}
