package cluster

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const (
	errParseKubeconfig = "kubeconfig cannot be parsed"
	errNewClient       = "cannot create a client from the kubeconfig"
	errNotKubernetes   = "the server's /version is not a Kubernetes version"
)

// Options tune the connections of a Registry.
type Options struct {
	// QPS and Burst of each member client.
	QPS   float32
	Burst int
	// ProbeTimeout bounds one reachability probe.
	ProbeTimeout time.Duration
	// RequestTimeout bounds every other request to a member (its
	// watches excepted), and MaxInFlight how many may be in flight to
	// one member at once: one more fails at once (design §4.9).
	RequestTimeout time.Duration
	MaxInFlight    int
	// Policy decides which kubeconfigs are used.
	Policy KubeconfigPolicy
}

// Registry keeps one live connection per KubernetesCluster. It is safe for
// concurrent use.
type Registry struct {
	opts   Options
	notify func(types.NamespacedName)

	mu    sync.RWMutex
	conns map[types.NamespacedName]*Connection
	// onChaperon and onSynced are read by watch handlers, never under mu.
	onChaperon atomic.Pointer[func(types.NamespacedName)]
	// alsoOnChaperon and alsoOnSynced are further handlers
	// (AlsoOnChaperon, AlsoOnSynced), copied on write.
	alsoOnChaperon atomic.Pointer[[]chaperonHandler]
	alsoOnSynced   atomic.Pointer[[]func(context.Context, types.NamespacedName)]
	onSynced       atomic.Pointer[func(context.Context, types.NamespacedName)]
}

var _ Members = &Registry{}

// OnChaperon sets what is called (it must not block) with the Workload a
// chaperon in any member was made for, whenever the chaperon changes.
func (r *Registry) OnChaperon(f func(workload types.NamespacedName)) {
	r.onChaperon.Store(&f)
}

// OnSynced sets what is called with a member's key each time a watch of
// its chaperons has listed them: its first, and the fresh one of each
// Reconnect. A chaperon deleted while no watch of it ran (between two
// connections) tells no handler: whoever waits on the member looks again
// then. It is called on a goroutine of the connection's, with a context
// that ends when the connection closes.
func (r *Registry) OnSynced(f func(ctx context.Context, cluster types.NamespacedName)) {
	r.onSynced.Store(&f)
}

// chaperonHandler is a further handler of chaperon changes, called for
// the chaperons only takes (all when nil).
type chaperonHandler struct {
	f    func(workload types.NamespacedName)
	only func(*mcv1alpha1.PodChaperon) bool
}

// AlsoOnChaperon adds a handler called (it must not block) as the one
// OnChaperon sets, after it, for the chaperons only takes (all when nil):
// another controller that follows some chaperons (the proxy pods').
func (r *Registry) AlsoOnChaperon(f func(workload types.NamespacedName), only func(*mcv1alpha1.PodChaperon) bool) {
	appendHandler(&r.alsoOnChaperon, chaperonHandler{f: f, only: only})
}

// AlsoOnSynced adds a handler called as the one OnSynced sets, after it.
func (r *Registry) AlsoOnSynced(f func(ctx context.Context, cluster types.NamespacedName)) {
	appendHandler(&r.alsoOnSynced, f)
}

// appendHandler adds f to the handlers hs points at, copying on write.
func appendHandler[F any](hs *atomic.Pointer[[]F], f F) {
	for {
		old := hs.Load()
		var next []F
		if old != nil {
			next = append(next, *old...)
		}
		next = append(next, f)
		if hs.CompareAndSwap(old, &next) {
			return
		}
	}
}

func (r *Registry) chaperonChanged(ch *mcv1alpha1.PodChaperon, workload types.NamespacedName) {
	if f := r.onChaperon.Load(); f != nil {
		(*f)(workload)
	}
	if hs := r.alsoOnChaperon.Load(); hs != nil {
		for _, h := range *hs {
			if h.only == nil || h.only(ch) {
				h.f(workload)
			}
		}
	}
}

