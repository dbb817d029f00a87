package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// KubeconfigPolicy decides what a kubeconfig read from a tenant's Secret
// may contain. A kubeconfig there is data, not configuration (design §5):
// only an https server with inline certificate authority data and inline
// credentials (a bearer token, or a client certificate and key) are used.
// Everything that would make the manager run a program, read one of its own
// files, send credentials it did not get from the tenant, or reach
// addresses of its own host is refused, naming the field.
type KubeconfigPolicy struct {
	// AllowHTTP accepts plain-http servers (no TLS): local test clusters only.
	AllowHTTP bool
	// AllowLoopback accepts servers on loopback addresses (127.0.0.0/8,
	// ::1): the manager's own host. For local clusters (sandbox, tests).
	AllowLoopback bool
	// AllowLinkLocal accepts link-local addresses (169.254.0.0/16, fe80::/10),
	// where cloud metadata services answer.
	AllowLinkLocal bool
	// AllowPrivate accepts private and shared addresses (10.0.0.0/8,
	// 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, fc00::/7), where
	// members usually live, and so does the management network: only for
	// the KubernetesClusters of a namespace labelled
	// v1alpha1.LabelPrivateClusters (Registry.Ensure's AllowPrivate).
	AllowPrivate bool
	// AllowExec runs the exec credential plugin of a kubeconfig the
	// manager built from its own configuration: the admin's access
	// providers of a ClusterProfile (Registry.Ensure's AllowExec), never a
	// tenant's Secret.
	AllowExec bool
}

// shared is the shared address space of carrier-grade NAT, 100.64.0.0/10
// (RFC 6598), which clouds use for internal networks too.
var shared = &net.IPNet{IP: net.ParseIP("100.64.0.0").To4(), Mask: net.CIDRMask(10, 32)}

// ErrKubeconfigRefused marks a kubeconfig the policy refuses.
type ErrKubeconfigRefused struct{ field.ErrorList }

func (e *ErrKubeconfigRefused) Error() string {
	return "kubeconfig refused: " + e.ToAggregate().Error()
}

// IsKubeconfigRefused reports whether err is a policy refusal.
func IsKubeconfigRefused(err error) bool {
	var r *ErrKubeconfigRefused
	return errors.As(err, &r)
}

// Check returns what the policy refuses in a parsed kubeconfig, each error
// naming its field by the kubeconfig's own keys (users[NAME].exec). Values
// (paths, tokens, passwords) never appear in the errors.
func (p KubeconfigPolicy) Check(c *clientcmdapi.Config) field.ErrorList {
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(c.AuthInfos)) {
		a := c.AuthInfos[name]
		fp := field.NewPath("users").Key(name)
		refuse := func(f, why string) { errs = append(errs, field.Forbidden(fp.Child(f), why)) }
		if a.Exec != nil && !p.AllowExec {
			refuse("exec", "exec credential plugins would run a program in the manager")
		}
		if a.AuthProvider != nil {
			refuse("auth-provider", "auth providers would run with the manager's own environment")
		}
		if a.TokenFile != "" {
			refuse("tokenFile", "file paths would read the manager's own files; put the token inline (token)")
		}
		if a.ClientCertificate != "" {
			refuse("client-certificate", "file paths would read the manager's own files; put the certificate inline (client-certificate-data)")
		}
		if a.ClientKey != "" {
			refuse("client-key", "file paths would read the manager's own files; put the key inline (client-key-data)")
		}
		if a.Username != "" || a.Password != "" {
			refuse("username", "basic authentication is not supported; use a token or a client certificate")
		}
		if a.Impersonate != "" || len(a.ImpersonateGroups) > 0 || a.ImpersonateUID != "" || len(a.ImpersonateUserExtra) > 0 {
			refuse("as", "impersonation is placer's own to set (the tenant's identity in the member)")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Clusters)) {
		cl := c.Clusters[name]
		fp := field.NewPath("clusters").Key(name)
		if cl.CertificateAuthority != "" {
			errs = append(errs, field.Forbidden(fp.Child("certificate-authority"), "file paths would read the manager's own files; put the CA inline (certificate-authority-data)"))
		} else if len(cl.CertificateAuthorityData) == 0 && strings.HasPrefix(cl.Server, "https://") {
			errs = append(errs, field.Required(fp.Child("certificate-authority-data"), "the server's CA, inline: the manager's own trust store is not the tenant's"))
		}
		if cl.InsecureSkipTLSVerify {
			errs = append(errs, field.Forbidden(fp.Child("insecure-skip-tls-verify"), "the server's certificate must be verified"))
		}
		if cl.ProxyURL != "" {
			errs = append(errs, field.Forbidden(fp.Child("proxy-url"), "proxies are not supported"))
		}
		errs = append(errs, p.checkServer(fp.Child("server"), cl.Server)...)
	}
	return errs
}

