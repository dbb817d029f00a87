package main

import (
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/controllers"
	"github.com/placer-dev/placer/scheduler"
)

// managerOptions are the flags of 'placer manager'.
type managerOptions struct {
	kubeconfig    string
	qps           float32
	burst         int
	leaderElect   bool
	leaderElectNS string
	healthAddr    string
	metricsAddr   string
	probeInterval time.Duration
	probeTimeout  time.Duration
	memberQPS     float32
	memberBurst   int
	development   bool
	schedulerConf string
}

func newManagerCommand() *cobra.Command {
	o := &managerOptions{}
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run placer's controllers against the management cluster",
		Long: `Run placer's controllers against the management cluster. Built so far:
the cluster controller, which connects to every KubernetesCluster, probes it
and publishes its Ready condition, version, built-in labels and capacity
summary; and the scheduler controller, which places each Workload whose
schedulerName one of its profiles serves. The propagator (the handshake with
member clusters) is not built yet.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseDevMode(o.development)))
			cfg, err := o.restConfig()
			if err != nil {
				return err
			}
			return runManager(cmd, cfg, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster; in-cluster config or $KUBECONFIG when empty")
	f.Float32Var(&o.qps, "kube-api-qps", 50, "QPS of the client to the management cluster")
	f.IntVar(&o.burst, "kube-api-burst", 100, "burst of the client to the management cluster")
	f.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader so only one manager acts at a time")
	f.StringVar(&o.leaderElectNS, "leader-election-namespace", "", "namespace of the leader election Lease; the pod's own when empty")
	f.StringVar(&o.healthAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address of /metrics; 0 turns it off")
	f.DurationVar(&o.probeInterval, "cluster-probe-interval", 30*time.Second, "how often each member cluster's /version is probed")
	f.DurationVar(&o.probeTimeout, "cluster-probe-timeout", 5*time.Second, "how long one probe may take")
	f.Float32Var(&o.memberQPS, "cluster-qps", 20, "QPS of each member cluster client")
	f.IntVar(&o.memberBurst, "cluster-burst", 40, "burst of each member cluster client")
	f.BoolVar(&o.development, "development", false, "human-readable logs instead of JSON")
	f.StringVar(&o.schedulerConf, "scheduler-config", "", "scheduler configuration file (profiles, plugins, weights); one default profile, placer-scheduler, when empty")
	return cmd
}

func (o *managerOptions) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, errors.Wrap(err, "cannot load the management cluster's kubeconfig")
	}
	cfg.QPS, cfg.Burst = o.qps, o.burst
	return cfg, nil
}

func runManager(cmd *cobra.Command, cfg *rest.Config, o *managerOptions) error {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  apis.NewScheme(),
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        "placer-manager",
		LeaderElectionNamespace: o.leaderElectNS,
		HealthProbeBindAddress:  o.healthAddr,
		Metrics:                 metricsserver.Options{BindAddress: o.metricsAddr},
	})
	if err != nil {
		return errors.Wrap(err, "cannot create manager")
	}
	conf, err := scheduler.LoadConfiguration(o.schedulerConf)
	if err != nil {
		return err
	}
	if _, err := controllers.Setup(mgr, controllers.Options{
		Cluster: controllers.ClusterControllerOptions{
			ProbeInterval: o.probeInterval,
			Registry:      cluster.Options{QPS: o.memberQPS, Burst: o.memberBurst, ProbeTimeout: o.probeTimeout},
		},
		Scheduler: conf,
	}); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return errors.Wrap(mgr.Start(cmd.Context()), "manager stopped")
}
