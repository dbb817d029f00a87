package main

import (
	"context"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/spf13/cobra"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/placer-dev/placer/member/agent"
)

func newAgentCommand() *cobra.Command {
	f := &clientFlags{}
	var summaryGap, heartbeat time.Duration
	var workers int
	var candidateLease string
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the chaperon controller in a target cluster",
		Long: `Run placer's agent in a target cluster (its CRDs installed with the rest of
config/member, or the placer-member chart): it turns each PodChaperon into a
candidate Pod, mirrors the Pod's status and
annotations back, and replaces the Pod when it is deleted or evicted —
without needing the management cluster. It also publishes the cluster's
capacity summary (a ClusterSummary named placer), the only view of its
nodes the management side gets, rewritten at least every heartbeat interval
with whether the candidate scheduler renews its Lease.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.restConfig()
			if err != nil {
				return err
			}
			// An agent that starts while its API server is down (the member
			// restarting, a partition), or before its CRDs are installed
			// (config/member applied out of order by a GitOps tool), waits
			// for them instead of exiting: a crash loop's growing backoff
			// would keep the member not Ready long after they are there.
			// An answer that refuses (forbidden, invalid) is not waited out.
			// (A wait.Backoff with a Cap stops once it reaches it: a poll
			// every few seconds waits as long as it takes.)
			log := f.logger(nil).WithName("agent")
			var last error
			err = wait.PollUntilContextCancel(cmd.Context(), crdPollInterval, true, func(context.Context) (bool, error) {
				if last = agent.CRDsServed(cfg); last == nil || refused(last) {
					return true, last
				}
				log.Error(last, "waiting for placer's member CRDs")
				return false, nil
			})
			if err != nil {
				if last != nil {
					err = last
				}
				return errors.Wrap(err, "placer's member CRDs are not served")
			}
			mgr, err := f.newManager(cfg, "placer-agent")
			if err != nil {
				return err
			}
			o := agent.Options{SummaryInterval: summaryGap, HeartbeatInterval: heartbeat, Workers: workers}
			if candidateLease != "" {
				ns, name, ok := strings.Cut(candidateLease, "/")
				if !ok || ns == "" || name == "" {
					return errors.Errorf("--candidate-scheduler-lease %q: want NAMESPACE/NAME", candidateLease)
				}
				o.CandidateSchedulerLease = types.NamespacedName{Namespace: ns, Name: name}
			}
			if err := agent.Setup(mgr, o); err != nil {
				return errors.Wrap(err, "cannot set up the agent's controllers")
			}
			return errors.Wrap(mgr.Start(cmd.Context()), "agent stopped")
		},
	}
	f.register(cmd, true)
	cmd.Flags().IntVar(&workers, "workers", 8, "chaperons reconciled at once")
	cmd.Flags().DurationVar(&summaryGap, "summary-interval", time.Second, "least time between two writes of the ClusterSummary")
	cmd.Flags().DurationVar(&heartbeat, "heartbeat-interval", 10*time.Second, "most time between two writes of the ClusterSummary: the manager counts the cluster not Ready when the summary stops changing (--cluster-heartbeat-grace)")
	cmd.Flags().StringVar(&candidateLease, "candidate-scheduler-lease", "placer-system/placer-candidate-scheduler", "NAMESPACE/NAME of the candidate scheduler's leader election Lease: the summary says whether it is renewed, and the manager counts the cluster Ready only while it is; empty: not checked")
	return cmd
}

// crdPollInterval is how often a waiting agent asks again.
const crdPollInterval = 2 * time.Second

// refused reports an answer of the API server that a retry does not change.
func refused(err error) bool {
	return kerrors.IsForbidden(err) || kerrors.IsUnauthorized(err) || kerrors.IsInvalid(err) || kerrors.IsBadRequest(err)
}