// checkServer refuses a server URL the policy does not allow. Only the
// scheme and a literal IP are judged here; names are judged when they are
// resolved, by Dial.
func (p KubeconfigPolicy) checkServer(fp *field.Path, server string) field.ErrorList {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return field.ErrorList{field.Invalid(fp, "", "must be an absolute URL, https://HOST[:PORT]")}
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && p.AllowHTTP:
	default:
		return field.ErrorList{field.NotSupported(fp, u.Scheme+"://", []string{"https://"})}
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil {
		if why := p.refuseIP(ip); why != "" {
			return field.ErrorList{field.Forbidden(fp, why)}
		}
	}
	return nil
}

// nat64 is the well-known NAT64 prefix, 64:ff9b::/96, whose addresses
// embed an IPv4 address.
var nat64 = &net.IPNet{IP: net.ParseIP("64:ff9b::"), Mask: net.CIDRMask(96, 128)}

// refuseIP says why an address may not be reached, or "".
func (p KubeconfigPolicy) refuseIP(ip net.IP) string {
	if nat64.Contains(ip) {
		// 64:ff9b::a9fe:a9fe reaches 169.254.169.254 through a NAT64 gateway.
		ip = net.IP(ip[12:16])
	}
	switch {
	case ip.IsLoopback() && !p.AllowLoopback:
		return fmt.Sprintf("%s is a loopback address, the manager's own host", ip)
	case (ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast()) && !p.AllowLinkLocal:
		return fmt.Sprintf("%s is a link-local address, where cloud metadata services answer", ip)
	case ip.IsUnspecified() || ip.IsMulticast():
		return fmt.Sprintf("%s is not a unicast address", ip)
	case (ip.IsPrivate() || shared.Contains(ip)) && !p.AllowPrivate:
		return fmt.Sprintf("%s is a private address; the KubernetesClusters of a namespace reach private addresses only when the namespace is labelled %s=true", ip, v1alpha1.LabelPrivateClusters)
	}
	return ""
}

// addressRefused is the error of a connection the policy refuses.
type addressRefused struct{ why string }

func (e *addressRefused) Error() string {
	return "refused by the manager's kubeconfig policy: " + e.why
}

// Dial is a net.Dialer.DialContext that refuses, after name resolution and
// on every connection, the addresses the policy does not allow: a name that
// resolves to 169.254.169.254 is refused like the literal address.
func (p KubeconfigPolicy) Dial(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{
		Timeout:   timeout,
		KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			ip := net.ParseIP(host)
			if ip == nil {
				return errors.Errorf("cannot parse address %q", host)
			}
			if why := p.refuseIP(ip); why != "" {
				return &addressRefused{why: why}
			}
			return nil
		},
	}
	return d.DialContext
}

