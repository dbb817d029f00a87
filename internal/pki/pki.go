// Package pki is a small certificate authority: the local clusters' (their
// API servers and identities) and the manager's webhook's.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Authority signs certificates.
type Authority struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// NewAuthority returns a new self-signed authority named name-ca (its
// certificate valid for ten years).
func NewAuthority(name string) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, errors.Wrap(err, "cannot generate CA key")
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: name + "-ca"}, key)
	if err != nil {
		return nil, errors.Wrap(err, "cannot create CA certificate")
	}
	return &Authority{Cert: cert, Key: key}, nil
}

// LoadAuthority reads an authority from PEM.
func LoadAuthority(certPEM, keyPEM []byte) (*Authority, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil || len(certs) == 0 {
		return nil, errors.New("cannot read the CA certificate")
	}
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the CA key")
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("the CA key cannot sign")
	}
	return &Authority{Cert: certs[0], Key: signer}, nil
}

// CertPEM returns the CA certificate as PEM.
func (a *Authority) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: a.Cert.Raw})
}

// KeyPEM returns the CA key as PEM.
func (a *Authority) KeyPEM() ([]byte, error) { return keyutil.MarshalPrivateKeyToPEM(a.Key) }

// Request says what to issue: a client certificate when Hosts is empty,
// else a serving certificate for those DNS names and IP addresses.
type Request struct {
	CommonName    string
	Organizations []string
	Hosts         []string
	Lifetime      time.Duration
}

// Issue signs a new key pair.
func (a *Authority) Issue(r Request) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, errors.Wrap(err, "cannot generate key")
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, errors.Wrap(err, "cannot generate serial number")
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: r.CommonName, Organization: r.Organizations},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(r.Lifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if len(r.Hosts) > 0 {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		for _, h := range r.Hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.Cert, key.Public(), a.Key)
	if err != nil {
		return nil, nil, errors.Wrap(err, "cannot sign certificate")
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, errors.Wrap(err, "cannot encode key")
	}
	return pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der}), keyPEM, nil
}
