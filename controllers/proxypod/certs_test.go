package proxypod

import (
	"context"
	"crypto/tls"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/placer-dev/placer/apis"
)

// TestCerts: the certificate is made once and served, its CA written into
// the webhook configuration; a second replica reads the same; the key that
// signs manifests survives a renewal, and a manifest changed after it was
// signed does not verify.
func TestCerts(t *testing.T) {
	ctx := context.Background()
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "placer-proxy-pods"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "proxy-pods.placer.dev"}}}
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(mwc).Build()
	newCerts := func() *Certs {
		return &Certs{Client: c, Namespace: "placer-system", Secret: "placer-webhook-tls", Configuration: mwc.Name,
			Hosts: append(ServiceHosts("placer-webhook", "placer-system"), "127.0.0.1")}
	}
	a, b := newCerts(), newCerts()
	for _, r := range []*Certs{a, b} {
		if err := r.Ensure(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ca, cb := mustCert(t, a), mustCert(t, b)
	if string(ca.Certificate[0]) != string(cb.Certificate[0]) {
		t.Error("two replicas serve different certificates")
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(mwc), mwc); err != nil || len(mwc.Webhooks[0].ClientConfig.CABundle) == 0 {
		t.Errorf("caBundle not written: %v", err)
	}
	manifest := []byte(`{"spec":{}}`)
	sig := a.Sign(manifest)
	if sig == "" || !b.Verify(manifest, sig) || b.Verify([]byte(`{"spec":{"x":1}}`), sig) || b.Verify(manifest, "") {
		t.Errorf("sign/verify: %q", sig)
	}
	// A renewal (the certificate gone from the Secret) keeps the key.
	s := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "placer-system", Name: "placer-webhook-tls"}, s); err != nil {
		t.Fatal(err)
	}
	delete(s.Data, corev1.TLSCertKey)
	if err := c.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	renewed := newCerts()
	if err := renewed.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if string(mustCert(t, renewed).Certificate[0]) == string(ca.Certificate[0]) || !renewed.Verify(manifest, sig) {
		t.Error("a renewal did not renew the certificate, or lost the manifests' key")
	}
}

func mustCert(t *testing.T, c *Certs) *tls.Certificate {
	t.Helper()
	cert, err := c.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
