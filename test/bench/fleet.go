package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/config"
	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/fleetwait"
	"github.com/placer-dev/placer/member/agent"
)

// fleet is the management cluster, the members and placer's processes.
type fleet struct {
	dir     string
	mgmt    *local.Cluster
	members []*local.Cluster
	mc      client.WithWatch // management, for the benchmark's own client
	// memberClients are the benchmark's own, one per member.
	memberClients []client.WithWatch
	// procs are placer's processes by name; a member component that
	// exits is started again (supervise), as its Deployment would.
	mu      sync.Mutex
	closing bool
	procs   map[string]*local.Process
	// candidateMetrics: each member's candidate scheduler's /metrics
	// (set while the fleet starts, read after).
	candidateMetrics []candidateMetrics
	// restarts counts the member components started again.
	restarts map[string]int
	pprof    string // the manager's pprof address, when profiling
	metrics  string // the manager's /metrics address
	// groups: a CPU group per cluster, kwok's and the benchmark's
	// (-cluster-cpus); nil for the shared pool.
	groups *cpuGroups
	// karmada: Karmada's control plane, with -karmada.
	karmada *karmadaPeer
}

// namespaces the phases use, opened to placer in every member.
var phaseNamespaces = []string{nsBaseline, nsSpread, nsDeployments, "fanout-1", "noreservation", "fanout-all", nsFrontend, "failover", "drain", "single", "divided"}

// placerProcs are placer's processes running now, by name.
func (f *fleet) placerProcs() map[string]*local.Process {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.procs)
}

func (f *fleet) close() {
	f.mu.Lock()
	f.closing = true
	f.mu.Unlock()
	for _, p := range f.placerProcs() {
		p.Stop(10 * time.Second)
	}
	f.karmada.close()
	for _, m := range f.members {
		_ = m.Close()
	}
	if f.mgmt != nil {
		_ = f.mgmt.Close()
	}
	f.groups.remove(local.CgroupRoot)
}

