package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster"
)

// Reasons of the Events token renewal records on a KubernetesCluster.
const (
	reasonTokenRenewed     event.Reason = "TokenRenewed"
	reasonCannotRenewToken event.Reason = "CannotRenewToken"
)

// renewRetry is how soon a renewal that failed is tried again, at most:
// sooner when the token has less than ten times that left.
const renewRetry = time.Minute

// renew renews the token of the cluster's connection Secret when the
// Secret asks for it (cluster.AnnotationRenewToken) and the token has
// lived the renewal fraction of its lifetime: a token of the member
// ServiceAccount, asked of the member as that ServiceAccount, written into
// the Secret (whose watch then reconnects with it). It returns how long
// until it is due again; zero when the Secret asks for nothing.
func (r *Reconciler) renew(ctx context.Context, kc *v1alpha1.KubernetesCluster, s *corev1.Secret, kubeconfig []byte) (time.Duration, error) {
	if s == nil {
		// Reached through a ClusterProfile: its access provider renews.
		return 0, nil
	}
	ref, ok := s.Annotations[cluster.AnnotationRenewToken]
	if !ok {
		return 0, nil
	}
	sa, ok := cluster.ParseServiceAccount(ref)
	if !ok {
		r.record.Event(kc, event.Warning(reasonCannotRenewToken, errors.Errorf("Secret %s: annotation %s is %q, not namespace/name of a ServiceAccount", secretRef(kc), cluster.AnnotationRenewToken, ref)))
		return 0, nil
	}
	times, ok := cluster.ReadTokenTimes(cluster.KubeconfigToken(kubeconfig))
	if !ok {
		r.record.Event(kc, event.Warning(reasonCannotRenewToken, errors.Errorf("Secret %s: the kubeconfig's token is not a JWT with iat and exp, so it cannot be renewed", secretRef(kc))))
		return 0, nil
	}
	if wait := time.Until(times.RenewAt(r.renewal)); wait > 0 {
		return wait, nil
	}
	if since := r.renewed.since(client.ObjectKeyFromObject(kc)); since < renewRetry {
		// Renewed a moment ago, and due again already: a token that says
		// it was issued long ago, from a server that is not a real
		// member's. Never more than once per renewRetry.
		return renewRetry - since, nil
	}
	if left := time.Until(times.Expires); left <= 0 {
		r.record.Event(kc, event.Warning(reasonCannotRenewToken, errors.Errorf("Secret %s: the token expired at %s; run placer join again to renew it", secretRef(kc), times.Expires.UTC().Format(time.RFC3339))))
		return 0, nil
	}
	token, err := r.conns.RequestToken(ctx, client.ObjectKeyFromObject(kc), sa, times.Lifetime())
	if err == nil {
		kubeconfig, err = cluster.WithToken(kubeconfig, token)
	}
	if err != nil {
		r.record.Event(kc, event.Warning(reasonCannotRenewToken, errors.Errorf("Secret %s: %s", secretRef(kc), cluster.DescribeError(err))))
		return min(renewRetry, time.Until(times.Expires)/10+time.Second), nil
	}
	s = s.DeepCopy()
	s.Data[dataKeyOf(kc)] = kubeconfig
	if err := r.client.Update(ctx, s); err != nil {
		return 0, errors.Wrapf(err, "cannot write the renewed token into Secret %s", secretRef(kc))
	}
	r.renewed.mark(client.ObjectKeyFromObject(kc))
	next, _ := cluster.ReadTokenTimes(token)
	r.record.Event(kc, event.Normal(reasonTokenRenewed, fmt.Sprintf("renewed the token of ServiceAccount %s in Secret %s; it expires at %s", sa, secretRef(kc), next.Expires.UTC().Format(time.RFC3339))))
	return max(time.Until(next.RenewAt(r.renewal)), time.Second), nil
}

// renewals remembers when each cluster's token was last renewed, to bound
// how often (in memory: a restart may renew once more).
type renewals struct {
	mu   sync.Mutex
	last map[types.NamespacedName]time.Time
}

func (rs *renewals) since(key types.NamespacedName) time.Duration {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	t, ok := rs.last[key]
	if !ok {
		return renewRetry
	}
	return time.Since(t)
}

func (rs *renewals) mark(key types.NamespacedName) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.last == nil {
		rs.last = map[types.NamespacedName]time.Time{}
	}
	rs.last[key] = time.Now()
}

// dataKeyOf is the key of the connection Secret holding the kubeconfig.
func dataKeyOf(kc *v1alpha1.KubernetesCluster) string {
	if k := kc.Spec.ConnectionSecretRef.Key; k != "" {
		return k
	}
	return "kubeconfig"
}
