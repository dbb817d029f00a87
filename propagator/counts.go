package propagator

import (
	"strings"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// Share is one placed unit with what its candidates say (ObserveUnit):
// what the Workload's counts are made of.
type Share struct {
	Unit  v1alpha1.PlacementUnit
	State State
}

// Counts are a Workload's replica counts: the sum over the units it is
// placed as, each counted on its own replicas.
type Counts struct {
	// Replicas is the replicas the units hold; Scheduled, Ready, Succeeded
	// and Failed count those with a bound, Ready, succeeded or failed pod.
	Replicas, Scheduled, Ready, Succeeded, Failed int
	// Ended: every unit's replicas ended on their own (State.Ended).
	Ended bool
	// Pending is what keeps a replica from being placed (the first unit's
	// unschedulable or refused message), FailedMessage the first failed
	// replica's.
	Pending, FailedMessage string
	// Clusters name the units' clusters, in order, for messages.
	Clusters string
}

// Count sums the shares: a single-cluster Workload is one share; a
// Workload divided across clusters is one per cluster, and has ended only
// when every share has.
func Count(shares []Share) Counts {
	var c Counts
	names := make([]string, 0, len(shares))
	c.Ended = len(shares) > 0
	for _, sh := range shares {
		st := sh.State
		names = append(names, sh.Unit.Cluster.Name)
		c.Replicas += sh.Unit.Count
		c.Scheduled += st.Scheduled
		c.Ready += st.Ready
		c.Succeeded += st.Succeeded
		c.Failed += st.Failed
		c.Ended = c.Ended && st.Ended(sh.Unit.Count)
		if c.FailedMessage == "" {
			c.FailedMessage = st.FailedMessage
		}
		if c.Pending == "" {
			c.Pending = st.Unschedulable
		}
		if c.Pending == "" {
			c.Pending = st.Refused
		}
	}
	c.Clusters = strings.Join(names, ", ")
	return c
}