func startFleet(ctx context.Context, o options) (*fleet, error) {
	dir, err := filepath.Abs(filepath.Join(o.out, "clusters"))
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	f := &fleet{dir: dir, procs: map[string]*local.Process{}, restarts: map[string]int{}}
	names := []string{"management"}
	for i := range o.members {
		names = append(names, fmt.Sprintf("member-%d", i))
	}
	if o.karmada {
		// Its API server, started with the others (the last).
		names = append(names, groupKarmada)
	}
	if o.clusterCPUs > 0 {
		if f.groups, err = newCPUGroups(o, local.CgroupRoot, names); err != nil {
			return f, err
		}
	}
	opts := make([]local.Options, len(names))
	for i, name := range names {
		member := i > 0 && name != groupKarmada
		opts[i] = local.Options{Name: name, Dir: filepath.Join(dir, name), BinDir: o.binDir, NoKwok: !member, Scheduler: member, StartTimeout: 5 * time.Minute, Profiling: o.profile,
			CPUGroup: f.groups.of(name), KwokGroup: f.groups.of(groupKwok), ControllerManagerQPS: kcmQPS(o)}
		if name == groupKarmada {
			opts[i].Aggregation = true
			// As Karmada deploys it (artifacts/deploy): no workload
			// controllers; a Deployment there is a template.
			opts[i].Controllers = karmadaControllers
		}
	}
	clusters, err := local.StartAll(ctx, opts, nil)
	if err != nil {
		// Its close removes the CPU groups.
		return f, err
	}
	f.mgmt, f.members = clusters[0], clusters[1:1+o.members]
	if o.karmada {
		f.karmada = &karmadaPeer{cluster: clusters[len(clusters)-1], procs: map[string]*local.Process{}}
	}
	logf("started a management cluster and %d members", o.members)

	crds, err := config.CRDs(v1alpha1.Group)
	if err != nil {
		return f, err
	}
	if _, err := envtest.InstallCRDs(f.mgmt.RESTConfig(), envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		return f, errors.Wrap(err, "cannot install CRDs")
	}
	if f.mc, err = client.NewWithWatch(f.mgmt.RESTConfig(), client.Options{Scheme: apis.NewScheme()}); err != nil {
		return f, err
	}
	for _, ns := range phaseNamespaces {
		nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if ns == nsFrontend {
			// Its pods are source pods (Admiralty's front end).
			nsObj.Labels = map[string]string{v1alpha1.LabelSourceNamespace: v1alpha1.SourceNamespaceEnabled}
		}
		if err := f.mc.Create(ctx, nsObj); err != nil {
			return f, err
		}
		// Each phase's namespace accepts the platform's clusters (default).
		cb := &v1alpha1.ClusterBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}, Spec: v1alpha1.ClusterBindingSpec{ClusterNamespace: "default"}}
		if err := f.mc.Create(ctx, cb); err != nil {
			return f, err
		}
	}

	for i, m := range f.members {
		nodes := make([]local.Node, o.nodes)
		for j := range nodes {
			nodes[j] = local.Node{Name: fmt.Sprintf("n%d-%d", i, j), CPU: "32", Memory: "128Gi"}
		}
		if err := m.AddNodes(ctx, nodes...); err != nil {
			return f, err
		}
		mc, err := client.NewWithWatch(m.RESTConfig(), client.Options{Scheme: apis.NewScheme()})
		if err != nil {
			return f, err
		}
		f.memberClients = append(f.memberClients, mc)
		cs := kubernetes.NewForConfigOrDie(m.RESTConfig())
		for _, ns := range phaseNamespaces {
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				return f, err
			}
		}
		if err := agent.EnsureCRDs(m.RESTConfig()); err != nil {
			return f, err
		}
		if err := config.GrantManager(ctx, cs, "placer-manager"); err != nil {
			return f, err
		}
		// Each phase's Workloads live in a management namespace of that
		// name, a tenant placing into its own namespace's name.
		for _, ns := range phaseNamespaces {
			if err := config.OpenNamespace(ctx, cs, "placer-manager", ns, ns); err != nil {
				return f, err
			}
		}
		if err := f.startMemberComponents(m, o); err != nil {
			return f, err
		}
		if err := local.WaitForNodesReady(ctx, cs, o.nodes); err != nil {
			return f, err
		}
		if err := local.WaitForServiceAccount(ctx, cs, "baseline", "default"); err != nil {
			return f, err
		}
	}
	logf("%d members × %d kwok nodes Ready, each with an agent and a candidate scheduler", o.members, o.nodes)

	pprof := ""
	if o.profile {
		pprof = "127.0.0.1:6060"
	}
	f.pprof = pprof
	if f.metrics, err = local.FreeAddr(); err != nil {
		return f, err
	}
	webhook, err := f.installWebhook(ctx)
	if err != nil {
		return f, err
	}
	if err := f.spawn("manager", o, "manager", "--kubeconfig="+f.mgmt.KubeconfigPath(), "--leader-elect=false", "--allow-loopback-clusters", "--pprof-bind-address="+pprof,
		"--webhook-bind-address="+webhook, "--webhook-host=127.0.0.1", "--placer-namespace="+deploy.Namespace,
		"--health-probe-bind-address=0", "--metrics-bind-address="+f.metrics, "--cluster-probe-interval=10s",
		fmt.Sprintf("--kube-api-qps=%g", o.componentQPS), fmt.Sprintf("--kube-api-burst=%d", o.componentBurst),
		fmt.Sprintf("--cluster-qps=%g", o.componentQPS), fmt.Sprintf("--cluster-burst=%d", o.componentBurst),
		fmt.Sprintf("--scheduler-qps=%g", o.componentQPS), fmt.Sprintf("--scheduler-burst=%d", o.componentBurst),
		fmt.Sprintf("--proxy-pod-qps=%g", 2*o.componentQPS), fmt.Sprintf("--proxy-pod-burst=%d", 2*o.componentBurst),
		fmt.Sprintf("--proxy-pod-workers=%d", o.proxyPodWorkers),
		fmt.Sprintf("--propagator-workers=%d", o.propagatorWorkers), fmt.Sprintf("--max-runner-up-candidates=%d", o.maxRunnerUps)); err != nil {
		return f, err
	}
	for _, m := range f.members {
		if err := f.register(ctx, m); err != nil {
			return f, err
		}
	}
	if err := f.waitClustersReady(ctx, o); err != nil {
		return f, err
	}
	if f.karmada != nil {
		return f, f.karmada.start(ctx, f, o)
	}
	return f, nil
}

// errClosing: the fleet is closing, nothing starts any more.
var errClosing = errors.New("the fleet is closing")

// spawn starts a placer process, unless the fleet is closing (close
// stops only the processes it knows of).
func (f *fleet) spawn(name string, o options, args ...string) error {
	p, err := local.Spawn(f.dir, name, o.placer, args...)
	if err != nil {
		return err
	}
	// Where it would run: in its cluster's group.
	if err := f.groups.of(groupOf(name)).Add(p.PID()); err != nil {
		p.Stop(10 * time.Second)
		return err
	}
	f.mu.Lock()
	closing := f.closing
	if !closing {
		f.procs[name] = p
	}
	f.mu.Unlock()
	if closing {
		p.Stop(10 * time.Second)
		return errClosing
	}
	return nil
}

// restartCounts are how many times each member component was started
// again after it exited.
func (f *fleet) restartCounts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.restarts)
}

