package main

import (
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/controllers"
	clusterctrl "github.com/placer-dev/placer/controllers/cluster"
	schedulerctrl "github.com/placer-dev/placer/controllers/scheduler"
	"github.com/placer-dev/placer/internal/clientmetrics"
	"github.com/placer-dev/placer/scheduler"
)

// managerOptions are the flags of 'placer manager'.
type managerOptions struct {
	clientFlags
	probeInterval      time.Duration
	heartbeatGrace     time.Duration
	probeTimeout       time.Duration
	requestTimeout     time.Duration
	maxInFlight        int
	memberQPS          float32
	memberBurst        int
	schedulerConf      string
	schedulerQPS       float32
	schedulerBurst     int
	handshake          time.Duration
	workers            int
	notReadySeconds    int64
	unreachableSeconds int64
	maxMoves           int
	rebalanceAfter     time.Duration
	rebalanceMargin    int
	maxRunnerUps       int
	tokenRenewal       float64
	policy             cluster.KubeconfigPolicy
	profileProviders   string
	profileNamespaces  []string
	proxyPods          proxyPodFlags
}

// checkBounds refuses bounds that would stop every request to members: no
// request slot (every propagator pass would wait for one forever), or no
// deadline (a member that never answers would hold its slots for good);
// and those that would leave the proxy pods' controller no worker or no
// token.
func (o *managerOptions) checkBounds() error {
	if err := o.proxyPods.checkBounds(); err != nil {
		return err
	}
	if o.maxInFlight < 1 {
		return errors.Errorf("--cluster-max-in-flight is %d: at least 1 request to a member must be let through", o.maxInFlight)
	}
	if o.requestTimeout <= 0 {
		return errors.Errorf("--cluster-request-timeout is %v: a request to a member needs a deadline", o.requestTimeout)
	}
	return nil
}

