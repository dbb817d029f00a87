package main

import (
	"github.com/spf13/cobra"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/placer-dev/placer/member/candidate"
)

func newCandidateSchedulerCommand() *cobra.Command {
	o := candidate.Options{Serving: options.NewOptions()}
	cmd := &cobra.Command{
		Use:   "candidate-scheduler",
		Short: "Run kube-scheduler with placer's candidate plugin in a target cluster",
		Long: `Run the real kube-scheduler, built with placer's plugin, as the profile
placer-candidate: candidate pods are scheduled with every standard plugin,
reserved (their PodChaperon is annotated is-reserved=true) and held at Permit
until the chaperon is annotated is-allowed=true, or the permit timeout passes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return candidate.Run(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	commonFlags{kubeconfig: &o.Kubeconfig, qps: &o.QPS, burst: &o.Burst, leaderElect: &o.LeaderElect, leaderNS: &o.LeaderNS, lease: &o.LeaseDuration, renew: &o.RenewDeadline, retry: &o.RetryPeriod}.
		register(f, "kubeconfig of the target cluster", true, "placer-system", " (the agent's --candidate-scheduler-lease reads it)")
	f.DurationVar(&o.PermitTimeout, "permit-timeout", candidate.DefaultPermitTimeout, "how long a reserved candidate waits for is-allowed before it is unreserved and retried")
	// kube-scheduler's own: --secure-port (10259; 0 serves nothing),
	// --bind-address, the serving certificate, and who may read /metrics.
	for _, fs := range candidate.ServingFlagSets(o.Serving) {
		f.AddFlagSet(fs)
	}
	return cmd
}
