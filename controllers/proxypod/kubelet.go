package proxypod

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	vkapi "github.com/virtual-kubelet/virtual-kubelet/node/api"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

// The management cluster's own rights the kubelet API needs: it
// authenticates the API server's client certificate against the client CA
// of the ConfigMap kube-system/extension-apiserver-authentication, and
// asks the API server whether the caller may reach the node, as a kubelet
// does.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// KubeletEndpoint is where the management cluster's API server reaches the
// virtual nodes' kubelet API: every virtual node names the manager that
// serves it (an address of the manager's pod, and its port).
type KubeletEndpoint struct {
	Address string
	Port    int32
}

// Kubelet serves the kubelet API of every virtual node: kubectl logs,
// exec and attach of a proxy pod reach its delegate's containers in the
// member that runs it, as the tenant of the pod's namespace, so that the
// member's RBAC (mcv1alpha1.StreamsRole) decides, as it does for every other request
// placer makes there for that tenant. Callers are authenticated and
// authorized as a kubelet authenticates the API server: a client
// certificate of the cluster's client CA (or a token), and nodes/proxy of
// the pod's node granted by the management cluster's authorizer.
type Kubelet struct {
	// Reader reads proxy pods and their Workloads (the manager's cache).
	Reader  client.Reader
	Members Chaperons
	// Client is the management cluster's: token and access reviews, and
	// the client CA's ConfigMap.
	Client kubernetes.Interface
	// BindAddress is the TLS address served; Certificate serves it.
	BindAddress string
	Certificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// NeedLeaderElection is false: every replica serves (the virtual nodes
// name the leader's address, which writes them).
func (k *Kubelet) NeedLeaderElection() bool { return false }

// Start serves until ctx ends.
func (k *Kubelet) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", k.BindAddress)
	if err != nil {
		return errors.Wrap(err, "cannot listen for the virtual nodes' kubelet API")
	}
	h, err := k.Handler(ctx)
	if err != nil {
		_ = ln.Close()
		return err
	}
	// The client certificate is verified by the authenticator, against
	// the client CA the API server publishes (it may change).
	ln = tls.NewListener(ln, &tls.Config{GetCertificate: k.Certificate, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return errors.Wrap(err, "the virtual nodes' kubelet API stopped")
	}
	return nil
}

// Handler is the kubelet API as served: authentication, authorization,
// the delegate looked up (and the member's consent asked), then
// virtual-kubelet's handlers of logs, exec and attach. The client CA's
// watch runs until ctx ends.
func (k *Kubelet) Handler(ctx context.Context) (http.Handler, error) {
	ca, err := dynamiccertificates.NewDynamicCAFromConfigMapController("client-ca", metav1.NamespaceSystem, "extension-apiserver-authentication", "client-ca-file", k.Client)
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the management cluster's client CA")
	}
	if err := ca.RunOnce(ctx); err != nil {
		return nil, errors.Wrap(err, "cannot read the management cluster's client CA")
	}
	go ca.Run(ctx, 1)
	auth, err := nodeutil.WebhookAuth(k.Client, "", func(c *nodeutil.WebhookAuthConfig) error {
		c.AuthnConfig.ClientCertificateCAContentProvider = ca
		return nil
	})
	if err != nil {
		return nil, errors.Wrap(err, "cannot build the kubelet API's authentication")
	}
	pods := vkapi.PodHandler(vkapi.PodHandlerConfig{
		GetContainerLogs: k.logs, RunInContainer: k.exec, AttachToContainer: k.attach,
	}, false)
	return nodeutil.WithAuth(&podNodeAuth{Auth: auth, nodeOf: k.nodeOf}, k.consent(pods)), nil
}

// podNodeAuth authorizes a request on the node of the pod it names (the
// virtual node of the pod's cluster), as a kubelet does on its own name.
type podNodeAuth struct {
	nodeutil.Auth
	nodeOf func(*http.Request) string
}

func (a *podNodeAuth) GetRequestAttributes(u user.Info, r *http.Request) authorizer.Attributes {
	attrs := nodeutil.NodeRequestAttr{NodeName: a.nodeOf(r)}.GetRequestAttributes(u, r)
	if rec, ok := attrs.(authorizer.AttributesRecord); ok {
		if sp, ok := parseStreamPath(r.URL.Path); ok && sp.kind != "containerLogs" {
			// exec and attach write into a container, whichever method
			// opens them (a WebSocket starts with a GET): create.
			rec.Verb = "create"
			return rec
		}
	}
	return attrs
}

