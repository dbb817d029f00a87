package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/placer-dev/placer/internal/informers"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/transport"
	"k8s.io/utils/ptr"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

const (
	errWatchMember  = "cannot watch the member cluster"
	errTenantClient = "cannot create a client acting for the tenant in the member cluster"
	errLiveClient   = "cannot create a client reading the member cluster"
)

// Member is what the propagator needs of one member cluster: the
// Workload's chaperons there (from a watch), a client that acts for a
// tenant, and where a Workload's pods go. Connection is the real one;
// clustertest has an in-memory one for unit tests.
type Member interface {
	// ClusterKey is the KubernetesCluster the member is registered as.
	ClusterKey() types.NamespacedName
	// Host is the member's API server: two registrations of one host are
	// one cluster (OneCluster).
	Host() string
	// Identity is who the member showed itself to be (its kube-system
	// namespace's UID, as its agent publishes it), "" until it has: two
	// registrations of one identity are one cluster, whatever their
	// addresses (OneCluster).
	Identity() string
	// Synced reports, without waiting, whether the member's chaperons are
	// watched and listed: a member that does not answer never blocks.
	Synced() bool
	// Chaperons returns the Workload's chaperons in every namespace.
	Chaperons(ctx context.Context, workload types.UID) ([]*mcv1alpha1.PodChaperon, error)
	// ChaperonsLive returns them as the member's API server has them now,
	// not as the watch saw them: for the few decisions a chaperon made a
	// moment ago must not miss.
	ChaperonsLive(ctx context.Context, workload types.UID) ([]*mcv1alpha1.PodChaperon, error)
	// HeldRunnerUps counts the runner-up candidates waiting there
	// (propagator.HeldRunnerUp), of every Workload.
	HeldRunnerUps(ctx context.Context) (int, error)
	// Tenant returns a client that writes as the tenant of a management
	// namespace (mcv1alpha1.TenantUser) and reads chaperons from the watch.
	Tenant(namespace string) (client.Client, error)
	// TargetNamespace is the member namespace the Workload delivers into.
	TargetNamespace(w *v1alpha1.Workload) string
}

// Members looks members up.
type Members interface {
	// Member returns the registered member, or nil.
	Member(key types.NamespacedName) Member
	// Members returns every registered member.
	Members() []Member
}

var _ Member = &Connection{}

// SameHost reports whether two registrations are one member cluster
// (OneCluster): what is copied into one is there for the other too.
func SameHost(ms Members, a, b types.NamespacedName) bool {
	ma, mb := ms.Member(a), ms.Member(b)
	return ma != nil && mb != nil && OneCluster(ma, mb)
}

// OneCluster reports whether two members are one cluster: registered at
// the same API server, or at two addresses of it (a load balancer and a
// node's, say) that both showed the same identity.
func OneCluster(a, b Member) bool {
	return a.Host() == b.Host() || a.Identity() != "" && a.Identity() == b.Identity()
}

// Connection is one member cluster: its transport and clients, and every
// watch placer keeps of it (the ClusterSummary its agent publishes, the
// chaperons placer made there), started and stopped as one.
type Connection struct {
	Key    types.NamespacedName
	Config *rest.Config
	// HTTPClient is the one transport to the member: every client and
	// cache of the member shares it (client-go would cache a transport per
	// client built from a Config with a dialer of its own, and never free it).
	HTTPClient *http.Client
	Client     kubernetes.Interface
	// requests shares HTTPClient's transport for every request that is
	// not a watch: each has a deadline, and few are in flight at once.
	requests *http.Client

	hash     [sha256.Size]byte
	timeout  time.Duration
	notify   func()
	chaperon func(ch *mcv1alpha1.PodChaperon, workload types.NamespacedName)
	// synced is called once the watch has listed the member's chaperons.
	synced func()
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu         sync.Mutex
	namespaces map[string]v1alpha1.NamespaceName
	closed     bool
	cache      crcache.Cache
	summary    crcache.Informer
	chaperons  crcache.Informer
	// beat is the summary's last heartbeatTime (known once the watch has
	// seen a summary) and beatSeen when this process saw it change (its
	// own clock, so no skew between clusters counts); watching is when the
	// watch started.
	beat      metav1.Time
	beatKnown bool
	beatSeen  time.Time
	watching  time.Time
	identity
	reader client.Client
	// live reads without the watch (ChaperonsLive).
	live    client.Client
	tenants map[string]client.Client
	stopped chan struct{}
}

