// Package local runs real Kubernetes clusters on the loopback interface:
// etcd, kube-apiserver, kube-controller-manager, optionally kube-scheduler,
// and kwok for nodes and pod lifecycles. They serve the tests, the
// benchmarks and the sandbox.
package local

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	_ "embed"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/keyutil"

	"github.com/placer-dev/placer/internal/pki"
)

// kwokStages are the pod lifecycles kwok plays: a bound pod runs and is
// Ready; one annotated AnnotationExitCode ends on its own, as a batch pod.
//
//go:embed kwok-stages.yaml
var kwokStages []byte

// AnnotationExitCode makes kwok end a running pod with that exit code
// (Succeeded for "0", Failed otherwise) after AnnotationRunFor (a Go
// duration; 1s when unset), as a batch pod ends on its own.
const (
	AnnotationExitCode = "kwok.placer.dev/exit-code"
	AnnotationRunFor   = "kwok.placer.dev/run-for"
)

// Versions of the binaries a local cluster runs, as the Makefile builds
// them: Kubernetes (unless Options.KubernetesVersion says otherwise),
// etcd's with it, and kwok.
const (
	KubernetesVersion = "v1.35.4"
	KwokVersion       = "v0.7.0"
)

// KubernetesVersions are the Kubernetes versions a local cluster may run
// (Options.KubernetesVersion), as the Makefile builds them: KubernetesVersion
// from go.mod, the others from their own modules (hack/kube/MINOR). One of
// each minor placer supports, and UnsupportedKubernetesVersion.
var KubernetesVersions = []string{KubernetesVersion, UnsupportedKubernetesVersion, "v1.36.3", "v1.37.2"}

// UnsupportedKubernetesVersion is older than every candidate scheduler
// placer has (internal/skew): a member of it is one the tests see refused.
const UnsupportedKubernetesVersion = "v1.34.4"

// Options of a local cluster.
type Options struct {
	// Name of the cluster, used in file and context names.
	Name string
	// Dir holds the cluster's data, certificates, kubeconfigs and logs; a
	// new temporary folder when empty.
	Dir string
	// BinDir is the folder the Makefile builds into (bin/); BinDirFromEnv
	// finds it when empty.
	BinDir string
	// KubernetesVersion is the version of the cluster's kube-apiserver,
	// kube-controller-manager and kube-scheduler, one of KubernetesVersions;
	// KubernetesVersion when empty. etcd and kwok are the same for all.
	KubernetesVersion string
	// Scheduler runs kube-scheduler for the cluster's own pods.
	Scheduler bool
	// NoKwok leaves kwok out: nodes then stay NotReady.
	NoKwok bool
	// StartTimeout bounds each component's start; 2 minutes when zero.
	StartTimeout time.Duration
	// Profiling serves the API server's /debug/pprof (to its admins), for
	// benchmarks.
	Profiling bool
	// CPUGroup, when set, holds every process of the cluster (its control
	// plane and what RunRestarting starts), moved there as it starts: a
	// machine of its own, as a benchmark measures a fleet.
	CPUGroup *CPUGroup
	// KwokGroup, when set, holds kwok, the nodes' simulation, which a real
	// cluster's nodes would do on machines of their own.
	KwokGroup *CPUGroup
	// ControllerManagerQPS is kube-controller-manager's --kube-api-qps
	// (its burst twice it); its default (20) when zero.
	ControllerManagerQPS int
	// Controllers is kube-controller-manager's --controllers; every
	// controller ("*") when empty.
	Controllers string
	// Aggregation configures the API server's front proxy (its client
	// certificate and the request-header authentication aggregated API
	// servers trust), for an APIService served by a local process.
	Aggregation bool
}

// Cluster is a running local cluster.
type Cluster struct {
	opts       Options
	dir        string
	ownDir     bool
	ca         *pki.Authority
	apiPort    int
	etcdURL    string
	kubeconfig string
	config     *rest.Config

	mu        sync.Mutex
	etcd      *process
	apiserver *process
	others    []*process
}

const (
	frontProxyClient = "front-proxy-client"
	errBinaries      = "cannot find the local-cluster binaries; run 'make tools' or set PLACER_BIN_DIR"
	serviceCIDR      = "10.0.0.0/24"
)