// streamPath is a request of the kubelet API on a pod's container:
// /containerLogs, /exec or /attach, then namespace, pod and container.
type streamPath struct {
	kind, namespace, pod string
}

func parseStreamPath(p string) (streamPath, bool) {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(parts) != 4 || parts[1] == "" || parts[2] == "" {
		return streamPath{}, false
	}
	switch parts[0] {
	case "containerLogs", "exec", "attach":
		return streamPath{kind: parts[0], namespace: parts[1], pod: parts[2]}, true
	}
	return streamPath{}, false
}

// nodeOf is the node the request's pod is bound to; none (which no grant
// of a named node matches) for any other request.
func (k *Kubelet) nodeOf(r *http.Request) string {
	sp, ok := parseStreamPath(r.URL.Path)
	if !ok {
		return ""
	}
	pod := &corev1.Pod{}
	if err := k.Reader.Get(r.Context(), types.NamespacedName{Namespace: sp.namespace, Name: sp.pod}, pod); err != nil {
		return ""
	}
	return pod.Spec.NodeName
}

// target is a proxy pod's delegate: where it runs, and the tenant's way
// to it.
type target struct {
	namespace, name string
	cluster         types.NamespacedName
	cs              kubernetes.Interface
	cfg             *rest.Config
}

type targetKey struct{}

// consent finds the delegate of the request's proxy pod and asks the
// member, as the tenant, whether it may read the delegate's logs (or
// exec, attach) there, so that a refusal is a Forbidden that names the
// member's role rather than a broken stream; the handlers then stream to
// that delegate.
func (k *Kubelet) consent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sp, ok := parseStreamPath(r.URL.Path)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		sub, verb := "exec", "create"
		switch sp.kind {
		case "containerLogs":
			sub, verb = "log", "get"
		case "attach":
			sub = "attach"
		}
		t, err := k.target(r.Context(), sp.namespace, sp.pod)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: t.namespace, Verb: verb, Resource: "pods", Subresource: sub, Name: t.name,
		}}}
		got, err := t.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(r.Context(), ssar, metav1.CreateOptions{})
		if err != nil {
			http.Error(w, fmt.Sprintf("cannot ask cluster %s whether tenant %s may %s pods/%s: %v", t.cluster, mcv1alpha1.TenantUser(sp.namespace), verb, sub, err), http.StatusServiceUnavailable)
			return
		}
		if !got.Status.Allowed {
			http.Error(w, fmt.Sprintf("cluster %s does not let tenant %s %s pods/%s in namespace %s (the member grants it with the ClusterRole %s)",
				t.cluster, mcv1alpha1.TenantUser(sp.namespace), verb, sub, t.namespace, mcv1alpha1.StreamsRole), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), targetKey{}, t)))
	})
}

// target finds a proxy pod's delegate: the pod's own Workload (one a
// user named as the pod is not), bound in its cluster.
func (k *Kubelet) target(ctx context.Context, namespace, name string) (*target, error) {
	pod := &corev1.Pod{}
	if err := k.Reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, pod); err != nil {
		return nil, errors.Wrapf(err, "pod %s/%s", namespace, name)
	}
	if pod.Spec.SchedulerName != v1alpha1.ProxySchedulerName {
		return nil, errors.Errorf("pod %s/%s is not a proxy pod", namespace, name)
	}
	w := &v1alpha1.Workload{}
	if err := k.Reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, w); err != nil || controllerUID(w) != pod.UID {
		return nil, errors.Errorf("proxy pod %s/%s has no Workload yet", namespace, name)
	}
	ch, err := delegate(ctx, k.Members, w)
	if err != nil || ch == nil {
		return nil, errors.Errorf("proxy pod %s/%s has no delegate bound in a cluster yet", namespace, name)
	}
	key := w.ClusterKey(w.Status.ClusterRef)
	// The connection that serves now: one the Secret re-pointed at
	// another cluster since the delegate was found is no way to it.
	conn := k.Members.Serving(key)
	if conn == nil {
		return nil, errors.Errorf("cluster %s of proxy pod %s/%s is not connected", key, namespace, name)
	}
	cs, cfg, err := conn.TenantStreams(namespace)
	if err != nil {
		return nil, err
	}
	return &target{namespace: ch.Namespace, name: ch.Name, cluster: key, cs: cs, cfg: cfg}, nil
}