func newManagerCommand() *cobra.Command {
	o := &managerOptions{}
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run placer's controllers against the management cluster",
		Long: `Run placer's controllers against the management cluster: the cluster
controller, which connects to every KubernetesCluster, probes it and publishes
its Ready condition, version, built-in labels and capacity summary; the
scheduler controller, which places each Workload whose schedulerName one of
its profiles serves; and the propagator, which proves the placement with
candidate pods in the member clusters and delivers the Workload there; and
the front end for ordinary pods (Admiralty's source pods): a mutating webhook,
one virtual node per KubernetesCluster, and the proxy pods' controller.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.checkBounds(); err != nil {
				return err
			}
			// How long requests wait for tokens, on /metrics.
			clientmetrics.Observe()
			cfg, err := o.restConfig()
			if err != nil {
				return err
			}
			conf, err := scheduler.LoadConfiguration(o.schedulerConf)
			if err != nil {
				return err
			}
			certs, err := o.proxyPods.certs(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			profiles, err := o.profiles()
			if err != nil {
				return err
			}
			mgr, err := o.newManager(cfg, "placer-manager", o.proxyPods.managerOptions(certs))
			if err != nil {
				return err
			}
			reg, err := controllers.Setup(mgr, controllers.Options{
				Cluster: clusterctrl.Options{
					ProbeInterval:  o.probeInterval,
					HeartbeatGrace: o.heartbeatGrace,
					TokenRenewal:   o.tokenRenewal,
					Profiles:       profiles,
					Registry: cluster.Options{QPS: o.memberQPS, Burst: o.memberBurst, ProbeTimeout: o.probeTimeout,
						RequestTimeout: o.requestTimeout, MaxInFlight: o.maxInFlight, Policy: o.policy},
				},
				Scheduler:         conf,
				SchedulerQPS:      o.schedulerQPS,
				SchedulerBurst:    o.schedulerBurst,
				HandshakeTimeout:  o.handshake,
				PropagatorWorkers: o.workers,
				MaxRunnerUps:      o.maxRunnerUps,

				NotReadyTolerationSeconds:    o.notReadySeconds,
				UnreachableTolerationSeconds: o.unreachableSeconds,
				MaxConcurrentMoves:           o.maxMoves,
				RebalanceAfter:               o.rebalanceAfter,
				RebalanceMargin:              o.rebalanceMargin,
			})
			if err != nil {
				return err
			}
			if err := o.proxyPods.setup(mgr, reg, certs); err != nil {
				return err
			}
			return errors.Wrap(mgr.Start(cmd.Context()), "manager stopped")
		},
	}
	o.register(cmd, true)
	o.addFlags(cmd.Flags())
	return cmd
}

// addFlags registers the manager's own flags.
func (o *managerOptions) addFlags(f *pflag.FlagSet) {
	f.DurationVar(&o.probeInterval, "cluster-probe-interval", 30*time.Second, "how often each member cluster's /version is probed")
	f.DurationVar(&o.heartbeatGrace, "cluster-heartbeat-grace", 40*time.Second, "how long a member's agent may go without renewing its ClusterSummary (agent --heartbeat-interval) before the member stops being Ready")
	f.DurationVar(&o.probeTimeout, "cluster-probe-timeout", 5*time.Second, "how long one probe may take")
	f.DurationVar(&o.requestTimeout, "cluster-request-timeout", 10*time.Second, "how long any other request to a member cluster may take (watches excepted)")
	f.IntVar(&o.maxInFlight, "cluster-max-in-flight", 4, "requests to one member cluster in flight at once (watches excepted); one more is not sent, and the propagator's pass that wanted it waits, off its workers, until the member has a slot free, so a member that does not answer holds at most this many propagator workers")
	f.Float32Var(&o.memberQPS, "cluster-qps", 20, "QPS of each member cluster client")
	f.IntVar(&o.memberBurst, "cluster-burst", 40, "burst of each member cluster client")
	f.Float32Var(&o.schedulerQPS, "scheduler-qps", 50, "QPS of the scheduler's own client, which writes its decisions (a token bucket apart from --kube-api-qps, which the propagator and the cluster controller share)")
	f.IntVar(&o.schedulerBurst, "scheduler-burst", 100, "burst of the scheduler's own client")
	f.DurationVar(&o.handshake, "handshake-timeout", time.Minute, "how long a member may take to reserve every candidate before it is recorded as rejected")
	f.IntVar(&o.workers, "propagator-workers", 16, "Workloads the propagator handles at once; a pass mostly waits for API servers, and one that finds a member's --cluster-max-in-flight requests in flight waits off the workers")
	f.Int64Var(&o.notReadySeconds, "default-not-ready-toleration-seconds", 300, "how long a Workload stays on a cluster tainted "+v1alpha1.TaintClusterNotReady+" (NoExecute) unless it tolerates the taint itself; negative moves it at once")
	f.Int64Var(&o.unreachableSeconds, "default-unreachable-toleration-seconds", 300, "how long a Workload stays on a cluster tainted "+v1alpha1.TaintClusterUnreachable+" (NoExecute) unless it tolerates the taint itself; negative moves it at once")
	f.DurationVar(&o.rebalanceAfter, "rebalance-after", schedulerctrl.DefaultRebalanceAfter, "how long a cluster a Workload prefers more must have been Ready, and the Workload placed where it is (a spread Workload: divided as it is), before it moves back (spec.placement.rebalance WhenPreferred); 0 is the default")
	f.IntVar(&o.rebalanceMargin, "rebalance-margin", schedulerctrl.DefaultRebalanceMargin, "by how many percent a cluster must outscore a Workload's own before it moves back there, and how many percent of a spread Workload's replicas a move back must move at least (spec.placement.rebalance WhenPreferred); 0 is the default, negative: any better score, any replica")
	f.IntVar(&o.maxMoves, "max-concurrent-moves", 50, "how many Workloads (or shares) may leave clusters that still answer (drains: a NoExecute taint, a deletion; moves back) at once, fleet-wide; 0 for no bound")
	f.IntVar(&o.maxRunnerUps, "max-runner-up-candidates", 30, "runner-up candidates (fan-out: those in nominated clusters other than the chosen one, waiting for a commit elsewhere) waiting in one member beyond which no Workload starts new ones there (it proves its chosen cluster alone; a gang begun is finished); 0 for no bound")
	f.Float64Var(&o.tokenRenewal, "member-token-renewal", 0.8, "fraction of its lifetime after which a member token that 'placer join' wrote (a Secret annotated "+cluster.AnnotationRenewToken+") is renewed through the member's TokenRequest API; between 0 and 1")
	f.BoolVar(&o.policy.AllowHTTP, "allow-http-clusters", false, "accept member kubeconfigs whose server is plain http (local test clusters only)")
	f.BoolVar(&o.policy.AllowLoopback, "allow-loopback-clusters", false, "accept member servers on loopback addresses, the manager's own host (local clusters: sandbox, tests)")
	f.BoolVar(&o.policy.AllowLinkLocal, "allow-link-local-clusters", false, "accept member servers on link-local addresses (169.254.0.0/16, fe80::/10), where cloud metadata services answer")
	f.StringVar(&o.profileProviders, "clusterprofile-provider-file", "", "access providers' configuration (JSON, the cluster inventory's standard format: providers with exec plugins) with which the manager reaches the clusters of ClusterProfiles; empty: ClusterProfiles are not read")
	f.StringSliceVar(&o.profileNamespaces, "clusterprofile-namespace", nil, "namespaces whose ClusterProfiles become KubernetesClusters reached with those providers (the fleet's namespaces, which tenants cannot write); required with --clusterprofile-provider-file")
	o.proxyPods.register(f)
	f.StringVar(&o.schedulerConf, "scheduler-config", "", "scheduler configuration file (profiles, plugins, weights); one default profile, placer-scheduler, when empty")
}

// profiles reads the access providers of the cluster inventory, if any.
func (o *managerOptions) profiles() (cluster.Profiles, error) {
	if o.profileProviders == "" {
		if len(o.profileNamespaces) > 0 {
			return cluster.Profiles{}, errors.New("--clusterprofile-namespace needs --clusterprofile-provider-file: without access providers no ClusterProfile can be reached")
		}
		return cluster.Profiles{}, nil
	}
	if len(o.profileNamespaces) == 0 {
		return cluster.Profiles{}, errors.New("--clusterprofile-provider-file needs --clusterprofile-namespace: the namespaces whose ClusterProfiles the manager reads")
	}
	ac, err := access.NewFromFile(o.profileProviders)
	if err != nil {
		return cluster.Profiles{}, errors.Wrap(err, "--clusterprofile-provider-file")
	}
	for i, p := range ac.Providers {
		if p.Name == "" || p.ExecConfig == nil {
			return cluster.Profiles{}, errors.Errorf("--clusterprofile-provider-file: providers[%d] needs a name and an execConfig", i)
		}
	}
	return cluster.Profiles{Access: ac, Namespaces: o.profileNamespaces}, nil
}
