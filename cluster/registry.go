package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	errParseKubeconfig = "kubeconfig cannot be parsed"
	errNewClient       = "cannot create a client from the kubeconfig"
)

// Options tune the connections of a Registry.
type Options struct {
	// QPS and Burst of each member client.
	QPS   float32
	Burst int
	// ProbeTimeout bounds one reachability probe.
	ProbeTimeout time.Duration
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
// whenever a member's nodes or pods change.
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

// Connection is a live connection to one member cluster: a client and
// informers on its nodes and bound pods, which feed its Summary.
type Connection struct {
	Key    types.NamespacedName
	Config *rest.Config
	Client kubernetes.Interface

	hash    [sha256.Size]byte
	timeout time.Duration
	notify  func()
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}

	mu        sync.Mutex
	closed    bool
	factories []informers.SharedInformerFactory
	nodes     cache.SharedIndexInformer
	pods      cache.SharedIndexInformer
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
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = r.opts.QPS, r.opts.Burst
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, errors.New(errNewClient)
	}
	c := &Connection{Key: key, Config: cfg, Client: cs, hash: hash, timeout: r.opts.ProbeTimeout, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	c.ctx, c.cancel = ctx, cancel
	c.notify = func() { r.notify(key) }
	r.conns[key] = c
	return c, nil
}

// restConfig parses a kubeconfig. Parse errors can quote the input, so only
// clientcmd's validation errors, which name contexts and clusters, are kept.
func restConfig(kubeconfig []byte) (*rest.Config, error) {
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, errors.New(errParseKubeconfig)
	}
	if err := clientcmd.ConfirmUsable(*raw, ""); err != nil {
		return nil, errors.Wrap(err, "kubeconfig is not usable")
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, errors.Wrap(err, "kubeconfig is not usable")
	}
	return cfg, nil
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

// boundPods selects the pods that hold node resources.
var boundPods = fields.AndSelectors(
	fields.OneTermNotEqualSelector("spec.nodeName", ""),
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
).String()

// Watch starts the informers on the member's nodes and bound pods, once.
// The cluster controller calls it after the first successful probe, so
// credentials the member refuses never start watches that retry forever.
func (c *Connection) Watch() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.nodes != nil {
		return
	}
	nodes := informers.NewSharedInformerFactory(c.Client, 0)
	pods := informers.NewSharedInformerFactoryWithOptions(c.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = boundPods }),
		informers.WithTransform(trimPod))
	c.nodes = nodes.Core().V1().Nodes().Informer()
	c.pods = pods.Core().V1().Pods().Informer()
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.notify() },
		UpdateFunc: func(any, any) { c.notify() },
		DeleteFunc: func(any) { c.notify() },
	}
	_, _ = c.nodes.AddEventHandler(h)
	_, _ = c.pods.AddEventHandler(h)
	nodes.Start(c.ctx.Done())
	pods.Start(c.ctx.Done())
	c.factories = []informers.SharedInformerFactory{nodes, pods}
}

// trimPod keeps only what the summary needs, so a large member costs little memory.
func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion},
		Spec: corev1.PodSpec{
			NodeName:       p.Spec.NodeName,
			Containers:     trimContainers(p.Spec.Containers),
			InitContainers: trimContainers(p.Spec.InitContainers),
			Overhead:       p.Spec.Overhead,
			Resources:      p.Spec.Resources,
		},
		Status: corev1.PodStatus{Phase: p.Status.Phase},
	}, nil
}

func trimContainers(cs []corev1.Container) []corev1.Container {
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy}
	}
	return out
}

// close stops the informers and waits for their goroutines to end.
func (c *Connection) close() {
	c.mu.Lock()
	c.closed = true
	factories := c.factories
	c.mu.Unlock()
	c.cancel()
	for _, f := range factories {
		f.Shutdown()
	}
	close(c.done)
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
		return nil, errors.Wrap(err, "cannot decode /version")
	}
	return info, nil
}

// Synced reports whether the node and pod caches hold a full list.
func (c *Connection) Synced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes != nil && c.nodes.HasSynced() && c.pods.HasSynced()
}

// Summary adds up the member's nodes and bound pods from the informer caches.
func (c *Connection) Summary() Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodes == nil {
		return Summarize(nil, nil)
	}
	nodes := make([]*corev1.Node, 0, len(c.nodes.GetStore().List()))
	for _, o := range c.nodes.GetStore().List() {
		if n, ok := o.(*corev1.Node); ok {
			nodes = append(nodes, n)
		}
	}
	pods := make([]*corev1.Pod, 0, len(c.pods.GetStore().List()))
	for _, o := range c.pods.GetStore().List() {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	return Summarize(nodes, pods)
}