// BinDirFromEnv returns $PLACER_BIN_DIR, or the bin/ folder of the
// repository the working directory is in.
func BinDirFromEnv() string {
	if d := os.Getenv("PLACER_BIN_DIR"); d != "" {
		return d
	}
	if root, ok := RepoRoot(); ok {
		return filepath.Join(root, "bin")
	}
	return "bin"
}

// RepoRoot returns the folder holding go.mod above the working directory.
func RepoRoot() (string, bool) {
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, true
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

// KubernetesBinDir is where the Kubernetes binaries of binDir are.
func KubernetesBinDir(binDir string) string {
	return filepath.Join(binDir, "k8s", KubernetesVersion)
}

func (c *Cluster) binary(name string) (string, error) {
	p := filepath.Join(c.opts.BinDir, "k8s", c.opts.KubernetesVersion, name)
	switch name {
	case "etcd":
		p = filepath.Join(KubernetesBinDir(c.opts.BinDir), name)
	case "kwok":
		p = filepath.Join(c.opts.BinDir, "kwok", KwokVersion, name)
	}
	if _, err := os.Stat(p); err != nil {
		return "", errors.Wrap(err, errBinaries)
	}
	return p, nil
}

// Start starts a local cluster and returns once its API server is ready,
// its controllers run and kwok manages nodes. On error nothing is left running.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if opts.Name == "" {
		opts.Name = "local"
	}
	if opts.BinDir == "" {
		opts.BinDir = BinDirFromEnv()
	}
	if opts.KubernetesVersion == "" {
		opts.KubernetesVersion = KubernetesVersion
	}
	if !slices.Contains(KubernetesVersions, opts.KubernetesVersion) {
		return nil, errors.Errorf("Kubernetes %s: a local cluster runs one of %v", opts.KubernetesVersion, KubernetesVersions)
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	c := &Cluster{opts: opts, dir: opts.Dir}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "placer-"+opts.Name+"-"); err != nil {
			return nil, errors.Wrap(err, "cannot create cluster folder")
		}
		c.ownDir = true
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, errors.Wrap(err, "cannot create cluster folder")
	}
	defer func() {
		if err != nil {
			_ = c.Close()
		}
	}()
	if err := c.writeCredentials(); err != nil {
		return nil, err
	}
	// A free port can be taken by another process between the moment it
	// is chosen and the moment the server binds it: try again with another.
	if err := retryPortTaken(func() error { return c.startEtcd(ctx) }); err != nil {
		return nil, err
	}
	if err := retryPortTaken(func() error {
		if c.apiPort, err = freePort(); err != nil {
			return err
		}
		return c.StartAPIServer(ctx)
	}); err != nil {
		return nil, err
	}
	if err := c.startControllers(); err != nil {
		return nil, err
	}
	return c, nil
}

// retryPortTaken runs start up to three times while it fails because its
// port was taken.
func retryPortTaken(start func() error) error {
	var err error
	for range 3 {
		if err = start(); err == nil || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
	}
	return err
}

func (c *Cluster) path(name string) string { return filepath.Join(c.dir, name) }

