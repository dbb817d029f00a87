package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// A member credential written by 'placer join' is a bound token of a
// ServiceAccount of the member, from its TokenRequest API, and it expires.
// The manager renews it through the same API, as that ServiceAccount (which
// may request tokens for itself only), before it expires, and writes the
// new one into the connection Secret.

// AnnotationRenewToken, on a connection Secret, names the member
// ServiceAccount (namespace/name) whose token the kubeconfig holds: the
// manager renews it. 'placer join' sets it.
const AnnotationRenewToken = "compute.placer.dev/renew-token"

// TokenTimes are what a token says of its own lifetime.
type TokenTimes struct {
	IssuedAt, Expires time.Time
}

// RenewAt is when a token of these times is due for renewal: after the
// fraction of its lifetime (0 < fraction < 1).
func (t TokenTimes) RenewAt(fraction float64) time.Time {
	return t.IssuedAt.Add(time.Duration(float64(t.Expires.Sub(t.IssuedAt)) * fraction))
}

// Lifetime is how long the token was issued for.
func (t TokenTimes) Lifetime() time.Duration { return t.Expires.Sub(t.IssuedAt) }

// ReadTokenTimes reads the iat and exp claims of a JWT, without checking
// its signature (the member does): false when it is not a JWT with both.
func ReadTokenTimes(token string) (TokenTimes, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return TokenTimes{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return TokenTimes{}, false
	}
	var claims struct {
		IssuedAt int64 `json:"iat"`
		Expires  int64 `json:"exp"`
	}
	if err := json.Unmarshal(b, &claims); err != nil || claims.Expires == 0 || claims.IssuedAt == 0 || claims.Expires <= claims.IssuedAt {
		return TokenTimes{}, false
	}
	return TokenTimes{IssuedAt: time.Unix(claims.IssuedAt, 0), Expires: time.Unix(claims.Expires, 0)}, true
}

// KubeconfigToken is the bearer token of a kubeconfig's current context;
// empty when it has none.
func KubeconfigToken(kubeconfig []byte) string {
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return ""
	}
	ctx := raw.Contexts[raw.CurrentContext]
	if ctx == nil || raw.AuthInfos[ctx.AuthInfo] == nil {
		return ""
	}
	return raw.AuthInfos[ctx.AuthInfo].Token
}

// WithToken returns the kubeconfig with its current context's token
// replaced.
func WithToken(kubeconfig []byte, token string) ([]byte, error) {
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, errors.New(errParseKubeconfig)
	}
	ctx := raw.Contexts[raw.CurrentContext]
	if ctx == nil || raw.AuthInfos[ctx.AuthInfo] == nil {
		return nil, errors.New("kubeconfig has no user in its current context")
	}
	raw.AuthInfos[ctx.AuthInfo].Token = token
	b, err := clientcmd.Write(*raw)
	return b, errors.Wrap(err, "cannot encode the kubeconfig")
}

// RequestToken asks the member's TokenRequest API for a token of the
// ServiceAccount lasting ttl.
func RequestToken(ctx context.Context, cs kubernetes.Interface, sa types.NamespacedName, ttl time.Duration) (string, error) {
	tr, err := cs.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl.Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", errors.Wrapf(err, "cannot request a token of ServiceAccount %s", sa)
	}
	return tr.Status.Token, nil
}

// ParseServiceAccount reads "namespace/name".
func ParseServiceAccount(s string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}