// memberScheme knows the kinds placer reads and writes in a member.
var memberScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := mcv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// Watch starts, once, the member's watches: the ClusterSummary the
// member's agent publishes (the management side never reads the member's
// Nodes or Pods, design §5) and the chaperons placer made there. The
// cluster controller calls it after each successful probe, so credentials
// the member refuses never start watches that retry forever; it fails
// while the member does not serve placer's kinds (no agent yet) and is
// tried again at the next probe.
func (c *Connection) Watch(ctx context.Context) error {
	// The watches are built without the lock (discovery talks to the
	// member), so Synced, Tenant and close never wait on the network. Only
	// the cluster controller calls Watch, never twice at once for one
	// cluster (one reconcile per key at a time).
	c.mu.Lock()
	if c.closed || c.cache != nil {
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	gctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	ca, mapper, err := c.newCache(gctx)
	if err != nil {
		return errors.Wrap(err, errWatchMember)
	}
	summary, err := ca.GetInformer(gctx, &mcv1alpha1.ClusterSummary{}, crcache.BlockUntilSynced(false))
	if err != nil {
		return errors.Wrap(err, errWatchMember)
	}
	if _, err := summary.AddEventHandler(informers.OnEvery(func(s *mcv1alpha1.ClusterSummary) {
		c.sawHeartbeat(s)
		c.sawIdentity(s)
		c.notify()
	})); err != nil {
		return errors.Wrap(err, errWatchMember)
	}
	chaperons, err := ca.GetInformer(gctx, &mcv1alpha1.PodChaperon{}, crcache.BlockUntilSynced(false))
	if err != nil {
		return errors.Wrap(err, errWatchMember)
	}
	if _, err := chaperons.AddEventHandler(informers.OnEvery(func(ch *mcv1alpha1.PodChaperon) {
		if key, ok := WorkloadOf(ch); ok {
			c.chaperon(ch, key)
		}
	})); err != nil {
		return errors.Wrap(err, errWatchMember)
	}
	// Chaperons are read from the watch; the one delivered Service per
	// Workload is read directly rather than cached fleet-wide, and so is
	// the summary when its watch is checked (LiveHeartbeat).
	reader, err := client.New(c.Config, client.Options{HTTPClient: c.requests, Scheme: memberScheme, Mapper: mapper,
		Cache: &client.CacheOptions{Reader: ca, DisableFor: []client.Object{&corev1.Service{}, &mcv1alpha1.ClusterSummary{}}}})
	if err != nil {
		return errors.Wrap(err, errWatchMember)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.stopped = make(chan struct{})
	go func() {
		defer close(c.stopped)
		_ = ca.Start(c.ctx)
	}()
	if c.synced != nil {
		go func() {
			if toolscache.WaitForCacheSync(c.ctx.Done(), chaperons.HasSynced) {
				c.synced()
			}
		}()
	}
	c.cache, c.summary, c.chaperons, c.reader = ca, summary, chaperons, reader
	c.watching = time.Now()
	return nil
}

// newCache builds the cache of the member's watches (not started): the
// ClusterSummary, and the chaperons placer made there, indexed by their
// Workload's UID and by whether they are runner-ups still waiting.
func (c *Connection) newCache(gctx context.Context) (crcache.Cache, meta.RESTMapper, error) {
	hasWorkload, err := labels.NewRequirement(mcv1alpha1.LabelWorkloadUID, selection.Exists, nil)
	if err != nil {
		return nil, nil, err
	}
	// One REST mapper for the watch and the clients: placer's kinds are
	// discovered once per attempt, not once per client.
	mapper, err := apiutil.NewDynamicRESTMapper(c.Config, c.requests)
	if err != nil {
		return nil, nil, err
	}
	ca, err := crcache.New(c.Config, crcache.Options{
		HTTPClient: c.HTTPClient,
		Mapper:     mapper,
		// A read of a kind not watched here fails instead of starting a
		// fleet-wide watch under the manager's identity.
		ReaderFailOnMissingInformer: true,
		DefaultWatchErrorHandler:    WatchErrors(c.Key),
		Scheme:                      memberScheme,
		// The manager reads no managedFields: its copies of chaperons,
		// each a whole pod spec, keep none.
		DefaultTransform: crcache.TransformStripManagedFields(),
		ByObject: map[client.Object]crcache.ByObject{
			&mcv1alpha1.ClusterSummary{}: {Field: fields.OneTermEqualSelector("metadata.name", mcv1alpha1.ClusterSummaryName)},
			&mcv1alpha1.PodChaperon{}:    {Label: labels.NewSelector().Add(*hasWorkload)},
		},
	})
	if err != nil {
		return nil, nil, err
	}
	// A Workload's chaperons are looked up by its UID on every reconcile:
	// an index, not a walk over every chaperon of the member.
	if err := ca.IndexField(gctx, &mcv1alpha1.PodChaperon{}, indexWorkloadUID, func(o client.Object) []string {
		return []string{o.GetLabels()[mcv1alpha1.LabelWorkloadUID]}
	}); err != nil {
		return nil, nil, err
	}
	// The fan-out bound counts the runner-ups waiting in the member.
	if err := ca.IndexField(gctx, &mcv1alpha1.PodChaperon{}, indexHeldRunnerUp, func(o client.Object) []string {
		if ch, ok := o.(*mcv1alpha1.PodChaperon); ok && ch.HeldRunnerUp() {
			return []string{"true"}
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	return ca, mapper, nil
}

// LiveHeartbeat reads the summary's heartbeat from the member's API
// server itself, not the watch, bounded by the probe timeout: when the
// watch has been silent too long, it tells a stopped agent from a watch
// that is waiting out its reflector's backoff.
func (c *Connection) LiveHeartbeat(ctx context.Context) (metav1.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	c.mu.Lock()
	reader := c.reader
	c.mu.Unlock()
	if reader == nil {
		return metav1.Time{}, errors.New(errWatchMember)
	}
	s := &mcv1alpha1.ClusterSummary{}
	if err := reader.Get(ctx, types.NamespacedName{Name: mcv1alpha1.ClusterSummaryName}, s); err != nil {
		return metav1.Time{}, err
	}
	return ptr.Deref(s.Status.HeartbeatTime, metav1.Time{}), nil
}

// WatchStarted is when the member's watches started; zero before.
func (c *Connection) WatchStarted() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.watching
}

// sawHeartbeat records when the summary's heartbeat last changed. The
// first summary seen is not a beat: it may be an old one.
func (c *Connection) sawHeartbeat(s *mcv1alpha1.ClusterSummary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	beat := ptr.Deref(s.Status.HeartbeatTime, metav1.Time{})
	switch {
	case !c.beatKnown:
		c.beat, c.beatKnown = beat, true
	case !beat.Equal(&c.beat):
		c.beat, c.beatSeen = beat, time.Now()
	}
}

// identity is who a connection's member must be and who it says it is:
// want is the cluster's recorded identity (status.clusterID, "" when none
// is), known once the cluster controller said it (Expect); seen is the one
// the summary's watch last showed. A connection serves (Registry.Member)
// only once want is known and, when it is not empty, seen matches it.
type identity struct {
	want      string
	wantKnown bool
	seen      string
	seenKnown bool
}

// sawIdentity records who the member says it is.
func (c *Connection) sawIdentity(s *mcv1alpha1.ClusterSummary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen, c.seenKnown = s.Status.ClusterID, true
}

// Identity is who the member showed itself to be, "" until it has.
func (c *Connection) Identity() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen
}

// Expect sets the identity placer recorded for the cluster
// (status.clusterID; "" when none is recorded yet).
func (c *Connection) Expect(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.want, c.wantKnown = id, true
}

// serves reports whether the connection reaches the cluster placer placed
// in: its identity is recorded and its summary shows it, or none is
// recorded yet. One that does not is no one's member (Registry.Member):
// what it shows is another cluster's, and nothing is sent to it.
func (c *Connection) serves() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wantKnown && (c.want == "" || c.seenKnown && c.seen == c.want)
}

// WorkloadOf returns the Workload a chaperon was made for.
func WorkloadOf(ch *mcv1alpha1.PodChaperon) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(ch.Annotations[mcv1alpha1.AnnotationWorkload], "/")
	return types.NamespacedName{Namespace: ns, Name: name}, ok
}

// close stops every watch and waits for its goroutines to end. The
// registry has forgotten the connection before it is closed.
func (c *Connection) close() {
	c.mu.Lock()
	c.closed = true
	stopped := c.stopped
	c.mu.Unlock()
	c.cancel()
	if b, ok := c.requests.Transport.(*boundedTransport); ok {
		// Who waits for one of its slots goes on with the connection
		// that replaces it (or finds none), not when this one's requests,
		// hung on an outage maybe, end, nor once its watches have.
		b.slots.wakeAll()
	}
	if stopped != nil {
		<-stopped
	}
	c.HTTPClient.CloseIdleConnections()
	close(c.done)
}

// ClusterKey is the KubernetesCluster of the connection.
func (c *Connection) ClusterKey() types.NamespacedName { return c.Key }

// Host is the member's API server.
func (c *Connection) Host() string { return c.Config.Host }

// Synced reports whether the chaperon watch holds a full list: never
// once the connection is closed, whose watch stopped (a caller holding it
// across a replacement reads a frozen cache).
func (c *Connection) Synced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.closed && c.chaperons != nil && c.chaperons.HasSynced()
}