// Member returns the registered member, or nil: also while its
// connection does not show it reaches the cluster placer placed in
// (Connection.serves), which is then as a cluster that does not answer.
func (r *Registry) Member(key types.NamespacedName) Member {
	if c := r.Serving(key); c != nil {
		return c
	}
	return nil
}

// Members returns every registered member that Member returns.
func (r *Registry) Members() []Member {
	conns := r.Connections()
	out := make([]Member, 0, len(conns))
	for _, c := range conns {
		if c.serves() {
			out = append(out, c)
		}
	}
	return out
}

// NewRegistry returns a registry that calls notify (which must not block)
// whenever a member's summary changes. A QPS or burst of zero takes its
// default (a negative QPS is client-go's: no rate limit); a timeout or a
// number of requests in flight not above zero takes its default, so that
// no bound here stops every request (the manager refuses
// --cluster-max-in-flight and --cluster-request-timeout below that before
// they get here, naming the flag).
func NewRegistry(opts Options, notify func(types.NamespacedName)) *Registry {
	if opts.QPS == 0 {
		opts.QPS = 20
	}
	if opts.Burst == 0 {
		opts.Burst = 40
	}
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = 5 * time.Second
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 10 * time.Second
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 4
	}
	if notify == nil {
		notify = func(types.NamespacedName) {}
	}
	return &Registry{opts: opts, notify: notify, conns: map[types.NamespacedName]*Connection{}}
}

// EnsureOption changes what Ensure and Reconnect accept of one cluster.
type EnsureOption func(*KubeconfigPolicy)

// AllowPrivate lets the cluster's server be at a private address
// (KubeconfigPolicy.AllowPrivate).
func AllowPrivate(p *KubeconfigPolicy) { p.AllowPrivate = true }

// AllowExec lets the kubeconfig run its exec credential plugin: for one
// the manager built from a ClusterProfile and the admin's access
// providers, never for a tenant's Secret.
func AllowExec(p *KubeconfigPolicy) { p.AllowExec = true }

// Ensure returns the cluster's connection, creating it, or replacing it
// when the kubeconfig (or what the options allow) changed. The
// kubeconfig's contents never appear in the errors it returns.
func (r *Registry) Ensure(key types.NamespacedName, kubeconfig []byte, opts ...EnsureOption) (*Connection, error) {
	return r.ensure(key, kubeconfig, false, opts)
}

// Reconnect replaces the cluster's connection with a fresh one, in one
// step (the cluster is never without one): its watches list at once. For a
// member that answers again after an outage: a reflector that failed for a
// while waits out its backoff, up to a minute, before it lists again.
func (r *Registry) Reconnect(key types.NamespacedName, kubeconfig []byte, opts ...EnsureOption) (*Connection, error) {
	return r.ensure(key, kubeconfig, true, opts)
}

