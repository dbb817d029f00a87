package main

import (
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/spf13/cobra"

	"github.com/placer-dev/placer/member/agent"
)

func newAgentCommand() *cobra.Command {
	f := &clientFlags{}
	var summaryGap time.Duration
	var workers int
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run the chaperon controller in a target cluster",
		Long: `Run placer's agent in a target cluster: it installs the PodChaperon CRD and
turns each PodChaperon into a candidate Pod, mirrors the Pod's status and
annotations back, and replaces the Pod when it is deleted or evicted —
without needing the management cluster. It also publishes the cluster's
capacity summary (a ClusterSummary named placer), the only view of its
nodes the management side gets.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.restConfig()
			if err != nil {
				return err
			}
			if err := agent.EnsureCRDs(cfg); err != nil {
				return err
			}
			mgr, err := f.newManager(cfg, "placer-agent")
			if err != nil {
				return err
			}
			if err := agent.Setup(mgr, agent.Options{SummaryInterval: summaryGap, Workers: workers}); err != nil {
				return errors.Wrap(err, "cannot set up the agent's controllers")
			}
			return errors.Wrap(mgr.Start(cmd.Context()), "agent stopped")
		},
	}
	f.register(cmd, true)
	cmd.Flags().IntVar(&workers, "workers", 8, "chaperons reconciled at once")
	cmd.Flags().DurationVar(&summaryGap, "summary-interval", time.Second, "least time between two writes of the ClusterSummary")
	return cmd
}
