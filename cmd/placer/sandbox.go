package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/config"
	"github.com/placer-dev/placer/examples"
	"github.com/placer-dev/placer/examples/cheapest"
	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/fleetwait"
)

// sandboxOptions are the flags of 'placer sandbox'.
type sandboxOptions struct {
	binDir string
	// placer is the binary the agents and candidate schedulers run from.
	placer  string
	dir     string
	once    bool
	timeout time.Duration
}

// member is a member cluster of the sandbox fleet.
type member struct {
	name     string
	provider string
	labels   map[string]string
	taints   []v1alpha1.ClusterTaint
	nodes    []local.Node
}

// fleet differs the way real fleets do: regions, providers, node shapes,
// a GPU cluster that is tainted for GPU work only.
func fleet() []member {
	nodes := func(prefix string, n int, cpu, mem string, labels map[string]string, extended map[string]string) []local.Node {
		out := make([]local.Node, n)
		for i := range out {
			out[i] = local.Node{Name: fmt.Sprintf("%s-%d", prefix, i), CPU: cpu, Memory: mem, Labels: labels, Extended: extended}
		}
		return out
	}
	region := func(r, z string) map[string]string {
		return map[string]string{v1alpha1.LabelRegion: r, v1alpha1.LabelZone: z}
	}
	return []member{
		{name: "small", provider: "aws", labels: map[string]string{"tier": "dev"},
			nodes: nodes("small", 3, "4", "8Gi", region("us-east-1", "us-east-1a"), nil)},
		{name: "large", provider: "gcp", labels: map[string]string{"tier": "production"},
			nodes: nodes("large", 2, "32", "128Gi", region("europe-west1", "europe-west1-b"), nil)},
		{name: "gpu", provider: "azure", labels: map[string]string{"tier": "production", "accelerator": "nvidia"},
			taints: []v1alpha1.ClusterTaint{{Key: "dedicated", Value: "gpu", Effect: v1alpha1.TaintEffectNoSchedule}},
			nodes:  nodes("gpu", 2, "16", "64Gi", region("us-west-2", "us-west-2a"), map[string]string{"nvidia.com/gpu": "4"})},
	}
}