func targetOf(ctx context.Context) (*target, error) {
	t, ok := ctx.Value(targetKey{}).(*target)
	if !ok {
		return nil, errors.New("no delegate for this request")
	}
	return t, nil
}

// logs streams the delegate's container log, with the request's options.
func (k *Kubelet) logs(ctx context.Context, _, _, container string, o vkapi.ContainerLogOpts) (io.ReadCloser, error) {
	t, err := targetOf(ctx)
	if err != nil {
		return nil, err
	}
	opts := &corev1.PodLogOptions{Container: container, Follow: o.Follow, Previous: o.Previous, Timestamps: o.Timestamps}
	if o.Tail > 0 {
		opts.TailLines = ptr.To(int64(o.Tail))
	}
	if o.LimitBytes > 0 {
		opts.LimitBytes = ptr.To(int64(o.LimitBytes))
	}
	if o.SinceSeconds > 0 {
		opts.SinceSeconds = ptr.To(int64(o.SinceSeconds))
	}
	if !o.SinceTime.IsZero() {
		opts.SinceTime = &metav1.Time{Time: o.SinceTime}
	}
	rc, err := t.cs.CoreV1().Pods(t.namespace).GetLogs(t.name, opts).Stream(ctx)
	return rc, errors.Wrapf(err, "cannot read the log of %s/%s in cluster %s", t.namespace, t.name, t.cluster)
}

// exec runs a command in the delegate's container, its streams joined to
// the caller's.
func (k *Kubelet) exec(ctx context.Context, _, _, container string, cmd []string, io vkapi.AttachIO) error {
	return k.stream(ctx, "exec", io, &corev1.PodExecOptions{Container: container, Command: cmd,
		Stdin: io.Stdin() != nil, Stdout: io.Stdout() != nil, Stderr: io.Stderr() != nil, TTY: io.TTY()})
}

// attach joins the caller's streams to the delegate's container's.
func (k *Kubelet) attach(ctx context.Context, _, _, container string, io vkapi.AttachIO) error {
	return k.stream(ctx, "attach", io, &corev1.PodAttachOptions{Container: container,
		Stdin: io.Stdin() != nil, Stdout: io.Stdout() != nil, Stderr: io.Stderr() != nil, TTY: io.TTY()})
}

// stream opens the delegate's exec or attach subresource in the member as
// kubectl does (WebSocket, falling back to SPDY where a proxy or an older
// API server refuses the upgrade), and copies the streams both ways; a
// command's exit code comes back as the member said it.
func (k *Kubelet) stream(ctx context.Context, sub string, aio vkapi.AttachIO, opts runtime.Object) error {
	t, err := targetOf(ctx)
	if err != nil {
		return err
	}
	u := t.cs.CoreV1().RESTClient().Post().Namespace(t.namespace).Resource("pods").Name(t.name).SubResource(sub).
		VersionedParams(opts, scheme.ParameterCodec).URL()
	ws, err := remotecommand.NewWebSocketExecutor(t.cfg, http.MethodGet, u.String())
	if err != nil {
		return errors.Wrap(err, "cannot open the delegate's stream")
	}
	spdy, err := remotecommand.NewSPDYExecutor(t.cfg, http.MethodPost, u)
	if err != nil {
		return errors.Wrap(err, "cannot open the delegate's stream")
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return errors.Wrap(err, "cannot open the delegate's stream")
	}
	so := remotecommand.StreamOptions{Tty: aio.TTY()}
	if in := aio.Stdin(); in != nil {
		so.Stdin = in
	}
	if out := aio.Stdout(); out != nil {
		so.Stdout = out
	}
	if e := aio.Stderr(); e != nil {
		so.Stderr = e
	}
	if aio.TTY() {
		so.TerminalSizeQueue = sizes{ctx: ctx, c: aio.Resize()}
	}
	return ex.StreamWithContext(ctx, so)
}

// sizes passes the caller's terminal sizes on.
type sizes struct {
	ctx context.Context
	c   <-chan vkapi.TermSize
}

func (s sizes) Next() *remotecommand.TerminalSize {
	select {
	case ts, ok := <-s.c:
		if !ok {
			return nil
		}
		return &remotecommand.TerminalSize{Width: ts.Width, Height: ts.Height}
	case <-s.ctx.Done():
		return nil
	}
}
