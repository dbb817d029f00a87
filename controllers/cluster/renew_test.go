package cluster_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	clusterctrl "github.com/placer-dev/placer/controllers/cluster"
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/join"
	"github.com/placer-dev/placer/internal/testenv"
)

// TestTokenRenewal joins a member with a ten-minute token (the shortest
// TokenRequest gives) and runs the cluster controller as deployed (the
// manager's ServiceAccount, config/management's role and admission
// policies) renewing after 2% of a token's life: the Secret gets a new
// token of the same lifetime, which opens the member, with a TokenRenewed
// Event. A token already expired is not renewed: a CannotRenewToken Event
// says to join again.
func TestTokenRenewal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mgmt, res := joined(ctx, t, "renewed", 10*time.Minute)
	first := secretToken(ctx, t, mgmt.Client, res.Secret)
	// A cluster whose token has expired: a well-formed JWT whose exp is past.
	expired := expiredKubeconfig(t, mgmt.Client, res.Secret)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "expired-kubeconfig", Annotations: map[string]string{cluster.AnnotationRenewToken: "placer-system/placer-manager"}},
		Data: map[string][]byte{"kubeconfig": expired}}
	kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "expired"}, Spec: v1alpha1.KubernetesClusterSpec{ConnectionSecretRef: &v1alpha1.SecretKeySelector{Name: s.Name}}}
	for _, o := range []client.Object{s, kc} {
		if err := mgmt.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	runRenewing(t, mgmt, 0.02)

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: res.Secret.Namespace, Name: res.Secret.Name}}
	testenv.WaitFor(t, watcher(t, mgmt), secret, &corev1.SecretList{}, time.Minute, func(s *corev1.Secret) bool {
		return cluster.KubeconfigToken(s.Data["kubeconfig"]) != first
	})
	renewed := cluster.KubeconfigToken(secret.Data["kubeconfig"])
	times, ok := cluster.ReadTokenTimes(renewed)
	if !ok || times.Lifetime() != 10*time.Minute {
		t.Errorf("the renewed token lasts %s (a JWT: %t), want the first one's 10m", times.Lifetime(), ok)
	}
	cfg, err := cluster.KubeconfigPolicy{AllowLoopback: true}.RESTConfig(secret.Data["kubeconfig"])
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &mcv1alpha1.PodChaperonList{}); err != nil {
		t.Errorf("the renewed token does not open the member: %v", err)
	}
	waitEvent(ctx, t, mgmt, "renewed", "TokenRenewed", "renewed the token of ServiceAccount placer-system/placer-manager")
	waitEvent(ctx, t, mgmt, "expired", "CannotRenewToken", "expired")
	assertNoLeak(t, mgmt, kc, renewed)
}

