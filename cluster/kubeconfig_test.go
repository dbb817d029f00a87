package cluster

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfig builds a one-context kubeconfig; opts change its cluster and user.
func kubeconfig(t *testing.T, server string, opts ...func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)) []byte {
	t.Helper()
	cl := &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: []byte("not-a-real-ca")}
	ai := &clientcmdapi.AuthInfo{Token: "secret-token-value"}
	for _, o := range opts {
		o(cl, ai)
	}
	c := clientcmdapi.NewConfig()
	c.Clusters["member"] = cl
	c.AuthInfos["tenant"] = ai
	c.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "member", AuthInfo: "tenant"}
	c.CurrentContext = "ctx"
	b, err := clientcmd.Write(*c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestKubeconfigPolicy(t *testing.T) {
	const server = "https://member.example.com:6443"
	// secret values that must never appear in an error.
	const path = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	cases := map[string]struct {
		server string
		policy KubeconfigPolicy
		change func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)
		// field is the field the refusal names; "" means accepted.
		field string
	}{
		"inline token and CA are accepted": {},
		"inline client certificate and key are accepted": {change: func(_ *clientcmdapi.Cluster, a *clientcmdapi.AuthInfo) {
			a.Token, a.ClientCertificateData, a.ClientKeyData = "", []byte("cert"), []byte("key")
		}},
		"exec plugin": {field: `users[tenant].exec`, change: func(_ *clientcmdapi.Cluster, a *clientcmdapi.AuthInfo) {
			a.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", Args: []string{"-c", "touch " + path}, APIVersion: "client.authentication.k8s.io/v1"}
		}},
		"auth provider": {field: `users[tenant].auth-provider`, change: func(_ *clientcmdapi.Cluster, a *clientcmdapi.AuthInfo) {
			a.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "gcp"}
		}},
		"token file": {field: `users[tenant].tokenFile`, change: func(_ *clientcmdapi.Cluster, a *clientcmdapi.AuthInfo) {
			a.Token, a.TokenFile = "", path
		}},
		"client certificate path": {field: `users[tenant].client-certificate`, change: func(_ *clientcmdapi.Cluster, a *clientcmdapi.AuthInfo) {
			a.ClientCertificate, a.ClientKeyData = path, []byte("key")
		}},
		"client key path": {field: `users[tenant].client-key`, change: func(_ *clientcmdapi.Cluster, a *clientcmdapi.AuthInfo) {
			a.ClientCertificateData, a.ClientKey = []byte("cert"), path
		}},
		"basic auth": {field: `users[tenant].username`, change: func(_ *clientcmdapi.Cluster, a *clientcmdapi.AuthInfo) {
			a.Token, a.Username, a.Password = "", "admin", "secret-password"
		}},
		"impersonation": {field: `users[tenant].as`, change: func(_ *clientcmdapi.Cluster, a *clientcmdapi.AuthInfo) {
			a.Impersonate = "system:admin"
		}},
		"certificate authority path": {field: `clusters[member].certificate-authority`, change: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.CertificateAuthority, c.CertificateAuthorityData = path, nil
		}},
		"insecure skip TLS verify": {field: `clusters[member].insecure-skip-tls-verify`, change: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.InsecureSkipTLSVerify, c.CertificateAuthorityData = true, nil
		}},
		"proxy url": {field: `clusters[member].proxy-url`, change: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.ProxyURL = "http://proxy.internal:3128"
		}},
		"plain http":                           {field: `clusters[member].server`, server: "http://member.example.com:8080"},
		"plain http behind the flag":           {server: "http://member.example.com:8080", policy: KubeconfigPolicy{AllowHTTP: true}},
		"metadata address":                     {field: `clusters[member].server`, server: "https://169.254.169.254"},
		"metadata address behind the flag":     {server: "https://169.254.169.254", policy: KubeconfigPolicy{AllowLinkLocal: true}},
		"IPv6 link-local":                      {field: `clusters[member].server`, server: "https://[fe80::1]:6443"},
		"metadata address through NAT64":       {field: `clusters[member].server`, server: "https://[64:ff9b::a9fe:a9fe]"},
		"metadata address as IPv4-mapped IPv6": {field: `clusters[member].server`, server: "https://[::ffff:169.254.169.254]"},
		"no inline CA": {field: `clusters[member].certificate-authority-data`, change: func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.CertificateAuthorityData = nil
		}},
		"loopback":                 {field: `clusters[member].server`, server: "https://127.0.0.1:6443"},
		"IPv6 loopback":            {field: `clusters[member].server`, server: "https://[::1]:6443"},
		"loopback behind the flag": {server: "https://127.0.0.1:6443", policy: KubeconfigPolicy{AllowLoopback: true}},
		"unspecified address":      {field: `clusters[member].server`, server: "https://0.0.0.0:6443", policy: KubeconfigPolicy{AllowLoopback: true}},
		"no scheme":                {field: `clusters[member].server`, server: "member.example.com:6443"},
		// The management network: only a namespace labelled for it.
		"private address":                    {field: `clusters[member].server`, server: "https://10.0.0.1:6443"},
		"private address, 192.168/16":        {field: `clusters[member].server`, server: "https://192.168.1.10:6443"},
		"shared address (100.64/10)":         {field: `clusters[member].server`, server: "https://100.100.0.1:6443"},
		"IPv6 unique local":                  {field: `clusters[member].server`, server: "https://[fd00::1]:6443"},
		"private address as IPv4-mapped":     {field: `clusters[member].server`, server: "https://[::ffff:10.0.0.1]:6443"},
		"private address when allowed":       {server: "https://10.0.0.1:6443", policy: KubeconfigPolicy{AllowPrivate: true}},
		"a public address next to a private": {server: "https://100.128.0.1:6443"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := tc.server
			if s == "" {
				s = server
			}
			var opts []func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)
			if tc.change != nil {
				opts = append(opts, tc.change)
			}
			cfg, err := tc.policy.RESTConfig(kubeconfig(t, s, opts...))
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if cfg.Dial == nil || cfg.ExecProvider != nil || cfg.BearerTokenFile != "" || cfg.Proxy == nil {
					t.Fatalf("accepted config is not locked down: %+v", cfg)
				}
				// The manager's environment proxy is not used.
				t.Setenv("HTTPS_PROXY", "http://proxy.internal:3128")
				t.Setenv("HTTP_PROXY", "http://proxy.internal:3128")
				req, _ := http.NewRequest(http.MethodGet, cfg.Host, nil)
				if u, err := cfg.Proxy(req); u != nil || err != nil {
					t.Errorf("requests go through proxy %v (%v)", u, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want %s refused", tc.field)
			}
			if !IsKubeconfigRefused(err) {
				t.Errorf("error %q is not a policy refusal", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name %s", err, tc.field)
			}
			for _, secret := range []string{path, "secret-token-value", "secret-password", "proxy.internal"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q quotes %q", err, secret)
				}
			}
		})
	}
}

