package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/config"
	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/skew"
	"github.com/placer-dev/placer/internal/testenv"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// readmeCommands returns the README's shell lines that start with prefix,
// continuation lines joined and comments dropped, split into words: the
// commands a new user copies.
func readmeCommands(t *testing.T, prefix string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	var line string
	inShell := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		text := sc.Text()
		if strings.HasPrefix(text, "```") {
			inShell = text == "```sh"
			continue
		}
		if !inShell {
			continue
		}
		line += text
		if strings.HasSuffix(line, `\`) {
			line = strings.TrimSuffix(line, `\`) + " "
			continue
		}
		if cmd, _, _ := strings.Cut(line, " #"); strings.HasPrefix(cmd, prefix) {
			out = append(out, strings.Fields(cmd))
		}
		line = ""
	}
	if len(out) == 0 {
		t.Fatalf("the README has no command %q", prefix)
	}
	return out
}

// kubeconfigFile writes a kubeconfig with a context of each name (an
// admin's configuration of a cluster, inline) and returns its path.
func kubeconfigFile(t *testing.T, contexts map[string]*rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	for name, cfg := range contexts {
		kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
		kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
		kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// placerCommand runs the placer binary as a user runs it, with a
// kubeconfig, and returns what it printed.
func placerCommand(kubeconfig string, args ...string) (string, error) {
	cmd := exec.Command(placerBinary, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// objectsOf names every object of a cluster ("resource.group
// namespace/name"), Events left out: what a cluster holds, to compare
// before and after.
func objectsOf(t *testing.T, cfg *rest.Config) map[string]bool {
	t.Helper()
	lists, err := discovery.NewDiscoveryClientForConfigOrDie(cfg).ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	dc := dynamic.NewForConfigOrDie(cfg)
	out := map[string]bool{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if !slices.Contains(r.Verbs, "list") || r.Name == "events" {
				continue
			}
			objs, err := dc.Resource(gv.WithResource(r.Name)).List(context.Background(), metav1.ListOptions{})
			if kerrors.IsNotFound(err) {
				// Gone since discovery (a CRD just deleted): holds nothing.
				continue
			}
			if err != nil {
				t.Fatalf("list %s: %v", r.Name, err)
			}
			for _, o := range objs.Items {
				kind := r.Name
				if gv.Group != "" {
					kind += "." + gv.Group
				}
				out[kind+" "+o.GetNamespace()+"/"+o.GetName()] = true
			}
		}
	}
	return out
}

// testJoin: a fresh member joined with the README's 'placer join', run as
// a new user runs it, runs a Workload; the README's 'placer unjoin'
// drains it and, with --uninstall, leaves nothing of placer in the member
// (run within TestHandshake, whose manager it uses).
func testJoin(t *testing.T, env *testenv.Env, wc client.WithWatch, other *member, running func(*member, *v1alpha1.Workload) int) {
	ctx := context.Background()
	const version = "v1.37.2"
	target := testenv.StartCluster(t, local.Options{Name: "east", KubernetesVersion: version}, local.Node{Name: "east-0", CPU: "4", Memory: "8Gi"})
	before := objectsOf(t, target.RESTConfig())
	// The README: the cluster's namespace is labelled for members at
	// private addresses.
	platform := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "platform", Labels: map[string]string{v1alpha1.LabelPrivateClusters: "true"}}}
	if err := env.Client.Create(ctx, platform); err != nil {
		t.Fatal(err)
	}
	kubeconfig := kubeconfigFile(t, map[string]*rest.Config{"management": env.Config, "east": target.RESTConfig()})
	joins, unjoins := readmeCommands(t, "placer join "), readmeCommands(t, "placer unjoin ")
	if len(joins) != 1 || len(unjoins) != 1 {
		t.Fatalf("the README has %d join and %d unjoin commands, want one of each", len(joins), len(unjoins))
	}
	out, err := placerCommand(kubeconfig, joins[0][1:]...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(joins[0], " "), err, out)
	}
	if !strings.Contains(out, "KubernetesCluster platform/east joined") {
		t.Errorf("placer join printed %q", out)
	}

	// The member side runs as join installed it.
	comps, err := deploy.Installed(ctx, target.RESTConfig(), deploy.Namespace, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runComponents(t, target.Cluster, comps)
	kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: platform.Name, Name: "east"}}
	testenv.WaitFor(t, wc, kc, &v1alpha1.KubernetesClusterList{}, timeout, func(kc *v1alpha1.KubernetesCluster) bool {
		return kc.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue && kc.Status.ReadyNodeCount == 1
	})
	if kc.Status.Version != version || kc.Spec.Provider != "aws" || kc.Labels["tier"] != "production" {
		t.Errorf("the joined cluster: version %q, provider %q, labels %v", kc.Status.Version, kc.Spec.Provider, kc.Labels)
	}

	// A Workload of the cluster's namespace runs there, in the member
	// namespace join opened to it.
	w := st.Workload("joined", st.Replicas(2), st.Requests("100m", "64Mi"), st.PreferredClusterAffinity(100, st.Term(st.Expr("tier", "In", "production"))))
	w.Namespace, w.UID, w.Generation, w.Spec.TargetNamespace = platform.Name, "", 0, "default"
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
		return w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
	})
	east := &member{name: "east", target: target, client: testenv.Watcher(t, target.RESTConfig())}
	if w.Status.ClusterRef == nil || w.Status.ClusterRef.Name != "east" || running(east, w) != 2 {
		t.Fatalf("placed on %v with %d pods running in east's namespace default; want east and 2", w.Status.ClusterRef, running(east, w))
	}

	// unjoin drains first: the Workload moves to another cluster the
	// platform team may use (b, offered to it now), make-before-break,
	// and leaves the member before the manager's identity does.
	offerTo(t, env.Client, other, platform.Name)
	out, err = placerCommand(kubeconfig, append(unjoins[0][1:], "--uninstall")...)
	if err != nil {
		t.Fatalf("%s --uninstall: %v\n%s", strings.Join(unjoins[0], " "), err, out)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	if w.Status.ClusterRef == nil || w.Status.ClusterRef.Name != other.name || running(other, w) != 2 {
		t.Errorf("after unjoin the Workload is placed on %v with %d pods running in %s; want %s and 2", w.Status.ClusterRef, running(other, w), other.name, other.name)
	}
	// The member side's pods go with its Deployments.
	for _, name := range []string{"agent", "candidate-scheduler"} {
		if err := target.Stop(name); err != nil {
			t.Fatal(err)
		}
	}
	waitUninstalled(t, target.RESTConfig())
	leftBehind(t, before, objectsOf(t, target.RESTConfig()))
	if err := env.Client.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
}

// offerTo lets a tenant's Workloads use a member of namespace default, as
// the README's tenancy says: the cluster's owner offers it
// (spec.namespaceSelector), the tenant binds it (a ClusterBinding), and the
// member opens its namespace default to the tenant. The management side
// is taken back when the test ends; the member's namespace stays open to
// the tenant, which has no other Workload.
func offerTo(t *testing.T, c client.Client, m *member, tenant string) {
	t.Helper()
	ctx := context.Background()
	if err := config.OpenNamespace(ctx, m.target.Clientset, "placer-manager", tenant, "default"); err != nil {
		t.Fatal(err)
	}
	kc := &v1alpha1.KubernetesCluster{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: m.name}, kc); err != nil {
		t.Fatal(err)
	}
	was := kc.Spec.NamespaceSelector
	kc.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: tenant}}
	if err := c.Update(ctx, kc); err != nil {
		t.Fatal(err)
	}
	cb := &v1alpha1.ClusterBinding{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "default"}, Spec: v1alpha1.ClusterBindingSpec{ClusterNamespace: "default"}}
	if err := c.Create(ctx, cb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Delete(ctx, cb); err != nil {
			t.Error(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(kc), kc); err != nil {
			t.Fatal(err)
		}
		kc.Spec.NamespaceSelector = was
		if err := c.Update(ctx, kc); err != nil {
			t.Error(err)
		}
	})
}

// waitUninstalled waits until what 'unjoin --uninstall' deleted is gone:
// the member side's namespace and CRDs, which their controllers empty
// first.
func waitUninstalled(t *testing.T, cfg *rest.Config) {
	t.Helper()
	wc, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitForDeletion(t, wc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: deploy.Namespace}}, &corev1.NamespaceList{}, timeout)
	objs, err := deploy.Render("member")
	if err != nil {
		t.Fatal(err)
	}
	waitCRDsGone(t, wc, objs)
}

// waitCRDsGone waits until every CRD among objs is deleted.
func waitCRDsGone(t *testing.T, wc client.WithWatch, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(o.GroupVersionKind().GroupVersion().WithKind("CustomResourceDefinitionList"))
			testenv.WaitForDeletion(t, wc, o, list, timeout)
		}
	}
}

// leftBehind fails for every object the member has after unjoin that it
// had not before join, but the namespace join created for an opening
// (README: the namespaces stay, they may hold the admin's objects), what
// Kubernetes puts in every namespace, and what the control plane keeps on
// its own whenever it likes: its Leases (the nodes' heartbeats, leader
// elections, API server identities) and the APIServices it registers for
// CRDs' groups and removes after them.
func leftBehind(t *testing.T, before, after map[string]bool) {
	t.Helper()
	var left []string
	for o := range after {
		switch {
		case before[o], o == "namespaces /apps", strings.HasPrefix(o, "serviceaccounts ") && strings.HasSuffix(o, "/default"),
			strings.HasPrefix(o, "configmaps ") && strings.HasSuffix(o, "/kube-root-ca.crt"),
			strings.HasPrefix(o, "leases.coordination.k8s.io kube-node-lease/"), strings.HasPrefix(o, "leases.coordination.k8s.io kube-system/"),
			strings.HasPrefix(o, "apiservices.apiregistration.k8s.io "):
		default:
			left = append(left, o)
		}
	}
	slices.Sort(left)
	if len(left) > 0 {
		t.Errorf("unjoin --uninstall left behind in the member:\n%s", strings.Join(left, "\n"))
	}
}

// testUnsupported: a member of a version no candidate scheduler may run
// against is refused by 'placer join', which writes nothing in it, and by
// the manager, with a condition naming both versions (run within
// TestHandshake).
func testUnsupported(t *testing.T, env *testenv.Env, wc client.WithWatch) {
	ctx := context.Background()
	version := local.UnsupportedKubernetesVersion
	target := testenv.StartCluster(t, local.Options{Name: "old", KubernetesVersion: version, NoKwok: true})
	kubeconfig := kubeconfigFile(t, map[string]*rest.Config{"management": env.Config, "old": target.RESTConfig()})
	out, err := placerCommand(kubeconfig, "join", "default/old", "--context", "management", "--member-context", "old", "--install", "--open", "default")
	if err == nil || !strings.Contains(out, version) || !strings.Contains(out, skew.CandidateSchedulerVersion) {
		t.Errorf("placer join of a %s member: %v\n%s\nwant a refusal naming %s and placer's %s", version, err, out, version, skew.CandidateSchedulerVersion)
	}
	if _, err := target.Clientset.CoreV1().Namespaces().Get(ctx, deploy.Namespace, metav1.GetOptions{}); !kerrors.IsNotFound(err) {
		t.Errorf("namespace %s in the refused member: %v; want none", deploy.Namespace, err)
	}

	// Registered by hand, the manager refuses it.
	register(t, env.Client, &member{name: "old", target: target}, nil, "default")
	kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "old"}}
	testenv.WaitFor(t, wc, kc, &v1alpha1.KubernetesClusterList{}, timeout, func(kc *v1alpha1.KubernetesCluster) bool {
		return kc.Status.GetCondition(xpv2.TypeReady).Reason == v1alpha1.ReasonUnsupportedVersion
	})
	if msg := kc.Status.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, version) || !strings.Contains(msg, skew.CandidateSchedulerVersion) {
		t.Errorf("Ready's message %q names not both %s and %s", msg, version, skew.CandidateSchedulerVersion)
	}
	for _, o := range []client.Object{kc, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "old"}}} {
		if err := env.Client.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	testenv.WaitForDeletion(t, wc, kc, &v1alpha1.KubernetesClusterList{}, timeout)
}