// RESTConfig parses a kubeconfig from a tenant's Secret and returns the
// client configuration of its current context, or why it is refused.
// Parse errors can quote the input, so they are replaced by a fixed message.
func (p KubeconfigPolicy) RESTConfig(kubeconfig []byte) (*rest.Config, error) {
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, errors.New(errParseKubeconfig)
	}
	if errs := p.Check(raw); len(errs) > 0 {
		return nil, &ErrKubeconfigRefused{ErrorList: errs}
	}
	if err := clientcmd.ConfirmUsable(*raw, ""); err != nil {
		return nil, errors.Wrap(err, "kubeconfig is not usable")
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, errors.Wrap(err, "kubeconfig is not usable")
	}
	// Nothing of the manager's own environment may add to it: no proxy
	// (client-go would take HTTPS_PROXY from the environment for a nil
	// Proxy, and the proxy, not the dialer below, would reach the address).
	cfg.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	if !p.AllowExec {
		cfg.ExecProvider = nil
	}
	cfg.AuthProvider, cfg.BearerTokenFile = nil, ""
	cfg.Dial = p.Dial(30 * time.Second)
	return cfg, nil
}

// DescribeError says why a request to a member failed in placer's own
// words: a response body, a Status message or reason, a certificate's
// names are whatever answered at that address, and never reach status,
// Events or logs. An API status is described by its code and, when it is
// one Kubernetes defines, its reason; a network error by its kind.
func DescribeError(err error) string {
	if err == nil {
		return ""
	}
	var s kerrors.APIStatus
	if errors.As(err, &s) {
		st := s.Status()
		if knownReasons[st.Reason] {
			return fmt.Sprintf("HTTP %d (%s)", st.Code, st.Reason)
		}
		return fmt.Sprintf("HTTP %d", st.Code)
	}
	var (
		refused *addressRefused
		dns     *net.DNSError
		nerr    net.Error
		cert    *tls.CertificateVerificationError
		uerr    x509.UnknownAuthorityError
		herr    x509.HostnameError
		busy    *BusyError
	)
	switch {
	case errors.As(err, &busy):
		return "not sent: placer's requests in flight to the member are at --cluster-max-in-flight"
	case errors.As(err, &refused):
		return refused.Error()
	case errors.As(err, &dns):
		return "cannot resolve " + dns.Name
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &cert), errors.As(err, &uerr), errors.As(err, &herr):
		return "TLS: the server's certificate is not valid for the kubeconfig's server and CA"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return "timed out"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the server"
	}
	return "the request failed"
}

// knownReasons are the StatusReasons Kubernetes defines; any other text in
// that field is the server's own.
var knownReasons = map[metav1.StatusReason]bool{
	metav1.StatusReasonUnauthorized: true, metav1.StatusReasonForbidden: true, metav1.StatusReasonNotFound: true,
	metav1.StatusReasonAlreadyExists: true, metav1.StatusReasonConflict: true, metav1.StatusReasonGone: true,
	metav1.StatusReasonInvalid: true, metav1.StatusReasonServerTimeout: true, metav1.StatusReasonStoreReadError: true,
	metav1.StatusReasonTimeout: true, metav1.StatusReasonTooManyRequests: true, metav1.StatusReasonBadRequest: true,
	metav1.StatusReasonMethodNotAllowed: true, metav1.StatusReasonNotAcceptable: true, metav1.StatusReasonRequestEntityTooLarge: true,
	metav1.StatusReasonUnsupportedMediaType: true, metav1.StatusReasonInternalError: true, metav1.StatusReasonExpired: true,
	metav1.StatusReasonServiceUnavailable: true,
}

// WatchErrors is the watch error handler of every cache of a member: the
// reflector's own would log the member's response verbatim; this logs
// DescribeError's words, at a debug level (the cluster's Ready condition
// says what matters).
func WatchErrors(key types.NamespacedName) toolscache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, _ *toolscache.Reflector, err error) {
		klog.FromContext(ctx).V(4).Info("watch of a member cluster failed", "cluster", key.String(), "error", DescribeError(err))
	}
}
