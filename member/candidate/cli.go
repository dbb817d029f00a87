package candidate

import (
	"github.com/spf13/cobra"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/placer-dev/placer/internal/cliflags"
)

// NewCommand is the candidate-scheduler command: 'placer
// candidate-scheduler', and the same command in the candidate scheduler
// built for each other Kubernetes minor version (hack/candidate), so that a
// member's Deployment passes the same arguments whichever binary it runs.
func NewCommand() *cobra.Command {
	o := Options{Serving: options.NewOptions()}
	cmd := &cobra.Command{
		Use:   "candidate-scheduler",
		Short: "Run kube-scheduler with placer's candidate plugin in a target cluster",
		Long: `Run the real kube-scheduler, built with placer's plugin, as the profile
placer-candidate: candidate pods are scheduled with every standard plugin,
reserved (their PodChaperon is annotated is-reserved=true) and held at Permit
until the chaperon is annotated is-allowed=true, or the permit timeout passes.

By Kubernetes' version-skew policy a kube-scheduler is never newer than its
API server and at most one minor older: when the member's version needs a
kube-scheduler of another minor, the candidate scheduler built with it
(placer-candidate-MINOR, beside this binary in placer's image) starts in
this one's place, with the same arguments.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return RunPicked(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	cliflags.Common{Kubeconfig: &o.Kubeconfig, QPS: &o.QPS, Burst: &o.Burst, LeaderElect: &o.LeaderElect, LeaderNS: &o.LeaderNS, Lease: &o.LeaseDuration, Renew: &o.RenewDeadline, Retry: &o.RetryPeriod}.
		Register(f, "kubeconfig of the target cluster", true, "placer-system", " (the agent's --candidate-scheduler-lease reads it)")
	f.DurationVar(&o.PermitTimeout, "permit-timeout", DefaultPermitTimeout, "how long a reserved candidate waits for is-allowed before it is unreserved and retried")
	f.StringVar(&o.BinariesDir, "candidate-schedulers-dir", "", "folder of the candidate schedulers built with other kube-scheduler versions (placer-candidate-MINOR), one of which starts instead of this one when the member's version needs it; this binary's own folder when empty")
	f.DurationVar(&o.VersionCheck, "member-version-check-interval", DefaultVersionCheck, "how often to ask the member's version, to start again as the candidate scheduler a new version needs; 0: never")
	// kube-scheduler's own: --secure-port (10259; 0 serves nothing),
	// --bind-address, the serving certificate, and who may read /metrics.
	for _, fs := range ServingFlagSets(o.Serving) {
		f.AddFlagSet(fs)
	}
	return cmd
}
