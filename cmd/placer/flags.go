package main

import (
	"context"
	"flag"
	"io"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/internal/cliflags"
)

// clientFlags are the flags every component has for its own cluster.
type clientFlags struct {
	kubeconfig  string
	qps         float32
	burst       int
	leaderElect bool
	leaderNS    string
	lease       time.Duration
	renew       time.Duration
	retry       time.Duration
	healthAddr  string
	metricsAddr string
	metricsTLS  bool
	pprofAddr   string
	development bool
	// context is the kubeconfig context (--context, for the commands a
	// user runs); the current one when empty.
	context string
	// zap are the log flags of controller-runtime's zap options
	// (--zap-log-level, --zap-encoder, --zap-devel, --zap-stacktrace-level,
	// --zap-time-encoding), as kubebuilder projects name them.
	zap zap.Options
}

func (f *clientFlags) register(cmd *cobra.Command, leaderDefault bool) {
	fs := cmd.Flags()
	cliflags.Common{Kubeconfig: &f.kubeconfig, QPS: &f.qps, Burst: &f.burst, LeaderElect: &f.leaderElect, LeaderNS: &f.leaderNS, Lease: &f.lease, Renew: &f.renew, Retry: &f.retry}.
		Register(fs, "kubeconfig of the cluster to run against; in-cluster config or $KUBECONFIG when empty", leaderDefault, "", "; the pod's own when empty")
	fs.StringVar(&f.healthAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", "127.0.0.1:8080", "address of /metrics (loopback unless --metrics-secure); 0 turns it off")
	fs.BoolVar(&f.metricsTLS, "metrics-secure", false, "serve /metrics over HTTPS to callers the API server authenticates and authorizes (get on the /metrics non-resource URL), for a bind address beyond loopback")
	fs.StringVar(&f.pprofAddr, "pprof-bind-address", "", "address of Go's /debug/pprof endpoints, for profiling; off when empty")
	fs.BoolVar(&f.development, "development", false, "human-readable logs at debug level instead of JSON at info (--zap-devel)")
	zfs := flag.NewFlagSet("zap", flag.ContinueOnError)
	f.zap.BindFlags(zfs)
	fs.AddGoFlagSet(zfs)
}

// logger is the component's logger as its flags set it, writing to w
// (stderr when nil); klog, which client-go and leader election log
// through, is routed into it, so every line has one format.
func (f *clientFlags) logger(w io.Writer) logr.Logger {
	o := f.zap
	o.Development = o.Development || f.development
	if w != nil {
		o.DestWriter = w
	}
	log := zap.New(zap.UseFlagOptions(&o))
	klog.SetLogger(log)
	return log
}

// clientConfig is the kubeconfig as kubectl reads it: --kubeconfig, else
// $KUBECONFIG or ~/.kube/config, at --context when set.
func (f *clientFlags) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.context})
}

func (f *clientFlags) restConfig() (*rest.Config, error) {
	cfg, err := f.clientConfig().ClientConfig()
	if err != nil {
		return nil, errors.Wrap(err, "cannot load kubeconfig")
	}
	cfg.QPS, cfg.Burst = f.qps, f.burst
	return cfg, nil
}

// metricsOptions serve /metrics in plain HTTP (on loopback by default) or,
// with --metrics-secure, over HTTPS behind the API server's authentication
// and authorization (controller-runtime's filter: TokenReview, then
// SubjectAccessReview of the /metrics non-resource URL).
func (f *clientFlags) metricsOptions() metricsserver.Options {
	o := metricsserver.Options{BindAddress: f.metricsAddr}
	if f.metricsTLS {
		o.SecureServing = true
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}

// newManager builds a controller-runtime manager with health checks.
func (f *clientFlags) newManager(cfg *rest.Config, leaderID string, more ...func(*ctrl.Options)) (ctrl.Manager, error) {
	ctrl.SetLogger(f.logger(nil))
	opts := ctrl.Options{
		Scheme:                  apis.NewScheme(),
		LeaderElection:          f.leaderElect,
		LeaderElectionID:        leaderID,
		LeaderElectionNamespace: f.leaderNS,
		// The process ends when the manager stops: a successor need not
		// wait out the Lease after a clean shutdown (a rollout).
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &f.lease,
		RenewDeadline:                 &f.renew,
		RetryPeriod:                   &f.retry,
		HealthProbeBindAddress:        f.healthAddr,
		Metrics:                       f.metricsOptions(),
		PprofBindAddress:              f.pprofAddr,
		// No component reads managedFields: the cache keeps none (each
		// copy handed out is smaller; an update without them keeps the
		// API server's).
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	}
	for _, m := range more {
		m(&opts)
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, errors.Wrap(err, "cannot create manager")
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("caches", cachesSynced(mgr.GetCache())); err != nil {
		return nil, err
	}
	return mgr, nil
}

// cachesSynced is ready once the caches have listed what they watch: a
// replica that has not would decide from nothing (a standby's caches run
// too, so it is ready to lead).
func cachesSynced(c interface {
	WaitForCacheSync(context.Context) bool
}) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("the caches have not synced yet")
		}
		return nil
	}
}
