package main

import (
	"time"

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
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the target cluster")
	f.Float32Var(&o.QPS, "kube-api-qps", 50, "QPS of the client")
	f.IntVar(&o.Burst, "kube-api-burst", 100, "burst of the client")
	f.BoolVar(&o.LeaderElect, "leader-elect", true, "elect a leader so only one replica schedules at a time")
	f.StringVar(&o.LeaderNS, "leader-election-namespace", "placer-system", "namespace of the leader election Lease (the agent's --candidate-scheduler-lease reads it)")
	f.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", 15*time.Second, "how long a leader's Lease holds without renewal: how long a successor waits after a leader dies")
	f.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it stops leading")
	f.DurationVar(&o.RetryPeriod, "leader-election-retry-period", 2*time.Second, "how often candidates try to acquire or renew the Lease")
	f.DurationVar(&o.PermitTimeout, "permit-timeout", candidate.DefaultPermitTimeout, "how long a reserved candidate waits for is-allowed before it is unreserved and retried")
	// kube-scheduler's own: --secure-port (10259; 0 serves nothing),
	// --bind-address, the serving certificate, and who may read /metrics.
	for _, fs := range candidate.ServingFlagSets(o.Serving) {
		f.AddFlagSet(fs)
	}
	return cmd
}
