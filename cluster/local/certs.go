package local

import (
	"os"
	"path/filepath"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// servingHosts are the names of a local API server's certificate.
var servingHosts = []string{"127.0.0.1", "10.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}

const tenYears = 10 * 365 * 24 * time.Hour

// writePair writes a certificate and key as name.crt and name.key in dir.
func writePair(dir, name string, certPEM, keyPEM []byte) (certFile, keyFile string, err error) {
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return "", "", errors.Wrap(err, "cannot write certificate")
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", errors.Wrap(err, "cannot write key")
	}
	return certFile, keyFile, nil
}