func (r *Registry) ensure(key types.NamespacedName, kubeconfig []byte, fresh bool, opts []EnsureOption) (*Connection, error) {
	policy := r.opts.Policy
	for _, o := range opts {
		o(&policy)
	}
	// What the policy allows is part of the connection: a change of it
	// makes a new one.
	h := sha256.New()
	_, _ = h.Write(kubeconfig)
	_, _ = fmt.Fprintf(h, "%+v", policy)
	var hash [sha256.Size]byte
	copy(hash[:], h.Sum(nil))
	r.mu.Lock()
	defer r.mu.Unlock()
	var namespaces map[string]v1alpha1.NamespaceName
	var id identity
	if c, ok := r.conns[key]; ok {
		if c.hash == hash && !fresh {
			return c, nil
		}
		c.mu.Lock()
		// The cluster's recorded identity is the cluster's, whatever the
		// kubeconfig: another one's connection serves once its summary
		// shows it.
		id.want, id.wantKnown = c.want, c.wantKnown
		if c.hash == hash {
			// The same cluster, reconnected (after an outage): it serves
			// the same namespaces, and is who it showed itself to be
			// until its fresh watch says otherwise, so that it is not
			// withheld meanwhile (its own candidates kept by no one).
			namespaces = c.namespaces
			id.seen, id.seenKnown = c.seen, c.seenKnown
		}
		c.mu.Unlock()
		delete(r.conns, key)
		// Closed without the lock: its watch's handlers may be waiting for it.
		go c.close()
	}
	cfg, err := policy.RESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = r.opts.QPS, r.opts.Burst
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, errors.New(errNewClient)
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, errors.New(errNewClient)
	}
	c := &Connection{Key: key, Config: cfg, HTTPClient: hc, Client: cs, hash: hash, timeout: r.opts.ProbeTimeout, done: make(chan struct{}), namespaces: namespaces,
		identity: id, requests: requestClient(hc, r.opts.RequestTimeout, r.opts.MaxInFlight)}
	ctx, cancel := context.WithCancel(context.Background())
	c.ctx, c.cancel = ctx, cancel
	c.notify = func() { r.notify(key) }
	c.chaperon = r.chaperonChanged
	c.synced = func() {
		if f := r.onSynced.Load(); f != nil && ctx.Err() == nil {
			(*f)(ctx, key)
		}
		if fs := r.alsoOnSynced.Load(); fs != nil && ctx.Err() == nil {
			for _, f := range *fs {
				f(ctx, key)
			}
		}
	}
	r.conns[key] = c
	return c, nil
}

// Get returns the cluster's connection, or nil.
func (r *Registry) Get(key types.NamespacedName) *Connection {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.conns[key]
}

// Connected reports whether the cluster has a connection, serving or not.
func (r *Registry) Connected(key types.NamespacedName) bool { return r.Get(key) != nil }

// Serving returns the cluster's connection if it serves (Member), or nil:
// what acts in the member as placer, as Member's users do.
func (r *Registry) Serving(key types.NamespacedName) *Connection {
	if c := r.Get(key); c != nil && c.serves() {
		return c
	}
	return nil
}

// Remove closes and forgets the cluster's connection, if any.
func (r *Registry) Remove(key types.NamespacedName) {
	r.mu.Lock()
	c, ok := r.conns[key]
	delete(r.conns, key)
	r.mu.Unlock()
	// Closed without the lock: its watch's handlers may be waiting for it.
	if ok {
		c.close()
	}
}

// Connections returns the open connections.
func (r *Registry) Connections() []*Connection {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Connection, 0, len(r.conns))
	for _, c := range r.conns {
		out = append(out, c)
	}
	return out
}

// Len is the number of open connections.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.conns)
}

// Close closes every connection.
func (r *Registry) Close() {
	r.mu.Lock()
	conns := r.conns
	r.conns = map[types.NamespacedName]*Connection{}
	r.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// RequestToken asks the member, as the connection's identity, for a token
// of one of its ServiceAccounts lasting ttl (RequestToken).
func (r *Registry) RequestToken(ctx context.Context, key, sa types.NamespacedName, ttl time.Duration) (string, error) {
	c := r.Get(key)
	if c == nil {
		return "", errors.Errorf("no connection to %s", key)
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
	defer cancel()
	return RequestToken(ctx, c.Client, sa, ttl)
}

// Connect keeps the cluster's connection (Ensure) and the member
// namespaces it serves (spec.targetNamespaces).
func (r *Registry) Connect(key types.NamespacedName, kubeconfig []byte, targetNamespaces map[string]v1alpha1.NamespaceName, opts ...EnsureOption) error {
	c, err := r.Ensure(key, kubeconfig, opts...)
	if err != nil {
		return err
	}
	c.SetTargetNamespaces(targetNamespaces)
	return nil
}
