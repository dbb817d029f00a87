package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/propagator"
)

const (
	errParseKubeconfig = "kubeconfig cannot be parsed"
	errNewClient       = "cannot create a client from the kubeconfig"
	errWatchSummary    = "cannot watch the ClusterSummary published by placer's agent"
	errNotKubernetes   = "the server's /version is not a Kubernetes version"
)

// Options tune the connections of a Registry.
type Options struct {
	// QPS and Burst of each member client.
	QPS   float32
	Burst int
	// ProbeTimeout bounds one reachability probe.
	ProbeTimeout time.Duration
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
}

// NewRegistry returns a registry that calls notify (which must not block)
// whenever a member's summary changes.
func NewRegistry(opts Options, notify func(types.NamespacedName)) *Registry {
	if opts.QPS == 0 {
		opts.QPS = 20
	}
	if opts.Burst == 0 {
		opts.Burst = 40
	}
	if opts.ProbeTimeout == 0 {
		opts.ProbeTimeout = 5 * time.Second
	}
	if notify == nil {
		notify = func(types.NamespacedName) {}
	}
	return &Registry{opts: opts, notify: notify, conns: map[types.NamespacedName]*Connection{}}
}

// Connection is a live connection to one member cluster: a client for
// probes and an informer on the ClusterSummary its agent publishes.
type Connection struct {
	Key    types.NamespacedName
	Config *rest.Config
	// HTTPClient is the one transport to the member: every client and
	// cache of the member shares it (client-go would cache a transport per
	// client built from a Config with a dialer of its own, and never free it).
	HTTPClient *http.Client
	Client     kubernetes.Interface

	hash    [sha256.Size]byte
	timeout time.Duration
	notify  func()
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}

	mu         sync.Mutex
	namespaces map[string]v1alpha1.NamespaceName
	closed     bool
	summary  crcache.Cache
	informer crcache.Informer
	stopped  chan struct{}
}

// Ensure returns the cluster's connection, creating it, or replacing it
// when the kubeconfig changed. The kubeconfig's contents never appear in
// the errors it returns.
func (r *Registry) Ensure(key types.NamespacedName, kubeconfig []byte) (*Connection, error) {
	hash := sha256.Sum256(kubeconfig)
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.conns[key]; ok {
		if c.hash == hash {
			return c, nil
		}
		c.close()
		delete(r.conns, key)
	}
	cfg, err := r.opts.Policy.RESTConfig(kubeconfig)
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
	c := &Connection{Key: key, Config: cfg, HTTPClient: hc, Client: cs, hash: hash, timeout: r.opts.ProbeTimeout, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	c.ctx, c.cancel = ctx, cancel
	c.notify = func() { r.notify(key) }
	r.conns[key] = c
	return c, nil
}

// Get returns the cluster's connection, or nil.
func (r *Registry) Get(key types.NamespacedName) *Connection {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.conns[key]
}

// Remove closes and forgets the cluster's connection, if any.
func (r *Registry) Remove(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.conns[key]; ok {
		c.close()
		delete(r.conns, key)
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
	defer r.mu.Unlock()
	for k, c := range r.conns {
		c.close()
		delete(r.conns, k)
	}
}

// summaryScheme knows the one kind a connection watches.
var summaryScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := mcv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// Watch starts, once, an informer on the ClusterSummary the member's agent
// publishes: the management side never reads the member's Nodes or Pods
// (design §5). The cluster controller calls it after each successful
// probe, so credentials the member refuses never start watches that retry
// forever; it fails while the member does not serve ClusterSummaries
// (no agent yet) and is tried again at the next probe.
func (c *Connection) Watch(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.summary != nil {
		return nil
	}
	ca, err := crcache.New(c.Config, crcache.Options{
		HTTPClient:               c.HTTPClient,
		DefaultWatchErrorHandler: WatchErrors(c.Key),
		Scheme:                   summaryScheme,
		ByObject: map[client.Object]crcache.ByObject{
			&mcv1alpha1.ClusterSummary{}: {Field: fields.OneTermEqualSelector("metadata.name", mcv1alpha1.ClusterSummaryName)},
		},
	})
	if err != nil {
		return errors.Wrap(err, errWatchSummary)
	}
	gctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	inf, err := ca.GetInformer(gctx, &mcv1alpha1.ClusterSummary{}, crcache.BlockUntilSynced(false))
	if err != nil {
		return errors.Wrap(err, errWatchSummary)
	}
	notify := func(any) { c.notify() }
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(any, any) { c.notify() },
		DeleteFunc: notify,
	}); err != nil {
		return errors.Wrap(err, errWatchSummary)
	}
	c.stopped = make(chan struct{})
	go func() {
		defer close(c.stopped)
		_ = ca.Start(c.ctx)
	}()
	c.summary, c.informer = ca, inf
	return nil
}

// close stops the summary informer and waits for its goroutines to end.
func (c *Connection) close() {
	c.mu.Lock()
	c.closed = true
	stopped := c.stopped
	c.mu.Unlock()
	c.cancel()
	if stopped != nil {
		<-stopped
	}
	c.HTTPClient.CloseIdleConnections()
	close(c.done)
}

// SetTargetNamespaces records the cluster's spec.targetNamespaces.
func (c *Connection) SetTargetNamespaces(m map[string]v1alpha1.NamespaceName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.namespaces = m
}

// TargetNamespace is the member namespace the Workload delivers into here.
func (c *Connection) TargetNamespace(w *v1alpha1.Workload) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return propagator.TargetNamespace(w, c.namespaces)
}

// Done is closed once the connection is closed and its informers stopped.
func (c *Connection) Done() <-chan struct{} { return c.done }

// Probe asks the member for its /version, bounded by the probe timeout.
func (c *Connection) Probe(ctx context.Context) (*version.Info, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	body, err := c.Client.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	info := &version.Info{}
	if err := json.Unmarshal(body, info); err != nil {
		return nil, errors.New(errNotKubernetes)
	}
	// Whatever answers is quoted only once it looks like Kubernetes.
	if _, err := utilversion.ParseSemantic(info.GitVersion); err != nil || len(info.GitVersion) > 64 {
		return nil, errors.New(errNotKubernetes)
	}
	return info, nil
}

// Summary returns what the member's agent last published, and false while
// the informer has not synced or the agent has published nothing.
func (c *Connection) Summary(ctx context.Context) (Summary, bool) {
	c.mu.Lock()
	ca, inf := c.summary, c.informer
	c.mu.Unlock()
	if ca == nil || !inf.HasSynced() {
		return Summary{}, false
	}
	s := &mcv1alpha1.ClusterSummary{}
	if err := ca.Get(ctx, types.NamespacedName{Name: mcv1alpha1.ClusterSummaryName}, s); err != nil {
		return Summary{}, false
	}
	return s.Status, true
}