// joined starts a management cluster as config/management installs it
// and a member, and joins the member under name with a token of ttl.
func joined(ctx context.Context, t *testing.T, name string, ttl time.Duration) (*testenv.Env, *join.Result) {
	t.Helper()
	mgmt, member := testenv.Start(t), testenv.Start(t)
	if err := deploy.ApplyDir(ctx, mgmt.Config, "management"); err != nil {
		t.Fatal(err)
	}
	res, err := join.Join(ctx, join.Options{Name: name, Namespace: "default", Member: member.Config, Management: mgmt.Client, TokenTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return mgmt, res
}

// runRenewing runs the cluster controller as deployed (the manager's
// ServiceAccount, config/management's role and admission policies),
// renewing tokens after the fraction renewal of their life.
func runRenewing(t *testing.T, mgmt *testenv.Env, renewal float64) {
	t.Helper()
	testenv.RunManager(t, mgmt.UserConfig(t, "system:serviceaccount:"+deploy.Namespace+":placer-manager"), func(mgr ctrl.Manager) error {
		if err := shared.IndexWorkloads(mgr); err != nil {
			return err
		}
		_, err := clusterctrl.Setup(mgr, clusterctrl.Options{ProbeInterval: time.Second, HeartbeatGrace: 3 * time.Second, TokenRenewal: renewal,
			// Generous: TestTokenRenewedAcrossExpiry runs beside the whole
			// suite, and a slow probe must not read as a lost member.
			Registry: cluster.Options{ProbeTimeout: 5 * time.Second, Policy: cluster.KubeconfigPolicy{AllowLoopback: true}}})
		return err
	})
}

// TestTokenRenewedAcrossExpiry lets a joined member's first token expire
// for real (ten minutes, the shortest the TokenRequest API gives) while
// the manager renews it halfway: the member refuses the first token once
// it has expired, and the manager, on the renewed one, never loses the
// member (its Ready reason is never Unauthorized; AgentNotRunning, as no
// agent runs here, says the manager is let in). It waits more than ten
// minutes: 'make test' runs it beside the other tests, which skip it, with
// PLACER_LONG_TESTS=1; a plain 'go test' skips it, saying so.
func TestTokenRenewedAcrossExpiry(t *testing.T) {
	if os.Getenv("PLACER_LONG_TESTS") == "" {
		t.Skip("waits more than ten minutes; 'make test' runs it (PLACER_LONG_TESTS=1), beside the other tests")
	}
	const ttl = 10 * time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), ttl+4*time.Minute)
	defer cancel()
	mgmt, res := joined(ctx, t, "lasting", ttl)
	s := &corev1.Secret{}
	if err := mgmt.Client.Get(ctx, res.Secret, s); err != nil {
		t.Fatal(err)
	}
	first := s.Data["kubeconfig"]
	runRenewing(t, mgmt, 0.5)

	// Every reason the cluster's Ready takes, until the first token has
	// expired (the API server allows a minute's leeway past its exp, as
	// go-jose's validation does) and probes (every second) have run on its
	// successor.
	wc := watcher(t, mgmt)
	w, err := wc.Watch(ctx, &v1alpha1.KubernetesClusterList{}, client.InNamespace("default"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	reasons := map[string]int{}
	last := ""
	for deadline := time.After(time.Until(res.Expires) + 90*time.Second); ; {
		select {
		case ev, open := <-w.ResultChan():
			if !open {
				t.Fatal("the watch of the cluster ended")
			}
			if kc, ok := ev.Object.(*v1alpha1.KubernetesCluster); ok && kc.Name == "lasting" {
				if r := string(kc.Status.GetCondition(xpv2.TypeReady).Reason); r != "" && r != last {
					reasons[r]++
					last = r
				}
			}
			continue
		case <-deadline:
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
		break
	}
	if reasons[v1alpha1.ReasonUnauthorized] > 0 || last != v1alpha1.ReasonAgentNotRunning {
		t.Errorf("across the first token's expiry, Ready's reasons were %v, the last %q; want never %s and %s at the end", reasons, last, v1alpha1.ReasonUnauthorized, v1alpha1.ReasonAgentNotRunning)
	}
	if now := secretToken(ctx, t, mgmt.Client, res.Secret); now == cluster.KubeconfigToken(first) {
		t.Error("the Secret still holds the first token")
	}
	cfg, err := cluster.KubeconfigPolicy{AllowLoopback: true}.RESTConfig(first)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &mcv1alpha1.PodChaperonList{}); !kerrors.IsUnauthorized(err) {
		t.Errorf("the first token after its expiry: %v; want Unauthorized (it did not expire: the test shows nothing)", err)
	}
}

func secretToken(ctx context.Context, t *testing.T, c client.Client, key types.NamespacedName) string {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(ctx, key, s); err != nil {
		t.Fatal(err)
	}
	return cluster.KubeconfigToken(s.Data["kubeconfig"])
}

// expiredKubeconfig is the joined Secret's kubeconfig with a token whose
// claims say it expired an hour ago.
func expiredKubeconfig(t *testing.T, c client.Client, key types.NamespacedName) []byte {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(context.Background(), key, s); err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	now := time.Now()
	token := enc([]byte(`{"alg":"RS256"}`)) + "." + enc(fmt.Appendf(nil, `{"iat":%d,"exp":%d}`, now.Add(-2*time.Hour).Unix(), now.Add(-time.Hour).Unix())) + "." + enc([]byte("sig"))
	b, err := cluster.WithToken(s.Data["kubeconfig"], token)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(b, s.Data["kubeconfig"]) {
		t.Fatal("WithToken changed nothing")
	}
	return b
}

// waitEvent waits, with a watch, for an Event of the reason about the
// KubernetesCluster whose message contains part.
func waitEvent(ctx context.Context, t *testing.T, env *testenv.Env, cluster, reason, part string) {
	t.Helper()
	wc := watcher(t, env)
	w, err := wc.Watch(ctx, &corev1.EventList{}, client.InNamespace("default"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	deadline := time.After(time.Minute)
	for {
		select {
		case ev := <-w.ResultChan():
			if e, ok := ev.Object.(*corev1.Event); ok && e.InvolvedObject.Name == cluster && e.Reason == reason && strings.Contains(e.Message, part) {
				return
			}
		case <-deadline:
			t.Fatalf("no %s Event on KubernetesCluster %s containing %q", reason, cluster, part)
		}
	}
}
