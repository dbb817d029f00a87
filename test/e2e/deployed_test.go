package e2e

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/testenv"
)

// Every component runs as config/ deploys it: the objects of a
// kustomization are applied server-side (RBAC, ServiceAccounts, CRDs), and
// each Deployment's container runs as a process with a token of its
// ServiceAccount and the Deployment's own arguments; only what a process
// outside a pod must say differently is changed (its kubeconfig, free
// loopback ports, the Lease namespace a pod would infer, and the test's
// short intervals). Nothing of placer runs as a cluster admin.

// install applies config/<dir> to a cluster and returns its Deployments,
// each with a kubeconfig of its ServiceAccount.
func install(t *testing.T, cfg *rest.Config, dir string) map[string]deploy.Component {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	comps, err := deploy.Install(ctx, cfg, dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return comps
}

// runMemberComponents runs the agent and the candidate scheduler of
// config/member in a target cluster, as their ServiceAccounts, and returns
// the address the candidate scheduler serves on (its probes and /metrics).
func runMemberComponents(t *testing.T, target *local.Cluster) string {
	t.Helper()
	return runComponents(t, target, install(t, target.RESTConfig(), "member"))
}

// runComponents runs the agent and the candidate scheduler of the member
// side's Deployments comps, as runMemberComponents does.
func runComponents(t *testing.T, target *local.Cluster, comps map[string]deploy.Component) string {
	t.Helper()
	agent, sched := comps["placer-agent"], comps["placer-candidate-scheduler"]
	if err := target.RunRestarting("agent", placerBinary, agent.OutsidePod(
		"--health-probe-bind-address="+freeAddr(t), "--metrics-bind-address="+freeAddr(t),
		"--leader-election-namespace="+agent.Namespace,
		// Heartbeats every second; the manager's grace is 5 s. A
		// restarted agent's successor waits out the Lease: short here.
		"--heartbeat-interval=1s", "--leader-election-lease-duration=3s", "--leader-election-renew-deadline=2s", "--leader-election-retry-period=500ms")...); err != nil {
		t.Fatal(err)
	}
	serving := freeAddr(t)
	if err := target.RunRestarting("candidate-scheduler", placerBinary, sched.OutsidePod(
		"--bind-address=127.0.0.1", "--secure-port="+strings.TrimPrefix(serving, "127.0.0.1:"),
		// In a pod, kube-scheduler authenticates and authorizes /metrics
		// callers through its in-cluster config; outside, through this.
		"--authentication-kubeconfig="+sched.KubeconfigPath, "--authorization-kubeconfig="+sched.KubeconfigPath,
		"--leader-election-lease-duration=3s", "--leader-election-renew-deadline=2s", "--leader-election-retry-period=500ms")...); err != nil {
		t.Fatal(err)
	}
	return serving
}

// managerArgs are the arguments of config/management's manager Deployment
// for a process.
func managerArgs(c deploy.Component, ports managerPorts) []string {
	return c.OutsidePod(
		"--health-probe-bind-address="+ports.health, "--metrics-bind-address="+ports.metrics,
		"--leader-election-namespace="+c.Namespace,
		// The API server calls the webhook at this address
		// (deploy.WebhooksAt), not through its Service.
		"--webhook-bind-address="+ports.webhook, "--webhook-host=127.0.0.1",
		// The virtual nodes name this manager's loopback address.
		"--kubelet-bind-address="+ports.kubelet, "--kubelet-address=127.0.0.1",
		// A killed manager's successor waits out the Lease: short here.
		"--leader-election-lease-duration=3s", "--leader-election-renew-deadline=2s", "--leader-election-retry-period=500ms",
		// Local members listen on loopback, which a deployed manager refuses.
		"--allow-loopback-clusters",
		"--cluster-probe-interval=2s", "--cluster-probe-timeout=1s", "--handshake-timeout=30s",
		"--cluster-heartbeat-grace=5s",
		// A WhenPreferred Workload moves back 5 s after its cluster can
		// take it again (5 min in config/).
		"--rebalance-after=5s")
}

// httpsGet returns the status code and body of a GET (http or https) with
// a bearer token ("" sends none), trusting a self-signed certificate.
func httpsGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the metrics server's certificate is self-signed.
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// scraperToken returns a token of a ServiceAccount of the management
// cluster that holds (or not) the placer-metrics-reader ClusterRole of
// config/rbac/metrics.
func scraperToken(t *testing.T, env *testenv.Env, reader bool) string {
	t.Helper()
	return scraperTokenIn(t, env.Client, env.Config, reader)
}

// scraperTokenIn is scraperToken in the cluster of cl and cfg.
func scraperTokenIn(t *testing.T, cl client.Client, cfg *rest.Config, reader bool) string {
	t.Helper()
	ctx := context.Background()
	name := "scraper"
	if !reader {
		name = "stranger"
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	if err := cl.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if reader {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "scraper-placer-metrics-reader"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "placer-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: name}},
		}
		if err := cl.Create(ctx, crb); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	tr, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// TestAgentWaitsForItsCRDs: the agent holds no right on
// CustomResourceDefinitions and installs none; started before config/
// member's CRDs are applied (a GitOps tool's order), it waits for them
// rather than crash-looping, and runs once they are served.
func TestAgentWaitsForItsCRDs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	member, err := local.Start(ctx, local.Options{Name: "crdless", NoKwok: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = member.Close() })
	objs, err := deploy.Render("member")
	if err != nil {
		t.Fatal(err)
	}
	var crds, rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
		} else {
			rest = append(rest, o)
		}
	}
	comps, err := deploy.InstallObjects(ctx, member.RESTConfig(), rest, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := comps["placer-agent"]
	p, err := local.Spawn(t.TempDir(), "agent", placerBinary, a.OutsidePod(
		"--health-probe-bind-address=0", "--metrics-bind-address=0", "--leader-election-namespace="+a.Namespace, "--candidate-scheduler-lease=")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the agent's log ends:\n%s", p.LogTail(30))
		}
		p.Stop(10 * time.Second)
	})

	// It says what it waits for, and keeps running: six times over (a
	// backoff that gives up would have ended it by then).
	deadline := time.After(time.Minute)
	for strings.Count(p.LogTail(200), "waiting for placer's member CRDs") < 6 {
		select {
		case <-p.Done():
			t.Fatalf("the agent exited without its CRDs; its log ends:\n%s", p.LogTail(20))
		case <-deadline:
			t.Fatalf("the agent does not say it waits for its CRDs; its log ends:\n%s", p.LogTail(20))
		case <-time.After(200 * time.Millisecond):
		}
	}
	ext := apiextensionsclient.NewForConfigOrDie(member.RESTConfig())
	for _, crd := range crds {
		if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("CRD %s: %v; the agent must not install it", crd.GetName(), err)
		}
	}

	// Applied, the CRDs are found and the agent publishes its summary.
	if err := deploy.ApplyAll(ctx, member.RESTConfig(), crds); err != nil {
		t.Fatal(err)
	}
	scheme := testenv.Scheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	wc, err := client.NewWithWatch(member.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		testenv.WaitFor(t, wc, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crd.GetName()}}, &apiextensionsv1.CustomResourceDefinitionList{}, time.Minute, func(c *apiextensionsv1.CustomResourceDefinition) bool {
			return slices.ContainsFunc(c.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
				return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
			})
		})
	}
	wc = testenv.Watcher(t, member.RESTConfig()) // its mapper now knows the kinds
	// A node (an object only: nothing runs here), which the summary counts.
	if err := wc.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-0"}}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, wc, &mcv1alpha1.ClusterSummary{ObjectMeta: metav1.ObjectMeta{Name: mcv1alpha1.ClusterSummaryName}}, &mcv1alpha1.ClusterSummaryList{}, time.Minute, func(cs *mcv1alpha1.ClusterSummary) bool { return cs.Status.NodeCount == 1 })
	select {
	case <-p.Done():
		t.Fatalf("the agent exited; its log ends:\n%s", p.LogTail(20))
	default:
	}
}
