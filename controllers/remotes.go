package controllers

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/transport"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/propagator"
)

// remote is the propagator's view of one member: an informer cache of the
// chaperons placer made there, a client that reads from it as the
// manager's own identity (read-only there), and one client per tenant that
// writes as that tenant (impersonation).
type remote struct {
	conn     *cluster.Connection
	scheme   *runtime.Scheme
	cache    cache.Cache
	informer cache.Informer
	client   client.Client
	cancel   context.CancelFunc

	mu      sync.Mutex
	tenants map[string]client.Client
}

// tenant returns the client that acts in the member for the Workloads of a
// management namespace: it impersonates mcv1alpha1.TenantUser(namespace),
// so the member's own RBAC decides where that tenant may place, and its
// audit log says who did (design §5). Reads come from the shared cache.
func (rm *remote) tenant(namespace string) (client.Client, error) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if cl, ok := rm.tenants[namespace]; ok {
		return cl, nil
	}
	// The member's one transport, wrapped to impersonate; the mapper of the
	// manager's own client (discovery once per member, not per tenant).
	hc := &http.Client{
		Transport: transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{UserName: mcv1alpha1.TenantUser(namespace)}, rm.conn.HTTPClient.Transport),
		Timeout:   rm.conn.HTTPClient.Timeout,
	}
	cl, err := client.New(rm.conn.Config, client.Options{HTTPClient: hc, Scheme: rm.scheme, Mapper: rm.client.RESTMapper(),
		Cache: &client.CacheOptions{Reader: rm.cache, DisableFor: []client.Object{&corev1.Service{}}}})
	if err != nil {
		return nil, errors.Wrap(err, errTenantClient)
	}
	rm.tenants[namespace] = cl
	return cl, nil
}

// remotes keeps one chaperon cache per member connection; a chaperon event
// requeues the Workload named in its annotation.
type remotes struct {
	scheme  *runtime.Scheme
	enqueue func(types.NamespacedName)

	mu sync.Mutex
	m  map[types.NamespacedName]*remote
}

const (
	errRemoteCache  = "cannot watch PodChaperons in the member cluster"
	errTenantClient = "cannot create a client acting for the tenant in the member cluster"
)

// get returns the member's chaperon cache, starting it for a new or
// replaced connection. It does not wait for the cache to sync.
func (r *remotes) get(conn *cluster.Connection) (*remote, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rm, ok := r.m[conn.Key]; ok {
		if rm.conn == conn {
			return rm, nil
		}
		rm.cancel()
		delete(r.m, conn.Key)
	}
	sel := labels.NewSelector()
	req, err := labels.NewRequirement(propagator.LabelWorkloadUID, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	c, err := cache.New(conn.Config, cache.Options{
		HTTPClient:               conn.HTTPClient,
		DefaultWatchErrorHandler: cluster.WatchErrors(conn.Key),
		Scheme:                   r.scheme,
		ByObject:                 map[client.Object]cache.ByObject{&mcv1alpha1.PodChaperon{}: {Label: sel.Add(*req)}},
	})
	if err != nil {
		return nil, errors.Wrap(err, errRemoteCache)
	}
	ctx, cancel := context.WithCancel(context.Background())
	inf, err := c.GetInformer(ctx, &mcv1alpha1.PodChaperon{})
	if err != nil {
		cancel()
		return nil, errors.Wrap(err, errRemoteCache)
	}
	notify := func(o any) {
		if ch, ok := unwrap(o).(*mcv1alpha1.PodChaperon); ok {
			if key, ok := workloadOf(ch); ok {
				r.enqueue(key)
			}
		}
	}
	if _, err := inf.AddEventHandler(handlerFuncs(notify)); err != nil {
		cancel()
		return nil, errors.Wrap(err, errRemoteCache)
	}
	go func() { _ = c.Start(ctx) }()
	// The cache ends with the connection: a replaced kubeconfig or a deleted cluster.
	go func() {
		select {
		case <-conn.Done():
			cancel()
			r.forget(conn)
		case <-ctx.Done():
		}
	}()
	// Chaperons are read from the cache; the one delivered Service per
	// Workload is read directly rather than cached fleet-wide.
	cl, err := client.New(conn.Config, client.Options{HTTPClient: conn.HTTPClient, Scheme: r.scheme, Cache: &client.CacheOptions{Reader: c, DisableFor: []client.Object{&corev1.Service{}}}})
	if err != nil {
		cancel()
		return nil, errors.Wrap(err, errRemoteCache)
	}
	rm := &remote{conn: conn, scheme: r.scheme, cache: c, informer: inf, client: cl, cancel: cancel, tenants: map[string]client.Client{}}
	r.m[conn.Key] = rm
	return rm, nil
}

// forget drops the remote of a closed connection, unless a newer one
// replaced it.
func (r *remotes) forget(conn *cluster.Connection) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rm, ok := r.m[conn.Key]; ok && rm.conn == conn {
		delete(r.m, conn.Key)
	}
}

// ready reports, without waiting, whether the member's chaperon cache
// holds a full list: a member that does not answer never blocks a reconcile.
func (rm *remote) ready() bool { return rm.informer.HasSynced() }

// close stops every cache.
func (r *remotes) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, rm := range r.m {
		rm.cancel()
		delete(r.m, k)
	}
}

func workloadOf(ch *mcv1alpha1.PodChaperon) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(ch.Annotations[propagator.AnnotationWorkload], "/")
	return types.NamespacedName{Namespace: ns, Name: name}, ok
}
