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
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/release"
	"github.com/placer-dev/placer/internal/testenv"
)

// The README's install commands, one pattern per way to install:
// kubectl [--context X] apply [--server-side] -k config/DIR (kustomize),
// ... -f placer-SIDE.yaml (a release's manifests), and helm [--kube-context
// X] install NAME CHART --namespace NS --create-namespace (a chart folder
// or a release's package).
var (
	kustomizeLine = regexp.MustCompile(`^kubectl (?:--context \S+ )?apply (--server-side )?-k (config/\S+)`)
	manifestsLine = regexp.MustCompile(`^kubectl (?:--context \S+ )?apply (--server-side )?-f placer-(management|member)\.yaml`)
	helmLine      = regexp.MustCompile(`^helm (?:--kube-context \S+ )?install \S+ (\S+) --namespace (\S+) --create-namespace`)
	chartPackage  = regexp.MustCompile(`^(.+)-\d+\.\d+\.\d+\S*\.tgz$`)
)

// lastAppliedLimit is the size limit of all annotations of an object, which
// client-side 'kubectl apply' fills with the whole object.
const lastAppliedLimit = 262144

// readmeInstall is one install command of the README and what it applies.
type readmeInstall struct {
	line string
	objs []*unstructured.Unstructured
	// kubectl runs it with the machine's kubectl, when there is one.
	kubectl func(kubeconfig string) []string
	// namespace the command creates first (helm --create-namespace).
	namespace string
}

// TestREADMEInstall follows the README's install commands, each way in a
// fresh cluster of its own, with the machine's kubectl when there is one
// and the same server-side apply through client-go otherwise (Helm's
// rendering with its own library; an install creates every object, so each
// must not exist yet), and checks every object is there afterwards. Each
// object would also fit client-side apply's annotation.
func TestREADMEInstall(t *testing.T) {
	root := testenv.RepoRoot(t)
	f, err := os.Open(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ways := map[string][]readmeInstall{}
	// The image a release would pin; any digest does for the API server.
	ref := "ghcr.io/placer-dev/placer:v0.0.0@sha256:" + strings.Repeat("0", 64)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := kustomizeLine.FindStringSubmatch(line); m != nil {
			if m[1] == "" {
				t.Errorf("README: %q is a client-side apply; say --server-side", line)
			}
			objs, err := deploy.Render(strings.TrimPrefix(m[2], "config/"))
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(root, m[2])
			ways["kustomize"] = append(ways["kustomize"], readmeInstall{line: line, objs: objs,
				kubectl: func(kubeconfig string) []string {
					return []string{"--kubeconfig", kubeconfig, "apply", "--server-side", "-k", dir}
				}})
		}
		if m := manifestsLine.FindStringSubmatch(line); m != nil {
			if m[1] == "" {
				t.Errorf("README: %q is a client-side apply; say --server-side", line)
			}
			b, err := release.Manifests(m[2], ref)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := deploy.DecodeYAML(line, b)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "placer-"+m[2]+".yaml")
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
			ways["release"] = append(ways["release"], readmeInstall{line: line, objs: objs,
				kubectl: func(kubeconfig string) []string {
					return []string{"--kubeconfig", kubeconfig, "apply", "--server-side", "-f", file}
				}})
		}
		if m := helmLine.FindStringSubmatch(line); m != nil {
			chart := strings.TrimPrefix(m[1], "charts/")
			if p := chartPackage.FindStringSubmatch(chart); p != nil {
				chart = p[1] // a release's package of charts/<name>
			}
			objs, err := deploy.RenderChart(filepath.Join(root, "charts", chart), m[2], nil)
			if err != nil {
				t.Fatalf("README: %q: %v", line, err)
			}
			ways["helm"] = append(ways["helm"], readmeInstall{line: line, objs: objs, namespace: m[2]})
		}
	}
	for _, way := range []string{"kustomize", "release", "helm"} {
		if len(ways[way]) < 2 {
			t.Errorf("README has %d %s install commands, want the management and the member one", len(ways[way]), way)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	kubectl, _ := exec.LookPath("kubectl")
	for _, way := range []string{"kustomize", "release", "helm"} {
		t.Run(way, func(t *testing.T) {
			c, cl := freshCluster(ctx, t, "fresh-"+way)
			// The README installs each side in a cluster of its own; here
			// they share one, where what an earlier line made exists.
			earlier := map[string]bool{}
			for _, in := range ways[way] {
				for _, o := range in.objs {
					if b, _ := json.Marshal(o.Object); len(b) >= lastAppliedLimit {
						t.Errorf("%s %s is %d bytes: too large for client-side apply's annotation (%d)", o.GetKind(), o.GetName(), len(b), lastAppliedLimit)
					}
				}
				if in.namespace != "" {
					if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: in.namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
						t.Fatal(err)
					}
					for _, o := range in.objs {
						if earlier[key(o)] {
							continue
						}
						if err := cl.Create(ctx, o.DeepCopy(), client.DryRunAll, client.FieldValidation("Strict")); err != nil {
							t.Errorf("%s: the install would fail on %s %s: %v", in.line, o.GetKind(), o.GetName(), err)
						}
					}
				}
				if kubectl != "" && in.kubectl != nil {
					out, err := exec.CommandContext(ctx, kubectl, in.kubectl(c.KubeconfigPath())...).CombinedOutput()
					if err != nil {
						t.Fatalf("%s: %v\n%s", in.line, err, out)
					}
					t.Logf("%s (with %s):\n%s", in.line, kubectl, out)
				} else if err := deploy.ApplyAll(ctx, c.RESTConfig(), in.objs); err != nil {
					t.Fatalf("%s (server-side apply through client-go): %v", in.line, err)
				}
				for _, o := range in.objs {
					earlier[key(o)] = true
					got := &unstructured.Unstructured{}
					got.SetGroupVersionKind(o.GroupVersionKind())
					if err := cl.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
						t.Errorf("%s: %s %s is not there: %v", in.line, o.GetKind(), o.GetName(), err)
					}
				}
			}
			if way == "kustomize" {
				t.Run("tenant roles", func(t *testing.T) { tenantRoles(ctx, t, c.RESTConfig()) })
			}
		})
	}
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
