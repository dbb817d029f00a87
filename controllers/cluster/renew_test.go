package cluster_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	mgmt, member := testenv.Start(t), testenv.Start(t)
	if err := deploy.ApplyDir(ctx, mgmt.Config, "management"); err != nil {
		t.Fatal(err)
	}
	res, err := join.Join(ctx, join.Options{Name: "renewed", Namespace: "default", Member: member.Config, Management: mgmt.Client, TokenTTL: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
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

	testenv.RunManager(t, mgmt.UserConfig(t, "system:serviceaccount:"+deploy.Namespace+":placer-manager"), func(mgr ctrl.Manager) error {
		if err := shared.IndexWorkloads(mgr); err != nil {
			return err
		}
		_, err := clusterctrl.Setup(mgr, clusterctrl.Options{ProbeInterval: time.Second, HeartbeatGrace: 3 * time.Second, TokenRenewal: 0.02,
			Registry: cluster.Options{ProbeTimeout: time.Second, Policy: cluster.KubeconfigPolicy{AllowLoopback: true}}})
		return err
	})

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
