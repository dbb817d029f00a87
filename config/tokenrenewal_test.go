package config_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/testenv"
)

// TestTokenRenewalPolicy applies config/management as deployed and acts as
// the manager's ServiceAccount, whose role may update Secrets so that it
// can renew member tokens: it renews an annotated Secret's kubeconfig, and
// is refused, naming the field, any other Secret, a key added, and an
// annotation changed. Another user is not judged by the policy.
func TestTokenRenewalPolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := testenv.Start(t)
	if err := deploy.ApplyDir(ctx, env.Config, "management"); err != nil {
		t.Fatal(err)
	}
	renewable := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "east-kubeconfig",
		Annotations: map[string]string{cluster.AnnotationRenewToken: "placer-system/placer-manager"}}, Data: map[string][]byte{"kubeconfig": []byte("old")}}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "database-password"}, Data: map[string][]byte{"password": []byte("hunter2")}}
	for _, s := range []*corev1.Secret{renewable, other} {
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	manager, err := client.New(env.UserConfig(t, "system:serviceaccount:"+deploy.Namespace+":placer-manager"), client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	update := func(name string, change func(*corev1.Secret)) error {
		s := &corev1.Secret{}
		if err := manager.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, s); err != nil {
			t.Fatal(err)
		}
		change(s)
		return manager.Update(ctx, s)
	}
	// The policy takes effect a moment after it is created: until the
	// refusal comes, try again.
	refused := untilRefused(t, func() error {
		return update("database-password", func(s *corev1.Secret) { s.Data["password"] = []byte("mine now") })
	}, nil)
	if refused == nil || !strings.Contains(refused.Error(), "metadata.annotations") {
		t.Fatalf("the manager updated a Secret not annotated for renewal: %v", refused)
	}
	if err := update("east-kubeconfig", func(s *corev1.Secret) { s.Data["kubeconfig"] = []byte("renewed") }); err != nil {
		t.Errorf("renewing the annotated Secret's kubeconfig: %v", err)
	}
	for what, change := range map[string]func(*corev1.Secret){
		"a key added":           func(s *corev1.Secret) { s.Data["extra"] = []byte("x") },
		"an annotation changed": func(s *corev1.Secret) { s.Annotations[cluster.AnnotationRenewToken] = "kube-system/admin" },
		"a label added":         func(s *corev1.Secret) { s.Labels = map[string]string{"a": "b"} },
	} {
		if err := update("east-kubeconfig", change); err == nil || !strings.Contains(err.Error(), "data: placer-manager may only change") {
			t.Errorf("%s: %v; want a refusal", what, err)
		}
	}
	// Anyone else is not judged by it.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(other), other); err != nil {
		t.Fatal(err)
	}
	other.Data["password"] = []byte("rotated")
	if err := env.Client.Update(ctx, other); err != nil {
		t.Errorf("an admin updating a Secret: %v", err)
	}
}
