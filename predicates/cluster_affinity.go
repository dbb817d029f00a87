package predicates

import (
	"context"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// ClusterAffinityName is the name of the ClusterAffinity plugins.
const ClusterAffinityName = "ClusterAffinity"

// ErrReasonClusterAffinity is the reason of ClusterAffinity.
const ErrReasonClusterAffinity = "cluster(s) didn't match the cluster affinity"

const clusterAffinityKey = "PreFilter/" + ClusterAffinityName

// ClusterAffinity passes clusters matching the required cluster affinity,
// with node-affinity semantics: terms ORed, expressions ANDed.
type ClusterAffinity struct{}

var (
	_ scheduler.PreFilterPlugin = &ClusterAffinity{}
	_ scheduler.NarrowingPlugin = &ClusterAffinity{}
)

// NewClusterAffinity returns the plugin.
func NewClusterAffinity(scheduler.Handle) (scheduler.Plugin, error) { return &ClusterAffinity{}, nil }

// Name of the plugin.
func (p *ClusterAffinity) Name() string { return ClusterAffinityName }

// PreFilter parses the required terms once; a term that cannot be parsed
// makes every cluster infeasible, with the parse error as the reason.
func (p *ClusterAffinity) PreFilter(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, _ *scheduler.Snapshot) *scheduler.Status {
	ra, errs := scheduler.RequiredClusterAffinity(w)
	if len(errs) > 0 {
		return scheduler.NewStatus(scheduler.UnschedulableAndUnresolvable, errs.ToAggregate().Error())
	}
	s.Write(clusterAffinityKey, ra)
	return nil
}

// Narrow gives the verdicts from the snapshot's label index: the clusters
// the required terms match. Terms on fields are matched cluster by
// cluster (Filter); no required terms pass every cluster, in Filter at
// no cost.
func (p *ClusterAffinity) Narrow(_ context.Context, s *scheduler.CycleState, _ *v1alpha1.Workload, snap *scheduler.Snapshot) (scheduler.ClusterSet, *scheduler.Status, bool) {
	v, ok := s.Read(clusterAffinityKey)
	if !ok {
		return nil, nil, false
	}
	ra := v.(scheduler.RequiredAffinity)
	if ra.Selector == nil || ra.Fields {
		return nil, nil, false
	}
	pass, ok := snap.MatchingTerms(ra.Terms)
	return pass, statusClusterAffinity, ok
}

// Filter fails a cluster that matches no required term.
func (p *ClusterAffinity) Filter(_ context.Context, s *scheduler.CycleState, _ *v1alpha1.Workload, c *scheduler.ClusterInfo) *scheduler.Status {
	v, ok := s.Read(clusterAffinityKey)
	if !ok {
		return errNoPreFilter()
	}
	ra := v.(scheduler.RequiredAffinity)
	if ra.Selector == nil || ra.Selector.Match(c.MatchNode(ra.Fields)) {
		return nil
	}
	return statusClusterAffinity
}

// statusClusterAffinity is every ClusterAffinity failure: one status, shared.
var statusClusterAffinity = scheduler.NewStatus(scheduler.UnschedulableAndUnresolvable, ErrReasonClusterAffinity).WithPlugin(ClusterAffinityName)