// A refused kubeconfig reaches neither its server nor a file of the
// manager's: the exec plugin does not run, the token file is not sent.
func TestRefusedKubeconfigReachesNothing(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { requests.Add(1) }))
	defer srv.Close()
	dir := t.TempDir()
	marker := filepath.Join(dir, "exec-ran")
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("managers-own-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(Options{ProbeTimeout: time.Second, Policy: KubeconfigPolicy{AllowLoopback: true}}, nil)
	defer r.Close()
	for name, change := range map[string]func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo){
		"exec": func(_ *clientcmdapi.Cluster, a *clientcmdapi.AuthInfo) {
			a.Token = ""
			a.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", Args: []string{"-c", "touch " + marker}, APIVersion: "client.authentication.k8s.io/v1"}
		},
		"tokenFile": func(c *clientcmdapi.Cluster, a *clientcmdapi.AuthInfo) {
			c.CertificateAuthorityData = pemCert(srv)
			a.Token, a.TokenFile = "", tokenFile
		},
	} {
		conn, err := r.Ensure(types.NamespacedName{Name: name}, kubeconfig(t, srv.URL, change))
		if err == nil || !IsKubeconfigRefused(err) {
			t.Errorf("%s: Ensure = %v, want a refusal", name, err)
		}
		if conn != nil {
			// Accepted after all: probe it, as the cluster controller
			// would, so the checks below see what that would do.
			_, _ = conn.Probe(context.Background())
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the tenant's server received %d requests", n)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the exec plugin ran in the manager")
	}
}