func newSandboxCommand() *cobra.Command {
	o := &sandboxOptions{}
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Start a management cluster and member clusters locally, and run placer against them",
		Long: `Start a management cluster and three member clusters on this machine (real
kube-apiserver, etcd and kube-controller-manager, kwok nodes), register the
members, run placer's manager, and print the members' status. It stays up
until Ctrl-C; --once exits after printing, non-zero if a member is not Ready.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.Level(zapLevelError())))
			return runSandbox(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.binDir, "bin-dir", "", "folder 'make tools' builds into; bin/ of this repository when empty")
	f.StringVar(&o.placer, "placer-binary", "", "placer binary the members' agents and candidate schedulers run; this one when empty")
	f.StringVar(&o.dir, "dir", filepath.Join("_output", "sandbox"), "folder for the clusters' data, kubeconfigs and logs")
	f.BoolVar(&o.once, "once", false, "print the status and exit: non-zero if a member is not Ready")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long to wait for the clusters")
	return cmd
}

func runSandbox(ctx context.Context, out io.Writer, o *sandboxOptions) error {
	if err := os.RemoveAll(o.dir); err != nil {
		return errors.Wrap(err, "cannot clear the sandbox folder")
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return errors.Wrap(err, "cannot resolve the sandbox folder")
	}
	members := fleet()
	fmt.Fprintf(out, "Starting a management cluster and %d member clusters in %s ...\n", len(members), dir)
	startCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	clusters, err := startFleet(startCtx, out, dir, o.binDir, members)
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range clusters {
			_ = c.Close()
		}
	}()
	c, stopScheduler, err := startPlacer(ctx, startCtx, out, o, clusters, members)
	if err != nil {
		return err
	}
	defer stopScheduler()

	waitErr := waitClustersReady(startCtx, c, members)
	if err := printClusters(ctx, out, c); err != nil {
		return err
	}
	if waitErr != nil {
		return waitErr
	}
	if err := runExamples(ctx, out, c, o.once); err != nil {
		return err
	}
	// Drain small; cut large off (clusters[0] is the management cluster,
	// the members follow in fleet order).
	cut := clusters[1+slices.IndexFunc(members, func(m member) bool { return m.name == "large" })]
	if err := showFleetDynamics(ctx, out, c, "small", cut, 2*time.Minute); err != nil {
		return errors.Wrap(err, "fleet dynamics")
	}
	if err := showOrdinaryPods(ctx, out, c, kubernetes.NewForConfigOrDie(clusters[0].RESTConfig()), 2*time.Minute); err != nil {
		return errors.Wrap(err, "ordinary pods")
	}
	if o.once {
		return nil
	}
	printSandboxHelp(out, dir, clusters, members)
	<-ctx.Done()
	fmt.Fprintln(out, "Stopping ...")
	return nil
}

// startFleet starts the management cluster and the members, each in a
// folder of its own under dir.
func startFleet(ctx context.Context, out io.Writer, dir, binDir string, members []member) ([]*local.Cluster, error) {
	names := []string{"management"}
	for _, m := range members {
		names = append(names, m.name)
	}
	opts := make([]local.Options, len(names))
	for i, name := range names {
		opts[i] = local.Options{Name: name, Dir: filepath.Join(dir, name), BinDir: binDir, NoKwok: name == "management", Scheduler: name != "management"}
	}
	var mu sync.Mutex
	return local.StartAll(ctx, opts, func(c *local.Cluster, took time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "  %-10s up in %s at %s\n", c.Name(), took.Round(100*time.Millisecond), c.Server())
	})
}

// startPlacer runs placer as config/ deploys it: its kustomizations are
// applied, and every component runs as its ServiceAccount with its
// Deployment's flags (only what a process outside a pod says differently
// changes): the members' agents and candidate schedulers, the members
// registered, the manager, and the example external scheduler, which the
// returned func stops. It returns a client of the management cluster.
func startPlacer(ctx, startCtx context.Context, out io.Writer, o *sandboxOptions, clusters []*local.Cluster, members []member) (client.WithWatch, func(), error) {
	mgmt := clusters[0]
	comps, err := install(startCtx, mgmt, "management", "placer-manager")
	if err != nil {
		return nil, nil, err
	}
	manager := comps[0]
	c, err := client.NewWithWatch(mgmt.RESTConfig(), client.Options{Scheme: apis.NewScheme()})
	if err != nil {
		return nil, nil, errors.Wrap(err, "cannot create a client")
	}
	placer := o.placer
	if placer == "" {
		if placer, err = os.Executable(); err != nil {
			return nil, nil, errors.Wrap(err, "cannot find the placer binary")
		}
	}
	for i, m := range members {
		if err := clusters[i+1].AddNodes(startCtx, m.nodes...); err != nil {
			return nil, nil, err
		}
		if err := startMemberComponents(startCtx, clusters[i+1], placer); err != nil {
			return nil, nil, err
		}
		if err := registerMember(startCtx, c, clusters[i+1], m); err != nil {
			return nil, nil, err
		}
	}
	fmt.Fprintln(out, "Started an agent and a candidate scheduler in every member, registered the members; starting the placer manager ...")

	// The API server calls the manager's webhook at a loopback address
	// (a local cluster has no pod network to reach its Service through).
	webhook, err := local.FreeAddr()
	if err != nil {
		return nil, nil, err
	}
	// And reaches the virtual nodes' kubelet API at another.
	kubelet, err := local.FreeAddr()
	if err != nil {
		return nil, nil, err
	}
	if err := deploy.WebhooksAt(startCtx, mgmt.RESTConfig(), webhook); err != nil {
		return nil, nil, errors.Wrap(err, "cannot point the webhook at the manager")
	}
	if err := mgmt.RunRestarting("manager", placer, manager.OutsidePod(
		"--health-probe-bind-address=0", "--metrics-bind-address=0", "--leader-election-namespace="+manager.Namespace,
		"--webhook-bind-address="+webhook, "--webhook-host=127.0.0.1",
		"--kubelet-bind-address="+kubelet, "--kubelet-address=127.0.0.1",
		// Local members listen on loopback, which a deployed manager refuses.
		"--allow-loopback-clusters", "--cluster-probe-interval=10s", "--cluster-probe-timeout=2s",
		// The failover step shows within a minute (300 s in config/).
		fmt.Sprintf("--default-unreachable-toleration-seconds=%d", sandboxToleration))...); err != nil {
		return nil, nil, errors.Wrap(err, "cannot start the manager")
	}
	schedCtx, stopSched := context.WithCancel(ctx)
	schedDone, err := startExampleScheduler(schedCtx, mgmt)
	if err != nil {
		stopSched()
		return nil, nil, err
	}
	return c, func() {
		stopSched()
		<-schedDone
	}, nil
}

// runExamples applies the Workloads of examples/ one at a time and
// reports where each landed; with once, an example that did not land
// where it says fails the sandbox.
func runExamples(ctx context.Context, out io.Writer, c client.WithWatch, once bool) error {
	exs, err := examples.Workloads()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nApplying the %d Workloads of examples/, one at a time ...\n", len(exs))
	placements := applyExamples(ctx, out, c, exs, 2*time.Minute)
	printPlacements(out, placements)
	failed := 0
	for _, p := range placements {
		if !p.ok() {
			failed++
		}
	}
	if once && failed > 0 {
		// Reported as what it is, before the fleet moves on.
		return errors.Errorf("%d of %d examples did not land where they say", failed, len(placements))
	}
	return nil
}

// printSandboxHelp says where the kubeconfigs are and what to try.
func printSandboxHelp(out io.Writer, dir string, clusters []*local.Cluster, members []member) {
	mgmt := clusters[0]
	fmt.Fprintf(out, `
The sandbox is up. Kubeconfigs are in %[1]s:
  management: %[2]s
`, dir, mgmt.KubeconfigPath())
	for i, m := range members {
		fmt.Fprintf(out, "  %-10s  %s\n", m.name+":", clusters[i+1].KubeconfigPath())
	}
	fmt.Fprintf(out, `
Ask why a workload landed where it did, and why not elsewhere:
  bin/placer explain default/edge --kubeconfig %[1]s

Look around with kubectl:
  kubectl --kubeconfig %[1]s get workloads
  kubectl --kubeconfig %[1]s describe workload edge
  kubectl --kubeconfig %[1]s get kubernetesclusters -o wide
  kubectl --kubeconfig %[1]s describe kubernetescluster %[2]s
  kubectl --kubeconfig %[3]s get nodes

Press Ctrl-C to stop every process.
`, mgmt.KubeconfigPath(), members[0].name, clusters[1].KubeconfigPath())
}

func install(ctx context.Context, lc *local.Cluster, dir string, want ...string) ([]deploy.Component, error) {
	comps, err := deploy.Install(ctx, lc.RESTConfig(), dir, filepath.Dir(lc.KubeconfigPath()))
	if err != nil {
		return nil, errors.Wrapf(err, "cluster %s", lc.Name())
	}
	out := make([]deploy.Component, len(want))
	for i, name := range want {
		c, ok := comps[name]
		if !ok {
			return nil, errors.Errorf("config/%s has no Deployment %s", dir, name)
		}
		out[i] = c
	}
	return out, nil
}

// startMemberComponents installs config/member in a member and runs its
// agent and candidate scheduler as processes logging to the member's folder.
func startMemberComponents(ctx context.Context, lc *local.Cluster, placer string) error {
	comps, err := install(ctx, lc, "member", "placer-agent", "placer-candidate-scheduler")
	if err != nil {
		return err
	}
	agent, sched := comps[0], comps[1]
	if err := lc.RunRestarting("agent", placer, agent.OutsidePod(
		"--health-probe-bind-address=0", "--metrics-bind-address=0", "--leader-election-namespace="+agent.Namespace)...); err != nil {
		return errors.Wrapf(err, "cannot start the agent of %s", lc.Name())
	}
	// Each member's candidate scheduler serves on a loopback port of its
	// own, where a pod would have 10259.
	port, err := local.FreeAddr()
	if err != nil {
		return err
	}
	return errors.Wrapf(lc.RunRestarting("candidate-scheduler", placer, sched.OutsidePod(
		"--bind-address=127.0.0.1", "--secure-port="+strings.TrimPrefix(port, "127.0.0.1:"),
		// What a pod's in-cluster config gives kube-scheduler to check
		// /metrics callers.
		"--authentication-kubeconfig="+sched.KubeconfigPath, "--authorization-kubeconfig="+sched.KubeconfigPath)...),
		"cannot start the candidate scheduler of %s", lc.Name())
}

// registerMember grants the manager's least-privilege identity in the
// member (config/member, namespace default opened) and registers the
// member with that identity's kubeconfig.
func registerMember(ctx context.Context, c client.Client, lc *local.Cluster, m member) error {
	cs := kubernetes.NewForConfigOrDie(lc.RESTConfig())
	if err := config.GrantManager(ctx, cs, "placer-manager"); err != nil {
		return err
	}
	// The examples' tenant, the management namespace default, places into
	// the member namespace default.
	if err := config.OpenNamespace(ctx, cs, "placer-manager", "default", "default"); err != nil {
		return err
	}
	// With its dependencies (examples/95-dependencies.yaml).
	if err := config.OpenDependencies(ctx, cs, "default", "default"); err != nil {
		return err
	}
	// And kubectl logs, exec and attach of its proxy pods.
	if err := config.OpenStreams(ctx, cs, "default", "default"); err != nil {
		return err
	}
	kubeconfig, err := lc.KubeconfigFor("placer-manager")
	if err != nil {
		return err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: m.name + "-kubeconfig"},
		Data:       map[string][]byte{"kubeconfig": kubeconfig},
	}
	if err := c.Create(ctx, s); err != nil {
		return errors.Wrapf(err, "cannot create the Secret of %s", m.name)
	}
	kc := &v1alpha1.KubernetesCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: m.name, Labels: m.labels},
		Spec: v1alpha1.KubernetesClusterSpec{
			ConnectionSecretRef: &v1alpha1.SecretKeySelector{Name: s.Name},
			Provider:            m.provider,
			Taints:              m.taints,
		},
	}
	return errors.Wrapf(c.Create(ctx, kc), "cannot register %s", m.name)
}

// startExampleScheduler runs the external scheduler of
// examples/60-external-scheduler.yaml: a user's own code, not placer's.
func startExampleScheduler(ctx context.Context, mgmt *local.Cluster) (<-chan struct{}, error) {
	mgr, err := ctrl.NewManager(mgmt.RESTConfig(), ctrl.Options{
		Scheme:                 apis.NewScheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, errors.Wrap(err, "cannot create the example scheduler")
	}
	if err := cheapest.Setup(mgr); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	return done, nil
}

// waitClustersReady waits until every member is Ready with all its nodes.
func waitClustersReady(ctx context.Context, c client.WithWatch, members []member) error {
	want := map[string]int32{}
	for _, m := range members {
		want[m.name] = int32(len(m.nodes))
	}
	return fleetwait.ClustersReady(ctx, c, "default", want)
}

func printClusters(ctx context.Context, out io.Writer, c client.Client) error {
	l := &v1alpha1.KubernetesClusterList{}
	if err := c.List(ctx, l, client.InNamespace("default")); err != nil {
		return errors.Wrap(err, "cannot list KubernetesClusters")
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tREADY\tREASON\tVERSION\tNODES\tCPU\tMEMORY\tGPU\tREGION\tPROVIDER\tTAINTS")
	for _, kc := range l.Items {
		cond := kc.Status.GetCondition(xpv2.TypeReady)
		cpu, mem, gpu := kc.Status.Allocatable[corev1.ResourceCPU], kc.Status.Allocatable[corev1.ResourceMemory], kc.Status.Allocatable["nvidia.com/gpu"]
		var taints []string
		for _, t := range kc.Spec.Taints {
			taints = append(taints, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", kc.Name, cond.Status, cond.Reason, kc.Status.Version, kc.Status.NodeCount,
			cpu.String(), mem.String(), gpu.String(), orDash(kc.Labels[v1alpha1.LabelRegion]), orDash(kc.Labels[v1alpha1.LabelCloudProvider]), orDash(strings.Join(taints, ",")))
	}
	return w.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
