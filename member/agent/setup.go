package agent

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Options configure the agent.
type Options struct {
	// SummaryInterval is the least time between two writes of the
	// ClusterSummary (1 s when zero).
	SummaryInterval time.Duration
	// Workers is how many chaperons are reconciled at once (8 when zero).
	Workers int
}

// Setup adds every controller of the agent to a target cluster's manager.
func Setup(mgr ctrl.Manager, o Options) error {
	if err := SetupChaperonController(mgr, o.Workers); err != nil {
		return err
	}
	return SetupSummaryController(mgr, o.SummaryInterval)
}