// writeCredentials creates the CA, the serving certificate, the admin
// identity and the service account signing key.
func (c *Cluster) writeCredentials() error {
	ca, err := pki.NewAuthority(c.opts.Name)
	if err != nil {
		return err
	}
	c.ca = ca
	if err := os.WriteFile(c.path("ca.crt"), ca.CertPEM(), 0o600); err != nil {
		return errors.Wrap(err, "cannot write CA certificate")
	}
	crt, key, err := ca.Issue(pki.Request{CommonName: "kube-apiserver", Hosts: servingHosts, Lifetime: tenYears})
	if err != nil {
		return err
	}
	if _, _, err := writePair(c.dir, "apiserver", crt, key); err != nil {
		return err
	}
	// The API server's identity at kubelets (kwok's, placer's virtual
	// nodes'), as kubeadm names it: logs, exec and attach go through it.
	crt, key, err = ca.Issue(pki.Request{CommonName: "kube-apiserver-kubelet-client", Organizations: []string{"system:masters"}, Lifetime: tenYears})
	if err != nil {
		return err
	}
	if _, _, err := writePair(c.dir, "apiserver-kubelet-client", crt, key); err != nil {
		return err
	}
	if c.opts.Aggregation {
		// The front proxy's identity at aggregated API servers, issued by
		// the cluster's CA (kubeadm has a CA of its own for it).
		crt, key, err = ca.Issue(pki.Request{CommonName: frontProxyClient, Lifetime: tenYears})
		if err != nil {
			return err
		}
		if _, _, err := writePair(c.dir, "front-proxy-client", crt, key); err != nil {
			return err
		}
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return errors.Wrap(err, "cannot generate service account key")
	}
	saPEM, err := keyutil.MarshalPrivateKeyToPEM(saKey)
	if err != nil {
		return errors.Wrap(err, "cannot encode service account key")
	}
	if err := os.WriteFile(c.path("sa.key"), saPEM, 0o600); err != nil {
		return errors.Wrap(err, "cannot write service account key")
	}
	return nil
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	bin, err := c.binary("etcd")
	if err != nil {
		return err
	}
	// A fresh data folder: a failed attempt may have left one behind.
	if err := os.RemoveAll(c.path("etcd")); err != nil {
		return errors.Wrap(err, "cannot clear etcd's data folder")
	}
	client, err := freePort()
	if err != nil {
		return err
	}
	peer, err := freePort()
	if err != nil {
		return err
	}
	c.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	p, err := c.startProcess("etcd", bin,
		"--name=default",
		"--data-dir="+c.path("etcd"),
		"--listen-client-urls="+c.etcdURL,
		"--advertise-client-urls="+c.etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync=true",
		"--quota-backend-bytes=4294967296",
		"--log-level=warn",
	)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.etcd = p
	c.mu.Unlock()
	hc := &http.Client{Timeout: time.Second}
	return p.waitFor(ctx, c.opts.StartTimeout, func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.etcdURL+"/health", nil)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.Errorf("etcd /health: %s", resp.Status)
		}
		return nil
	})
}

// StartAPIServer starts kube-apiserver, on the cluster's port, and waits for
// it to be ready. Start calls it; tests call it again after StopAPIServer.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	bin, err := c.binary("kube-apiserver")
	if err != nil {
		return err
	}
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The default Service's endpoints would be this loopback address,
		// which from v1.37 the endpoint reconciler refuses; nothing runs
		// in a pod here to call it.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + itoa(c.apiPort),
		"--tls-cert-file=" + c.path("apiserver.crt"),
		"--tls-private-key-file=" + c.path("apiserver.key"),
		"--client-ca-file=" + c.path("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.path("sa.key"),
		"--service-account-signing-key-file=" + c.path("sa.key"),
		"--service-cluster-ip-range=" + serviceCIDR,
		"--authorization-mode=Node,RBAC",
		"--kubelet-client-certificate=" + c.path("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + c.path("apiserver-kubelet-client.key"),
		// Nodes here are reached at their loopback InternalIP (kwok's
		// server, placer's virtual nodes), not by host name.
		"--kubelet-preferred-address-types=InternalIP",
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--profiling=" + strconv.FormatBool(c.opts.Profiling),
		"--v=0",
	}
	if c.opts.Aggregation {
		args = append(args,
			"--requestheader-client-ca-file="+c.path("ca.crt"),
			"--requestheader-allowed-names="+frontProxyClient,
			"--requestheader-username-headers=X-Remote-User",
			"--requestheader-group-headers=X-Remote-Group",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			"--proxy-client-cert-file="+c.path("front-proxy-client.crt"),
			"--proxy-client-key-file="+c.path("front-proxy-client.key"),
		)
	}
	p, err := c.startProcess("kube-apiserver", bin, args...)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.apiserver = p
	c.mu.Unlock()
	if err := c.writeAdminKubeconfig(); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return errors.Wrap(err, "cannot create client")
	}
	return p.waitFor(ctx, c.opts.StartTimeout, func(ctx context.Context) error {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return errors.Wrapf(err, "readyz: %s", body)
		}
		return nil
	})
}

// StopAPIServer stops kube-apiserver only, so the cluster is unreachable
// while its data and other components remain.
func (c *Cluster) StopAPIServer() {
	c.mu.Lock()
	p := c.apiserver
	c.apiserver = nil
	c.mu.Unlock()
	p.stop(10 * time.Second)
}

