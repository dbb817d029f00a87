package e2e

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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
// config/member in a target cluster, as their ServiceAccounts.
func runMemberComponents(t *testing.T, target *local.Cluster) {
	t.Helper()
	comps := install(t, target.RESTConfig(), "member")
	agent, sched := comps["placer-agent"], comps["placer-candidate-scheduler"]
	if err := target.RunRestarting("agent", placerBinary, agent.OutsidePod(
		"--health-probe-bind-address="+freeAddr(t), "--metrics-bind-address="+freeAddr(t),
		"--leader-election-namespace="+agent.Namespace,
		// Heartbeats every second; the manager's grace is 5 s. A
		// restarted agent's successor waits out the Lease: short here.
		"--heartbeat-interval=1s", "--leader-election-lease-duration=3s", "--leader-election-renew-deadline=2s", "--leader-election-retry-period=500ms")...); err != nil {
		t.Fatal(err)
	}
	if err := target.RunRestarting("candidate-scheduler", placerBinary, sched.OutsidePod(
		"--leader-election-lease-duration=3s", "--leader-election-renew-deadline=2s", "--leader-election-retry-period=500ms")...); err != nil {
		t.Fatal(err)
	}
}

// managerArgs are the arguments of config/management's manager Deployment
// for a process.
func managerArgs(c deploy.Component, ports managerPorts) []string {
	return c.OutsidePod(
		"--health-probe-bind-address="+ports.health, "--metrics-bind-address="+ports.metrics,
		"--leader-election-namespace="+c.Namespace,
		// A killed manager's successor waits out the Lease: short here.
		"--leader-election-lease-duration=3s", "--leader-election-renew-deadline=2s", "--leader-election-retry-period=500ms",
		// Local members listen on loopback, which a deployed manager refuses.
		"--allow-loopback-clusters",
		"--cluster-probe-interval=2s", "--cluster-probe-timeout=1s", "--handshake-timeout=30s",
		"--cluster-heartbeat-grace=5s")
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

// scraperToken returns a token of a ServiceAccount that holds (or not) the
// placer-metrics-reader ClusterRole of config/rbac/metrics.
func scraperToken(t *testing.T, env *testenv.Env, reader bool) string {
	t.Helper()
	ctx := context.Background()
	name := "scraper"
	if !reader {
		name = "stranger"
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	if err := env.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if reader {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "scraper-placer-metrics-reader"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "placer-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: name}},
		}
		if err := env.Client.Create(ctx, crb); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	tr, err := kubernetes.NewForConfigOrDie(env.Config).CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}
