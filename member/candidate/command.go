package candidate

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	basecompatibility "k8s.io/component-base/compatibility"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	// The metrics kube-scheduler's own main registers: client-go's, and
	// kubernetes_build_info (which build runs in a member).
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// configTemplate is a KubeSchedulerConfiguration with one profile,
// placer-candidate: every default plugin plus placer's at Reserve, Permit
// and PostFilter (after the default ones, DynamicResources and
// DefaultPreemption, which it leaves as they are), and placer's queue
// order instead of PrioritySort.
const configTemplate = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: %t
  resourceNamespace: %q
  resourceName: placer-candidate-scheduler
  leaseDuration: %s
  renewDeadline: %s
  retryPeriod: %s
clientConnection:
  kubeconfig: %q
  qps: %g
  burst: %d
profiles:
- schedulerName: %s
  plugins:
    queueSort:
      enabled: [{name: %s}]
      disabled: [{name: "*"}]
    reserve:
      enabled: [{name: %s}]
    permit:
      enabled: [{name: %s}]
    postFilter:
      enabled: [{name: %s}]
`

// Options of the candidate scheduler.
type Options struct {
	Kubeconfig  string
	QPS         float32
	Burst       int
	LeaderElect bool
	LeaderNS    string
	// LeaseDuration, RenewDeadline and RetryPeriod tune the leader
	// election; kube-scheduler defaults zero to 15 s, 10 s and 2 s.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	PermitTimeout time.Duration
	// BinariesDir holds the candidate schedulers built with other
	// kube-scheduler versions (RunPicked); this binary's folder when empty.
	BinariesDir string
	// VersionCheck is how often RunPicked asks the member's version; never
	// when zero.
	VersionCheck time.Duration
	// logsApplied: RunPicked applied the log flags already.
	logsApplied bool
	// Serving holds kube-scheduler's own options, of which Run takes the
	// serving of /healthz and /metrics and its authentication and
	// authorization (their flags: ServingFlagSets); nil serves nothing.
	Serving *options.Options
}

// ServingFlagSets are kube-scheduler's flags for the serving of /healthz
// and /metrics (--secure-port, --bind-address, certificates), for its
// authentication and authorization (--authentication-kubeconfig,
// --authorization-kubeconfig, …) and for its logs (-v, --logging-format
// text or json, --vmodule), bound to o.
func ServingFlagSets(o *options.Options) []*pflag.FlagSet {
	return []*pflag.FlagSet{o.Flags.FlagSet("secure serving"), o.Flags.FlagSet("authentication"), o.Flags.FlagSet("authorization"), o.Flags.FlagSet("logs")}
}

// Run runs the real kube-scheduler, built with the placer plugin and the
// placer-candidate profile, until ctx ends.
func Run(ctx context.Context, o Options) error {
	if o.LeaderNS == "" {
		o.LeaderNS = "kube-system"
	}
	conf := fmt.Sprintf(configTemplate, o.LeaderElect, o.LeaderNS, o.LeaseDuration, o.RenewDeadline, o.RetryPeriod, o.Kubeconfig, o.QPS, o.Burst, ProfileName, Name, Name, Name, Name)
	// kube-scheduler reads its configuration from a file: a pipe's read
	// end, so nothing is written and it runs on a read-only root filesystem.
	path, closeConf, err := inMemoryFile([]byte(conf))
	if err != nil {
		return fmt.Errorf("cannot pass the scheduler configuration: %w", err)
	}
	defer closeConf()
	opts := o.Serving
	if opts == nil {
		opts = options.NewOptions()
		opts.SecureServing.BindPort = 0
	} else if !o.logsApplied {
		if err := applyLogFlags(opts); err != nil {
			return err
		}
	}
	opts.ConfigFile = path
	cc, sched, err := app.Setup(ctx, opts, app.WithPlugin(Name, NewFactory(o.PermitTimeout)))
	if err != nil {
		return fmt.Errorf("cannot set up kube-scheduler: %w", err)
	}
	err = app.Run(ctx, cc, sched)
	if ctx.Err() != nil {
		// kube-scheduler reports its end as an error; a cancelled context is a clean stop.
		return nil
	}
	return err
}

// applyLogFlags applies the log flags (-v, --logging-format) as
// kube-scheduler does: once per process, so only for the command's own
// options.
func applyLogFlags(opts *options.Options) error {
	if err := logsapi.ValidateAndApply(opts.Logs, opts.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)); err != nil {
		return fmt.Errorf("bad log flags: %w", err)
	}
	return nil
}

// inMemoryFile returns a path that reads as b (the read end of a pipe that
// holds b, as /dev/fd/N) and a function that closes it. b must fit a pipe's
// buffer (64 KiB on Linux).
func inMemoryFile(b []byte) (string, func(), error) {
	r, w, err := os.Pipe()
	if err != nil {
		return "", nil, err
	}
	if _, err := w.Write(b); err != nil {
		_ = r.Close()
		_ = w.Close()
		return "", nil, err
	}
	if err := w.Close(); err != nil {
		_ = r.Close()
		return "", nil, err
	}
	return fmt.Sprintf("/dev/fd/%d", r.Fd()), func() { _ = r.Close() }, nil
}