// supervise spawns a member component and starts it again whenever it
// exits before the fleet closes, as a Deployment's ReplicaSet would (the
// candidate scheduler exits on purpose when kube-scheduler finds its
// cache corrupted, which a member API server's restart can cause).
func (f *fleet) supervise(name string, o options, args ...string) error {
	if err := f.spawn(name, o, args...); err != nil {
		return err
	}
	go func() {
		for {
			f.mu.Lock()
			p := f.procs[name]
			f.mu.Unlock()
			<-p.Done()
			f.mu.Lock()
			closing := f.closing
			f.mu.Unlock()
			if closing {
				return
			}
			logf("%s exited (last lines: %s); starting it again, as its Deployment would", name, strings.TrimSpace(p.LogTail(2)))
			time.Sleep(time.Second)
			if err := f.spawn(name, o, args...); err != nil {
				if !errors.Is(err, errClosing) {
					logf("cannot start %s again: %v", name, err)
				}
				return
			}
			f.mu.Lock()
			f.restarts[name]++
			f.mu.Unlock()
		}
	}()
	return nil
}

func (f *fleet) startMemberComponents(m *local.Cluster, o options) error {
	limits := []string{fmt.Sprintf("--kube-api-qps=%g", o.componentQPS), fmt.Sprintf("--kube-api-burst=%d", o.componentBurst)}
	// One replica of each, without leader election (a process that loses
	// its Lease while its API server is stopped, as the failover measure
	// does, would exit and be started again, and lose time): the agent
	// does not look for the candidate scheduler's Lease. Each is started
	// again if it exits (supervise).
	if err := f.supervise(m.Name()+"-agent", o, append([]string{"agent", "--kubeconfig=" + m.KubeconfigPath(), "--leader-elect=false",
		"--health-probe-bind-address=0", "--metrics-bind-address=0", "--candidate-scheduler-lease="}, limits...)...); err != nil {
		return err
	}
	// Its /metrics on loopback, authenticated and authorized by its
	// member (the bench reads it as the member's admin).
	addr, err := local.FreeAddr()
	if err != nil {
		return err
	}
	host, port, _ := strings.Cut(addr, ":")
	f.candidateMetrics = append(f.candidateMetrics, candidateMetrics{member: m, addr: addr})
	return f.supervise(m.Name()+"-candidate-scheduler", o, append([]string{"candidate-scheduler", "--kubeconfig=" + m.KubeconfigPath(),
		"--leader-elect=false", "--bind-address=" + host, "--secure-port=" + port,
		"--authentication-kubeconfig=" + m.KubeconfigPath(), "--authorization-kubeconfig=" + m.KubeconfigPath()}, limits...)...)
}

// candidateMetrics is where a member's candidate scheduler serves /metrics.
type candidateMetrics struct {
	member *local.Cluster
	addr   string
}

func (f *fleet) register(ctx context.Context, m *local.Cluster) error {
	kubeconfig, err := m.KubeconfigFor("placer-manager")
	if err != nil {
		return err
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: m.Name()}, Data: map[string][]byte{"kubeconfig": kubeconfig}}
	if err := f.mc.Create(ctx, s); err != nil {
		return err
	}
	kc := &v1alpha1.KubernetesCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: m.Name()},
		// The platform's clusters serve every phase's namespace.
		Spec: v1alpha1.KubernetesClusterSpec{ConnectionSecretRef: &v1alpha1.SecretKeySelector{Name: m.Name()}, Provider: "kwok", NamespaceSelector: &metav1.LabelSelector{}},
	}
	if err := f.mc.Create(ctx, kc); err != nil {
		return err
	}
	return nil
}

// installWebhook installs config/management's MutatingWebhookConfiguration
// (the front end for ordinary pods), pointed at a loopback address the
// manager serves it on, which it returns, and the namespace of the
// webhook's certificate Secret.
func (f *fleet) installWebhook(ctx context.Context) (string, error) {
	objs, err := deploy.Render("management")
	if err != nil {
		return "", err
	}
	var webhooks []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "MutatingWebhookConfiguration" {
			webhooks = append(webhooks, o)
		}
	}
	if err := f.mc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: deploy.Namespace}}); err != nil {
		return "", err
	}
	if err := deploy.ApplyAll(ctx, f.mgmt.RESTConfig(), webhooks); err != nil {
		return "", err
	}
	addr, err := local.FreeAddr()
	if err != nil {
		return "", err
	}
	return addr, deploy.WebhooksAt(ctx, f.mgmt.RESTConfig(), addr)
}

// waitClustersReady waits until every member is Ready with all its nodes.
func (f *fleet) waitClustersReady(ctx context.Context, o options) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	want := map[string]int32{}
	for _, m := range f.members {
		want[m.Name()] = int32(o.nodes)
	}
	if err := fleetwait.ClustersReady(ctx, f.mc, "default", want); err != nil {
		return err
	}
	logf("every member registered and Ready")
	return nil
}

func logf(format string, args ...any) {
	fmt.Printf("%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