func (c *Cluster) writeAdminKubeconfig() error {
	if c.config != nil {
		return nil
	}
	kc, err := c.KubeconfigFor("placer-admin", "system:masters")
	if err != nil {
		return err
	}
	c.kubeconfig = c.path("admin.kubeconfig")
	if err := os.WriteFile(c.kubeconfig, kc, 0o600); err != nil {
		return errors.Wrap(err, "cannot write admin kubeconfig")
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		return errors.Wrap(err, "cannot load admin kubeconfig")
	}
	cfg.QPS, cfg.Burst = 200, 400
	c.config = cfg
	return nil
}

// KubeconfigFor mints a kubeconfig for a client-certificate identity with
// the given user name and groups. It holds no more rights than RBAC grants it.
func (c *Cluster) KubeconfigFor(user string, groups ...string) ([]byte, error) {
	crt, key, err := c.ca.Issue(pki.Request{CommonName: user, Organizations: groups, Lifetime: tenYears})
	if err != nil {
		return nil, err
	}
	return Kubeconfig(c.opts.Name, c.Server(), c.ca.CertPEM(), user, &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key})
}

// Kubeconfig encodes a one-context kubeconfig of a server, its CA and a
// user's credentials.
func Kubeconfig(cluster, server string, ca []byte, user string, auth *clientcmdapi.AuthInfo) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[cluster] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = auth
	cfg.Contexts[cluster] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: user}
	cfg.CurrentContext = cluster
	b, err := clientcmd.Write(*cfg)
	return b, errors.Wrap(err, "cannot encode kubeconfig")
}

func (c *Cluster) startControllers() error {
	kcm, err := c.binary("kube-controller-manager")
	if err != nil {
		return err
	}
	p, err := c.startProcess("kube-controller-manager", kcm,
		"--kubeconfig="+c.kubeconfig,
		"--authentication-kubeconfig="+c.kubeconfig,
		"--authorization-kubeconfig="+c.kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--controllers="+cmp.Or(c.opts.Controllers, "*"),
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file="+c.path("sa.key"),
		"--root-ca-file="+c.path("ca.crt"),
		"--cluster-name="+c.opts.Name,
		"--node-monitor-grace-period=40s",
		"--v=0",
		"--kube-api-qps="+itoa(cmp.Or(c.opts.ControllerManagerQPS, 20)),
		"--kube-api-burst="+itoa(cmp.Or(2*c.opts.ControllerManagerQPS, 30)),
	)
	if err != nil {
		return err
	}
	c.addProcess(p)
	if c.opts.Scheduler {
		ks, err := c.binary("kube-scheduler")
		if err != nil {
			return err
		}
		p, err := c.startProcess("kube-scheduler", ks,
			"--kubeconfig="+c.kubeconfig,
			"--authentication-kubeconfig="+c.kubeconfig,
			"--authorization-kubeconfig="+c.kubeconfig,
			"--bind-address=127.0.0.1",
			"--secure-port=0",
			"--leader-elect=false",
			"--v=0",
		)
		if err != nil {
			return err
		}
		c.addProcess(p)
	}
	if c.opts.NoKwok {
		return nil
	}
	return c.startKwok()
}

// startKwok starts kwok: it plays the nodes annotated as kwok's and their
// pods' lifecycles, and serves their kubelet API.
func (c *Cluster) startKwok() error {
	kwok, err := c.binary("kwok")
	if err != nil {
		return err
	}
	stages := c.path("kwok-stages.yaml")
	if err := os.WriteFile(stages, append(kwokStages, c.kwokStreams()...), 0o600); err != nil {
		return errors.Wrap(err, "cannot write kwok's stages")
	}
	if err := os.WriteFile(c.ContainerLogPath(), criLine(ContainerLog(c.opts.Name)), 0o600); err != nil {
		return errors.Wrap(err, "cannot write kwok's container log")
	}
	// kwok serves the kubelet API of its nodes (logs, exec, attach) on
	// this port, at the InternalIP it gives them.
	port, err := freePort()
	if err != nil {
		return err
	}
	p, err := c.startProcess("kwok", kwok,
		"--kubeconfig="+c.kubeconfig,
		"--config="+stages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+KwokNodeAnnotation+"=fake",
		"--manage-nodes-with-label-selector=",
		"--cidr=10.244.0.1/16",
		"--node-ip=127.0.0.1",
		"--node-port="+itoa(port),
		"--server-address=127.0.0.1:"+itoa(port),
		"--node-lease-duration-seconds=40",
	)
	if err != nil {
		return err
	}
	c.addProcess(p)
	return nil
}

