package agent

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Options configure the agent.
type Options struct {
	// SummaryInterval is the least time between two writes of the
	// ClusterSummary (1 s when zero).
	SummaryInterval time.Duration
	// HeartbeatInterval is the most time between two writes of the
	// ClusterSummary, changed or not (10 s when zero).
	HeartbeatInterval time.Duration
	// CandidateSchedulerLease is the candidate scheduler's leader election
	// Lease, which the summary reports on; not checked when its name is empty.
	CandidateSchedulerLease types.NamespacedName
	// Workers is how many chaperons are reconciled at once (8 when zero).
	Workers int
}

// Setup adds every controller of the agent to a target cluster's manager.
func Setup(mgr ctrl.Manager, o Options) error {
	if err := SetupChaperonController(mgr, o.Workers); err != nil {
		return err
	}
	return SetupSummaryController(mgr, o)
}