// indexWorkloadUID indexes the watched chaperons by their Workload's UID.
const indexWorkloadUID = "workloadUID"

// Chaperons returns the Workload's chaperons in every namespace, from the
// watch's index.
func (c *Connection) Chaperons(ctx context.Context, workload types.UID) ([]*mcv1alpha1.PodChaperon, error) {
	c.mu.Lock()
	reader := c.reader
	c.mu.Unlock()
	if reader == nil {
		return nil, errors.New(errWatchMember)
	}
	l := &mcv1alpha1.PodChaperonList{}
	if err := reader.List(ctx, l, client.MatchingFields{indexWorkloadUID: string(workload)}); err != nil {
		return nil, err
	}
	out := make([]*mcv1alpha1.PodChaperon, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

// ChaperonsLive lists the Workload's chaperons from the member's API
// server, as the manager's identity (which watches them), with the
// deadline of every request.
func (c *Connection) ChaperonsLive(ctx context.Context, workload types.UID) ([]*mcv1alpha1.PodChaperon, error) {
	c.mu.Lock()
	if c.reader == nil {
		c.mu.Unlock()
		return nil, errors.New(errWatchMember)
	}
	if c.live == nil {
		cl, err := client.New(c.Config, client.Options{HTTPClient: c.requests, Scheme: memberScheme, Mapper: c.reader.RESTMapper()})
		if err != nil {
			c.mu.Unlock()
			return nil, errors.Wrap(err, errLiveClient)
		}
		c.live = cl
	}
	live := c.live
	c.mu.Unlock()
	l := &mcv1alpha1.PodChaperonList{}
	if err := live.List(ctx, l, client.MatchingLabels{mcv1alpha1.LabelWorkloadUID: string(workload)}); err != nil {
		return nil, err
	}
	out := make([]*mcv1alpha1.PodChaperon, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

// indexHeldRunnerUp indexes the runner-up candidates still waiting.
const indexHeldRunnerUp = "heldRunnerUp"

// HeldRunnerUps counts the runner-up candidates waiting in the member,
// from the watch's index (no deep copies).
func (c *Connection) HeldRunnerUps(ctx context.Context) (int, error) {
	c.mu.Lock()
	reader := c.reader
	c.mu.Unlock()
	if reader == nil {
		return 0, errors.New(errWatchMember)
	}
	l := &mcv1alpha1.PodChaperonList{}
	if err := reader.List(ctx, l, client.MatchingFields{indexHeldRunnerUp: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	return len(l.Items), nil
}

// Tenant returns the client that acts in the member for the Workloads of a
// management namespace: it impersonates mcv1alpha1.TenantUser(namespace),
// so the member's own RBAC decides where that tenant may place, and its
// audit log says who did (design §5). It shares the member's transport and
// the watch's REST mapper; reads of chaperons come from the watch.
func (c *Connection) Tenant(namespace string) (client.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.tenants[namespace]; ok {
		return cl, nil
	}
	if c.reader == nil {
		return nil, errors.New(errWatchMember)
	}
	hc := &http.Client{
		Transport: transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{UserName: mcv1alpha1.TenantUser(namespace)}, c.requests.Transport),
		Timeout:   c.requests.Timeout,
	}
	cl, err := client.New(c.Config, client.Options{HTTPClient: hc, Scheme: memberScheme, Mapper: c.reader.RESTMapper(),
		Cache: &client.CacheOptions{Reader: c.cache, DisableFor: []client.Object{&corev1.Service{}, &corev1.ConfigMap{}, &corev1.Secret{}, &corev1.ServiceAccount{}}}})
	if err != nil {
		return nil, errors.Wrap(err, errTenantClient)
	}
	if c.tenants == nil {
		c.tenants = map[string]client.Client{}
	}
	c.tenants[namespace] = cl
	return cl, nil
}

// TenantStreams returns what reaches a tenant's pods in the member as the
// tenant (mcv1alpha1.TenantUser(namespace)) for requests that stream
// (kubectl logs, exec, attach of a proxy pod): a clientset on the
// member's one transport, with no deadline (a followed log lasts as long
// as its reader), and the REST config that the upgraded connections of
// exec and attach dial with.
func (c *Connection) TenantStreams(namespace string) (kubernetes.Interface, *rest.Config, error) {
	imp := transport.ImpersonationConfig{UserName: mcv1alpha1.TenantUser(namespace)}
	hc := &http.Client{Transport: transport.NewImpersonatingRoundTripper(imp, c.HTTPClient.Transport)}
	cfg := rest.CopyConfig(c.Config)
	cfg.Timeout = 0
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, nil, errors.Wrap(err, errTenantClient)
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: imp.UserName}
	return cs, cfg, nil
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
	return w.TargetNamespace(c.namespaces)
}

// Done is closed once the connection is closed and its watches stopped.
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

// Summary is what the watch of a member's ClusterSummary shows.
type Summary struct {
	// Status is what the member's agent last published.
	Status mcv1alpha1.ClusterSummaryStatus
	// Synced is true once the watch has listed the summary.
	Synced bool
	// Found is true once the agent has published a summary.
	Found bool
	// Changed is true once the watch has seen the heartbeat change; until
	// then Silent counts from the watch's start.
	Changed bool
	// Silent is how long the heartbeat has not changed, by this
	// process's clock.
	Silent time.Duration
	// Beat is the last heartbeat the watch saw.
	Beat metav1.Time
}

// Summary returns what the member's agent last published and how long ago
// its heartbeat last changed.
func (c *Connection) Summary(ctx context.Context) Summary {
	c.mu.Lock()
	ca, inf, seen, beat := c.cache, c.summary, c.beatSeen, c.beat
	changed := !seen.IsZero()
	if !changed {
		seen = c.watching
	}
	c.mu.Unlock()
	if ca == nil {
		return Summary{}
	}
	out := Summary{Synced: inf.HasSynced(), Silent: time.Since(seen), Changed: changed, Beat: beat}
	if !out.Synced {
		return out
	}
	s := &mcv1alpha1.ClusterSummary{}
	if err := ca.Get(ctx, types.NamespacedName{Name: mcv1alpha1.ClusterSummaryName}, s); err != nil {
		return out
	}
	out.Status, out.Found = s.Status, true
	return out
}

// ConfirmedChaperons returns the Workload's chaperons in a member, from
// its watch and, when the member answers and the watch shows none, from
// its API server: nothing there lets a cluster go (a move's end, a
// deletion's, a deleted cluster's drain), and a chaperon made a moment
// ago, or one a watch broken by a flapping link has not listed again, may
// not be in the watch yet (a copy that would run on, named nowhere).
// Without answers (a cluster that is not Ready, for a move or a drain) it
// is sent nothing: what its watch last saw is all there is, and its
// caller never takes that for "nothing".
func ConfirmedChaperons(ctx context.Context, m Member, workload types.UID, answers bool) ([]*mcv1alpha1.PodChaperon, error) {
	chs, err := m.Chaperons(ctx, workload)
	if err != nil || len(chs) > 0 || !answers {
		return chs, err
	}
	return m.ChaperonsLive(ctx, workload)
}