// ContainerLog is what every container of a local cluster's kwok nodes
// logs (and what attach to one shows): it names the cluster, so a reader
// knows which cluster answered.
func ContainerLog(cluster string) string {
	return "a container of kwok in cluster " + cluster + "\n"
}

// ContainerLogPath is the file kwok serves as every container's log.
func (c *Cluster) ContainerLogPath() string { return c.path("container.log") }

// criLine is a line of stdout as the CRI writes it to a container's log,
// the format kwok reads.
func criLine(line string) []byte {
	return []byte(time.Now().UTC().Format(time.RFC3339Nano) + " stdout F " + line)
}

// AppendContainerLog adds a line to every container's log: a follower
// of the log, or one attached, sees it.
func (c *Cluster) AppendContainerLog(line string) error {
	f, err := os.OpenFile(c.ContainerLogPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return errors.Wrap(err, "cannot open kwok's container log")
	}
	_, err = f.Write(criLine(line))
	return errors.Join(errors.Wrap(err, "cannot write kwok's container log"), f.Close())
}

// kwokStreams are kwok's rules for the kubelet API of its pods: every
// container's log (followed) and attach read ContainerLogPath, and exec
// runs the command in the cluster's folder on this machine, as kwok does.
func (c *Cluster) kwokStreams() []byte {
	return []byte(fmt.Sprintf(`---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: placer-logs
spec:
  logs:
  - logsFile: %[1]q
    follow: true
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterAttach
metadata:
  name: placer-attach
spec:
  attaches:
  - logsFile: %[1]q
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata:
  name: placer-exec
spec:
  execs:
  - local:
      workDir: %[2]q
`, c.ContainerLogPath(), c.dir))
}

func (c *Cluster) addProcess(p *process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.others = append(c.others, p)
}

// startProcess starts one of the cluster's processes in the cluster's
// folder and moves it into its CPU group, if any.
func (c *Cluster) startProcess(name, binary string, args ...string) (*process, error) {
	p, err := startProcess(c.dir, name, binary, args...)
	if err != nil {
		return nil, err
	}
	group := c.opts.CPUGroup
	if name == "kwok" {
		group = c.opts.KwokGroup
	}
	if err := group.Add(p.PID()); err != nil {
		p.stop(time.Second)
		return nil, errors.Wrapf(err, "cannot move %s into its CPU group", name)
	}
	return p, nil
}

// Name of the cluster.
func (c *Cluster) Name() string { return c.opts.Name }

// Dir holds the cluster's files and logs.
func (c *Cluster) Dir() string { return c.dir }

// Server is the API server's URL.
func (c *Cluster) Server() string { return fmt.Sprintf("https://127.0.0.1:%d", c.apiPort) }

// EtcdURL is the cluster's etcd client URL (plain HTTP on loopback), for an
// aggregated API server that stores beside the cluster's own.
func (c *Cluster) EtcdURL() string { return c.etcdURL }

// KubeconfigPath is the admin kubeconfig file.
func (c *Cluster) KubeconfigPath() string { return c.kubeconfig }

// AdminKubeconfig returns the admin kubeconfig's contents.
func (c *Cluster) AdminKubeconfig() ([]byte, error) {
	b, err := os.ReadFile(c.kubeconfig)
	return b, errors.Wrap(err, "cannot read admin kubeconfig")
}

// RESTConfig is a copy of the admin identity's client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.config) }

// PIDs of the processes running now, by component.
func (c *Cluster) PIDs() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := map[string]int{}
	for _, p := range append([]*process{c.etcd, c.apiserver}, c.others...) {
		if p != nil && !p.exited() {
			pids[p.name] = p.PID()
		}
	}
	return pids
}

