package proxypod

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"slices"
	"sync/atomic"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/internal/pki"
)

// The rights these need are in config/rbac/webhook_role.yaml, by name
// (markers cannot name objects): the Secret and the
// MutatingWebhookConfiguration, nothing else of their kinds.

// The webhook's serving certificate lives in a Secret of the manager's
// namespace (config/rbac/webhook_role.yaml), so that every
// replica serves the same one: the first replica to start makes it (a CA
// and a certificate it signs), the others read it, and each writes the
// CA into the MutatingWebhookConfiguration's caBundle.
const (
	keyCACert = "ca.crt"
	keyCAKey  = "ca.key"
	// keyManifest is the key of the HMAC with which the webhook signs
	// the source manifests it saves: the proxy pods' controller places
	// only a manifest the webhook wrote (a pod annotated after its
	// creation never passed it). Kept across renewals.
	keyManifest      = "manifest-key"
	certLifetime     = 365 * 24 * time.Hour
	renewBefore      = 90 * 24 * time.Hour
	caLifetimeLeft   = 2 * certLifetime
	manifestKeyBytes = 32
)

// Certs manages the webhook's serving certificate.
type Certs struct {
	// Client reads and writes the Secret and the webhook configuration
	// straight through the API server (not the manager's cache, which
	// holds no Secrets).
	Client client.Client
	// Namespace and Secret name the Secret.
	Namespace, Secret string
	// Configuration names the MutatingWebhookConfiguration.
	Configuration string
	// Hosts the certificate serves: the Service's names, and any address
	// the API server reaches the manager at instead (--webhook-host).
	Hosts []string

	current     atomic.Pointer[tls.Certificate]
	manifestKey atomic.Pointer[[]byte]
}

// Sign returns the signature of a source manifest ("" before the key is
// read).
func (c *Certs) Sign(manifest []byte) string {
	key := c.manifestKey.Load()
	if key == nil {
		return ""
	}
	mac := hmac.New(sha256.New, *key)
	mac.Write(manifest)
	return hex.EncodeToString(mac.Sum(nil))
}

// Verify reports whether sig is the signature of manifest.
func (c *Certs) Verify(manifest []byte, sig string) bool {
	want := c.Sign(manifest)
	return want != "" && hmac.Equal([]byte(want), []byte(sig))
}

// ServiceHosts are the names a Service answers to, inside the cluster.
func ServiceHosts(service, namespace string) []string {
	return []string{service, service + "." + namespace, service + "." + namespace + ".svc", service + "." + namespace + ".svc.cluster.local"}
}

// GetCertificate serves the current certificate (tls.Config.GetCertificate).
func (c *Certs) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if cert := c.current.Load(); cert != nil {
		return cert, nil
	}
	return nil, errors.New("the webhook's certificate is not ready")
}

// Ensure makes or renews the certificate when it is missing, ends within
// renewBefore or does not serve every host, serves it, and writes its CA
// into the webhook configuration.
func (c *Certs) Ensure(ctx context.Context) error {
	var ca []byte
	err := retry.OnError(retry.DefaultRetry, func(err error) bool { return kerrors.IsConflict(err) || kerrors.IsAlreadyExists(err) }, func() error {
		s := &corev1.Secret{}
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Secret}, s)
		if err != nil && !kerrors.IsNotFound(err) {
			return errors.Wrapf(err, "cannot get Secret %s/%s", c.Namespace, c.Secret)
		}
		exists := err == nil
		if !c.usable(s.Data) {
			if err := c.issue(s); err != nil {
				return err
			}
			s.Name, s.Namespace, s.Type = c.Secret, c.Namespace, corev1.SecretTypeTLS
			if exists {
				err = c.Client.Update(ctx, s)
			} else {
				err = c.Client.Create(ctx, s)
			}
			if err != nil {
				return err
			}
		}
		pair, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
		if err != nil {
			return errors.Wrap(err, "cannot read the webhook's key pair")
		}
		c.current.Store(&pair)
		key := slices.Clone(s.Data[keyManifest])
		c.manifestKey.Store(&key)
		ca = s.Data[keyCACert]
		return nil
	})
	if err != nil {
		return errors.Wrap(err, "cannot make the webhook's certificate")
	}
	return errors.Wrap(c.publishCA(ctx, ca), "cannot write the webhook's caBundle")
}

// usable reports whether the Secret's data serves every host for longer
// than renewBefore.
func (c *Certs) usable(data map[string][]byte) bool {
	if len(data[keyManifest]) != manifestKeyBytes {
		return false
	}
	certs, err := certutil.ParseCertsPEM(data[corev1.TLSCertKey])
	if err != nil || len(certs) == 0 || len(data[corev1.TLSPrivateKeyKey]) == 0 || len(data[keyCACert]) == 0 {
		return false
	}
	leaf := certs[0]
	if time.Until(leaf.NotAfter) < renewBefore {
		return false
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data[keyCACert]) {
		return false
	}
	for _, h := range c.Hosts {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: h, Roots: roots}); err != nil {
			return false
		}
	}
	return true
}

// issue writes a new certificate into the Secret, signed by its CA while
// that lives long enough, else by a new one.
func (c *Certs) issue(s *corev1.Secret) error {
	bundle := []byte(nil)
	ca, err := pki.LoadAuthority(s.Data[keyCACert], s.Data[keyCAKey])
	if err != nil || time.Until(ca.Cert.NotAfter) < caLifetimeLeft {
		if err == nil {
			// A new CA: the old one stays trusted beside it, so that a
			// replica still serving a certificate it signed is called
			// until it reloads (within the hour).
			bundle = ca.CertPEM()
		}
		if ca, err = pki.NewAuthority("placer-webhook"); err != nil {
			return err
		}
	}
	crt, key, err := ca.Issue(pki.Request{CommonName: c.Hosts[0], Hosts: c.Hosts, Lifetime: certLifetime})
	if err != nil {
		return err
	}
	caKey, err := ca.KeyPEM()
	if err != nil {
		return err
	}
	manifest := s.Data[keyManifest]
	if len(manifest) != manifestKeyBytes {
		manifest = make([]byte, manifestKeyBytes)
		if _, err := rand.Read(manifest); err != nil {
			return err
		}
	}
	s.Data = map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key, keyCACert: append(ca.CertPEM(), bundle...), keyCAKey: caKey, keyManifest: manifest}
	return nil
}

// publishCA writes ca into the caBundle of every webhook of the
// configuration that does not hold it yet.
func (c *Certs) publishCA(ctx context.Context, ca []byte) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := c.Client.Get(ctx, client.ObjectKey{Name: c.Configuration}, mwc); err != nil {
			return err
		}
		changed := false
		for i := range mwc.Webhooks {
			if !bytes.Equal(mwc.Webhooks[i].ClientConfig.CABundle, ca) {
				mwc.Webhooks[i].ClientConfig.CABundle = slices.Clone(ca)
				changed = true
			}
		}
		if !changed {
			return nil
		}
		return c.Client.Update(ctx, mwc)
	})
}

// Start keeps the certificate fresh: it reads the Secret every hour (a
// certificate lives a year and is renewed 90 days before it ends; the
// replica that renews it writes it there, the others load it from there).
func (c *Certs) Start(ctx context.Context) error {
	// An error leaves the current certificate, which serves for months
	// yet; the next hour tries again.
	wait.UntilWithContext(ctx, func(ctx context.Context) { _ = c.Ensure(ctx) }, time.Hour)
	return nil
}

// NeedLeaderElection is false: every replica serves the webhook.
func (c *Certs) NeedLeaderElection() bool { return false }