// A name that resolves to a refused address is refused when dialled, and
// the error says why without quoting any response.
func TestDialRefusesResolvedAddresses(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("instance-metadata: secret-credentials"))
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	withCA := func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
		c.CertificateAuthorityData = pemCert(srv)
	}
	// localhost is a name: the static check lets it through, the dialer does not.
	r := NewRegistry(Options{ProbeTimeout: 2 * time.Second}, nil)
	defer r.Close()
	conn, err := r.Ensure(types.NamespacedName{Name: "named"}, kubeconfig(t, "https://localhost:"+port, withCA))
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Probe(context.Background())
	if err == nil || !strings.Contains(DescribeError(err), "loopback") {
		t.Fatalf("probe of a name resolving to loopback: %v, want refused as loopback", err)
	}
	if requests.Load() != 0 {
		t.Fatal("the refused address was reached")
	}

	// Allowed, the server answers 500 with a body: the description keeps
	// the status code and leaves the body out.
	r2 := NewRegistry(Options{ProbeTimeout: 2 * time.Second, Policy: KubeconfigPolicy{AllowLoopback: true}}, nil)
	defer r2.Close()
	conn, err = r2.Ensure(types.NamespacedName{Name: "allowed"}, kubeconfig(t, "https://127.0.0.1:"+port, withCA))
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Probe(context.Background())
	if err == nil {
		t.Fatal("probe of a server answering 500 succeeded")
	}
	if d := DescribeError(err); strings.Contains(d, "secret-credentials") || !strings.Contains(d, "500") {
		t.Errorf("DescribeError = %q, want the status code without the body", d)
	}
	if requests.Load() == 0 {
		t.Error("the allowed server was not reached")
	}
}

func pemCert(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

func TestDescribeError(t *testing.T) {
	status := func(code int32, reason metav1.StatusReason, msg string) error {
		return &kerrors.StatusError{ErrStatus: metav1.Status{Code: code, Reason: reason, Message: msg}}
	}
	cases := map[string]struct {
		err  error
		want string
	}{
		"a Kubernetes status keeps its code and reason, not its message": {status(403, metav1.StatusReasonForbidden, "secret: s3cr3t"), "HTTP 403 (Forbidden)"},
		"a reason Kubernetes does not define is the server's text":       {status(418, "my-secret-banner", "x"), "HTTP 418"},
		"connection refused": {&url.Error{Op: "Get", URL: "https://10.0.0.1/version", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, "connection refused"},
		"no such host":       {&url.Error{Op: "Get", URL: "https://x/version", Err: &net.DNSError{Name: "member.internal", Err: "no such host"}}, "cannot resolve member.internal"},
		"a timeout":          {&url.Error{Op: "Get", URL: "https://x/version", Err: context.DeadlineExceeded}, "timed out"},
		"a certificate that names internal hosts": {&url.Error{Op: "Get", URL: "https://x/version", Err: x509.HostnameError{Certificate: &x509.Certificate{DNSNames: []string{"vault.internal"}}, Host: "x"}},
			"TLS: the server's certificate is not valid for the kubeconfig's server and CA"},
		"a request not sent, the member busy":      {&url.Error{Op: "Get", URL: "https://x/api", Err: NewSlots(1).Busy()}, "not sent: placer's requests in flight to the member are at --cluster-max-in-flight"},
		"anything else says nothing of the server": {errors.New(`malformed HTTP response "SSH-2.0-OpenSSH_9.6"`), "the request failed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := DescribeError(tc.err); got != tc.want {
				t.Errorf("DescribeError() = %q, want %q", got, tc.want)
			}
		})
	}
}