// Freeze stops the named process (SIGSTOP to its process group, by PID)
// until thaw is called (SIGCONT): a component that hangs, keeping its
// connections and its Leases without acting or renewing them. Thawing
// twice is harmless.
func (c *Cluster) Freeze(name string) (thaw func(), err error) {
	c.mu.Lock()
	var p *process
	for _, o := range c.others {
		if o.name == name && !o.exited() {
			p = o
		}
	}
	c.mu.Unlock()
	if p == nil {
		return nil, errors.Errorf("no running process %q", name)
	}
	if err := stopGroup(p.cmd.Process); err != nil {
		return nil, errors.Wrapf(err, "cannot freeze %s", name)
	}
	p.note("frozen (SIGSTOP)")
	var once sync.Once
	return func() {
		once.Do(func() {
			_ = continueGroup(p.cmd.Process)
			p.note("thawed (SIGCONT)")
		})
	}, nil
}

// Stop stops for good, by PID, the processes RunRestarting started under
// name: as deleting its Deployment removes a component's pods.
func (c *Cluster) Stop(name string) error {
	c.mu.Lock()
	var stopped []*process
	c.others = slices.DeleteFunc(c.others, func(p *process) bool {
		if p.name == name {
			stopped = append(stopped, p)
			return true
		}
		return false
	})
	c.mu.Unlock()
	if len(stopped) == 0 {
		return errors.Errorf("no process %q", name)
	}
	for _, p := range stopped {
		p.stop(10 * time.Second)
	}
	return nil
}

// Close stops every process the cluster started, by PID, and removes the
// cluster's folder if Start created it.
func (c *Cluster) Close() error {
	c.mu.Lock()
	procs := append([]*process{}, c.others...)
	procs = append(procs, c.apiserver, c.etcd)
	c.others, c.apiserver, c.etcd = nil, nil, nil
	c.mu.Unlock()
	for _, p := range procs {
		p.stop(10 * time.Second)
	}
	if c.ownDir {
		return errors.Wrap(os.RemoveAll(c.dir), "cannot remove cluster folder")
	}
	return nil
}

// RunRestarting starts another process beside the cluster's own (an
// agent, a scheduler under test), logging to the cluster's folder, and
// keeps it running as a kubelet keeps a Deployment's container: when it
// ends by itself (say, it lost its leader election Lease while the API
// server was down, and exits as kube-scheduler does) it is started again
// with the same arguments, after a delay that doubles from a second to
// half a minute while it keeps exiting at once, and its log says so.
// Close stops it for good, by PID.
func (c *Cluster) RunRestarting(name, binary string, args ...string) error {
	p, err := c.startProcess(name, binary, args...)
	if err != nil {
		return err
	}
	c.addProcess(p)
	go c.restartOnExit(p, binary, args)
	return nil
}

func (c *Cluster) restartOnExit(p *process, binary string, args []string) {
	const first, most, steady = time.Second, 30 * time.Second, 10 * time.Second
	delay := first
	for restarts := 1; ; restarts++ {
		started := time.Now()
		<-p.done
		if time.Since(started) >= steady {
			delay = first
		}
		p.note(fmt.Sprintf("exited (%v); restart %d in %s", p.err, restarts, delay))
		time.Sleep(delay)
		delay = min(2*delay, most)
		c.mu.Lock()
		i := slices.Index(c.others, p)
		if i < 0 {
			// Close took it.
			c.mu.Unlock()
			return
		}
		next, err := c.startProcess(p.name, binary, args...)
		if err != nil {
			c.mu.Unlock()
			p.note(fmt.Sprintf("cannot be restarted: %v", err))
			return
		}
		c.others[i] = next
		c.mu.Unlock()
		p = next
	}
}

// StartAll starts several clusters at once. On error it closes those that
// started and says which failed; started reports each cluster as it comes
// up (may be nil).
func StartAll(ctx context.Context, opts []Options, started func(*Cluster, time.Duration)) ([]*Cluster, error) {
	clusters := make([]*Cluster, len(opts))
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			begin := time.Now()
			clusters[i], errs[i] = Start(ctx, o)
			if errs[i] == nil && started != nil {
				started(clusters[i], time.Since(begin))
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			for _, c := range clusters {
				if c != nil {
					_ = c.Close()
				}
			}
			return nil, errors.Wrapf(err, "cannot start cluster %s", opts[i].Name)
		}
	}
	return clusters, nil
}
